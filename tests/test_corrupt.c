/*
 * test_corrupt.c — damaged inputs through every command that reads a file.
 *
 * A valid trace (several chunks, tags, markers, an OOM), a pickle and a
 * JSON snapshot, a real PyTorch snapshot, and a run database are damaged by byte flips, truncations
 * and splices (a region cut out, repeated, or taken from another file), and
 * each damaged file goes through the commands that read it: info, analyze
 * (strict and lenient), export, whatif (configs, --verify, --suggest) and
 * import (strict and lenient) for traces and snapshots; report, check, diff
 * and view for databases. Every run must end with status 0 or 2 (1 too for
 * check, diff and whatif --verify, whose verdict may legitimately fail),
 * never by a signal, a sanitizer report or the 20 s timeout; on status 2
 * stderr is exactly one line, naming the damaged file once; no temporary
 * file is left behind, nor any output file when the command failed (and an
 * older output file in its place is left as it was). The mutations are drawn from a fixed seed
 * (FSC_CORRUPT_SEED overrides it, FSC_CORRUPT_N the number of mutations);
 * a failing input is kept in the scratch directory and named on stderr.
 * An entry that contradicts the block model says, in every command that
 * imports, that --lenient skips such entries.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fragscope/allocator.h"
#include "fragscope/recorder.h"
#include "fsc_test.h"

/* ---- deterministic randomness ------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static size_t rnd_below(size_t n) { return n == 0 ? 0 : (size_t)(rnd() % n); }

/* ---- inputs -------------------------------------------------------------- */

typedef struct blob {
    uint8_t *p;
    size_t n;
} blob_t;

static blob_t slurp(const char *path)
{
    blob_t b = {NULL, 0};
    b.p = (uint8_t *)fsc_test_slurp(path, &b.n);
    return b;
}

static int write_blob(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

/* A trace of a few thousand events in chunks of ~2 KiB: tags, markers, two
 * streams, a record_stream free, an empty_cache and a final OOM. */
static int make_trace(const char *path)
{
    fsc_backend_t *be = NULL;
    fsc_allocator_t *a = NULL;
    fsc_recorder_t *rec = NULL;
    fsc_err_t err;
    fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
    ro.chunk_bytes = 2048;
    ro.synchronous = 1;
    fsc_trace_header_t h = {0};
    h.producer = "fragscope test_corrupt";
    h.config = "max_split_size_mb:64";
    h.backend = "sim";
    h.capacity = 2 * FSC_GiB;
    h.device_total = 2 * FSC_GiB;
    h.rank = -1;
    if (fsc_recorder_open(path, &h, &ro, &rec, &err) != 0)
        return -1;
    int rc = fsc_backend_sim_create(2 * FSC_GiB, 0, &be);
    fsc_allocator_opts_t o = {FSC_ALLOC_CONFIG_DEFAULT, be, 2 * FSC_GiB, fsc_recorder_sink, rec};
    if (rc == 0)
        rc = fsc_alloc_config_parse("max_split_size_mb:64", &o.config, &err);
    if (rc == 0)
        rc = fsc_allocator_create(&o, &a, &err);
    uint64_t live[64] = {0};
    static const char *const k_tags[] = {"forward", "backward", "optimizer"};
    for (int step = 0; rc == 0 && step < 6; step++) {
        char m[32];
        snprintf(m, sizeof m, "step %d", step);
        fsc_mark(m);
        fsc_tag_push("step");
        for (int i = 0; rc == 0 && i < 150; i++) {
            fsc_tag_push(k_tags[i % 3]);
            size_t slot = rnd_below(64);
            if (live[slot] != 0) {
                if (rnd_below(8) == 0)
                    fsc_allocator_record_stream(a, live[slot], 7);
                rc = fsc_allocator_free(a, live[slot]);
                live[slot] = 0;
            } else {
                uint64_t size = rnd_below(4) == 0 ? rnd_below(24 * FSC_MiB) + 1
                                                  : rnd_below(256 * FSC_KiB) + 1;
                rc = fsc_allocator_malloc(a, size, rnd_below(2), &live[slot]);
            }
            fsc_tag_pop();
        }
        fsc_tag_pop();
        fsc_allocator_stream_done(a, 7);
        if (step == 3)
            fsc_allocator_empty_cache(a);
    }
    uint64_t big = 0;
    if (rc == 0 && fsc_allocator_malloc(a, 3 * FSC_GiB, 0, &big) != FSC_EOOM)
        rc = -1;
    fsc_allocator_destroy(a);
    fsc_backend_destroy(be);
    int crc = fsc_recorder_close(rec);
    return rc != 0 ? rc : crc;
}

/* ---- running a command --------------------------------------------------- */

static char g_dir[1024];    /* scratch directory of the damaged files */
static unsigned g_failures; /* runs that broke a rule */
static unsigned g_runs;

/* Names of temporary files left in g_dir (empty string when none). */
static void leftover_tmp(char *buf, size_t cap)
{
    buf[0] = '\0';
    DIR *d = opendir(g_dir);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".tmp") != NULL || strstr(de->d_name, "-journal") != NULL)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s ", de->d_name);
    closedir(d);
}

