/*
 * rundb_sites.c — live bytes by call site at one event, read from `blocks`.
 *
 * A tag is a whole call stack, so one line of code that is reached through
 * several stacks shows up as several tags, each with part of its bytes; a
 * ranking by tag then misorders the lines. Here the live blocks are summed
 * per tag in SQL, each tag is named by its call site (fsc_frame_site: the
 * allocating line, or the first frame in the program's own code), and the
 * tags of one site are added up. The report and the viewer both use it, so
 * they rank the same lines with the same bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "fragscope/frames.h"
#include "rundb_internal.h"

typedef struct site_ent {
    fsc_rundb_site_t s;
    UT_hash_handle hh;
} site_ent_t;

static int by_bytes(const void *a, const void *b)
{
    const fsc_rundb_site_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->label, y->label);
}

int fsc_rundb_sites_at(fsc_rundb_t *db, int64_t seq, int mode, fsc_rundb_site_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, "blocks",
                                "SELECT tag, SUM(size), COUNT(*) FROM blocks WHERE alloc_seq <= ?1"
                                " AND (free_completed_seq IS NULL OR free_completed_seq < 0"
                                " OR free_completed_seq > ?1) GROUP BY tag",
                                &st);
    if (rc != 0)
        return rc < 0 ? rc : 0; /* no blocks table: no sites */
    sqlite3_bind_int64(st, 1, seq);
    site_ent_t *map = NULL, *e, *tmp;
    size_t count = 0;
    int step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t tag = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 0);
        site_ent_t *x = calloc(1, sizeof *x);
        if (x == NULL) {
            rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
            break;
        }
        rc = fsc_rundb_tag_site(db, tag < 0 ? 0 : tag, mode, x->s.label, sizeof x->s.label,
                                &x->s.mine);
        if (rc != 0) {
            free(x);
            break;
        }
        x->s.bytes = sqlite3_column_int64(st, 1);
        x->s.blocks = sqlite3_column_int64(st, 2);
        HASH_FIND_STR(map, x->s.label, e);
        if (e != NULL) {
            e->s.bytes += x->s.bytes;
            e->s.blocks += x->s.blocks;
            free(x);
        } else {
            HASH_ADD_STR(map, s.label, x);
            count++;
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = fsc__rundb_fail(db, "blocks");
    sqlite3_finalize(st);
    fsc_rundb_site_t *v = NULL;
    if (rc == 0 && count > 0 && (v = malloc(count * sizeof *v)) == NULL)
        rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    size_t k = 0;
    HASH_ITER(hh, map, e, tmp)
    {
        if (v != NULL)
            v[k++] = e->s;
        HASH_DEL(map, e);
        free(e);
    }
    if (rc != 0) {
        free(v);
        return rc;
    }
    if (k > 1)
        qsort(v, k, sizeof *v, by_bytes);
    *out = v;
    *n = k;
    return 0;
}

/* One row of integers from sql (bound ?1 = a); 0 (zeros) when the table
 * is missing. */
static int row_ints(fsc_rundb_t *db, const char *sql, int64_t a, int64_t *v, int n)
{
    sqlite3_stmt *st = NULL;
    for (int i = 0; i < n; i++)
        v[i] = 0;
    int rc = fsc__rundb_prepare(db, "blocks", sql, &st);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    sqlite3_bind_int64(st, 1, a);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        for (int i = 0; i < n; i++)
            v[i] = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
    } else if (step != SQLITE_DONE) {
        rc = fsc__rundb_fail(db, "blocks");
    }
    sqlite3_finalize(st);
    return rc;
}

