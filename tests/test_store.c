/*
 * test_store.c — the run database's writer (analyzer/store.c,
 * store_writer.c): the rows of the small tables met during a replay (tags,
 * markers, PyTorch keys, warnings, device samples) travel to the writer
 * thread with the bulk rows, in order, and come out exactly as given; a row
 * SQLite refuses stops the writer with a message naming its table, and the
 * rows queued behind it are dropped (their texts freed: the sanitizer build
 * checks that nothing leaks).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "fsc_test.h"
#include "fragscope/analyzer.h"
#include "store.h"

static char g_db[4096];

static fsc__op_t block_op(uint64_t seq)
{
    fsc__op_t op;
    memset(&op, 0, sizeof op);
    op.kind = FSC__OP_BLOCK;
    op.u.row.alloc_seq = seq;
    op.u.row.alloc_time = seq * 10;
    op.u.row.addr = 0x7f0000000000ull + seq * 512;
    op.u.row.size = 512;
    op.u.row.requested = 500;
    op.u.row.tag = 2;
    if (seq % 3 == 0) { /* freed, then merged with its neighbour */
        op.u.row.freed = op.u.row.completed = 1;
        op.u.row.freereq_seq = seq + 1;
        op.u.row.fc_seq = seq + 2;
        op.u.row.nmerges = 1;
        op.u.row.m_addr[0] = op.u.row.addr - 512;
        op.u.row.m_size[0] = 1024;
    }
    return op;
}

static int open_store(fsc__store_t **s)
{
    fsc_err_t err;
    fsc_err_clear(&err);
    snprintf(g_db, sizeof g_db, "%s", fsc_test_path("run.db"));
    remove(g_db);
    return fsc__store_open(g_db, g_db, s, &err);
}

static sqlite3 *open_db(void)
{
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

/* One row of a query as text, columns joined by '|' (NULL as "NULL"). */
static void one_row(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) {
        size_t n = 0;
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            n += (size_t)snprintf(out + n, cap - n, "%s%s", c ? "|" : "", t ? (const char *)t : "NULL");
            if (n >= cap)
                break;
        }
    }
    sqlite3_finalize(st);
}

static void small_rows_in_order(void)
{
    fsc__store_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(open_store(&s), 0);
    /* more bulk rows than one hand-over between them, so that the small
     * rows really queue behind bulk rows the thread has not written yet */
    uint64_t seq = 1;
    for (int i = 0; i < 600; i++) {
        fsc__op_t op = block_op(seq++);
        CU_ASSERT_EQUAL(fsc__store_op(s, &op), 0);
    }
    CU_ASSERT_EQUAL(fsc__store_tag(s, 0, 0, "", 0), 0);
    CU_ASSERT_EQUAL(fsc__store_tag(s, 1, 0, "train.py:42:step", 16), 0);
    CU_ASSERT_EQUAL(fsc__store_tag(s, 2, 1, "attention", 9), 0);
    CU_ASSERT_EQUAL(fsc__store_marker(s, 601, 6010, "STAGE forward", 13), 0);
    CU_ASSERT_EQUAL(fsc__store_marker(s, 602, 6020, NULL, 0), 0);
    CU_ASSERT_EQUAL(fsc__store_pymeta(s, 603, "entry", "{\"compile_context\":\"x\"}", 23), 0);
    CU_ASSERT_EQUAL(fsc__store_warning(s, 604, "device_traces[0][9]: skipped"), 0);
    CU_ASSERT_EQUAL(fsc__store_device_sample(s, 605, 6050, 1000, 5000, 3000), 0);
    CU_ASSERT_EQUAL(fsc__store_device_sample(s, 606, 6060, UINT64_MAX, 0, 3000), 0);
    for (int i = 0; i < 300; i++) {
        fsc__op_t op = block_op(seq++);
        CU_ASSERT_EQUAL(fsc__store_op(s, &op), 0);
    }
    CU_ASSERT_EQUAL_FATAL(fsc__store_commit(s), 0);
    fsc__store_destroy(s);

    sqlite3 *db = open_db();
    char row[512];
    /* every column of every row as given, whether written one row or
     * several to a statement: sums over rows 1..900, a third of them freed */
    one_row(db, "SELECT count(*), min(alloc_seq), max(alloc_seq), sum(size), sum(alloc_time_ns),"
                " sum(addr - 139637976727552), count(free_requested_seq),"
                " sum(free_completed_seq), sum(merge1_size), count(merge2_addr), sum(tag)"
                " FROM blocks", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "900|1|900|460800|4054500|207590400|300|136050|307200|0|1800");
    one_row(db, "SELECT group_concat(id || ':' || coalesce(parent, 'NULL') || ':' || name, ',')"
                " FROM (SELECT * FROM tags ORDER BY id)", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "0:NULL:,1:0:train.py:42:step,2:1:attention");
    one_row(db, "SELECT file, line, function FROM tag_frames WHERE tag = 1", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "train.py|42|step");
    one_row(db, "SELECT file, line, function FROM tag_frames WHERE tag = 2", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "NULL|NULL|NULL");
    one_row(db, "SELECT group_concat(seq || ':' || time_ns || ':' || text, ',')"
                " FROM (SELECT * FROM markers ORDER BY seq)", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "601:6010:STAGE forward,602:6020:");
    one_row(db, "SELECT seq, kind, json FROM pytorch_meta", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "603|entry|{\"compile_context\":\"x\"}");
    one_row(db, "SELECT seq, message FROM warnings", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "604|device_traces[0][9]: skipped");
    one_row(db, "SELECT group_concat(seq || ':' || coalesce(device_free, 'NULL') || ':' ||"
                " coalesce(device_total, 'NULL') || ':' || reserved || ':' ||"
                " coalesce(external_bytes, 'NULL'), ',') FROM (SELECT * FROM device_memory"
                " ORDER BY seq)", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "605:1000:5000:3000:1000,606:NULL:NULL:3000:NULL");
    sqlite3_close(db);
}

