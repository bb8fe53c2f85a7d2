/*
 * pytorch_export_meta.c — the exporter's side of the "pytorch.*" records
 * (pytorch_keys.c writes them at import): the snapshot's own settings,
 * annotations, host memory and unknown top-level keys, the keys every
 * history entry held, whole entries of actions without an event, and the
 * frames, pool ids and unknown keys of segments and blocks, and the fx_*
 * keys of frames (one record per tag node), written back where PyTorch had
 * them. A trace without records (a fragscope recording)
 * exports as before.
 */
#include "pytorch_export_meta.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "fragscope/pytorch.h"
#include "fsc/u64map.h"
#include "pytorch_json.h"

/* Members read into a buffer on the stack; an object with more takes a
 * malloc'd array (members_of), so no member is ever left out. */
#define XM_MAX_MEMBERS 64

typedef struct seg_rec {
    UT_hash_handle hh;
    uint64_t addr;
    char *text;
    size_t len;
    /* its "blocks" object by block address, made at the first lookup:
     * bm[i] the block's member, bidx address -> i + 1 (a block at address
     * 0, which only crafted files have, is found by a walk of bm) */
    int bstate; /* 0 not made, 1 made, 2 no blocks */
    fsc__json_member_t *bm;
    int nbm;
    fsc__u64map_t bidx;
} seg_rec_t;

typedef struct frame_rec {
    UT_hash_handle hh;
    uint32_t node;
    char *text;
    size_t len;
} frame_rec_t;

struct fsc__xmeta {
    frame_rec_t *frames;
    char *part; /* record being joined */
    size_t part_len;
    char *snap; /* the snapshot record */
    size_t snap_len;
    /* its entry_defaults member, found once per record (every history
     * entry reads it, and the record grows with the snapshot) */
    fsc__json_member_t defaults;
    int defaults_state; /* 0 not looked up, 1 found, 2 absent */
    char *entry; /* record for the next history entry */
    size_t entry_len;
    seg_rec_t *segs;
    char *action; /* last action record, handed out once */
    size_t action_len;
};

static void seg_rec_free(seg_rec_t *s)
{
    free(s->text);
    free(s->bm);
    fsc__u64map_free(&s->bidx);
    free(s);
}

/* Every member of the object at [p, end): *out is buf (XM_MAX_MEMBERS
 * entries) or, for a larger object, *heap, malloc'd (the caller frees
 * *heap; NULL when buf held them). Returns the count, -1 when [p, end)
 * is not an object or memory ran out. */
static int members_of(const char *p, const char *end, fsc__json_member_t *buf,
                      fsc__json_member_t **out, fsc__json_member_t **heap)
{
    *heap = NULL;
    *out = buf;
    int n = fsc__json_members(p, end, buf, XM_MAX_MEMBERS);
    if (n <= XM_MAX_MEMBERS)
        return n;
    if ((*heap = malloc((size_t)n * sizeof **heap)) == NULL)
        return -1;
    *out = *heap;
    return fsc__json_members(p, end, *heap, n);
}

int fsc__xm_new(fsc__xmeta_t **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : FSC_ENOMEM;
}

void fsc__xm_free(fsc__xmeta_t *xm)
{
    if (xm == NULL)
        return;
    seg_rec_t *s, *t;
    HASH_ITER(hh, xm->segs, s, t) {
        HASH_DEL(xm->segs, s);
        seg_rec_free(s);
    }
    frame_rec_t *f, *g;
    HASH_ITER(hh, xm->frames, f, g) {
        HASH_DEL(xm->frames, f);
        free(f->text);
        free(f);
    }
    free(xm->part);
    free(xm->snap);
    free(xm->entry);
    free(xm->action);
    free(xm);
}

static int find(const char *text, size_t len, const char *key, fsc__json_member_t *out);

static uint64_t member_u64(const char *text, size_t len, const char *key)
{
    fsc__json_member_t m;
    return find(text, len, key, &m) ? strtoull(m.val, NULL, 10) : 0;
}

