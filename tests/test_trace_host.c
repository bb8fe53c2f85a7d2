/*
 * test_trace_host.c — the host of a run, from the recorder to the job
 * report: the trace header carries the recording machine's name (format
 * 2.3), bounded like the format's other strings; `info` prints it; analyze
 * stores it in runs.host and meta.host (or takes --host for a snapshot,
 * which records none); the job report's run label names it; traces of
 * older versions read with no host.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/recorder.h"
#include "fsc_test.h"
#include "trace_format.h"

static char g_out[16384];
static char g_host[FSC__MAX_HOST_BYTES + 2];

/* This machine's name as the recorder takes it (empty when unusable). */
static const char *this_host(void)
{
    if (gethostname(g_host, sizeof g_host) != 0)
        g_host[0] = '\0';
    g_host[sizeof g_host - 1] = '\0';
    return g_host;
}

/* Open a recorder with header host (hdr NULL: no header), write one event,
 * close; returns the open's code. */
static int record(const char *path, const fsc_trace_header_t *hdr)
{
    fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
    o.synchronous = 1;
    fsc_recorder_t *r = NULL;
    fsc_err_t err;
    int rc = fsc_recorder_open(path, hdr, &o, &r, &err);
    if (rc != 0)
        return rc;
    fsc_event_t e = {.type = FSC_EV_MARKER, .time_ns = 1, .text = "m", .text_len = 1};
    CU_ASSERT_EQUAL(fsc_recorder_write(r, &e), 0);
    CU_ASSERT_EQUAL(fsc_recorder_close(r), 0);
    return 0;
}

/* The header's host of a trace, copied into buf ("(null)" when none). */
static const char *read_host(const char *path, char *buf, size_t n)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    CU_ASSERT_EQUAL_FATAL(fsc_trace_open(path, &r, &err), 0);
    const fsc_trace_header_t *h = fsc_trace_header(r);
    CU_ASSERT_EQUAL(h->version_major, 2);
    CU_ASSERT_EQUAL(h->version_minor, 4);
    snprintf(buf, n, "%s", h->host != NULL ? h->host : "(null)");
    fsc_trace_close(r);
    return buf;
}

static void test_recorder_writes_host(void)
{
    char b[300];
    const char *p = fsc_test_path("default.fstrace");
    CU_ASSERT_EQUAL_FATAL(record(p, NULL), 0);
    const char *want = this_host()[0] ? g_host : "(null)";
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), want);
    /* the producer's own name, and none at all (an import) */
    fsc_trace_header_t h = {.rank = -1, .host = "gpu-node-12"};
    CU_ASSERT_EQUAL_FATAL(record(p, &h), 0);
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), "gpu-node-12");
    h.host = "";
    CU_ASSERT_EQUAL_FATAL(record(p, &h), 0);
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), "(null)");
    /* FRAGSCOPE_HOST overrides the machine's name; empty or unusable: none */
    setenv("FRAGSCOPE_HOST", "node0042", 1);
    CU_ASSERT_EQUAL_FATAL(record(p, NULL), 0);
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), "node0042");
    setenv("FRAGSCOPE_HOST", "", 1);
    CU_ASSERT_EQUAL_FATAL(record(p, NULL), 0);
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), "(null)");
    setenv("FRAGSCOPE_HOST", "bad\tname", 1);
    CU_ASSERT_EQUAL_FATAL(record(p, NULL), 0);
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), "(null)");
    unsetenv("FRAGSCOPE_HOST");
    /* 255 bytes is the bound */
    char longest[257];
    memset(longest, 'h', 255);
    longest[255] = '\0';
    h.host = longest;
    CU_ASSERT_EQUAL_FATAL(record(p, &h), 0);
    CU_ASSERT_STRING_EQUAL(read_host(p, b, sizeof b), longest);
}

