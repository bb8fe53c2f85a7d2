/*
 * report_frag.c — the report's part on where reserved − allocated sits:
 * reading the split (tables frag_classes, frag_hard_tags, frag_hard_blocks)
 * into the report model and printing it as text, Markdown and JSON. Kept
 * apart from report.c so the figures of the split are printed in one
 * place; docs/metrics.md defines the classes.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_model.h"

static int64_t z(int64_t v)
{
    return v == FSC_RUNDB_NULL ? 0 : v;
}

static rep_frag_t *frag_of(rep_t *r, const char *point, int64_t oom_id)
{
    if (strcmp(point, "peak_allocated") == 0)
        return &r->at_peak;
    if (strcmp(point, "peak_reserved") == 0)
        return &r->at_peak_reserved;
    for (int i = 0; i < r->nooms; i++)
        if (strcmp(point, "oom") == 0 && r->ooms[i].id == oom_id)
            return &r->ooms[i].frag;
    return NULL;
}

static int class_row(void *ud, const fsc_rundb_frag_class_t *c)
{
    rep_t *r = ud;
    rep_frag_t *x = frag_of(r, c->point ? c->point : "", c->oom_id);
    if (x == NULL || c->pool == NULL)
        return 0;
    int k = strcmp(c->pool, "small") == 0 ? 0 : strcmp(c->pool, "large") == 0 ? 1 : 2;
    rep_cls_t *p = &x->pool[k];
    p->valid = 1;
    p->seq = z(c->seq);
    p->ask = z(c->asking_stream);
    p->reserved = z(c->reserved);
    p->allocated = z(c->allocated);
    p->gap = z(c->reserved_unallocated);
    p->soft = z(c->soft);
    p->hard = z(c->hard);
    p->stream = z(c->stream);
    p->private_pool = z(c->private_pool);
    p->pending = z(c->pending);
    return 0;
}

typedef struct ld {
    fsc_rundb_t *db;
    rep_frag_t *x;
    int all_frames;
} ld_t;

/* What the report calls the tag (fsc_rundb_tag_label), as everywhere. */
static void tag_text(const ld_t *L, int64_t tag, char *out, size_t cap, int *rc)
{
    *rc = fsc_rundb_tag_label(L->db, tag, L->all_frames, 2, out, cap);
}

static int tag_row(void *ud, const fsc_rundb_frag_hard_tag_t *t)
{
    ld_t *L = ud;
    if (L->x->ntags >= REP_HARD_TAGS)
        return FSC_RUNDB_STOP;
    rep_hard_tag_t *h = &L->x->tags[L->x->ntags++];
    h->hard = z(t->hard_bytes);
    h->blocks = z(t->blocks);
    h->bytes = z(t->live_bytes);
    int rc;
    h->id = t->tag;
    tag_text(L, t->tag, h->tag, sizeof h->tag, &rc);
    return rc;
}

static int block_row(void *ud, const fsc_rundb_frag_hard_block_t *b)
{
    ld_t *L = ud;
    if (L->x->nblocks >= REP_HARD_BLOCKS)
        return FSC_RUNDB_STOP;
    rep_hard_block_t *h = &L->x->blocks[L->x->nblocks++];
    h->addr = z(b->addr);
    h->size = z(b->size);
    h->hard = z(b->hard_bytes);
    h->age_events = z(b->age_events);
    h->pending = b->state != NULL && strcmp(b->state, "pending") == 0;
    int rc;
    tag_text(L, b->tag, h->tag, sizeof h->tag, &rc);
    return rc;
}

static int load_pins(fsc_rundb_t *db, int64_t oom_id, rep_frag_t *x, int all_frames)
{
    ld_t L = {db, x, all_frames};
    int rc = fsc_rundb_frag_hard_tags(db, oom_id, tag_row, &L);
    /* rows named alike get more calling frames until they read apart */
    for (int i = 0; rc == 0 && i < x->ntags; i++)
        for (int k = i + 1; rc == 0 && k < x->ntags; k++)
            if (x->tags[i].id != x->tags[k].id && strcmp(x->tags[i].tag, x->tags[k].tag) == 0) {
                rc = fsc_rundb_tag_label_apart(db, x->tags[i].id, x->tags[k].id, all_frames,
                                               x->tags[i].tag, sizeof x->tags[i].tag);
                if (rc == 0)
                    rc = fsc_rundb_tag_label_apart(db, x->tags[k].id, x->tags[i].id,
                                                   all_frames, x->tags[k].tag,
                                                   sizeof x->tags[k].tag);
            }
    return rc != 0 ? rc : fsc_rundb_frag_hard_blocks(db, oom_id, block_row, &L);
}

