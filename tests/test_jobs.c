/*
 * test_jobs.c — job databases: analyze of several inputs and merge, on the
 * simulated four-rank job of tests/data/jobs/ (different peaks per rank)
 * and the two-device snapshot of tests/data/gpu/. Each run of a job must
 * read exactly as the single-input analyze of its input; merging twice
 * must add nothing; runs are renumbered after those already there; a bad
 * input fails the command with one line naming it and leaves no file; two
 * runs claiming one rank and device are kept and flagged;
 * export --table writes any table of them as CSV, with formula-like text
 * cells neutralised; names that are not UTF-8 reach every JSON and CSV
 * writer as U+FFFD.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "fsc/utf8.h"
#include "fsc_test.h"

#define NRANKS 4

static char g_trace[NRANKS][1024], g_single[NRANKS][1024], g_job[1024];
static char g_out[16384];

static int64_t q_int(const char *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t q_int(const char *db, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "\n%s: %s: %s\n", db, sql, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static int64_t summary(const char *db, int64_t run, const char *key)
{
    return q_int(db, "SELECT value FROM summary WHERE run = %lld AND key = '%s'", (long long)run,
                 key);
}

/* Files in the scratch directory whose name starts with prefix. */
static int leftovers(const char *prefix)
{
    DIR *d = opendir(fsc_test_tmpdir());
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static const char *const k_keys[] = {"events", "peak_allocated_bytes", "peak_reserved_bytes",
                                     "num_ooms", "segments_created", "leaked_bytes"};

static void setup(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    for (int r = 0; r < NRANKS; r++) {
        char name[64];
        snprintf(g_trace[r], sizeof g_trace[r], "%s", fsc_test_data("jobs/train_rank0.fstrace"));
        g_trace[r][strlen(g_trace[r]) - strlen("0.fstrace")] = (char)('0' + r);
        snprintf(name, sizeof name, "single%d.db", r);
        snprintf(g_single[r], sizeof g_single[r], "%s", fsc_test_path(name));
        CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' -o '%s'",
                                          fsc_test_fragscope(), g_trace[r], g_single[r]),
                              0);
    }
    snprintf(g_job, sizeof g_job, "%s", fsc_test_path("job.db"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' '%s' '%s' '%s' -o '%s'"
                                      " -j 2", fsc_test_fragscope(), g_trace[0], g_trace[1],
                                      g_trace[2], g_trace[3], g_job),
                          0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "4 runs from 4 inputs"));
}

/* Every run of the job is its input's single-input analysis, row for row. */
static void test_analyze_many(void)
{
    setup();
    CU_ASSERT_EQUAL(q_int(g_job, "SELECT count(*) FROM runs"), NRANKS);
    int64_t peaks[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        CU_ASSERT_EQUAL(q_int(g_job, "SELECT rank FROM runs WHERE run = %d", r), r);
        CU_ASSERT_EQUAL(q_int(g_job, "SELECT kind = 'trace' AND device IS NULL FROM runs"
                                     " WHERE run = %d", r), 1);
        for (size_t k = 0; k < sizeof k_keys / sizeof k_keys[0]; k++)
            CU_ASSERT_EQUAL(summary(g_job, r, k_keys[k]), summary(g_single[r], 0, k_keys[k]));
        static const char *const tables[] = {"blocks", "events_other", "segments", "timeline",
                                             "ooms", "layout", "tags", "meta", "suggestions"};
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
            CU_ASSERT_EQUAL(q_int(g_job, "SELECT count(*) FROM %s WHERE run = %d", tables[t], r),
                            q_int(g_single[r], "SELECT count(*) FROM %s", tables[t]));
        CU_ASSERT_EQUAL(q_int(g_job, "SELECT sum(size * (alloc_seq %% 7)) FROM blocks"
                                     " WHERE run = %d", r),
                        q_int(g_single[r], "SELECT sum(size * (alloc_seq %% 7)) FROM blocks"));
        peaks[r] = summary(g_job, r, "peak_reserved_bytes");
    }
    /* the fixture's ranks differ, and rank 3 hit its cap */
    CU_ASSERT(peaks[0] != peaks[1] && peaks[1] != peaks[2] && peaks[2] != peaks[3]);
    CU_ASSERT_EQUAL(peaks[0], 18798870528);
    CU_ASSERT_EQUAL(summary(g_job, 3, "num_ooms"), 1);
    CU_ASSERT(q_int(g_job, "SELECT count(*) FROM suggestions WHERE run = 3") > 0);
    CU_ASSERT_EQUAL(leftovers("job.db."), 0);

    /* the reader shows one run at a time */
    fsc_rundb_t *db = NULL;
    fsc_err_t err = {0, ""};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(g_job, &db, &err), 0);
    int64_t v = 0, n = 0;
    CU_ASSERT_EQUAL(fsc_rundb_select_run(db, 2), 0);
    CU_ASSERT_EQUAL(fsc_rundb_summary_int(db, "peak_reserved_bytes", 0, &v), 0);
    CU_ASSERT_EQUAL(v, peaks[2]);
    CU_ASSERT_EQUAL(fsc_rundb_count(db, "blocks", &n), 0);
    CU_ASSERT_EQUAL(n, q_int(g_single[2], "SELECT count(*) FROM blocks"));
    fsc_rundb_close(db);
}

