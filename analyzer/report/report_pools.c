/*
 * report_pools.c — peaks and fragmentation per pool: the default pool and
 * each private pool (CUDA graph pool, MemPool) of the run, read from the
 * run database's segments, blocks and allocated-peak layout with SQL, since
 * the analyzer's meta keeps only the private pools' totals. Printed only
 * when the run has a private pool.
 *
 * Per pool: segments (created, and still there at the end), peak and final
 * reserved (segment sizes swept in event order), peak and final allocated
 * (block sizes; a block counts until its free is requested, as PyTorch's
 * allocated_bytes), and at the run's allocated peak the free bytes in the
 * pool's segments, the largest free block and 1 − largest / free. A block
 * belongs to the segment that held its address when it was allocated.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"

#include "report_model.h"
#include "rundb_internal.h"

static rep_pool_t *pool_of(rep_t *r, int64_t id)
{
    for (int i = 0; i < r->npools; i++)
        if (r->pools[i].id == id)
            return &r->pools[i];
    return NULL;
}

/* Run sql (rows: pool id, then up to three integers) into the fields at
 * byte offsets off[0..n-1] of each pool. */
static int fill(fsc_rundb_t *db, rep_t *r, const char *table, const char *sql, const size_t *off,
                int n)
{
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, table, sql, &st);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        rep_pool_t *p = pool_of(r, sqlite3_column_int64(st, 0));
        for (int k = 0; p != NULL && k < n; k++)
            *(int64_t *)((char *)p + off[k]) =
                sqlite3_column_type(st, k + 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, k + 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fsc__rundb_fail(db, table);
}

/* The running sum of d per pool p in event order s: its highest value. */
#define SWEEP(events)                                                                            \
    "WITH ev AS (" events "), r AS (SELECT p, sum(d) OVER (PARTITION BY p ORDER BY s, d ROWS " \
    "UNBOUNDED PRECEDING) AS cur FROM ev) SELECT p, max(cur) FROM r GROUP BY p"
#define BLOCK_POOL                                                                               \
    "SELECT b.alloc_seq AS a, b.free_requested_seq AS f, b.size AS sz, s.pool_id AS p "         \
    "FROM blocks b JOIN segments s ON s.addr = b.segment AND s.created_seq <= b.alloc_seq AND " \
    "(s.freed_seq IS NULL OR s.freed_seq > b.alloc_seq)"

int fsc__report_pools_load(fsc_rundb_t *db, rep_t *r)
{
    r->pools = NULL;
    r->npools = 0;
    sqlite3_stmt *st = NULL;
    int rc = fsc__rundb_prepare(db, "segments",
                                "SELECT coalesce(pool_id, 0), count(*), sum(freed_seq IS NULL), "
                                "sum(CASE WHEN freed_seq IS NULL THEN size ELSE 0 END) "
                                "FROM segments GROUP BY 1 ORDER BY 1",
                                &st);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    int private = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        rep_pool_t *n = realloc(r->pools, (size_t)(r->npools + 1) * sizeof *n);
        if (n == NULL) {
            sqlite3_finalize(st);
            return FSC_ENOMEM;
        }
        r->pools = n;
        rep_pool_t *p = &r->pools[r->npools++];
        memset(p, 0, sizeof *p);
        p->id = sqlite3_column_int64(st, 0);
        p->segments = sqlite3_column_int64(st, 1);
        p->segments_end = sqlite3_column_int64(st, 2);
        p->final_reserved = sqlite3_column_int64(st, 3);
        private |= p->id != 0;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fsc__rundb_fail(db, "segments");
    if (!private) {
        free(r->pools);
        r->pools = NULL;
        r->npools = 0;
        return 0;
    }
    static const size_t o_peak_res[] = {offsetof(rep_pool_t, peak_reserved)};
    static const size_t o_peak_alloc[] = {offsetof(rep_pool_t, peak_allocated)};
    static const size_t o_final_alloc[] = {offsetof(rep_pool_t, final_allocated)};
    static const size_t o_free[] = {offsetof(rep_pool_t, free_at_peak),
                                    offsetof(rep_pool_t, largest_free_at_peak)};
    if ((rc = fill(db, r, "segments",
                   SWEEP("SELECT pool_id AS p, created_seq AS s, size AS d FROM segments "
                         "UNION ALL SELECT pool_id, freed_seq, -size FROM segments "
                         "WHERE freed_seq IS NOT NULL"),
                   o_peak_res, 1)) != 0 ||
        (rc = fill(db, r, "blocks",
                   "WITH bp AS (" BLOCK_POOL "), ev AS (SELECT p, a AS s, sz AS d FROM bp "
                   "UNION ALL SELECT p, f, -sz FROM bp WHERE f IS NOT NULL), r AS (SELECT p, "
                   "sum(d) OVER (PARTITION BY p ORDER BY s, d ROWS UNBOUNDED PRECEDING) AS cur "
                   "FROM ev) SELECT p, max(cur) FROM r GROUP BY p",
                   o_peak_alloc, 1)) != 0 ||
        (rc = fill(db, r, "blocks",
                   "WITH bp AS (" BLOCK_POOL ") SELECT p, sum(sz) FROM bp WHERE f IS NULL "
                   "GROUP BY p",
                   o_final_alloc, 1)) != 0 ||
        (rc = fill(db, r, "layout",
                   "SELECT s.pool_id, sum(l.size), max(l.size) FROM layout l "
                   "JOIN layout_snapshots ls ON ls.id = l.snapshot AND ls.kind = 'peak_allocated' "
                   "JOIN segments s ON s.addr = l.segment AND s.created_seq <= ls.seq AND "
                   "(s.freed_seq IS NULL OR s.freed_seq > ls.seq) "
                   "WHERE l.state = 'free' GROUP BY s.pool_id",
                   o_free, 2)) != 0)
        return rc;
    return 0;
}

