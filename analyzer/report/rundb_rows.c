/*
 * rundb_rows.c — the row iterators of the run-database reader: every
 * SELECT that report, check, diff, the viewer and what-if run.
 *
 * Each table is described once as a list of (column, field of its row
 * struct, kind); the SELECT is built from that list and every row is
 * filled from it, so a column is named in one place on the reading side.
 * Adding a table is a row struct in rundb.h, a column list here and a
 * one-line iterator.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rundb_internal.h"

typedef struct col {
    const char *name;
    size_t off;
    char kind; /* 'i' int64 (FSC_RUNDB_NULL for NULL), 'd' double, 's' text */
} col_t;

#define CI(T, f) {#f, offsetof(T, f), 'i'}
#define CD(T, f) {#f, offsetof(T, f), 'd'}
#define CS(T, f) {#f, offsetof(T, f), 's'}
#define NCOLS(a) (sizeof(a) / sizeof(a[0]))

#define T fsc_rundb_timeline_t
static const col_t k_timeline[] = {
    CI(T, id), CI(T, seq_first), CI(T, seq_last), CI(T, time_first_ns), CI(T, time_last_ns),
    CI(T, allocated), CI(T, requested), CI(T, active), CI(T, reserved), CI(T, internal_frag),
    CD(T, internal_frag_ratio), CI(T, free_in_reserved), CI(T, largest_free),
    CD(T, external_frag), CI(T, reserved_unallocated), CI(T, inactive_split_bytes),
    CI(T, segments), CI(T, live_blocks), CI(T, allocated_min), CI(T, allocated_max),
    CI(T, allocated_max_seq), CI(T, reserved_min), CI(T, reserved_max),
    CI(T, reserved_max_seq), CI(T, reserved_unallocated_max)};
#undef T
#define T fsc_rundb_marker_t
static const col_t k_markers[] = {CI(T, seq), CI(T, time_ns), CS(T, text)};
#undef T
#define T fsc_rundb_oom_t
static const col_t k_ooms[] = {
    CI(T, id), CI(T, seq), CI(T, time_ns), CI(T, requested), CI(T, rounded), CI(T, stream),
    CI(T, pool), CI(T, tag), CI(T, allocated), CI(T, reserved), CI(T, capacity),
    CI(T, capacity_inferred), CI(T, capacity_lower), CI(T, capacity_upper),
    CI(T, segment_size), CI(T, device_free), CI(T, device_total), CI(T, free_in_reserved),
    CI(T, largest_free), CI(T, largest_free_usable), CD(T, external_frag), CS(T, cause),
    CS(T, explanation), CI(T, layout_snapshot)};
#undef T
#define T fsc_rundb_oom_segment_t
static const col_t k_oom_segments[] = {
    CI(T, oom_id), CI(T, rank), CI(T, segment), CI(T, size), CI(T, pool), CI(T, stream),
    CI(T, free_bytes), CI(T, largest_free), CI(T, free_blocks), CI(T, live_blocks),
    CI(T, live_bytes)};
#undef T
#define T fsc_rundb_pin_t
static const col_t k_pins[] = {
    CI(T, oom_id), CI(T, segment), CI(T, addr), CI(T, size), CI(T, requested), CS(T, state),
    CI(T, alloc_seq), CI(T, age_events), CI(T, age_ns), CI(T, tag)};
#undef T
#define T fsc_rundb_oom_tag_t
static const col_t k_oom_tags[] = {CI(T, oom_id), CI(T, rank), CI(T, tag), CI(T, live_bytes),
                                   CI(T, live_blocks)};
#undef T
#define T fsc_rundb_suggestion_t
static const col_t k_suggestions[] = {
    CI(T, oom_id), CS(T, config), CI(T, capacity), CI(T, needed_capacity), CI(T, avoids_oom),
    CI(T, peak_reserved), CI(T, peak_allocated), CS(T, note)};
#undef T
#define T fsc_rundb_bin_t
static const col_t k_bins[] = {
    CI(T, bin), CI(T, lo), CI(T, hi), CI(T, requests), CI(T, requested_bytes),
    CI(T, allocated_bytes), CI(T, internal_waste), CI(T, cache_hits), CI(T, cache_misses),
    CD(T, hit_rate), CI(T, splits), CI(T, merges), CI(T, peak_live_blocks),
    CI(T, peak_live_bytes), CI(T, live_blocks_at_peak), CI(T, live_bytes_at_peak),
    CI(T, free_blocks_at_peak), CI(T, free_bytes_at_peak)};