int fsc_rundb_end_split(fsc_rundb_t *db, int64_t first_step, fsc_rundb_end_split_t *out)
{
    memset(out, 0, sizeof *out);
    int64_t b = first_step;
    int rc = 0;
    if (b < 0) {
        int64_t v[1];
        rc = row_ints(db, "SELECT MIN(free_requested_seq) FROM blocks WHERE free_requested_seq >= 0"
                          " AND ?1 = ?1", 0, v, 1);
        b = v[0];
    }
    out->boundary = b;
    int64_t w[4];
    if (rc == 0)
        rc = row_ints(db,
                      "SELECT TOTAL(CASE WHEN ?1 < 0 OR alloc_seq < ?1 THEN size END),"
                      " TOTAL(?1 < 0 OR alloc_seq < ?1),"
                      " TOTAL(CASE WHEN ?1 >= 0 AND alloc_seq >= ?1 THEN size END),"
                      " TOTAL(?1 >= 0 AND alloc_seq >= ?1)"
                      " FROM blocks WHERE free_completed_seq IS NULL OR free_completed_seq < 0",
                      b, w, 4);
    if (rc == 0) {
        out->persistent_bytes = w[0] > 0 ? w[0] : 0;
        out->persistent_blocks = w[1] > 0 ? w[1] : 0;
        out->growth_bytes = w[2] > 0 ? w[2] : 0;
        out->growth_blocks = w[3] > 0 ? w[3] : 0;
    }
    return rc;
}

static int cmp_seq(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int fsc_rundb_trace_derived(fsc_rundb_t *db, int *ok, int64_t *device, int64_t **seqs,
                            size_t *n)
{
    *ok = 0;
    *device = 0;
    *seqs = NULL;
    *n = 0;
    char kind[64] = "";
    int64_t entries = 0, total = 0, splits = 0, merges = 0, rebuilt = 0, warnings = 0;
    int rc = fsc_rundb_meta_text(db, "source_kind", kind, sizeof kind);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "import.entries", -1, &entries);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "events_total", -1, &total);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "events.split", 0, &splits);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "events.merge", 0, &merges);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "import.reconstructed", 0, &rebuilt);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "import.warnings", 0, &warnings);
    if (rc == 0)
        rc = fsc_rundb_meta_int(db, "import.device", 0, device);
    if (rc != 0 || strcmp(kind, "pytorch_snapshot") != 0 || entries <= 0 || rebuilt != 0 ||
        warnings != 0 || entries + splits + merges != total)
        return rc;
    int64_t *v = malloc((size_t)(splits + merges + 1) * sizeof *v);
    if (v == NULL)
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    sqlite3_stmt *st = NULL;
    /* where the events view puts them: a split right before its alloc, the
     * merges right after the free that caused them */
    rc = fsc__rundb_prepare(db, "blocks",
                            "SELECT alloc_seq - 1 FROM blocks WHERE split_size IS NOT NULL"
                            " UNION ALL SELECT free_completed_seq + 1 FROM blocks"
                            " WHERE merge1_addr IS NOT NULL"
                            " UNION ALL SELECT free_completed_seq + 2 FROM blocks"
                            " WHERE merge2_addr IS NOT NULL",
                            &st);
    if (rc != 0) {
        free(v);
        return rc < 0 ? rc : 0;
    }
    size_t k = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && k < (size_t)(splits + merges))
        v[k++] = sqlite3_column_int64(st, 0);
    int more = step == SQLITE_ROW; /* more rows than events.split + events.merge */
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = fsc__rundb_fail(db, "blocks");
    sqlite3_finalize(st);
    if (rc != 0 || more || k != (size_t)(splits + merges)) {
        free(v);
        return rc;
    }
    qsort(v, k, sizeof *v, cmp_seq);
    *seqs = v;
    *n = k;
    *ok = 1;
    return 0;
}

/* ---- reserved per private pool over time ------------------------------- */

typedef struct pool_delta {
    int64_t pool, seq, delta;
} pool_delta_t;