static unsigned count_of(const char *hay, const char *needle)
{
    unsigned n = 0;
    for (const char *q = hay; q != NULL && (q = strstr(q, needle)) != NULL; q += strlen(needle))
        n++;
    return n;
}

static int same_content(const char *path, const char *text)
{
    size_t n = 0;
    char *p = fsc_test_slurp(path, &n);
    int same = p != NULL && n == strlen(text) && memcmp(p, text, n) == 0;
    free(p);
    return same;
}

/* Run `fragscope ARGS` on a damaged input. out: the output file the command
 * writes (NULL when none). allow1: status 1 is a verdict, not a failure. */
static const char *g_input; /* the damaged file of the current runs */

static void run_cmd(const char *what, const char *args, const char *out, int allow1)
{
    char errp[1100], cmd[4096];
    snprintf(errp, sizeof errp, "%s/stderr", g_dir);
    /* Every other run finds an older output file in place: a failure must
     * leave it untouched (the new file is renamed over it only when done). */
    static const char k_older[] = "an older output file\n";
    int older = out != NULL && g_runs % 2 == 1;
    if (out != NULL)
        unlink(out);
    if (older)
        write_blob(out, (const uint8_t *)k_older, sizeof k_older - 1);
    snprintf(cmd, sizeof cmd, "cd %s && timeout 20 %s %s >/dev/null 2>%s", g_dir,
             fsc_test_fragscope(), args, errp);
    int st = fsc_test_sh(NULL, 0, "%s", cmd);
    g_runs++;
    size_t elen = 0;
    char *err = fsc_test_slurp(errp, &elen);
    unsigned lines = 0;
    for (size_t i = 0; err != NULL && i < elen; i++)
        lines += err[i] == '\n';
    char tmp[1024];
    leftover_tmp(tmp, sizeof tmp);
    const char *why = NULL;
    if (st == 124)
        why = "hung (timeout 20 s)";
    else if (st >= 128)
        why = "killed by a signal";
    else if (err != NULL && (strstr(err, "Sanitizer") != NULL || strstr(err, "runtime error") != NULL))
        why = "sanitizer report";
    else if (st != 0 && st != 2 && !(allow1 && st == 1))
        why = "unexpected exit status";
    else if (st == 2 && (lines != 1 || elen < 2))
        why = "stderr is not exactly one line";
    else if (st == 2 && g_input != NULL && count_of(err, g_input) != 1)
        why = "the error does not name the input file exactly once";
    else if (tmp[0] != '\0')
        why = "temporary file left behind";
    else if (st != 0 && !older && out != NULL && fsc_test_file_exists(out))
        why = "output file left after a failure";
    else if (st != 0 && older && !same_content(out, k_older))
        why = "the older output file was changed by a failed run";
    else if (st == 0 && older && same_content(out, k_older))
        why = "a successful run did not replace the older output file";
    if (why != NULL) {
        g_failures++;
        fprintf(stderr, "\n  %s: fragscope %s -> status %d: %s\n  stderr: %.600s\n", what,
                args, st, why, err ? err : "");
    }
    free(err);
    /* Clean up so that the next run starts from an empty directory. */
    if (out != NULL)
        unlink(out);
    if (tmp[0] != '\0')
        fsc_test_sh(NULL, 0, "rm -f %s/*.tmp* %s/*-journal", g_dir, g_dir);
}

/* ---- mutations ----------------------------------------------------------- */

