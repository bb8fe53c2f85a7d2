/*
 * report_load.c — reads a run database into the report model: meta,
 * summary, OOMs with their diagnosis, the segments and blocks behind each,
 * what-if's suggestions, bins and tags. Every read goes through the run
 * database reader (fragscope/rundb.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_model.h"

static int skipped_kind_row(void *ud, const fsc_rundb_kv_t *kv);

/* The report shows a NULL number as 0. */
static int64_t z(int64_t v)
{
    return v == FSC_RUNDB_NULL ? 0 : v;
}

static int nomem(fsc_err_t *err)
{
    return fsc_err_set(err, FSC_ENOMEM, "out of memory");
}

typedef struct ld {
    fsc_rundb_t *db;
    rep_t *r;
    fsc_err_t *err;
    rep_oom_t *o;   /* the OOM being read */
    rep_seg_t *seg; /* its segment being read */
} ld_t;

static int sum_row(void *ud, const fsc_rundb_kv_t *kv)
{
    rep_t *r = ud;
    if (r->nsum >= MAX_SUM)
        return FSC_RUNDB_STOP;
    rep_sum_t *e = &r->sum[r->nsum++];
    snprintf(e->key, sizeof e->key, "%s", kv->key ? kv->key : "");
    e->is_real = kv->type == FSC_RUNDB_T_REAL;
    e->v = kv->d;
    snprintf(e->unit, sizeof e->unit, "%s", kv->unit ? kv->unit : "");
    return 0;
}

/* "compile_context; user_metadata" of the PyTorch entry behind event seq,
 * leaving out PyTorch's "nothing recorded" values ("N/A", ""). */
static int entry_context(fsc_rundb_t *db, int64_t seq, char *buf, size_t cap)
{
    char cc[200], um[200];
    int rc = fsc_rundb_entry_text(db, seq, "compile_context", cc, sizeof cc);
    if (rc == 0)
        rc = fsc_rundb_entry_text(db, seq, "user_metadata", um, sizeof um);
    if (rc != 0)
        return rc;
    if (strcmp(cc, "N/A") == 0)
        cc[0] = '\0';
    snprintf(buf, cap, "%s%s%s", cc, cc[0] && um[0] ? "; " : "", um);
    return 0;
}

static int oom_row(void *ud, const fsc_rundb_oom_t *row)
{
    ld_t *L = ud;
    rep_t *r = L->r;
    rep_oom_t *no = realloc(r->ooms, (size_t)(r->nooms + 1) * sizeof *no);
    if (no == NULL)
        return nomem(L->err);
    r->ooms = no;
    rep_oom_t *o = &r->ooms[r->nooms++];
    memset(o, 0, sizeof *o);
    o->id = z(row->id);
    o->seq = z(row->seq);
    o->requested = z(row->requested);
    o->rounded = z(row->rounded);
    o->allocated = z(row->allocated);
    o->reserved = z(row->reserved);
    o->capacity = z(row->capacity);
    o->lower = z(row->capacity_lower);
    o->upper = z(row->capacity_upper);
    o->free_in_reserved = z(row->free_in_reserved);
    o->largest_free = z(row->largest_free);
    o->largest_usable = z(row->largest_free_usable);
    o->inferred = (int)z(row->capacity_inferred);
    o->ext = row->external_frag;
    snprintf(o->cause, sizeof o->cause, "%s", row->cause ? row->cause : "");
    o->device_free = row->device_free;
    o->device_total = row->device_total;
    o->segment_size = row->segment_size;
    fsc__report_external_fill(o);
    int rc = fsc_rundb_tag_label(L->db, z(row->tag), r->all_frames, 3, o->site, sizeof o->site);
    if (rc == 0)
        rc = entry_context(L->db, z(row->seq), o->context, sizeof o->context);
    if (rc != 0)
        return rc;
    o->explanation = strdup(row->explanation ? row->explanation : "");
    return o->explanation == NULL ? nomem(L->err) : 0;
}

/* The tag holding the most live bytes at the OOM (rank 0). */
static int top_tag_row(void *ud, const fsc_rundb_oom_tag_t *t)
{
    ld_t *L = ud;
    if (t->rank != 0)
        return FSC_RUNDB_STOP;
    L->o->top_tag_bytes = z(t->live_bytes);
    int rc = fsc_rundb_tag_label(L->db, t->tag, L->r->all_frames, 2, L->o->top_tag,
                                 sizeof L->o->top_tag);
    return rc != 0 ? rc : FSC_RUNDB_STOP;
}

static int pin_row(void *ud, const fsc_rundb_pin_t *p)
{
    ld_t *L = ud;
    rep_seg_t *g = L->seg;
    if (g->npins >= REP_PINS)
        return FSC_RUNDB_STOP;
    rep_pin_t *b = &g->pins[g->npins++];
    b->addr = z(p->addr);
    b->size = z(p->size);
    b->age_events = z(p->age_events);
    b->age_ns = z(p->age_ns);
    int rc = fsc_rundb_tag_label(L->db, z(p->tag), L->r->all_frames, 2, b->tag, sizeof b->tag);
    if (rc == 0)
        rc = entry_context(L->db, z(p->alloc_seq), b->context, sizeof b->context);
    return rc;
}