int fsc__xm_feed(fsc__xmeta_t *xm, const fsc_event_t *ev, int *kind)
{
    static const char prefix[] = FSC_PYTORCH_META_PREFIX;
    const size_t pl = sizeof prefix - 1;
    *kind = FSC__XM_NONE;
    if (ev->type != FSC_EV_MARKER || ev->text == NULL || ev->text_len <= pl ||
        memcmp(ev->text, prefix, pl) != 0)
        return 0;
    const char *k = ev->text + pl, *end = ev->text + ev->text_len;
    const char *sp = memchr(k, ' ', (size_t)(end - k));
    if (sp == NULL || sp == k)
        return 0;
    size_t klen = (size_t)(sp - k);
    int more = k[klen - 1] == '+';
    if (more)
        klen--;
    size_t plen = (size_t)(end - sp - 1);
    if (xm->part_len + plen > (64u << 20))
        return FSC_ELIMIT;
    char *nb = realloc(xm->part, xm->part_len + plen + 1);
    if (nb == NULL)
        return FSC_ENOMEM;
    xm->part = nb;
    memcpy(nb + xm->part_len, sp + 1, plen);
    xm->part_len += plen;
    nb[xm->part_len] = '\0';
    *kind = FSC__XM_PART;
    if (more)
        return 0;
    char *text = xm->part;
    size_t len = xm->part_len;
    xm->part = NULL;
    xm->part_len = 0;
#define KIND_IS(lit) (klen == sizeof(lit) - 1 && memcmp(k, lit, klen) == 0)
    if (KIND_IS("snapshot")) {
        free(xm->snap);
        xm->snap = text;
        xm->snap_len = len;
        xm->defaults_state = 0;
        *kind = FSC__XM_SNAPSHOT;
    } else if (KIND_IS("entry")) {
        free(xm->entry);
        xm->entry = text;
        xm->entry_len = len;
        *kind = FSC__XM_ENTRY;
    } else if (KIND_IS("action")) {
        free(xm->action);
        xm->action = text;
        xm->action_len = len;
        *kind = FSC__XM_ACTION;
    } else if (KIND_IS("segment")) {
        seg_rec_t *s = calloc(1, sizeof *s), *old = NULL;
        if (s == NULL) {
            free(text);
            return FSC_ENOMEM;
        }
        s->addr = member_u64(text, len, "address");
        s->text = text;
        s->len = len;
        HASH_FIND(hh, xm->segs, &s->addr, sizeof s->addr, old);
        if (old != NULL) {
            HASH_DEL(xm->segs, old);
            seg_rec_free(old);
        }
        HASH_ADD(hh, xm->segs, addr, sizeof s->addr, s);
        *kind = FSC__XM_SEGMENT;
    } else if (KIND_IS("frame")) {
        frame_rec_t *f = calloc(1, sizeof *f), *old = NULL;
        if (f == NULL) {
            free(text);
            return FSC_ENOMEM;
        }
        f->node = (uint32_t)member_u64(text, len, "tag");
        f->text = text;
        f->len = len;
        HASH_FIND(hh, xm->frames, &f->node, sizeof f->node, old);
        if (old != NULL) { /* the first record of a node stands */
            free(f->text);
            free(f);
        } else {
            HASH_ADD(hh, xm->frames, node, sizeof f->node, f);
        }
        *kind = FSC__XM_FRAME;
    } else {
        free(text); /* a kind of a later version: ignored */
    }
#undef KIND_IS
    return 0;
}

int fsc__xm_write_action(fsc__xmeta_t *xm, fsc__pw_t *w)
{
    if (xm->action == NULL)
        return 0;
    int rc = fsc__json_write_pickle(w, xm->action, xm->action + xm->action_len);
    free(xm->action);
    xm->action = NULL;
    return rc == 0 ? 0 : FSC_EFORMAT;
}

static int find(const char *text, size_t len, const char *key, fsc__json_member_t *out)
{
    fsc__json_member_t buf[XM_MAX_MEMBERS], *m, *heap;
    if (text == NULL)
        return 0;
    int n = members_of(text, text + len, buf, &m, &heap), found = 0;
    for (int i = 0; i < n && !found; i++)
        if (fsc__json_key_is(&m[i], key)) {
            *out = m[i];
            found = 1;
        }
    free(heap);
    return found;
}

static int write_member(fsc__pw_t *w, const fsc__json_member_t *m)
{
    size_t kl = 0;
    char *k = fsc__json_string(m->key - 1, m->key + m->key_len + 1, &kl);
    if (k == NULL)
        return FSC_EFORMAT;
    fsc__pw_str(w, k, kl);
    free(k);
    return fsc__json_write_pickle(w, m->val, m->val_end) == 0 ? 0 : FSC_EFORMAT;
}