/* One damaged copy of src into *dst (malloc'd); `other` feeds splices. */
static void mutate(const blob_t *src, const blob_t *other, blob_t *dst, char *desc, size_t cap)
{
    size_t n = src->n;
    uint8_t *p = malloc(2 * n + other->n + 16);
    memcpy(p, src->p, n);
    switch (rnd_below(5)) {
    case 0:
    case 1: { /* flip 1-4 bytes */
        unsigned k = 1 + (unsigned)rnd_below(4);
        size_t first = rnd_below(n);
        for (unsigned i = 0; i < k; i++)
            p[i == 0 ? first : rnd_below(n)] ^= (uint8_t)(1 + rnd_below(255));
        snprintf(desc, cap, "%u byte flips from offset %zu", k, first);
        break;
    }
    case 2: { /* truncate */
        size_t len = rnd_below(n);
        snprintf(desc, cap, "truncated to %zu of %zu bytes", len, n);
        n = len;
        break;
    }
    case 3: { /* cut out or repeat a region */
        size_t a = rnd_below(n), b = a + rnd_below(n - a);
        if (rnd_below(2) == 0) {
            memmove(p + a, p + b, n - b);
            n -= b - a;
            snprintf(desc, cap, "bytes [%zu, %zu) cut out", a, b);
        } else {
            memmove(p + b + (b - a), p + b, n - b);
            memcpy(p + b, src->p + a, b - a);
            n += b - a;
            snprintf(desc, cap, "bytes [%zu, %zu) repeated", a, b);
        }
        break;
    }
    default: { /* splice: a prefix of this file, then the tail of another */
        size_t a = rnd_below(n), b = rnd_below(other->n);
        memcpy(p + a, other->p + b, other->n - b);
        n = a + other->n - b;
        snprintf(desc, cap, "prefix %zu + another file's tail from %zu", a, b);
        break;
    }
    }
    dst->p = p;
    dst->n = n;
}

static unsigned env_uint(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v ? (unsigned)strtoul(v, NULL, 0) : dflt;
}

/* Damage `count` copies of src and run each through fn. */
static void sweep(const char *kind, const blob_t *src, const blob_t *other, unsigned count,
                  const char *name, void (*fn)(const char *what, const char *file))
{
    for (unsigned i = 0; i < count; i++) {
        blob_t d;
        char desc[128], what[256], file[1100];
        mutate(src, other, &d, desc, sizeof desc);
        snprintf(file, sizeof file, "%s/%s", g_dir, name);
        CU_ASSERT_EQUAL_FATAL(write_blob(file, d.p, d.n), 0);
        snprintf(what, sizeof what, "%s #%u (%s)", kind, i, desc);
        unsigned before = g_failures;
        g_input = file;
        fn(what, file);
        g_input = NULL;
        if (g_failures != before) { /* keep it for reproduction */
            char keep[1200];
            snprintf(keep, sizeof keep, "%s/failed-%s-%u", g_dir, kind, i);
            write_blob(keep, d.p, d.n);
            fprintf(stderr, "  input kept as %s\n", keep);
        }
        free(d.p);
    }
}

static void on_trace(const char *what, const char *f)
{
    char args[2400], out[1100];
    snprintf(args, sizeof args, "info %s", f);
    run_cmd(what, args, NULL, 0);
    snprintf(out, sizeof out, "%s/out.db", g_dir);
    snprintf(args, sizeof args, "analyze %s -o %s", f, out);
    run_cmd(what, args, out, 0);
    snprintf(out, sizeof out, "%s/out.pickle", g_dir);
    snprintf(args, sizeof args, "export %s --pytorch-snapshot %s", f, out);
    run_cmd(what, args, out, 0);
    snprintf(args, sizeof args, "whatif %s --config '' --config expandable_segments:True --threads 1", f);
    run_cmd(what, args, NULL, 0);
    snprintf(out, sizeof out, "%s/out.db", g_dir);
    snprintf(args, sizeof args, "analyze %s -o %s --lenient --timeline-samples 50", f, out);
    run_cmd(what, args, out, 0);
    /* --verify exits 1 when the replay differs from the recording. */
    snprintf(args, sizeof args, "whatif %s --threads 1 %s", f, g_runs % 2 ? "--verify" : "--suggest");
    run_cmd(what, args, NULL, 1);
}

static void on_snapshot(const char *what, const char *f)
{
    char args[2400], out[1100];
    snprintf(out, sizeof out, "%s/out.fstrace", g_dir);
    snprintf(args, sizeof args, "import %s -o %s", f, out);
    run_cmd(what, args, out, 0);
    snprintf(out, sizeof out, "%s/out.db", g_dir);
    snprintf(args, sizeof args, "analyze %s -o %s", f, out);
    run_cmd(what, args, out, 0);
    snprintf(args, sizeof args, "whatif %s --config '' --threads 1", f);
    run_cmd(what, args, NULL, 0);
    snprintf(out, sizeof out, "%s/out.fstrace", g_dir);
    snprintf(args, sizeof args, "import %s -o %s --lenient", f, out);
    run_cmd(what, args, out, 0);
    snprintf(args, sizeof args, "whatif %s --threads 1 %s", f, g_runs % 2 ? "--verify" : "--suggest");
    run_cmd(what, args, NULL, 1);
}