#undef T
#define T fsc_rundb_tag_stat_t
static const col_t k_tag_stats[] = {
    CI(T, tag), CI(T, allocs), CI(T, alloc_bytes), CI(T, live_blocks_at_peak),
    CI(T, live_bytes_at_peak), CI(T, live_blocks_end), CI(T, live_bytes_end)};
#undef T
#define T fsc_rundb_snapshot_t
static const col_t k_snapshots[] = {CI(T, id), CS(T, kind), CI(T, seq), CI(T, time_ns),
                                    CI(T, oom_id), CI(T, allocated), CI(T, reserved)};
#undef T
#define T fsc_rundb_block_t
static const col_t k_layout[] = {
    CI(T, snapshot), CI(T, segment), CI(T, addr), CI(T, size), CI(T, requested), CS(T, state),
    CI(T, stream), CI(T, pool), CI(T, tag), CI(T, alloc_seq), CI(T, age_events), CI(T, age_ns)};
#undef T
#define T fsc_rundb_timeline_external_t
static const col_t k_timeline_external[] = {CI(T, id), CD(T, external_frag_max),
                                            CI(T, external_frag_max_seq)};
#undef T
#define T fsc_rundb_alloc_t
static const col_t k_allocs[] = {
    CI(T, alloc_seq), CI(T, alloc_time_ns), CI(T, addr), CI(T, size), CI(T, requested),
    CI(T, stream), CI(T, pool), CI(T, segment), CI(T, tag), CI(T, free_requested_seq),
    CI(T, free_requested_time_ns), CI(T, free_completed_seq), CI(T, free_completed_time_ns)};
#undef T
#define T fsc_rundb_segment_t
static const col_t k_segments[] = {
    CI(T, id), CI(T, addr), CI(T, size), CI(T, pool), CI(T, stream), CI(T, expandable),
    CI(T, created_seq), CI(T, created_time_ns), CI(T, freed_seq), CI(T, freed_time_ns),
    CI(T, tag)};
#undef T
#define T fsc_rundb_tag_t
static const col_t k_tags[] = {CI(T, id), CI(T, parent), CS(T, name)};
#undef T

#define T fsc_rundb_frag_class_t
static const col_t k_frag_classes[] = {
    CS(T, point), CI(T, oom_id), CS(T, pool), CI(T, seq), CI(T, time_ns), CI(T, asking_stream),
    CI(T, reserved), CI(T, allocated), CI(T, reserved_unallocated), CI(T, soft), CI(T, hard),
    CI(T, stream), CI(T, private_pool), CI(T, pending)};
#undef T
#define T fsc_rundb_frag_hard_block_t
static const col_t k_frag_hard_blocks[] = {
    CS(T, point), CI(T, oom_id), CI(T, rank), CI(T, segment), CI(T, addr), CI(T, size),
    CS(T, state), CI(T, tag), CI(T, hard_bytes), CI(T, alloc_seq), CI(T, age_events)};
#undef T
#define T fsc_rundb_frag_hard_tag_t
static const col_t k_frag_hard_tags[] = {CS(T, point), CI(T, oom_id), CI(T, rank), CI(T, tag),
                                         CI(T, hard_bytes), CI(T, blocks), CI(T, live_bytes)};
#undef T
#define T fsc_rundb_timeline_frag_t
static const col_t k_timeline_frag[] = {CI(T, id), CS(T, pool), CI(T, asking_stream),
                                        CI(T, soft), CI(T, hard), CI(T, stream),
                                        CI(T, private_pool), CI(T, pending)};
#undef T

/* A generic row callback and the typed one it stands for. */
typedef int (*row_fn)(void *ctx, const void *row);

typedef struct query {
    const char *table;
    const col_t *cols;
    size_t ncols;
    const char *tail; /* WHERE / ORDER BY, with ?1, ?2 for the bound ids */
} query_t;

static void fill(sqlite3_stmt *st, const col_t *cols, size_t n, void *row)
{
    for (size_t i = 0; i < n; i++) {
        char *f = (char *)row + cols[i].off;
        /* One call into the statement per column (the handle is used by one
         * thread, so its column values may be read directly). */
        sqlite3_value *v = sqlite3_column_value(st, (int)i);
        int null = sqlite3_value_type(v) == SQLITE_NULL;
        switch (cols[i].kind) {
        case 'i': {
            int64_t x = null ? FSC_RUNDB_NULL : sqlite3_value_int64(v);
            memcpy(f, &x, sizeof x);
            break;
        }
        case 'd': {
            double x = sqlite3_value_double(v);
            memcpy(f, &x, sizeof x);
            break;
        }
        default: {
            const char *x = null ? NULL : (const char *)sqlite3_value_text(v);
            memcpy(f, &x, sizeof x);
            break;
        }
        }
    }
}