static int by_pool_seq(const void *a, const void *b)
{
    const pool_delta_t *x = a, *y = b;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

typedef struct pool_peak {
    int64_t pool, peak;
    size_t first, end; /* its deltas */
} pool_peak_t;

static int by_peak(const void *a, const void *b)
{
    const pool_peak_t *x = a, *y = b;
    if (x->peak != y->peak)
        return x->peak > y->peak ? -1 : 1;
    return (x->pool > y->pool) - (x->pool < y->pool);
}

static int by_pool_id(const void *a, const void *b)
{
    const pool_peak_t *x = a, *y = b;
    return (x->pool > y->pool) - (x->pool < y->pool);
}

int fsc_rundb_pool_reserved(fsc_rundb_t *db, const int64_t *lo, const int64_t *hi, size_t n,
                            size_t max_pools, int64_t **pools, size_t *npools, int64_t **vals,
                            size_t *dropped)
{
    *pools = NULL;
    *vals = NULL;
    *npools = 0;
    *dropped = 0;
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, "segments",
                                "SELECT pool_id, size, created_seq, freed_seq FROM segments"
                                " WHERE pool_id IS NOT NULL AND pool_id <> 0",
                                &st);
    if (rc != 0)
        return rc < 0 ? rc : 0; /* no segments table, or none with pool_id: no pools */
    pool_delta_t *d = NULL;
    size_t nd = 0, cap = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (nd + 2 > cap) {
            cap = cap ? 2 * cap : 256;
            pool_delta_t *x = realloc(d, cap * sizeof *d);
            if (x == NULL) {
                rc = fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
                break;
            }
            d = x;
        }
        int64_t pool = sqlite3_column_int64(st, 0), size = sqlite3_column_int64(st, 1);
        d[nd++] = (pool_delta_t){pool, sqlite3_column_int64(st, 2), size};
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            d[nd++] = (pool_delta_t){pool, sqlite3_column_int64(st, 3), -size};
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = fsc__rundb_fail(db, "segments");
    sqlite3_finalize(st);
    if (rc != 0 || nd == 0) {
        free(d);
        return rc;
    }
    qsort(d, nd, sizeof *d, by_pool_seq);
    size_t np = 0;
    for (size_t i = 0; i < nd; i++)
        np += i == 0 || d[i].pool != d[i - 1].pool;
    pool_peak_t *pk = calloc(np, sizeof *pk);
    if (pk == NULL) {
        free(d);
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    }
    np = 0;
    for (size_t i = 0; i < nd; i++) {
        if (i == 0 || d[i].pool != d[i - 1].pool) {
            pk[np].pool = d[i].pool;
            pk[np].first = i;
            np++;
        }
        pool_peak_t *p = &pk[np - 1];
        p->end = i + 1;
    }
    for (size_t k = 0; k < np; k++) {
        int64_t cur = 0;
        for (size_t i = pk[k].first; i < pk[k].end; i++) {
            cur += d[i].delta;
            /* the value after an event: every change at that event applied */
            if ((i + 1 == pk[k].end || d[i + 1].seq != d[i].seq) && cur > pk[k].peak)
                pk[k].peak = cur;
        }
    }
    qsort(pk, np, sizeof *pk, by_peak);
    size_t keep = np < max_pools ? np : max_pools;
    *dropped = np - keep;
    qsort(pk, keep, sizeof *pk, by_pool_id);
    int64_t *ids = malloc((keep ? keep : 1) * sizeof *ids);
    int64_t *v = calloc((keep ? keep : 1) * (n ? n : 1), sizeof *v);
    if (ids == NULL || v == NULL) {
        free(ids);
        free(v);
        free(pk);
        free(d);
        return fsc_err_set(&db->err, FSC_ENOMEM, "%s: out of memory", db->path);
    }
    for (size_t k = 0; k < keep; k++) {
        ids[k] = pk[k].pool;
        size_t i = pk[k].first;
        int64_t cur = 0;
        for (size_t b = 0; b < n; b++) {
            /* everything up to the bucket's first event, then each event in it */
            while (i < pk[k].end && d[i].seq <= lo[b])
                cur += d[i++].delta;
            int64_t mx = cur;
            while (i < pk[k].end && d[i].seq <= hi[b]) {
                cur += d[i].delta;
                if (i + 1 == pk[k].end || d[i + 1].seq != d[i].seq)
                    mx = cur > mx ? cur : mx;
                i++;
            }
            v[k * n + b] = mx;
        }
    }
    free(pk);
    free(d);
    *pools = ids;
    *npools = keep;
    *vals = v;
    return 0;
}