/* merge of the single-run databases gives the same job; merging again adds
 * nothing. */
static void test_merge_idempotent(void)
{
    setup();
    char merged[1024];
    snprintf(merged, sizeof merged, "%s", fsc_test_path("merged.db"));
    for (int pass = 0; pass < 2; pass++) {
        CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' merge '%s' '%s' '%s' '%s' -o '%s'",
                                    fsc_test_fragscope(), g_single[0], g_single[1], g_single[2],
                                    g_single[3], merged),
                        0);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, pass == 0 ? "4 runs (0 there before, 4 added, 0 "
                                                       : "4 runs (4 there before, 0 added, 4 "));
        static const char *const tables[] = {"runs", "blocks", "events_other", "meta", "summary",
                                             "tags", "tag_frames", "layout", "timeline_frag",
                                             "suggestions", "pytorch_meta"};
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
            CU_ASSERT_EQUAL(q_int(merged, "SELECT count(*) FROM %s", tables[t]),
                            q_int(g_job, "SELECT count(*) FROM %s", tables[t]));
    }
    CU_ASSERT_EQUAL(leftovers("merged.db."), 0);
}

/* Runs of later inputs follow those already there; a multi-device snapshot
 * is one run per device, each as --device N analyzes it. */
static void test_renumber_and_devices(void)
{
    setup();
    char two[1024], dev1[1024], bigger[1024];
    snprintf(two, sizeof two, "%s", fsc_test_path("two.db"));
    snprintf(dev1, sizeof dev1, "%s", fsc_test_path("dev1.db"));
    snprintf(bigger, sizeof bigger, "%s", fsc_test_path("bigger.db"));
    const char *snap = fsc_test_data("gpu/two_devices.pickle");
    const char *bin = fsc_test_fragscope();
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' -o '%s'", bin, snap,
                                      two), 0);
    CU_ASSERT_EQUAL(q_int(two, "SELECT count(*) FROM runs"), 2);
    CU_ASSERT_EQUAL(q_int(two, "SELECT count(*) FROM runs WHERE device = run"
                               " AND kind = 'snapshot'"), 2);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' --device 1 -o '%s'",
                                      bin, snap, dev1), 0);
    CU_ASSERT_EQUAL(q_int(dev1, "SELECT count(*) FROM runs"), 1);
    CU_ASSERT_EQUAL(summary(two, 1, "peak_allocated_bytes"), summary(dev1, 0, "peak_allocated_bytes"));
    CU_ASSERT_EQUAL(summary(two, 1, "peak_allocated_bytes"), 25165824);
    CU_ASSERT_EQUAL(summary(two, 0, "peak_allocated_bytes"), 6061770240);

    /* job (4 runs) + two devices, then a schema-1 file: runs 0..6 */
    const char *v1 = fsc_test_viewer_db("v1.db", "small.sql");
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' merge '%s' '%s' '%s' -o '%s'", bin, g_job,
                                two, v1, bigger), 0);
    CU_ASSERT_EQUAL(q_int(bigger, "SELECT count(*) || max(run) FROM runs"), 76);
    CU_ASSERT_EQUAL(q_int(bigger, "SELECT device FROM runs WHERE run = 5"), 1);
    CU_ASSERT_EQUAL(summary(bigger, 5, "peak_allocated_bytes"), 25165824);
    CU_ASSERT_EQUAL(summary(bigger, 3, "num_ooms"), 1);
    CU_ASSERT_EQUAL(summary(bigger, 6, "peak_allocated_bytes"), 35653632);
    CU_ASSERT_EQUAL(q_int(bigger, "SELECT count(*) FROM meta WHERE key = 'schema_version'"
                                  " AND value = %d", FSC_RUNDB_SCHEMA_VERSION), 7);
    /* the schema-1 run's rows, with its ids as they were */
    CU_ASSERT_EQUAL(q_int(bigger, "SELECT count(*) FROM ooms WHERE run = 6 AND id = 0"), 1);
}