static char g_good_db[1100];

static void on_db(const char *what, const char *f)
{
    char args[2400], out[1100];
    snprintf(args, sizeof args, "report %s", f);
    run_cmd(what, args, NULL, 0);
    snprintf(out, sizeof out, "%s/out.json", g_dir);
    snprintf(args, sizeof args, "report %s --format json -o %s", f, out);
    run_cmd(what, args, out, 0);
    snprintf(args, sizeof args, "check %s --no-oom --max-external-frag 0.9", f);
    run_cmd(what, args, NULL, 1);
    snprintf(args, sizeof args, "diff %s %s --fail-on-worse", g_good_db, f);
    run_cmd(what, args, NULL, 1);
    snprintf(out, sizeof out, "%s/out.html", g_dir);
    snprintf(args, sizeof args, "view %s -o %s", f, out);
    run_cmd(what, args, out, 0);
}

/* ---- the tests ------------------------------------------------------------ */

static blob_t g_trace, g_golden, g_pickle, g_json, g_db, g_real;

static int setup(void)
{
    static int done = 0, ok = 0;
    if (done)
        return ok;
    done = 1;
    g_rng ^= env_uint("FSC_CORRUPT_SEED", 0) * 0x2545f4914f6cdd1dull;
    /* Copied: fsc_test_path's buffers are reused by later calls. */
    snprintf(g_dir, sizeof g_dir, "%s", fsc_test_path("corrupt"));
    char trace[1100];
    snprintf(trace, sizeof trace, "%s/base.fstrace", fsc_test_tmpdir());
    if (fsc_test_sh(NULL, 0, "mkdir -p %s", g_dir) != 0 || make_trace(trace) != 0)
        return 0;
    snprintf(g_good_db, sizeof g_good_db, "%s/base.db", fsc_test_tmpdir());
    char out[4096];
    if (fsc_test_sh(out, sizeof out, "%s analyze %s -o %s", fsc_test_fragscope(), trace,
                    g_good_db) != 0) {
        fprintf(stderr, "analyze of the base trace failed: %s\n", out);
        return 0;
    }
    g_trace = slurp(trace);
    g_golden = slurp(fsc_test_data("recorder_golden.fstrace"));
    g_pickle = slurp(fsc_test_data("pytorch/tiny.p4.pickle"));
    g_json = slurp(fsc_test_data("pytorch/tiny.json"));
    g_db = slurp(g_good_db);
    g_real = slurp(fsc_test_data("pytorch/gpt2m_oom_12g.pickle"));
    ok = g_trace.p && g_golden.p && g_pickle.p && g_json.p && g_db.p && g_real.p;
    return ok;
}

static void test_base_inputs_are_valid(void)
{
    CU_ASSERT_FATAL(setup());
    /* The undamaged inputs pass cleanly, so what the sweeps see is damage. */
    unsigned before = g_failures;
    char f[1100], out[4096];
    snprintf(f, sizeof f, "%s/base.fstrace", fsc_test_tmpdir());
    int st = fsc_test_sh(out, sizeof out, "%s info %s", fsc_test_fragscope(), f);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "clean close"));
    on_trace("base trace", f);
    on_snapshot("base pickle", fsc_test_data("pytorch/tiny.p4.pickle"));
    on_snapshot("base json", fsc_test_data("pytorch/tiny.json"));
    on_db("base db", g_good_db);
    CU_ASSERT_EQUAL(g_failures, before);
    /* The trace spans many chunks, so truncations keep a usable prefix. */
    const char *c = strstr(out, "\nchunks");
    unsigned chunks = 0;
    CU_ASSERT(c != NULL && sscanf(c, "\nchunks %u", &chunks) == 1 && chunks >= 8);
}

static void test_damaged_traces(void)
{
    CU_ASSERT_FATAL(setup());
    unsigned n = env_uint("FSC_CORRUPT_N", 150);
    unsigned before = g_failures;
    sweep("trace", &g_trace, &g_golden, n * 30 / 150, "damaged.fstrace", on_trace);
    sweep("golden", &g_golden, &g_trace, n * 10 / 150, "damaged.fstrace", on_trace);
    CU_ASSERT_EQUAL(g_failures, before);
}