int fsc__report_load_frag(fsc_rundb_t *db, rep_t *r)
{
    int rc = fsc_rundb_frag_classes(db, class_row, r);
    if (rc == 0)
        rc = load_pins(db, FSC_RUNDB_NULL, &r->at_peak, r->all_frames);
    for (int i = 0; rc == 0 && i < r->nooms && i < REP_OOMS_DETAILED; i++)
        rc = load_pins(db, r->ooms[i].id, &r->ooms[i].frag, r->all_frames);
    return rc;
}

/* ---- text ---------------------------------------------------------------- */

#define SZ(i, v) fsc_size_format((uint64_t)(v), b[i], sizeof b[i])

/* Tag paths of imported snapshots are whole Python stacks: the innermost
 * frames say the most. */
static const char *tail(const char *path, char *buf, size_t cap)
{
    return fsc__report_tail(path, 100, buf, cap);
}

static void split_lines(const rep_frag_t *x, FILE *f, const char *ind)
{
    char b[4][32], tb[160];
    const rep_cls_t *c = &x->pool[2];
    fprintf(f, "%ssoft           %12s  free segments: empty_cache() would return them\n", ind,
            SZ(0, c->soft));
    fprintf(f, "%shard           %12s  free bytes in segments pinned by live blocks\n", ind,
            SZ(0, c->hard));
    fprintf(f, "%sstream         %12s  pinned on streams other than the asking one\n", ind,
            SZ(0, c->stream));
    fprintf(f, "%sprivate pools  %12s  free in CUDA-graph / MemPool pools\n", ind,
            SZ(0, c->private_pool));
    fprintf(f, "%spending        %12s  freed, waiting on other streams' work\n", ind,
            SZ(0, c->pending));
    fprintf(f, "%s= reserved − allocated %s of %s reserved (small pool %s, large pool %s)\n", ind,
            SZ(0, c->gap), SZ(1, c->reserved), SZ(2, x->pool[0].gap), SZ(3, x->pool[1].gap));
    if (x->ntags > 0)
        fprintf(f, "%shard is pinned most by:\n", ind);
    for (int i = 0; i < x->ntags; i++)
        fprintf(f, "%s  %12s  %5lld blocks (%s)  %s\n", ind, SZ(0, x->tags[i].hard),
                (long long)x->tags[i].blocks, SZ(1, x->tags[i].bytes),
                tail(x->tags[i].tag, tb, sizeof tb));
}

void fsc__report_frag_text(const rep_t *r, FILE *f)
{
    char b[5][32];
    const rep_cls_t *c = &r->at_peak.pool[2];
    if (!c->valid) {
        fprintf(f, "\nwhere reserved − allocated sits: not recorded (a database written before "
                   "the split existed; analyze the run again)\n");
        return;
    }
    fprintf(f, "\nwhere reserved − allocated sits, at the allocated peak (event %lld, asking "
               "stream %lld)\n", (long long)c->seq, (long long)c->ask);
    split_lines(&r->at_peak, f, "  ");
    const rep_cls_t *p = &r->at_peak_reserved.pool[2];
    if (p->valid)
        fprintf(f, "  at peak reserved (event %lld): %s of %s unallocated, fragmentation ratio "
                   "%.1f%%; soft %s, hard %s, other %s\n",
                (long long)p->seq, SZ(0, p->gap), SZ(1, p->reserved),
                p->reserved ? 100.0 * (double)p->gap / (double)p->reserved : 0.0,
                SZ(2, p->soft), SZ(3, p->hard), SZ(4, p->stream + p->private_pool + p->pending));
}

void fsc__report_frag_oom_text(const rep_oom_t *o, FILE *f)
{
    char b[6][32], tb[160];
    const rep_cls_t *c = &o->frag.pool[2];
    if (!c->valid)
        return;
    fprintf(f, "    reserved − allocated %s: soft %s, hard %s, stream %s, private pools %s, "
               "pending %s\n", SZ(0, c->gap), SZ(1, c->soft), SZ(2, c->hard), SZ(3, c->stream),
            SZ(4, c->private_pool), SZ(5, c->pending));
    for (int i = 0; i < o->frag.ntags && i < 3; i++)
        fprintf(f, "      hard pinned by %s: %lld blocks  %s\n", SZ(0, o->frag.tags[i].hard),
                (long long)o->frag.tags[i].blocks, tail(o->frag.tags[i].tag, tb, sizeof tb));
}

/* ---- markdown ------------------------------------------------------------ */