/* One bad input fails the whole command: one line naming it, exit 2, no
 * output and no temporary left. */
static void test_bad_input(void)
{
    setup();
    char junk[1024], out[1024];
    snprintf(junk, sizeof junk, "%s", fsc_test_path("junk.fstrace"));
    snprintf(out, sizeof out, "%s", fsc_test_path("bad.db"));
    FILE *f = fopen(junk, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("this is not a trace, nor a snapshot, nor a database\n", f);
    fclose(f);
    const char *bin = fsc_test_fragscope();
    const char *cmds[2][1] = {{"analyze"}, {"merge"}};
    for (int k = 0; k < 2; k++) {
        int rc = fsc_test_sh(g_out, sizeof g_out, "'%s' %s '%s' '%s' '%s' -o '%s' 2>&1 >/dev/null",
                             bin, cmds[k][0], k == 0 ? g_trace[0] : g_single[0], junk,
                             k == 0 ? g_trace[1] : g_single[1], out);
        CU_ASSERT_EQUAL(rc, 2);
        CU_ASSERT_EQUAL(fsc_test_count(g_out, "\n"), 1);
        char want[1200];
        snprintf(want, sizeof want, "fragscope: %s: ", junk);
        if (strncmp(g_out, want, strlen(want)) != 0) {
            fprintf(stderr, "\n%s: %s", cmds[k][0], g_out);
            CU_FAIL("the message names the bad input");
        }
        CU_ASSERT_FALSE(fsc_test_file_exists(out));
        CU_ASSERT_EQUAL(leftovers("bad.db"), 0);
    }
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' '%s' --rank 3 -o '%s'", bin,
                                g_trace[0], g_trace[1], out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "--rank applies to one input only"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' merge -o '%s'", bin, out), 2);
    /* --rank names the rank of one input */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' --rank 12 -o '%s'"
                                " --no-suggest", bin, g_trace[0], out), 0);
    CU_ASSERT_EQUAL(q_int(out, "SELECT rank FROM runs"), 12);
}


/* export --table: RFC 4180 CSV of every run, run column first; an unknown
 * table lists the valid ones. */