static void test_damaged_snapshots(void)
{
    CU_ASSERT_FATAL(setup());
    unsigned n = env_uint("FSC_CORRUPT_N", 150);
    unsigned before = g_failures;
    sweep("pickle", &g_pickle, &g_json, n * 35 / 150, "damaged.pickle", on_snapshot);
    sweep("json", &g_json, &g_pickle, n * 30 / 150, "damaged.json", on_snapshot);
    /* A real snapshot (3 074 history entries): damage deep in its history. */
    sweep("real", &g_real, &g_pickle, n * 10 / 150, "damaged_real.pickle", on_snapshot);
    CU_ASSERT_EQUAL(g_failures, before);
}

static void test_damaged_databases(void)
{
    CU_ASSERT_FATAL(setup());
    unsigned n = env_uint("FSC_CORRUPT_N", 150);
    unsigned before = g_failures;
    sweep("db", &g_db, &g_trace, n * 45 / 150, "damaged.db", on_db);
    CU_ASSERT_EQUAL(g_failures, before);
    fprintf(stderr, "\n  %u command runs on damaged inputs\n", g_runs);
}

/* Damage that byte flips rarely produce but that SQLite reads without
 * complaint: well-formed rows with values no analyzer writes. Each variant
 * applies one SQL statement to a copy of the good database. */
static int damage_db(const char *path, const char *sql)
{
    if (write_blob(path, g_db.p, g_db.n) != 0)
        return -1;
    sqlite3 *db = NULL;
    int rc = sqlite3_open(path, &db);
    char *msg = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "\n  damage '%s' failed: %s\n", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

/* Every table: all its columns but the primary key set to one odd value
 * (NULL, -1, the largest integer, a string, a blob, 1e308), or the table
 * dropped; plus damage to the keyed rows of meta and summary. */
static void test_odd_values_in_databases(void)
{
    CU_ASSERT_FATAL(setup());
    static const char *const k_values[] = {"NULL", "-1", "9223372036854775807", "'x'",
                                           "x'00ff'", "1e308"};
    static const char *const k_fixed[] = {
        "UPDATE summary SET key = NULL WHERE key = 'events'",
        "UPDATE meta SET key = NULL WHERE key = 'source_path'",
        "UPDATE meta SET value = 'abc' WHERE key = 'schema_version'",
        "UPDATE meta SET value = NULL WHERE key = 'schema_version'",
        "UPDATE meta SET value = 2 WHERE key = 'schema_version'",
        "DELETE FROM meta",
        "DELETE FROM summary",
        "UPDATE summary SET value = value || 'x'",
        NULL,
    };
    char file[1100];
    snprintf(file, sizeof file, "%s/odd.db", g_dir);
    unsigned before = g_failures, variants = 0;
    for (const char *const *q = k_fixed; *q != NULL; q++) {
        if (damage_db(file, *q) != 0) {
            CU_FAIL("damage statement failed");
            continue;
        }
        g_input = file;
        on_db(*q, file);
        variants++;
    }
    /* Tables and their columns, from the good database. */
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(g_good_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db,
                                             "SELECT m.name, group_concat(p.name, ',') FROM "
                                             "sqlite_master m, pragma_table_info(m.name) p "
                                             "WHERE m.type = 'table' AND p.pk = 0 GROUP BY m.name",
                                             -1, &st, NULL),
                          SQLITE_OK);
    char sql[4096], what[4200];
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(st, 0);
        char cols[2048];
        snprintf(cols, sizeof cols, "%s", (const char *)sqlite3_column_text(st, 1));
        size_t pick = rnd_below(7);
        if (pick == 6) {
            snprintf(sql, sizeof sql, "DROP TABLE %s", table);
        } else {
            /* OR REPLACE: rows that now collide on a unique column merge. */
            int n = snprintf(sql, sizeof sql, "UPDATE OR REPLACE %s SET ", table);
            int first = 1;
            for (char *c = strtok(cols, ","); c != NULL; c = strtok(NULL, ",")) {
                n += snprintf(sql + n, sizeof sql - (size_t)n, "%s\"%s\" = %s", first ? "" : ", ",
                              c, k_values[pick]);
                first = 0;
            }
        }
        if (damage_db(file, sql) != 0) {
            CU_FAIL("damage statement failed");
            continue;
        }
        snprintf(what, sizeof what, "db with %s", sql);
        on_db(what, file);
        variants++;
    }
    g_input = NULL;
    sqlite3_finalize(st);
    sqlite3_close(db);
    CU_ASSERT(variants >= 20);
    CU_ASSERT_EQUAL(g_failures, before);
}

