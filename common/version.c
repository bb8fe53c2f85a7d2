/*
 * version.c — the library's version at run time, so a program can check
 * that the libfragscope it loaded matches the headers it was built with
 * (FSC_VERSION_NUMBER in fragscope/version.h).
 */
#include "fragscope/common.h"

const char *fsc_version(void)
{
    return FSC_VERSION_STRING;
}

int fsc_version_number(void)
{
    return FSC_VERSION_NUMBER;
}
