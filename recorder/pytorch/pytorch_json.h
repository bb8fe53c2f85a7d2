/*
 * pytorch_json.h — reading the JSON of "pytorch.*" records back (not API):
 * member spans of an object, unescaped strings, and any value written as a
 * pickle value (pytorch_json.c says why this is not cJSON).
 */
#ifndef FSC_RECORDER_PYTORCH_JSON_H
#define FSC_RECORDER_PYTORCH_JSON_H

#include <stddef.h>

#include "pickle.h"

typedef struct fsc__json_member {
    const char *key; /* raw (escapes kept), not NUL-terminated */
    size_t key_len;
    const char *val, *val_end; /* the value's text */
} fsc__json_member_t;

/* End of the value starting at p (after blanks), or NULL when malformed. */
const char *fsc__json_skip(const char *p, const char *end, int depth);
/* Members of the object at p: up to cap into out; returns how many there
 * are, or -1 when p is not a well-formed object. */
int fsc__json_members(const char *p, const char *end, fsc__json_member_t *out, int cap);
int fsc__json_key_is(const fsc__json_member_t *m, const char *k);
/* The quoted string at p, unescaped, malloc'd and NUL-terminated. */
char *fsc__json_string(const char *p, const char *end, size_t *len);
/* The value at p as a pickle value: objects become dicts, arrays lists, the
 * markers of pytorch_keys.c tuples and floats; integers are exact. Returns 0
 * or -1 when malformed. */
int fsc__json_write_pickle(fsc__pw_t *w, const char *p, const char *end);

#endif