/* The segments holding the most free space at the OOM, and the largest
 * live blocks pinning each. */
static int seg_row(void *ud, const fsc_rundb_oom_segment_t *s)
{
    ld_t *L = ud;
    rep_oom_t *o = L->o;
    if (o->nsegs >= REP_SEGS)
        return FSC_RUNDB_STOP;
    rep_seg_t *g = &o->segs[o->nsegs++];
    g->segment = z(s->segment);
    g->size = z(s->size);
    g->free_bytes = z(s->free_bytes);
    g->largest_free = z(s->largest_free);
    g->live_blocks = z(s->live_blocks);
    g->live_bytes = z(s->live_bytes);
    L->seg = g;
    return fsc_rundb_oom_pins(L->db, o->id, s->segment, pin_row, L);
}

/* What-if's configs that avoid the OOM, "; "-separated, "(defaults)" for
 * the empty config. */
static int fix_row(void *ud, const fsc_rundb_suggestion_t *s)
{
    ld_t *L = ud;
    if (s->avoids_oom != 1 || s->config == NULL)
        return 0;
    const char *c = s->config[0] ? s->config : "(defaults)";
    size_t old = L->o->fixes ? strlen(L->o->fixes) : 0, add = strlen(c) + (old ? 2 : 0);
    char *p = realloc(L->o->fixes, old + add + 1);
    if (p == NULL)
        return nomem(L->err);
    snprintf(p + old, add + 1, "%s%s", old ? "; " : "", c);
    L->o->fixes = p;
    if (L->o->nfix < REP_FIX_NOTES) {
        int k = L->o->nfix++;
        snprintf(L->o->fix_cfg[k], sizeof L->o->fix_cfg[k], "%s", c);
        snprintf(L->o->fix_note[k], sizeof L->o->fix_note[k], "%s", s->note ? s->note : "");
    }
    return 0;
}

static int bin_row(void *ud, const fsc_rundb_bin_t *x)
{
    rep_t *r = ud;
    if (!(x->requests > 0 || x->free_bytes_at_peak > 0))
        return 0;
    if (r->nbins >= 64)
        return FSC_RUNDB_STOP;
    rep_bin_t *b = &r->bins[r->nbins++];
    b->bin = z(x->bin);
    b->lo = z(x->lo);
    b->hi = z(x->hi);
    b->requests = z(x->requests);
    b->requested = z(x->requested_bytes);
    b->allocated = z(x->allocated_bytes);
    b->waste = z(x->internal_waste);
    b->hits = z(x->cache_hits);
    b->misses = z(x->cache_misses);
    b->splits = z(x->splits);
    b->merges = z(x->merges);
    b->peak_blocks = z(x->peak_live_blocks);
    b->peak_bytes = z(x->peak_live_bytes);
    b->free_at_peak = z(x->free_bytes_at_peak);
    b->hit_rate = x->hit_rate;
    return 0;
}

typedef struct tag_ctx {
    ld_t *L;
    rep_tag_t *v;
    int *n;
    int at_end;
} tag_ctx_t;

static int tag_row(void *ud, const fsc_rundb_tag_stat_t *s)
{
    tag_ctx_t *c = ud;
    if (*c->n >= TOP_N)
        return FSC_RUNDB_STOP;
    rep_tag_t *t = &c->v[(*c->n)++];
    t->bytes = z(c->at_end ? s->live_bytes_end : s->live_bytes_at_peak);
    t->blocks = z(c->at_end ? s->live_blocks_end : s->live_blocks_at_peak);
    t->tag = z(s->tag);
    return fsc_rundb_tag_label(c->L->db, t->tag, c->L->r->all_frames, 2, t->path,
                               sizeof t->path);
}

/* Two rows named alike are told apart by the frame where their paths part
 * ("… ← modeling_gpt2.py:305 forward"). */
static int distinguish(ld_t *L, rep_tag_t *v, int n)
{
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (v[i].tag != v[k].tag && strcmp(v[i].path, v[k].path) == 0) {
                int rc = fsc_rundb_tag_label_apart(L->db, v[i].tag, v[k].tag, L->r->all_frames,
                                                   v[i].path, sizeof v[i].path);
                if (rc == 0)
                    rc = fsc_rundb_tag_label_apart(L->db, v[k].tag, v[i].tag, L->r->all_frames,
                                                   v[k].path, sizeof v[k].path);
                if (rc != 0)
                    return rc;
            }
    return 0;
}

