/*
 * model_load.c — the loader's helpers: growable arrays, strings cut to what
 * the page shows, NULL defaults, the tag ids the page refers to, and the
 * errors of the run database reader passed on.
 */
#include "model_load.h"

#include <stdlib.h>
#include <string.h>

#include "fsc/vec.h"

char *fsc__ld_strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Grow *arr (of elem bytes, zero-filled) so that index n fits. */
int fsc__ld_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    return fsc__vec_reserve_zero(arr, cap, n + 1, elem) == 0 ? 0 : -1;
}

int fsc__ld_nomem(fsc__loader_t *L)
{
    L->failed = 1;
    return fsc_err_set(L->err, FSC_ENOMEM, "%s: out of memory while reading the database", L->path);
}

int fsc__ld_read(fsc__loader_t *L, int rc)
{
    if (rc != 0 && !L->failed)
        fsc_err_copy(L->err, fsc_rundb_error(L->db));
    return rc;
}

int fsc__ld_str(fsc__loader_t *L, const char *s, size_t max_chars, char **out)
{
    *out = NULL;
    if (s == NULL)
        return 0;
    /* A character starts at every byte that is not a continuation byte
     * after a lead byte (SQLite's own rule, so invalid UTF-8 counts the
     * same way it did in SQL). */
    const unsigned char *p = (const unsigned char *)s;
    for (size_t k = 0; *p && k < max_chars; k++)
        if (*p++ >= 0xC0)
            while ((*p & 0xC0) == 0x80)
                p++;
    size_t n = (size_t)((const char *)p - s);
    if ((*out = malloc(n + 1)) == NULL)
        return fsc__ld_nomem(L);
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    return 0;
}

int64_t fsc__ld_i(int64_t v, int64_t if_null)
{
    return v == FSC_RUNDB_NULL ? if_null : v;
}

int fsc__ld_note_tag(fsc__loader_t *L, int64_t id)
{
    if (id < 0)
        return 0;
    if (fsc__ld_grow((void **)&L->tag_ids, &L->cap_tag_ids, L->ntag_ids, sizeof *L->tag_ids) != 0)
        return fsc__ld_nomem(L);
    L->tag_ids[L->ntag_ids++] = id;
    return 0;
}

int fsc__ld_tagrow(fsc__ld_arr_t *a, int64_t tag, int64_t bytes, int64_t blocks)
{
    if (*a->n >= a->max)
        return FSC_RUNDB_STOP;
    if (fsc__ld_grow(a->p, &a->cap, *a->n, sizeof(fsc__vtagrow_t)) != 0)
        return fsc__ld_nomem(a->L);
    fsc__vtagrow_t *r = (fsc__vtagrow_t *)*a->p + (*a->n)++;
    r->tag = fsc__ld_i(tag, 0);
    r->bytes = fsc__ld_i(bytes, 0);
    r->blocks = fsc__ld_i(blocks, 0);
    return fsc__ld_note_tag(a->L, r->tag);
}