void fsc__report_pools_free(rep_t *r)
{
    free(r->pools);
    r->pools = NULL;
    r->npools = 0;
}

static const char *pool_name(int64_t id, char *buf, size_t cap)
{
    if (id == 0)
        snprintf(buf, cap, "default");
    else
        snprintf(buf, cap, "(%llu, %llu)", (unsigned long long)((uint64_t)id >> 32),
                 (unsigned long long)((uint64_t)id & 0xffffffffu));
    return buf;
}

static double ext_frag(const rep_pool_t *p)
{
    return p->free_at_peak > 0 ? 1.0 - (double)p->largest_free_at_peak / (double)p->free_at_peak
                               : 0.0;
}

#define SZ(i, v) fsc_size_format((uint64_t)(v), b[i], sizeof b[i])

void fsc__report_pools_text(const rep_t *r, FILE *f)
{
    if (r->npools == 0)
        return;
    char b[6][32], n[48];
    fprintf(f, "\npools (the default pool and each private pool: CUDA graph pools, MemPools)\n");
    fprintf(f, "  %-22s %9s %14s %14s %14s %13s %13s %8s\n", "pool", "segments", "peak reserved",
            "peak allocated", "final reserved", "free at peak", "largest free", "ext.frag");
    for (int i = 0; i < r->npools; i++) {
        const rep_pool_t *p = &r->pools[i];
        fprintf(f, "  %-22s %9lld %14s %14s %14s %13s %13s %8.3f\n", pool_name(p->id, n, sizeof n),
                (long long)p->segments, SZ(0, p->peak_reserved), SZ(1, p->peak_allocated),
                SZ(2, p->final_reserved), SZ(3, p->free_at_peak), SZ(4, p->largest_free_at_peak),
                ext_frag(p));
    }
    fprintf(f, "  (free at the allocated peak. A snapshot's segments freed before it was taken\n"
               "  read as the default pool's; `fragscope whatif` infers their pools.)\n");
}

void fsc__report_pools_markdown(const rep_t *r, FILE *f)
{
    if (r->npools == 0)
        return;
    char b[6][32], n[48];
    fprintf(f, "\n### Pools\n\n| pool | segments | peak reserved | peak allocated | final reserved "
               "| free at the allocated peak | largest free | ext. frag |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r->npools; i++) {
        const rep_pool_t *p = &r->pools[i];
        fprintf(f, "| %s | %lld | %s | %s | %s | %s | %s | %.3f |\n",
                pool_name(p->id, n, sizeof n), (long long)p->segments, SZ(0, p->peak_reserved),
                SZ(1, p->peak_allocated), SZ(2, p->final_reserved), SZ(3, p->free_at_peak),
                SZ(4, p->largest_free_at_peak), ext_frag(p));
    }
}

void fsc__report_pools_json(const rep_t *r, cJSON *root)
{
    cJSON *a = cJSON_AddArrayToObject(root, "pools");
    char n[48];
    for (int i = 0; i < r->npools; i++) {
        const rep_pool_t *p = &r->pools[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pool", pool_name(p->id, n, sizeof n));
        cJSON_AddNumberToObject(o, "pool_id", (double)p->id);
        cJSON_AddNumberToObject(o, "segments", (double)p->segments);
        cJSON_AddNumberToObject(o, "segments_at_end", (double)p->segments_end);
        cJSON_AddNumberToObject(o, "peak_reserved_bytes", (double)p->peak_reserved);
        cJSON_AddNumberToObject(o, "peak_allocated_bytes", (double)p->peak_allocated);
        cJSON_AddNumberToObject(o, "final_reserved_bytes", (double)p->final_reserved);
        cJSON_AddNumberToObject(o, "final_allocated_bytes", (double)p->final_allocated);
        cJSON_AddNumberToObject(o, "free_at_peak_bytes", (double)p->free_at_peak);
        cJSON_AddNumberToObject(o, "largest_free_at_peak_bytes", (double)p->largest_free_at_peak);
        cJSON_AddNumberToObject(o, "external_frag_at_peak", ext_frag(p));
        cJSON_AddItemToArray(a, o);
    }
}
