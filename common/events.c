/*
 * events.c — names of the event types, shared by every box that prints or
 * stores events.
 */
#include <string.h>

#include "fragscope/events.h"

const char *fsc_event_type_name(int type)
{
    switch (type) {
#define FSC__EV_NAME(name, val, str) case (val): return str;
        FSC_EVENT_TYPE_MAP(FSC__EV_NAME)
#undef FSC__EV_NAME
    default: return "unknown";
    }
}

int fsc_event_type_from_name(const char *name)
{
    if (name == NULL)
        return 0;
#define FSC__EV_FROM(nm, val, str) if (strcmp(name, str) == 0) return (val);
    FSC_EVENT_TYPE_MAP(FSC__EV_FROM)
#undef FSC__EV_FROM
    return 0;
}