static void test_export_csv(void)
{
    setup();
    const char *bin = fsc_test_fragscope();
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table runs --format csv '%s'"
                                " | cut -d, -f1-4,7", bin, g_job), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "run,rank,device,host,kind\r\n0,0,,,trace\r\n1,1,,,trace\r\n"
                                  "2,2,,,trace\r\n3,3,,,trace\r\n");
    /* every run's rows, with the view's run column */
    char csv[1024];
    snprintf(csv, sizeof csv, "%s", fsc_test_path("events.csv"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table events '%s' -o '%s'", bin,
                                g_job, csv), 0);
    int64_t events = q_int(g_job, "SELECT count(*) FROM events");
    char want[1200];
    snprintf(want, sizeof want, "wrote %s: %lld rows of events", csv, (long long)events);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, want));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "cut -d, -f1 '%s' | sort | uniq -c | wc -l",
                                csv), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "5\n"); /* the header and runs 0..3 */

    /* quoting: comma, quote, line break; NULL empty; reals exact */
    char db[1024];
    snprintf(db, sizeof db, "%s", fsc_test_path("quote.db"));
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, fsc_rundb_schema(), NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "INSERT INTO runs(run, kind) VALUES(0, 'trace');"
                                    "INSERT INTO meta(key, value) VALUES('schema_version', 2);"
                                    "INSERT INTO markers VALUES(0, 1, NULL, 'a,\"b\"' || char(10)"
                                    " || 'c'), (0, 2, 5, 'plain');"
                                    "INSERT INTO bins(run, bin, hit_rate) VALUES(0, 3, 0.1);",
                                 NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table markers '%s'", bin, db),
                    0);
    CU_ASSERT_STRING_EQUAL(g_out, "run,seq,time_ns,text\r\n0,1,,\"a,\"\"b\"\"\nc\"\r\n"
                                  "0,2,5,plain\r\n");
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table bins '%s' | cut -d, -f1,2,11",
                                bin, db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "run,bin,hit_rate\n0,3,0.10000000000000001\n"); /* cut drops the CR of the last field */
    /* a schema-1 file: run 0 in front */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table markers '%s' | head -2",
                                bin, fsc_test_viewer_db("v1x.db", "small.sql")), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "run,seq,time_ns,text\r\n0,0,0,step 1\r\n");
    /* unknown table: one line listing the valid ones, exit 2, no file */
    char bad[1024];
    snprintf(bad, sizeof bad, "%s", fsc_test_path("bad.csv"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table nope '%s' -o '%s'", bin,
                                db, bad), 2);
    CU_ASSERT_EQUAL(fsc_test_count(g_out, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "no table or view 'nope' (there are: bins, blocks,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "tag_paths, tag_stats, tags, timeline,"));
    CU_ASSERT_FALSE(fsc_test_file_exists(bad));
    CU_ASSERT_EQUAL(leftovers("bad.csv"), 0);
}

/* Text cells a spreadsheet would run as a formula (= + - @ tab CR at the
 * start) are written behind a single quote inside a quoted field; numbers,
 * negative ones included, stay numbers; bytes that are not UTF-8 become
 * U+FFFD. */
static void test_export_csv_neutral(void)
{
    const char *bin = fsc_test_fragscope();
    char db[1024];
    snprintf(db, sizeof db, "%s", fsc_test_path("neutral.db"));
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &h), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, fsc_rundb_schema(), NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(h, "INSERT INTO runs(run, kind) VALUES(0, 'trace');"
                                    "INSERT INTO meta(key, value) VALUES('schema_version', 2);"
                                    "INSERT INTO markers VALUES"
                                    " (0, 1, -5, '=HYPERLINK(\"x\")'), (0, 2, -7, '-2+3'),"
                                    " (0, 3, 4, '@SUM(1)'), (0, 4, 5, '+1'),"
                                    " (0, 5, 6, char(9) || 'tab'), (0, 6, 7, char(13) || 'cr'),"
                                    " (0, 7, 8, CAST(X'6261FF64' AS TEXT)), (0, 8, 9, 'a=b'),"
                                    " (0, 9, -1, '');"
                                    "INSERT INTO bins(run, bin, hit_rate) VALUES(0, 3, -0.5);",
                                 NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table markers '%s'", bin, db),
                    0);
    CU_ASSERT_STRING_EQUAL(g_out, "run,seq,time_ns,text\r\n"
                                  "0,1,-5,\"'=HYPERLINK(\"\"x\"\")\"\r\n"
                                  "0,2,-7,\"'-2+3\"\r\n"
                                  "0,3,4,\"'@SUM(1)\"\r\n"
                                  "0,4,5,\"'+1\"\r\n"
                                  "0,5,6,\"'\ttab\"\r\n"
                                  "0,6,7,\"'\rcr\"\r\n"
                                  "0,7,8,ba\xef\xbf\xbd" "d\r\n"
                                  "0,8,9,a=b\r\n"
                                  "0,9,-1,\r\n");
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' export --table bins '%s' | cut -d, -f1,2,11",
                                bin, db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "run,bin,hit_rate\n0,3,-0.5\n");
}