static void test_writer_refuses_hostile_host(void)
{
    char longer[257];
    memset(longer, 'h', 256);
    longer[256] = '\0';
    const char *bad[] = {longer, "node\n7", "node\x1b[2J", "a\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *p = fsc_test_path("hostile.fstrace");
        remove(p);
        fsc_trace_header_t h = {.rank = -1, .host = bad[i]};
        fsc_recorder_opts_t o = FSC_RECORDER_OPTS_DEFAULT;
        o.synchronous = 1;
        fsc_recorder_t *r = NULL;
        fsc_err_t err;
        CU_ASSERT_EQUAL(fsc_recorder_open(p, &h, &o, &r, &err), FSC_EINVAL);
        CU_ASSERT_PTR_NULL(r);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "host name unusable"));
        CU_ASSERT_FALSE(fsc_test_file_exists(p)); /* nothing half-written */
    }
}

/* A 2.3 trace whose header's host field is replaced by the given bytes
 * (varint length + bytes, written here) and whose minor is `minor`, with a
 * valid CRC; returns fsc_trace_open's code and the host read. */
static int crafted(const uint8_t *field, size_t fn, uint16_t minor, char *host, size_t hn)
{
    const char *p = fsc_test_path("crafted.fstrace");
    fsc_trace_header_t h = {.rank = -1, .host = ""};
    CU_ASSERT_EQUAL_FATAL(record(p, &h), 0);
    size_t len = 0;
    uint8_t *img = (uint8_t *)fsc_test_slurp(p, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(img);
    size_t hl = 8 + fsc__get_le32(img + 4);
    CU_ASSERT_EQUAL_FATAL(img[hl - 5], 0); /* the empty host's length */
    uint8_t *out = malloc(len + fn + 16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    memcpy(out, img, hl - 5);
    memcpy(out + hl - 5, field, fn);
    size_t nhl = hl - 5 + fn + 4;
    out[8 + 10] = (uint8_t)minor;
    fsc__put_le32(out + 4, (uint32_t)(nhl - 8));
    fsc__put_le32(out + nhl - 4, fsc__crc32(out + 8, nhl - 12));
    memcpy(out + nhl, img + hl, len - hl);
    FILE *f = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(out, 1, nhl + len - hl, f), nhl + len - hl);
    fclose(f);
    free(out);
    free(img);
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    int rc = fsc_trace_open(p, &r, &err);
    if (rc == 0) {
        const fsc_trace_header_t *hh = fsc_trace_header(r);
        snprintf(host, hn, "%s", hh->host != NULL ? hh->host : "(null)");
        fsc_trace_close(r);
    } else {
        snprintf(host, hn, "%s", err.msg);
    }
    return rc;
}

static void test_reader_bounds_host(void)
{
    char got[FSC_ERR_MSG_MAX + 16];
    uint8_t f[300];
    /* a plain name */
    memcpy(f, "\x06node-3", 7);
    CU_ASSERT_EQUAL(crafted(f, 7, 3, got, sizeof got), 0);
    CU_ASSERT_STRING_EQUAL(got, "node-3");
    /* a newer minor's fields after the host are skipped */
    memcpy(f, "\x06node-3\x01\x02\x03", 10);
    CU_ASSERT_EQUAL(crafted(f, 10, 4, got, sizeof got), 0);
    CU_ASSERT_STRING_EQUAL(got, "node-3");
    /* a 2.2 header's bytes after the backend are not a host */
    CU_ASSERT_EQUAL(crafted(f, 7, 2, got, sizeof got), 0);
    CU_ASSERT_STRING_EQUAL(got, "(null)");
    /* hostile: control bytes, a NUL, 256 bytes, a length past the header */
    memcpy(f, "\x06node\n3", 7);
    CU_ASSERT_EQUAL(crafted(f, 7, 3, got, sizeof got), FSC_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(got, "malformed header"));
    memcpy(f, "\x06no\0de3", 7);
    CU_ASSERT_EQUAL(crafted(f, 7, 3, got, sizeof got), FSC_EFORMAT);
    f[0] = 0x80;
    f[1] = 0x02;
    memset(f + 2, 'h', 256);
    CU_ASSERT_EQUAL(crafted(f, 258, 3, got, sizeof got), FSC_EFORMAT);
    f[0] = 0x7f;
    memcpy(f + 1, "abc", 3);
    CU_ASSERT_EQUAL(crafted(f, 4, 3, got, sizeof got), FSC_EFORMAT);
}

/* One text value of a query on a database (empty when NULL or no row). */
static const char *query(const char *db, const char *sql, char *buf, size_t n)
{
    sqlite3 *h = NULL;
    buf[0] = '\0';
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return buf;
}

static void test_simulate_to_job_report(void)
{
    const char *bin = fsc_test_fragscope();
    if (this_host()[0] == '\0')
        return; /* a machine without a usable name records none */
    char t0[300], t1[300], db[300], q[800];
    snprintf(t0, sizeof t0, "%s", fsc_test_path("train_rank0.fstrace"));
    snprintf(t1, sizeof t1, "%s", fsc_test_path("train_rank1.fstrace"));
    snprintf(db, sizeof db, "%s", fsc_test_path("job.db"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out,
                                      "'%s' simulate --workload resnet --steps 1 -o '%s' && "
                                      "'%s' simulate --workload resnet --steps 1 -o '%s'",
                                      bin, t0, bin, t1), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' info '%s'", bin, t0), 0);
    snprintf(q, sizeof q, "  host       %s\n", g_host);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, q));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' info --format json '%s'", bin, t0), 0);
    snprintf(q, sizeof q, "\"host\":\t\"%s\"", g_host);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, q));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' '%s' -j 2 -o '%s'",
                                      bin, t0, t1, db), 0);
    char v[300];
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT group_concat(rank || ':' || host, ',') FROM "
                                     "(SELECT * FROM runs ORDER BY run)", v, sizeof v),
                           (snprintf(q, sizeof q, "0:%s,1:%s", g_host, g_host), q));
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT value FROM meta WHERE run = 1 AND key = 'host'", v,
                                 sizeof v), g_host);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' report '%s' --rank 1", bin, db), 0);
    snprintf(q, sizeof q, "rank 1 (host %s)", g_host);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, q));
}