static int load(ld_t *L)
{
    fsc_rundb_t *db = L->db;
    rep_t *r = L->r;
    int64_t inferred = 0;
    int rc;
    if ((rc = fsc_rundb_meta_text(db, "producer", r->producer, sizeof r->producer)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "config", r->config, sizeof r->config)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "backend", r->backend, sizeof r->backend)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "source_path", r->source, sizeof r->source)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "capacity", 0, &r->capacity)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "capacity_inferred", 0, &inferred)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "device_total", 0, &r->device_total)) != 0 ||
        (rc = fsc__report_external_load(r, db)) != 0 ||
        (rc = fsc__report_pools_load(db, r)) != 0 ||
        (rc = fsc__report_window_load(db, r)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "warnings", 0, &r->warnings)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "run_complete", -1, &r->run_complete)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "import.warnings", 0, &r->import_warnings)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "import.unknown_actions", 0, &r->unknown_actions)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "import.unknown_keys", 0, &r->unknown_keys)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "import.devices", 0, &r->import_devices)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "import.not_understood", r->not_understood,
                                  sizeof r->not_understood)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "recorder.skipped", 0, &r->rec_skipped)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "recorder.skipped_text", r->rec_skipped_text,
                                  sizeof r->rec_skipped_text)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "recorder.skipped_first", r->rec_skipped_first,
                                  sizeof r->rec_skipped_first)) != 0 ||
        (r->rec_skipped > 0 && (rc = fsc_rundb_meta(db, skipped_kind_row, r)) != 0) ||
        (rc = fsc_rundb_meta_text(db, "settings.not_modelled", r->settings_not_modelled,
                                  sizeof r->settings_not_modelled)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "import.keys_not_modelled", r->keys_not_modelled,
                                  sizeof r->keys_not_modelled)) != 0 ||
        (rc = fsc_rundb_meta_text(db, "import.torch_inferred", r->torch_inferred,
                                  sizeof r->torch_inferred)) != 0)
        return rc;
    r->capacity_inferred = (int)inferred;
    if ((rc = fsc_rundb_summary(db, sum_row, r)) != 0 || (rc = fsc_rundb_ooms(db, oom_row, L)) != 0)
        return rc;
    for (int i = 0; i < r->nooms; i++) {
        L->o = &r->ooms[i];
        if ((rc = fsc_rundb_oom_tags(db, L->o->id, top_tag_row, L)) != 0 ||
            (i < REP_OOMS_DETAILED && (rc = fsc_rundb_oom_segments(db, L->o->id, seg_row, L)) != 0) ||
            (rc = fsc_rundb_suggestions(db, L->o->id, fix_row, L)) != 0)
            return rc;
    }
    if ((rc = fsc_rundb_bins(db, bin_row, r)) != 0)
        return rc;
    tag_ctx_t peak = {L, r->peak_tags, &r->npeak_tags, 0}, end = {L, r->leaks, &r->nleaks, 1};
    if ((rc = fsc_rundb_tag_stats(db, FSC_RUNDB_AT_PEAK, tag_row, &peak)) != 0 ||
        (rc = distinguish(L, r->peak_tags, r->npeak_tags)) != 0 ||
        (rc = fsc_rundb_tag_stats(db, FSC_RUNDB_AT_END, tag_row, &end)) != 0 ||
        (rc = distinguish(L, r->leaks, r->nleaks)) != 0)
        return rc;
    if ((rc = fsc__report_load_frag(db, r)) != 0)
        return rc;
    return fsc__report_sites_load(db, r);
}

/* meta recorder.skipped.KIND rows: the recorder's skips by kind. */
static int skipped_kind_row(void *ud, const fsc_rundb_kv_t *kv)
{
    rep_t *r = ud;
    static const char pre[] = "recorder.skipped.";
    if (kv->key == NULL || strncmp(kv->key, pre, sizeof pre - 1) != 0 ||
        r->nrec_skipped_kind >= (int)(sizeof r->rec_skipped_kind / sizeof r->rec_skipped_kind[0]))
        return 0;
    snprintf(r->rec_skipped_kind[r->nrec_skipped_kind].kind,
             sizeof r->rec_skipped_kind[0].kind, "%s", kv->key + sizeof pre - 1);
    r->rec_skipped_kind[r->nrec_skipped_kind++].n = kv->i;
    return 0;
}

int fsc__report_load(fsc_rundb_t *db, rep_t *r, fsc_err_t *err)
{
    fsc_err_t mine = {0};
    ld_t L = {db, r, &mine, NULL, NULL};
    int rc = load(&L);
    if (rc != 0)
        fsc_err_copy(err, mine.code != 0 ? &mine : fsc_rundb_error(db));
    return rc;
}

void fsc__report_free(rep_t *r)
{
    for (int i = 0; i < r->nooms; i++) {
        free(r->ooms[i].explanation);
        free(r->ooms[i].fixes);
    }
    free(r->ooms);
    fsc__report_pools_free(r);
    fsc__report_sites_free(r);
}