/* Frame and file names of a pickle that are not UTF-8 (lone surrogates as
 * pickle writes them, protocol 0's \ud800 escapes, a stray byte): every
 * JSON and CSV writer gives valid UTF-8 with U+FFFD in their place, and a
 * frame name that reads as a formula is neutralised in the CSV. */
static void test_names_not_utf8(void)
{
#define R "\xef\xbf\xbd"
    const char *bin = fsc_test_fragscope();
    static const char *const k_in[] = {"names.pickle", "names.p0.pickle", "names_raw.pickle"};
    for (size_t i = 0; i < sizeof k_in / sizeof k_in[0]; i++) {
        char in[1024], db[1024], tr[1024], rel[64];
        snprintf(rel, sizeof rel, "pytorch/%s", k_in[i]);
        /* a file name that is not UTF-8 either: check's run labels name it */
        snprintf(in, sizeof in, "%s", fsc_test_path(k_in[i]));
        memcpy(strrchr(in, '/') + 1, "n\xff-", 3); /* n?-es.pickle ... */
        CU_ASSERT_EQUAL_FATAL(fsc_test_sh(NULL, 0, "cp '%s' '%s'", fsc_test_data(rel), in), 0);
        snprintf(db, sizeof db, "%s.db", fsc_test_path(k_in[i]));
        snprintf(tr, sizeof tr, "%s.fstrace", fsc_test_path(k_in[i]));
        CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' -o '%s'"
                                          " --no-suggest", bin, in, db), 0);
        CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' import '%s' -o '%s'", bin,
                                          in, tr), 0);
        const char *const cmds[] = {"'%s' report '%s' --format json", "'%s' export --table tag_frames '%s'",
                                    "'%s' export --table tag_paths '%s'",
                                    "'%s' check '%s' --format json --max-peak-reserved 1KiB",
                                    "'%s' info '%s' --format json",
                                    "'%s' whatif '%s' --config '' --format json"};
        for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
            const char *arg = k < 4 ? db : tr;
            int st = fsc_test_sh(g_out, sizeof g_out, cmds[k], bin, arg);
            CU_ASSERT_EQUAL(st, k == 3 ? 1 : 0);
            size_t bad = fsc__utf8_invalid(g_out, strlen(g_out));
            const char *want = k == 3 ? "/n" R "-es" : "bad" R R R "name.py";
            if (bad != 0 || strstr(g_out, want) == NULL)
                fprintf(stderr, "\n  %s / command %zu: %zu ill-formed, output: %.300s\n",
                        k_in[i], k, bad, g_out);
            CU_ASSERT_EQUAL(bad, 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(g_out, want));
            if (k == 1) {
                CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"'=HYPERLINK(\"\"http://x.invalid/\"\","));
                CU_ASSERT_PTR_NOT_NULL(strstr(g_out, ",\"'@SUM(1+1)\","));
                CU_ASSERT_PTR_NOT_NULL(strstr(g_out, ",\"'-2+3\","));
                CU_ASSERT_PTR_NOT_NULL(strstr(g_out, i == 2 ? ",lone" R R "(nd," : ",lone" R R R "end,"));
            }
        }
        /* the page's embedded JSON and its HTML */
        char html[1100];
        snprintf(html, sizeof html, "%s.html", db);
        CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' view '%s' -o '%s'", bin, db, html), 0);
        size_t n = 0;
        char *page = fsc_test_slurp(html, &n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(page);
        CU_ASSERT_EQUAL(fsc__utf8_invalid(page, n), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(page, "bad\\ufffd\\ufffd\\ufffdname.py"));
        free(page);
    }
#undef R
}

/* Two runs that both claim rank 0 on device 0 are merged (both kept) with a
 * warning on stderr naming both input files, meta merge.duplicate_rank on
 * the second, and the job report's duplicate_ranks; distinct ranks merge
 * silently. */