/* 1 when the string key (raw) is listed in the array at [p, end). */
static int listed(const char *p, const char *end, const char *key, size_t klen)
{
    for (; p != NULL && p < end; p++) {
        if (*p != '"')
            continue;
        const char *q = p + 1;
        if ((size_t)(end - q) > klen && memcmp(q, key, klen) == 0 && q[klen] == '"')
            return 1;
        while (q < end && *q != '"')
            q += *q == '\\' ? 2 : 1;
        p = q;
    }
    return 0;
}

int fsc__xm_entry_absent(const fsc__xmeta_t *xm, const char *key)
{
    fsc__json_member_t a;
    return xm->entry != NULL && find(xm->entry, xm->entry_len, "__absent__", &a) &&
           listed(a.val, a.val_end, key, strlen(key));
}

int fsc__xm_write_entry_keys(fsc__xmeta_t *xm, fsc__pw_t *w)
{
    fsc__json_member_t dbuf[XM_MAX_MEMBERS], ebuf[XM_MAX_MEMBERS], *d = dbuf, *e = ebuf;
    fsc__json_member_t *dheap = NULL, *eheap = NULL, ab = {0};
    int nd = 0, ne = 0, rc = 0;
    if (xm->snap != NULL && xm->defaults_state == 0)
        xm->defaults_state = find(xm->snap, xm->snap_len, "entry_defaults", &xm->defaults) ? 1 : 2;
    if (xm->snap != NULL && xm->defaults_state == 1)
        nd = members_of(xm->defaults.val, xm->defaults.val_end, dbuf, &d, &dheap);
    if (xm->entry != NULL)
        ne = members_of(xm->entry, xm->entry + xm->entry_len, ebuf, &e, &eheap);
    if (nd < 0 || ne < 0)
        rc = FSC_EFORMAT;
    int has_ab = xm->entry != NULL && find(xm->entry, xm->entry_len, "__absent__", &ab);
    for (int i = 0; rc == 0 && i < nd; i++) {
        int over = 0;
        for (int j = 0; j < ne && !over; j++)
            over = e[j].key_len == d[i].key_len && memcmp(e[j].key, d[i].key, d[i].key_len) == 0;
        if (over || (has_ab && listed(ab.val, ab.val_end, d[i].key, d[i].key_len)))
            continue;
        rc = write_member(w, &d[i]);
    }
    for (int j = 0; rc == 0 && j < ne; j++)
        if (!fsc__json_key_is(&e[j], "__absent__"))
            rc = write_member(w, &e[j]);
    free(dheap);
    free(eheap);
    free(xm->entry);
    xm->entry = NULL;
    return rc;
}

int fsc__xm_has_snapshot(const fsc__xmeta_t *xm)
{
    return xm->snap != NULL;
}

int fsc__xm_write_top(fsc__xmeta_t *xm, fsc__pw_t *w, const char *key)
{
    fsc__json_member_t m;
    /* A key the snapshot did not have is not written either. */
    if (xm->snap != NULL && find(xm->snap, xm->snap_len, "keys", &m) &&
        !listed(m.val, m.val_end, key, strlen(key)))
        return 2;
    if (!find(xm->snap, xm->snap_len, key, &m))
        return 0;
    return write_member(w, &m) == 0 ? 1 : FSC_EFORMAT;
}

int fsc__xm_write_top_rest(fsc__xmeta_t *xm, fsc__pw_t *w)
{
    static const char *const handled[] = {"keys",       "allocator_settings", "external_annotations",
                                          "entry_defaults", "device",         "devices", NULL};
    fsc__json_member_t buf[XM_MAX_MEMBERS], *m, *heap;
    if (xm->snap == NULL)
        return 0;
    int n = members_of(xm->snap, xm->snap + xm->snap_len, buf, &m, &heap), rc = 0;
    if (n < 0)
        rc = FSC_EFORMAT;
    for (int i = 0; rc == 0 && i < n; i++) {
        int skip = 0;
        for (const char *const *h = handled; *h && !skip; h++)
            skip = fsc__json_key_is(&m[i], *h);
        if (!skip && write_member(w, &m[i]) != 0)
            rc = FSC_EFORMAT;
    }
    free(heap);
    return rc;
}

static seg_rec_t *seg_of(const fsc__xmeta_t *xm, uint64_t addr)
{
    seg_rec_t *s = NULL;
    HASH_FIND(hh, xm->segs, &addr, sizeof addr, s);
    return s;
}