/* A block row with every optional part present or not, by seq. */
static fsc__op_t varied_block_op(uint64_t seq)
{
    fsc__op_t op = block_op(seq);
    fsc__brow_t *r = &op.u.row;
    r->stream = seq % 5;
    r->pool = (uint8_t)(seq % 2);
    r->segment = seq / 7;
    r->cache_hit = (uint8_t)(seq % 4 != 0);
    r->size = 512 * (1 + seq % 97);
    r->requested = r->size - seq % 511;
    r->freed = (uint8_t)(seq % 5 != 0);
    r->freereq_seq = seq + 3;
    r->freereq_time = seq * 10 + 3;
    r->free_tag = (uint32_t)(seq % 11);
    r->completed = (uint8_t)(r->freed && seq % 3 != 0);
    r->fc_seq = seq + 4;
    r->fc_time = seq * 10 + 4;
    r->split_size = seq % 6 == 0 ? 0 : r->size * 2;
    r->split_time = seq * 10 - 1;
    r->nmerges = (uint8_t)(seq % 3);
    for (int m = 0; m < 2; m++) {
        r->m_addr[m] = r->addr + 4096 * (uint64_t)(m + 1);
        r->m_size[m] = 1024 * (uint64_t)(m + 1);
        r->m_other[m] = seq + 100 + (uint64_t)m;
        r->m_time[m] = seq * 10 + 5 + (uint64_t)m;
    }
    return op;
}

/* More block rows than the writer's ring holds, so that runs of them wrap
 * round its end: every column of every row comes out as given, NULL where
 * a part is absent (sums and counts per column, computed here from the
 * rows themselves). */