static void test_merge_duplicate_rank(void)
{
    const char *bin = fsc_test_fragscope();
    char a[1024], b[1024], c[1024], job[1024], job2[1024];
    snprintf(a, sizeof a, "%s", fsc_test_path("dup_a.db"));
    snprintf(b, sizeof b, "%s", fsc_test_path("dup_b.db"));
    snprintf(c, sizeof c, "%s", fsc_test_path("dup_c.db"));
    snprintf(job, sizeof job, "%s", fsc_test_path("dup_job.db"));
    snprintf(job2, sizeof job2, "%s", fsc_test_path("nodup_job.db"));
    static const char *const k_snap[] = {"pytorch/tiny.p4.pickle", "pytorch/tiny.p2.pickle",
                                         "pytorch/tiny.p5.pickle"};
    const char *dbs[] = {a, b, c};
    const char *ranks[] = {"0", "0", "1"};
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "'%s' analyze '%s' --rank %s -o '%s'"
                                          " --no-suggest", bin, fsc_test_data(k_snap[i]),
                                          ranks[i], dbs[i]), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' merge '%s' '%s' -o '%s' 2>&1 >/dev/null",
                                bin, a, b, job), 0);
    char want[4096];
    snprintf(want, sizeof want, "fragscope: warning: rank 0 on device 0 twice: run 0 from %s (%s)"
             " and run 1 from %s (%s); both kept", a, fsc_test_data(k_snap[0]), b,
             fsc_test_data(k_snap[1]));
    if (strstr(g_out, want) == NULL)
        fprintf(stderr, "\n  got: %s\n  want: %s\n", g_out, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, want));
    CU_ASSERT_EQUAL(fsc_test_count(g_out, "\n"), 1);
    CU_ASSERT_EQUAL(q_int(job, "SELECT count(*) FROM runs"), 2);
    CU_ASSERT_EQUAL(q_int(job, "SELECT run FROM meta WHERE key = 'merge.duplicate_rank'"), 1);
    CU_ASSERT_EQUAL(q_int(job, "SELECT count(*) FROM meta WHERE key = 'merge.duplicate_rank'"), 1);
    /* the job report says it too, in JSON and in text */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' report '%s' --format json", bin, job), 0);
    cJSON *j = cJSON_Parse(g_out);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "job"), "duplicate_ranks");
    CU_ASSERT_TRUE_FATAL(cJSON_IsArray(d) && cJSON_GetArraySize(d) == 1);
    const cJSON *d0 = cJSON_GetArrayItem(d, 0);
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(d0, "rank")->valuedouble, 0);
    CU_ASSERT_EQUAL(cJSON_GetObjectItemCaseSensitive(d0, "device")->valuedouble, 0);
    const cJSON *rr = cJSON_GetObjectItemCaseSensitive(d0, "runs");
    CU_ASSERT_EQUAL(cJSON_GetArrayItem(rr, 0)->valuedouble, 0);
    CU_ASSERT_EQUAL(cJSON_GetArrayItem(rr, 1)->valuedouble, 1);
    cJSON_Delete(j);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' report '%s'", bin, job), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "warning: rank 0 on device 0 twice: run 0 ("));
    /* merging again adds nothing and warns of nothing new */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' merge '%s' '%s' -o '%s' 2>&1 >/dev/null",
                                bin, a, b, job), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "");
    /* distinct ranks: silent, and none listed */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' merge '%s' '%s' -o '%s' 2>&1 >/dev/null",
                                bin, a, c, job2), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "");
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out, "'%s' report '%s' --format json", bin, job2), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"duplicate_ranks\":\t[]"));
}

static const fsc_test_case_t k_tests[] = {
    {"analyze of four ranks: each run as its own analysis", test_analyze_many},
    {"merge: the same job, and idempotent", test_merge_idempotent},
    {"runs renumbered; one run per device", test_renumber_and_devices},
    {"a bad input fails the command, nothing written", test_bad_input},
    {"merge: two runs of rank 0 on device 0 are flagged", test_merge_duplicate_rank},
    {"export --table as CSV", test_export_csv},
    {"export --table: formula cells neutralised, numbers kept", test_export_csv_neutral},
    {"names that are not UTF-8: JSON, CSV and the page get U+FFFD", test_names_not_utf8},
    {NULL, NULL},
};

FSC_TEST_MAIN("jobs", k_tests)