static void md_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '*' || *s == '_' || *s == '`' || *s == '<' || *s == '>')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void fsc__report_frag_markdown(const rep_t *r, FILE *f)
{
    char b[6][32], tb[160];
    if (!r->at_peak.pool[2].valid)
        return;
    fprintf(f, "\n### Where reserved − allocated sits\n\n"
               "| moment | reserved − allocated | soft | hard | stream | private pools | "
               "pending |\n|---|---|---|---|---|---|---|\n");
    const rep_frag_t *v[2] = {&r->at_peak, &r->at_peak_reserved};
    const char *name[2] = {"allocated peak", "peak reserved"};
    for (int i = 0; i < 2; i++) {
        const rep_cls_t *c = &v[i]->pool[2];
        if (c->valid)
            fprintf(f, "| %s (event %lld) | %s | %s | %s | %s | %s | %s |\n", name[i],
                    (long long)c->seq, SZ(0, c->gap), SZ(1, c->soft), SZ(2, c->hard),
                    SZ(3, c->stream), SZ(4, c->private_pool), SZ(5, c->pending));
    }
    for (int i = 0; i < r->nooms; i++) {
        const rep_cls_t *c = &r->ooms[i].frag.pool[2];
        if (c->valid)
            fprintf(f, "| OOM %lld (event %lld) | %s | %s | %s | %s | %s | %s |\n",
                    (long long)r->ooms[i].id, (long long)c->seq, SZ(0, c->gap), SZ(1, c->soft),
                    SZ(2, c->hard), SZ(3, c->stream), SZ(4, c->private_pool), SZ(5, c->pending));
    }
    const rep_frag_t *x = r->nooms > 0 && r->ooms[0].frag.ntags > 0 ? &r->ooms[0].frag
                                                                     : &r->at_peak;
    if (x->ntags > 0) {
        fprintf(f, "\nHard bytes %s are pinned most by:\n\n| tag | hard | pinning blocks |\n"
                   "|---|---|---|\n", x == &r->at_peak ? "at the allocated peak" : "at OOM 0");
        for (int i = 0; i < x->ntags; i++) {
            fputs("| ", f);
            md_escape(f, tail(x->tags[i].tag, tb, sizeof tb));
            fprintf(f, " | %s | %lld (%s) |\n", SZ(0, x->tags[i].hard),
                    (long long)x->tags[i].blocks, SZ(1, x->tags[i].bytes));
        }
    }
}

/* ---- JSON ---------------------------------------------------------------- */

static void cls_json(const rep_cls_t *c, cJSON *o)
{
    cJSON_AddNumberToObject(o, "reserved_unallocated_bytes", (double)c->gap);
    cJSON_AddNumberToObject(o, "soft_bytes", (double)c->soft);
    cJSON_AddNumberToObject(o, "hard_bytes", (double)c->hard);
    cJSON_AddNumberToObject(o, "stream_bytes", (double)c->stream);
    cJSON_AddNumberToObject(o, "private_pool_bytes", (double)c->private_pool);
    cJSON_AddNumberToObject(o, "pending_bytes", (double)c->pending);
    cJSON_AddNumberToObject(o, "reserved_bytes", (double)c->reserved);
    cJSON_AddNumberToObject(o, "allocated_bytes", (double)c->allocated);
}

void fsc__report_frag_json(const rep_frag_t *x, cJSON *obj)
{
    const rep_cls_t *c = &x->pool[2];
    cJSON_AddBoolToObject(obj, "split_recorded", c->valid);
    if (!c->valid)
        return;
    cls_json(c, obj);
    cJSON_AddNumberToObject(obj, "seq", (double)c->seq);
    cJSON_AddNumberToObject(obj, "asking_stream", (double)c->ask);
    cJSON *pools = cJSON_AddObjectToObject(obj, "pools");
    for (int k = 0; k < 2; k++)
        cls_json(&x->pool[k], cJSON_AddObjectToObject(pools, k ? "large" : "small"));
    cJSON *tags = cJSON_AddArrayToObject(obj, "hard_tags");
    for (int i = 0; i < x->ntags; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "tag", x->tags[i].tag);
        cJSON_AddNumberToObject(t, "hard_bytes", (double)x->tags[i].hard);
        cJSON_AddNumberToObject(t, "blocks", (double)x->tags[i].blocks);
        cJSON_AddNumberToObject(t, "live_bytes", (double)x->tags[i].bytes);
        cJSON_AddItemToArray(tags, t);
    }
    cJSON *blocks = cJSON_AddArrayToObject(obj, "hard_blocks");
    for (int i = 0; i < x->nblocks; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "addr", (double)x->blocks[i].addr);
        cJSON_AddNumberToObject(t, "size_bytes", (double)x->blocks[i].size);
        cJSON_AddNumberToObject(t, "hard_bytes", (double)x->blocks[i].hard);
        cJSON_AddNumberToObject(t, "age_events", (double)x->blocks[i].age_events);
        cJSON_AddStringToObject(t, "state", x->blocks[i].pending ? "pending" : "allocated");
        cJSON_AddStringToObject(t, "tag", x->blocks[i].tag);
        cJSON_AddItemToArray(blocks, t);
    }
}