static void test_snapshot_host_option(void)
{
    const char *bin = fsc_test_fragscope();
    const char *snap = fsc_test_data("pytorch/expandable.pickle");
    char db[300], v[300];
    snprintf(db, sizeof db, "%s", fsc_test_path("snap.db"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' --host node17 "
                                      "--no-suggest -o '%s'", bin, snap, db), 0);
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT group_concat(host) FROM runs", v, sizeof v),
                           "node17");
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT value FROM meta WHERE key = 'host'", v, sizeof v),
                           "node17");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' --no-suggest "
                                      "-o '%s'", bin, snap, db), 0);
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT count(*) FROM runs WHERE host IS NULL", v,
                                 sizeof v), query(db, "SELECT count(*) FROM runs", g_host,
                                                  sizeof g_host));
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT count(*) FROM meta WHERE key = 'host'", v, sizeof v),
                           "0");
    /* one input only, and a usable name */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' '%s' --host a -o '%s' "
                                "2>&1", bin, snap, snap, fsc_test_path("two.db")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--host applies to one input only (2 given)"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' --host '' -o '%s' 2>&1",
                                bin, snap, fsc_test_path("e.db")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--host needs a name of 1 to 255 bytes"));
    CU_ASSERT_FALSE(fsc_test_file_exists(fsc_test_path("e.db")));
}

static void test_old_traces_have_no_host(void)
{
    const char *bin = fsc_test_fragscope();
    char db[300], v[64];
    snprintf(db, sizeof db, "%s", fsc_test_path("old.db"));
    /* two 2.1 traces of the job fixture */
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' '%s' -o '%s'", bin,
                                      fsc_test_data("jobs/train_rank0.fstrace"),
                                      fsc_test_data("jobs/train_rank1.fstrace"), db), 0);
    CU_ASSERT_STRING_EQUAL(query(db, "SELECT count(*) FROM runs WHERE host IS NULL", v, sizeof v),
                           "2");
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' info '%s'", bin,
                                fsc_test_data("recorder_golden_v2_2.fstrace")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "  host       -\n"));
}

static const fsc_test_case_t k_tests[] = {
    {"recorder_writes_host", test_recorder_writes_host},
    {"writer_refuses_hostile_host", test_writer_refuses_hostile_host},
    {"reader_bounds_host", test_reader_bounds_host},
    {"simulate_to_job_report", test_simulate_to_job_report},
    {"snapshot_host_option", test_snapshot_host_option},
    {"old_traces_have_no_host", test_old_traces_have_no_host},
    {NULL, NULL},
};

FSC_TEST_MAIN("trace_host", k_tests)