/* "SELECT c1, c2, ... FROM table <tail>" with extra text between FROM and
 * the tail (the IN list of fsc_rundb_layout). */
static char *build_sql(const query_t *q, const char *extra)
{
    size_t len = 64 + strlen(q->table) + strlen(q->tail) + (extra ? strlen(extra) : 0);
    for (size_t i = 0; i < q->ncols; i++)
        len += strlen(q->cols[i].name) + 2;
    char *sql = malloc(len), *p = sql;
    if (sql == NULL)
        return NULL;
    p += sprintf(p, "SELECT ");
    for (size_t i = 0; i < q->ncols; i++)
        p += sprintf(p, "%s%s", i ? ", " : "", q->cols[i].name);
    sprintf(p, " FROM %s%s%s", q->table, extra ? extra : "", q->tail);
    return sql;
}

/* Run q with up to two bound integers (nbind of them, then the ids of the
 * IN list) and call fn(ctx, row) on each row. */
static int run(fsc_rundb_t *db, const query_t *q, const char *extra, const int64_t *binds,
               size_t nbind, void *row, row_fn fn, void *ctx)
{
    char *sql = build_sql(q, extra);
    if (sql == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    sqlite3_stmt *st;
    int rc = fsc__rundb_prepare(db, q->table, sql, &st);
    free(sql);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    for (size_t i = 0; i < nbind; i++)
        sqlite3_bind_int64(st, (int)i + 1, binds[i]);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        fill(st, q->cols, q->ncols, row);
        rc = fn(ctx, row);
        if (rc != 0)
            break;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = fsc__rundb_fail(db, q->table);
    sqlite3_finalize(st);
    return rc == FSC_RUNDB_STOP ? 0 : rc;
}

/* One typed iterator: a trampoline from the generic callback to fn. */
#define ITERATOR(name, rowtype, fntype)                                                  \
    typedef struct name##_ctx {                                                          \
        fntype fn;                                                                       \
        void *ud;                                                                        \
    } name##_ctx_t;                                                                      \
    static int name##_call(void *ctx, const void *row)                                   \
    {                                                                                    \
        name##_ctx_t *c = ctx;                                                           \
        return c->fn(c->ud, (const rowtype *)row);                                       \
    }                                                                                    \
    static int name##_run(fsc_rundb_t *db, const query_t *q, const char *extra,          \
                          const int64_t *binds, size_t nbind, fntype fn, void *ud)       \
    {                                                                                    \
        rowtype row;                                                                     \
        name##_ctx_t c = {fn, ud};                                                       \
        return run(db, q, extra, binds, nbind, &row, name##_call, &c);                   \
    }

ITERATOR(timeline, fsc_rundb_timeline_t, fsc_rundb_timeline_fn)
ITERATOR(marker, fsc_rundb_marker_t, fsc_rundb_marker_fn)
ITERATOR(oom, fsc_rundb_oom_t, fsc_rundb_oom_fn)
ITERATOR(oom_segment, fsc_rundb_oom_segment_t, fsc_rundb_oom_segment_fn)
ITERATOR(pin, fsc_rundb_pin_t, fsc_rundb_pin_fn)
ITERATOR(oom_tag, fsc_rundb_oom_tag_t, fsc_rundb_oom_tag_fn)
ITERATOR(suggestion, fsc_rundb_suggestion_t, fsc_rundb_suggestion_fn)
ITERATOR(bin, fsc_rundb_bin_t, fsc_rundb_bin_fn)
ITERATOR(tag_stat, fsc_rundb_tag_stat_t, fsc_rundb_tag_stat_fn)
ITERATOR(snapshot, fsc_rundb_snapshot_t, fsc_rundb_snapshot_fn)
ITERATOR(block, fsc_rundb_block_t, fsc_rundb_block_fn)
ITERATOR(alloc, fsc_rundb_alloc_t, fsc_rundb_alloc_fn)
ITERATOR(timeline_external, fsc_rundb_timeline_external_t, fsc_rundb_timeline_external_fn)
ITERATOR(segment, fsc_rundb_segment_t, fsc_rundb_segment_fn)
ITERATOR(tag, fsc_rundb_tag_t, fsc_rundb_tag_fn)
ITERATOR(frag_class, fsc_rundb_frag_class_t, fsc_rundb_frag_class_fn)
ITERATOR(frag_hard_block, fsc_rundb_frag_hard_block_t, fsc_rundb_frag_hard_block_fn)
ITERATOR(frag_hard_tag, fsc_rundb_frag_hard_tag_t, fsc_rundb_frag_hard_tag_fn)
ITERATOR(timeline_frag, fsc_rundb_timeline_frag_t, fsc_rundb_timeline_frag_fn)

#define Q(table, cols, tail) {table, cols, NCOLS(cols), tail}

int fsc_rundb_timeline(fsc_rundb_t *db, fsc_rundb_timeline_fn fn, void *ud)
{
    static const query_t q = Q("timeline", k_timeline, " ORDER BY seq_first");
    return timeline_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_markers(fsc_rundb_t *db, fsc_rundb_marker_fn fn, void *ud)
{
    static const query_t q = Q("markers", k_markers, " ORDER BY seq");
    return marker_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_ooms(fsc_rundb_t *db, fsc_rundb_oom_fn fn, void *ud)
{
    static const query_t q = Q("ooms", k_ooms, " ORDER BY id");
    return oom_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_oom_segments(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_oom_segment_fn fn,
                           void *ud)
{
    static const query_t q = Q("oom_segments", k_oom_segments, " WHERE oom_id = ?1 ORDER BY rank");
    return oom_segment_run(db, &q, NULL, &oom_id, 1, fn, ud);
}

int fsc_rundb_oom_pins(fsc_rundb_t *db, int64_t oom_id, int64_t segment, fsc_rundb_pin_fn fn,
                       void *ud)
{
    static const query_t q = Q("oom_pinning_blocks", k_pins,
                               " WHERE oom_id = ?1 AND segment = ?2 ORDER BY size DESC, addr");
    int64_t b[2] = {oom_id, segment};
    return pin_run(db, &q, NULL, b, 2, fn, ud);
}

int fsc_rundb_oom_tags(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_oom_tag_fn fn, void *ud)
{
    static const query_t q = Q("oom_tags", k_oom_tags, " WHERE oom_id = ?1 ORDER BY rank");
    return oom_tag_run(db, &q, NULL, &oom_id, 1, fn, ud);
}

int fsc_rundb_suggestions(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_suggestion_fn fn, void *ud)
{
    static const query_t one = Q("suggestions", k_suggestions,
                                 " WHERE oom_id = ?1 OR oom_id IS NULL ORDER BY rowid");
    static const query_t all = Q("suggestions", k_suggestions, " ORDER BY rowid");
    if (oom_id == FSC_RUNDB_NULL)
        return suggestion_run(db, &all, NULL, NULL, 0, fn, ud);
    return suggestion_run(db, &one, NULL, &oom_id, 1, fn, ud);
}

int fsc_rundb_bins(fsc_rundb_t *db, fsc_rundb_bin_fn fn, void *ud)
{
    static const query_t q = Q("bins", k_bins, " ORDER BY bin");
    return bin_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_tag_stats(fsc_rundb_t *db, fsc_rundb_when_t when, fsc_rundb_tag_stat_fn fn,
                        void *ud)
{
    static const query_t at_peak = Q("tag_stats", k_tag_stats,
                                     " WHERE live_bytes_at_peak > 0"
                                     " ORDER BY live_bytes_at_peak DESC, tag");
    static const query_t at_end = Q("tag_stats", k_tag_stats,
                                    " WHERE live_bytes_end > 0 ORDER BY live_bytes_end DESC, tag");
    return tag_stat_run(db, when == FSC_RUNDB_AT_END ? &at_end : &at_peak, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_snapshots(fsc_rundb_t *db, fsc_rundb_snapshot_fn fn, void *ud)
{
    static const query_t q = Q("layout_snapshots", k_snapshots,
                               " ORDER BY kind <> 'peak_allocated', oom_id, id");
    return snapshot_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_layout(fsc_rundb_t *db, const int64_t *snapshots, size_t n, fsc_rundb_block_fn fn,
                     void *ud)
{
    static const query_t q = Q("layout", k_layout, ") ORDER BY snapshot, segment, addr");
    if (n == 0)
        return 0;
    if (n > 999)
        return fsc_err_set(&db->err, FSC_EINVAL, "%s: more than 999 layouts asked for at once",
                           db->path);
    /* " WHERE snapshot IN (?1, ?2, ...": the tail closes the list. */
    char *extra = malloc(32 + n * 6);
    if (extra == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    char *p = extra + sprintf(extra, " WHERE snapshot IN (");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s?%zu", i ? "," : "", i + 1);
    int rc = block_run(db, &q, extra, snapshots, n, fn, ud);
    free(extra);
    return rc;
}

int fsc_rundb_timeline_external(fsc_rundb_t *db, fsc_rundb_timeline_external_fn fn, void *ud)
{
    static const query_t q = Q("timeline_external", k_timeline_external, " ORDER BY id");
    return timeline_external_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_allocs(fsc_rundb_t *db, fsc_rundb_alloc_fn fn, void *ud)
{
    static const query_t q = Q("blocks", k_allocs, " ORDER BY alloc_seq");
    return alloc_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_segments(fsc_rundb_t *db, fsc_rundb_segment_fn fn, void *ud)
{
    static const query_t q = Q("segments", k_segments, " ORDER BY id");
    return segment_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_tags(fsc_rundb_t *db, fsc_rundb_tag_fn fn, void *ud)
{
    static const query_t q = Q("tags", k_tags, " ORDER BY id");
    return tag_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_frag_classes(fsc_rundb_t *db, fsc_rundb_frag_class_fn fn, void *ud)
{
    static const query_t q = Q("frag_classes", k_frag_classes, " ORDER BY rowid");
    return frag_class_run(db, &q, NULL, NULL, 0, fn, ud);
}

int fsc_rundb_frag_hard_blocks(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_frag_hard_block_fn fn,
                               void *ud)
{
    static const query_t peak = Q("frag_hard_blocks", k_frag_hard_blocks,
                                  " WHERE point = 'peak_allocated' ORDER BY rank");
    static const query_t oom = Q("frag_hard_blocks", k_frag_hard_blocks,
                                 " WHERE point = 'oom' AND oom_id = ?1 ORDER BY rank");
    if (oom_id == FSC_RUNDB_NULL)
        return frag_hard_block_run(db, &peak, NULL, NULL, 0, fn, ud);
    return frag_hard_block_run(db, &oom, NULL, &oom_id, 1, fn, ud);
}

int fsc_rundb_frag_hard_tags(fsc_rundb_t *db, int64_t oom_id, fsc_rundb_frag_hard_tag_fn fn,
                             void *ud)
{
    static const query_t peak = Q("frag_hard_tags", k_frag_hard_tags,
                                  " WHERE point = 'peak_allocated' ORDER BY rank");
    static const query_t oom = Q("frag_hard_tags", k_frag_hard_tags,
                                 " WHERE point = 'oom' AND oom_id = ?1 ORDER BY rank");
    if (oom_id == FSC_RUNDB_NULL)
        return frag_hard_tag_run(db, &peak, NULL, NULL, 0, fn, ud);
    return frag_hard_tag_run(db, &oom, NULL, &oom_id, 1, fn, ud);
}

int fsc_rundb_timeline_frag(fsc_rundb_t *db, fsc_rundb_timeline_frag_fn fn, void *ud)
{
    static const query_t q = Q("timeline_frag", k_timeline_frag, " ORDER BY id, rowid");
    return timeline_frag_run(db, &q, NULL, NULL, 0, fn, ud);
}

/* ---- meta and summary -------------------------------------------------- */

static int each_kv(fsc_rundb_t *db, const char *table, const char *sql, fsc_rundb_kv_fn fn,
                   void *ud)
{
    sqlite3_stmt *st;
    int rc = fsc__rundb_prepare(db, table, sql, &st);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        fsc_rundb_kv_t kv;
        memset(&kv, 0, sizeof kv);
        kv.key = (const char *)sqlite3_column_text(st, 0);
        switch (sqlite3_column_type(st, 1)) {
        case SQLITE_INTEGER: kv.type = FSC_RUNDB_T_INT; break;
        case SQLITE_FLOAT: kv.type = FSC_RUNDB_T_REAL; break;
        case SQLITE_NULL: kv.type = FSC_RUNDB_T_NULL; break;
        default: kv.type = FSC_RUNDB_T_TEXT; break;
        }
        kv.i = sqlite3_column_int64(st, 1);
        kv.d = sqlite3_column_double(st, 1);
        if (kv.type == FSC_RUNDB_T_TEXT)
            kv.text = (const char *)sqlite3_column_text(st, 1);
        if (sqlite3_column_count(st) > 2)
            kv.unit = (const char *)sqlite3_column_text(st, 2);
        if ((rc = fn(ud, &kv)) != 0)
            break;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = fsc__rundb_fail(db, table);
    sqlite3_finalize(st);
    return rc == FSC_RUNDB_STOP ? 0 : rc;
}

int fsc_rundb_meta(fsc_rundb_t *db, fsc_rundb_kv_fn fn, void *ud)
{
    return each_kv(db, "meta", "SELECT key, value FROM meta ORDER BY rowid", fn, ud);
}

int fsc_rundb_summary(fsc_rundb_t *db, fsc_rundb_kv_fn fn, void *ud)
{
    return each_kv(db, "summary", "SELECT key, value, unit FROM summary ORDER BY rowid", fn, ud);
}