static void block_rows_every_column(void)
{
    enum { N = 20000 };
    fsc__store_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(open_store(&s), 0);
    uint64_t sum[26] = {0}, cnt[26] = {0};
    for (uint64_t seq = 1; seq <= N; seq++) {
        fsc__op_t op = varied_block_op(seq);
        const fsc__brow_t *r = &op.u.row;
        uint64_t v[26] = {r->alloc_seq, r->alloc_time, r->addr, r->size, r->requested,
                          r->stream, r->pool, r->segment, r->tag,
                          (uint64_t)fsc_metric_bin(r->size), r->cache_hit, r->freereq_seq,
                          r->freereq_time, r->free_tag, r->fc_seq, r->fc_time, r->split_size,
                          r->split_time, r->m_addr[0], r->m_size[0], r->m_other[0],
                          r->m_time[0], r->m_addr[1], r->m_size[1], r->m_other[1],
                          r->m_time[1]};
        int has[26];
        for (int c = 0; c < 26; c++)
            has[c] = c < 11 || (c < 14 ? r->freed : c < 16 ? r->completed
                                : c < 18 ? r->split_size != 0 : c < 22 ? r->nmerges > 0
                                : r->nmerges > 1);
        for (int c = 0; c < 26; c++)
            if (has[c])
                sum[c] += v[c] % 1000003, cnt[c]++;
        CU_ASSERT_EQUAL(fsc__store_op(s, &op), 0);
        if (seq % 5000 == 0) /* a small row now and then breaks the runs */
            CU_ASSERT_EQUAL(fsc__store_warning(s, seq, "between runs"), 0);
    }
    CU_ASSERT_EQUAL_FATAL(fsc__store_commit(s), 0);
    fsc__store_destroy(s);

    static const char *const cols[26] = {
        "alloc_seq", "alloc_time_ns", "addr", "size", "requested", "stream", "pool",
        "segment", "tag", "bin", "cache_hit", "free_requested_seq", "free_requested_time_ns",
        "free_tag", "free_completed_seq", "free_completed_time_ns", "split_size",
        "split_time_ns", "merge1_addr", "merge1_size", "merge1_other", "merge1_time_ns",
        "merge2_addr", "merge2_size", "merge2_other", "merge2_time_ns"};
    sqlite3 *db = open_db();
    char sql[256], row[128], want[128];
    for (int c = 0; c < 26; c++) {
        snprintf(sql, sizeof sql,
                 "SELECT count(%s), coalesce(sum(%s %% 1000003), 0), count(*) FROM blocks",
                 cols[c], cols[c]);
        one_row(db, sql, row, sizeof row);
        snprintf(want, sizeof want, "%llu|%llu|%d", (unsigned long long)cnt[c],
                 (unsigned long long)sum[c], N);
        if (strcmp(row, want) != 0)
            fprintf(stderr, "\n  %s: %s, want %s", cols[c], row, want);
        CU_ASSERT_STRING_EQUAL(row, want);
    }
    one_row(db, "SELECT count(*) FROM warnings", row, sizeof row);
    CU_ASSERT_STRING_EQUAL(row, "4");
    sqlite3_close(db);
}

static void refused_row_stops_the_writer(void)
{
    fsc__store_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(open_store(&s), 0);
    fsc__op_t op = block_op(7);
    CU_ASSERT_EQUAL(fsc__store_op(s, &op), 0);
    CU_ASSERT_EQUAL(fsc__store_op(s, &op), 0); /* the same key again: refused when written */
    /* rows with texts queued behind it, some perhaps after the failure is
     * known: each is either refused at once or dropped by the writer */
    int refused = 0;
    for (int i = 0; i < 2000; i++) {
        char text[32];
        int n = snprintf(text, sizeof text, "marker %d", i);
        int rc = fsc__store_marker(s, 100 + (uint64_t)i, 0, text, (size_t)n);
        rc = rc ? rc : fsc__store_tag(s, 10 + (uint32_t)i, 0, text, (size_t)n);
        rc = rc ? rc : fsc__store_pymeta(s, 100 + (uint64_t)i, "entry", "{}", 2);
        rc = rc ? rc : fsc__store_warning(s, 100 + (uint64_t)i, text);
        if (rc != 0) {
            CU_ASSERT_EQUAL(rc, FSC_ESQLITE);
            refused = 1;
            break;
        }
    }
    CU_ASSERT_EQUAL(fsc__store_commit(s), FSC_ESQLITE);
    const fsc_err_t *e = fsc__store_err(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->msg, "run.db: blocks: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(e->msg, "UNIQUE constraint failed"));
    if (!refused)
        fprintf(stderr, "\n  (every row was queued before the writer failed)");
    fsc__store_destroy(s);

    /* the same key twice among block rows written several to a statement */
    CU_ASSERT_EQUAL_FATAL(open_store(&s), 0);
    for (uint64_t i = 1; i <= 100; i++) {
        fsc__op_t b = block_op(i == 37 ? 30 : i);
        CU_ASSERT_EQUAL(fsc__store_op(s, &b), 0);
    }
    CU_ASSERT_EQUAL(fsc__store_commit(s), FSC_ESQLITE);
    e = fsc__store_err(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->msg, "run.db: blocks: UNIQUE constraint failed"));
    fsc__store_destroy(s);
}

int main(void)
{
    static const fsc_test_case_t tests[] = {
        {"small rows queued with the bulk rows, in order", small_rows_in_order},
        {"block rows: every column, across the writer ring's end", block_rows_every_column},
        {"a refused row stops the writer, naming its table", refused_row_stops_the_writer},
        {NULL, NULL},
    };
    return fsc_test_run("store", tests);
}