int fsc__xm_write_segment_key(fsc__xmeta_t *xm, fsc__pw_t *w, uint64_t seg, const char *key)
{
    const seg_rec_t *s = seg_of(xm, seg);
    fsc__json_member_t m;
    if (s == NULL || !find(s->text, s->len, key, &m))
        return 0;
    return fsc__json_write_pickle(w, m.val, m.val_end) == 0 ? 1 : FSC_EFORMAT;
}

int fsc__xm_write_segment_rest(fsc__xmeta_t *xm, fsc__pw_t *w, uint64_t seg)
{
    const seg_rec_t *s = seg_of(xm, seg);
    fsc__json_member_t buf[XM_MAX_MEMBERS], *m, *heap;
    if (s == NULL)
        return 0;
    int n = members_of(s->text, s->text + s->len, buf, &m, &heap), rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (fsc__json_key_is(&m[i], "address") || fsc__json_key_is(&m[i], "frames") ||
            fsc__json_key_is(&m[i], "segment_pool_id") || fsc__json_key_is(&m[i], "blocks"))
            continue;
        if (write_member(w, &m[i]) != 0)
            rc = FSC_EFORMAT;
    }
    free(heap);
    return rc;
}

/* The "blocks" object of s, indexed by address (once per segment). */
static int index_blocks(seg_rec_t *s)
{
    fsc__json_member_t b, buf[XM_MAX_MEMBERS], *m, *heap;
    s->bstate = 2;
    if (!find(s->text, s->len, "blocks", &b))
        return 0;
    int n = members_of(b.val, b.val_end, buf, &m, &heap);
    if (n < 0)
        return FSC_EFORMAT;
    if ((s->bm = malloc(((size_t)n + 1) * sizeof *s->bm)) == NULL) {
        free(heap);
        return FSC_ENOMEM;
    }
    memcpy(s->bm, m, (size_t)n * sizeof *m);
    free(heap);
    s->nbm = n;
    fsc__u64map_init(&s->bidx);
    for (int i = 0; i < n; i++) {
        uint64_t addr = strtoull(s->bm[i].key, NULL, 10), have;
        /* of a repeated address (no valid snapshot has one), the first */
        if (addr != 0 && !fsc__u64map_get(&s->bidx, addr, &have) &&
            fsc__u64map_put(&s->bidx, addr, (uint64_t)i + 1) != 0)
            return FSC_ENOMEM;
    }
    s->bstate = 1;
    return 0;
}

int fsc__xm_write_block_rest(fsc__xmeta_t *xm, fsc__pw_t *w, uint64_t seg, uint64_t addr)
{
    seg_rec_t *s = seg_of(xm, seg);
    if (s == NULL)
        return 0;
    if (s->bstate == 0) {
        int rc = index_blocks(s);
        if (rc != 0)
            return rc;
    }
    if (s->bstate != 1)
        return 0;
    uint64_t at = 0;
    if (addr != 0) {
        if (!fsc__u64map_get(&s->bidx, addr, &at))
            return 0;
    } else {
        for (int i = 0; i < s->nbm && at == 0; i++)
            if (strtoull(s->bm[i].key, NULL, 10) == 0)
                at = (uint64_t)i + 1;
        if (at == 0)
            return 0;
    }
    const fsc__json_member_t *blk = &s->bm[at - 1];
    fsc__json_member_t buf[XM_MAX_MEMBERS], *k, *heap;
    int nk = members_of(blk->val, blk->val_end, buf, &k, &heap), rc = 0;
    for (int j = 0; rc == 0 && j < nk; j++)
        if (write_member(w, &k[j]) != 0)
            rc = FSC_EFORMAT;
    free(heap);
    return rc;
}

int fsc__xm_write_frame_keys(fsc__xmeta_t *xm, fsc__pw_t *w, uint32_t node)
{
    frame_rec_t *f = NULL;
    if (xm == NULL)
        return 0;
    HASH_FIND(hh, xm->frames, &node, sizeof node, f);
    if (f == NULL)
        return 0;
    fsc__json_member_t buf[XM_MAX_MEMBERS], *m, *heap;
    int n = members_of(f->text, f->text + f->len, buf, &m, &heap), rc = 0;
    if (n < 0)
        rc = FSC_EFORMAT;
    for (int i = 0; rc == 0 && i < n; i++)
        if (!fsc__json_key_is(&m[i], "tag") && write_member(w, &m[i]) != 0)
            rc = FSC_EFORMAT;
    free(heap);
    return rc;
}
