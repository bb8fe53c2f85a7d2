/*
 * pymeta.c — the records an imported PyTorch snapshot carries beyond the
 * allocator's events (MARKERs "pytorch.KIND JSON", fragscope/pytorch.h):
 * stored in table pytorch_meta with the seq of the event they belong to,
 * and not counted as events, markers or timeline entries, so a snapshot
 * analyzed directly and one imported to a trace first give the same tables.
 */
#include "pymeta.h"

#include <stdlib.h>
#include <string.h>

#include "fragscope/pytorch.h"

/* A record may not grow past this (a cut record that never ends). */
#define PYMETA_MAX (64u << 20)

static int flush_entry(fsc__pymeta_t *pm, fsc__store_t *st, uint64_t seq)
{
    if (!pm->entry_pending)
        return 0;
    pm->entry_pending = 0;
    pm->records++;
    return fsc__store_pymeta(st, seq, "entry", pm->entry, pm->entry_len);
}

int fsc__pymeta_finish(fsc__pymeta_t *pm, fsc__store_t *st, uint64_t seq)
{
    return flush_entry(pm, st, seq);
}

void fsc__pymeta_free(fsc__pymeta_t *pm)
{
    free(pm->part);
    free(pm->entry);
    memset(pm, 0, sizeof *pm);
}

int fsc__pymeta_feed(fsc__pymeta_t *pm, fsc__store_t *st, uint64_t seq, const fsc_event_t *ev,
                     fsc_err_t *err)
{
    static const char prefix[] = FSC_PYTORCH_META_PREFIX;
    const size_t pl = sizeof prefix - 1;
    int is_rec = ev->type == FSC_EV_MARKER && ev->text != NULL && ev->text_len > pl &&
                 memcmp(ev->text, prefix, pl) == 0;
    const char *kind = is_rec ? ev->text + pl : NULL;
    const char *end = is_rec ? ev->text + ev->text_len : NULL;
    const char *sp = is_rec ? memchr(kind, ' ', (size_t)(end - kind)) : NULL;
    size_t klen = sp ? (size_t)(sp - kind) : 0;
    int more = klen > 0 && kind[klen - 1] == '+';
    if (more)
        klen--;
    if (klen == 0 || klen > 32)
        is_rec = 0; /* not one of ours: an ordinary marker */
    /* An entry record belongs to its entry's own event: the ALLOC, not the
     * SPLIT the importer emits before it. */
    if (!is_rec) {
        if (ev->type == FSC_EV_SPLIT)
            return 0;
        return flush_entry(pm, st, seq);
    }
    const char *part = sp + 1;
    size_t plen = (size_t)(end - part);
    if (pm->part_len + plen > PYMETA_MAX)
        return fsc_err_set(err, FSC_ELIMIT, "event %llu: a pytorch.%.*s record longer than %u "
                           "bytes", (unsigned long long)seq, (int)klen, kind, PYMETA_MAX);
    char *nb = realloc(pm->part, pm->part_len + plen + 1);
    if (nb == NULL)
        return fsc_err_set(err, FSC_ENOMEM, "out of memory");
    pm->part = nb;
    memcpy(nb + pm->part_len, part, plen);
    pm->part_len += plen;
    if (more)
        return 1;
    char kb[40];
    memcpy(kb, kind, klen);
    kb[klen] = '\0';
    int rc;
    if (strcmp(kb, "entry") == 0) {
        /* an entry that had no event (skipped): its record stays at the
         * next one's place */
        if ((rc = flush_entry(pm, st, seq)) != 0)
            return rc;
        char *t = pm->entry;
        pm->entry = pm->part;
        pm->entry_len = pm->part_len;
        pm->part = t;
        pm->part_len = 0;
        pm->entry_pending = 1;
        return 1;
    }
    pm->records++;
    rc = fsc__store_pymeta(st, seq, kb, pm->part, pm->part_len);
    pm->part_len = 0;
    return rc != 0 ? rc : 1;
}