/* Snapshots whose allocator settings are damaged or from a newer PyTorch
 * (tests/data/crashers/pytorch/): the import keeps settings that parse, so
 * the replays of the run's own settings work. */
static void test_snapshot_settings_replay(void)
{
    static const char *const k_files[] = {
        "crashers/pytorch/subnormal_gc_threshold.pickle", /* threshold 5.07e-312 */
        "crashers/pytorch/future_alloc_conf_key.pickle",  /* unknown key in the string */
        NULL,
    };
    for (const char *const *f = k_files; *f != NULL; f++) {
        char in[1100], trace[1100], out[4096];
        snprintf(in, sizeof in, "%s", fsc_test_data(*f));
        snprintf(trace, sizeof trace, "%s/settings.fstrace", fsc_test_tmpdir());
        int st = fsc_test_sh(out, sizeof out, "%s import %s -o %s", fsc_test_fragscope(), in, trace);
        CU_ASSERT_EQUAL(st, 0);
        fsc_trace_reader_t *r = NULL;
        fsc_err_t err;
        if (fsc_trace_open(trace, &r, &err) == 0) {
            fsc_alloc_config_t c;
            int rc = fsc_alloc_config_parse(fsc_trace_header(r)->config, &c, &err);
            if (rc != 0)
                fprintf(stderr, "\n  %s: the trace's config does not parse: %s\n", *f, err.msg);
            CU_ASSERT_EQUAL(rc, 0);
            fsc_trace_close(r);
        } else {
            CU_FAIL("the imported trace does not open");
        }
        st = fsc_test_sh(out, sizeof out, "%s whatif %s --suggest --threads 1", fsc_test_fragscope(), in);
        if (st != 0)
            fprintf(stderr, "\n  %s: whatif --suggest: %s\n", *f, out);
        CU_ASSERT_EQUAL(st, 0);
        st = fsc_test_sh(out, sizeof out, "%s whatif %s --verify --threads 1", fsc_test_fragscope(), in);
        CU_ASSERT(st == 0 || st == 1);
        remove(trace);
    }
}

/* An entry that contradicts the block model fails every command that
 * imports, with one line saying that --lenient skips such entries; with
 * --lenient each command goes past it. An input that --lenient would not
 * help (not a snapshot at all) does not say so. */
static void test_lenient_hint(void)
{
    static char out[8192];
    const char *bin = fsc_test_fragscope();
    const char *bad = fsc_test_data("pytorch/unknown_free.pickle");
    const char *garbage = fsc_test_data("pytorch/hostile/garbage.bin");
    static const char *const k_cmds[] = {"analyze %s -o %s/lh.db", "import %s -o %s/lh.fstrace",
                                         "whatif %s --config ''", "view %s -o %s/lh.html"};
    for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++) {
        char fmt[256], args[2048];
        snprintf(fmt, sizeof fmt, "'%%s' %s 2>&1 >/dev/null", k_cmds[i]);
        snprintf(args, sizeof args, fmt, bin, bad, fsc_test_tmpdir());
        int st = fsc_test_sh(out, sizeof out, "%s", args);
        if (st != 2 || strstr(out, "(rerun with --lenient to skip such entries)\n") == NULL)
            fprintf(stderr, "\n  %s -> %d: %s", args, st, out);
        CU_ASSERT_EQUAL(st, 2);
        CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown_free.pickle: device_traces[0][1]"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "(rerun with --lenient to skip such entries)\n"));
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s --lenient", args), 0);
        snprintf(args, sizeof args, fmt, bin, garbage, fsc_test_tmpdir());
        CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "%s", args), 2);
        CU_ASSERT_PTR_NULL(strstr(out, "--lenient"));
    }
}

static const fsc_test_case_t k_tests[] = {
    {"undamaged inputs pass", test_base_inputs_are_valid},
    {"damaged traces: info, analyze, export, whatif", test_damaged_traces},
    {"damaged snapshots: import, analyze, whatif", test_damaged_snapshots},
    {"damaged databases: report, check, diff, view", test_damaged_databases},
    {"odd values in databases: report, check, diff, view", test_odd_values_in_databases},
    {"snapshots with odd allocator settings still replay", test_snapshot_settings_replay},
    {"a contradiction says --lenient skips it, in every command that imports",
     test_lenient_hint},
    {NULL, NULL},
};

FSC_TEST_MAIN("corrupt", k_tests)
