/*
 * test_pytorch_json.c — JSON snapshots read by the streaming reader
 * (recorder/pytorch/pytorch_json_stream.c): JSON twins of real and
 * hand-made snapshots import and analyze to the same events and database
 * as their pickles; numbers stay exact and strings are decoded in full;
 * duplicate keys resolve as in Python; hostile JSON (cut anywhere, nested
 * too deep, bad escapes, huge numbers, entries that are not dicts) gives
 * one line naming the file and the offset and writes nothing; and the
 * peak RSS of `fragscope import` does not grow with the history's length.
 *
 * The twins in tests/data/pytorch/json/ were written from the pickles
 * beside them (tests/data/pytorch/) by
 *   python3 -c "import pickle,json; json.dump(pickle.load(open(P,'rb')),
 *               open(J,'w'), separators=(',',':'))"
 * and those of the H200 recordings (tests/data/gpu/) are written so at
 * each run, into the scratch directory (their frames name the recording
 * machine's files).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsc_test.h"
#include "pytorch_json_stream.h"
#include "test_pytorch_common.h"

static void put_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(text, 1, n, f), n);
    fclose(f);
}

/* ---- database as text ---------------------------------------------------- */

static void sb_add(char **b, size_t *n, size_t *cap, const char *s, size_t len)
{
    if (*n + len + 1 > *cap) {
        while (*n + len + 1 > *cap)
            *cap = *cap ? *cap * 2 : 65536;
        *b = realloc(*b, *cap);
    }
    memcpy(*b + *n, s, len);
    *n += len;
    (*b)[*n] = '\0';
}

/* Every table but the input's own path and the build's stamps, a row a
 * line, in a fixed order. */
static char *db_text(const char *db, const char *input)
{
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return NULL;
    }
    char *b = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *t = NULL;
    sqlite3_prepare_v2(h, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                       -1, &t, NULL);
    while (sqlite3_step(t) == SQLITE_ROW) {
        char q[256];
        snprintf(q, sizeof q, "SELECT * FROM \"%s\"", (const char *)sqlite3_column_text(t, 0));
        sb_add(&b, &n, &cap, q, strlen(q));
        sb_add(&b, &n, &cap, "\n", 1);
        sqlite3_stmt *r = NULL;
        if (sqlite3_prepare_v2(h, q, -1, &r, NULL) != SQLITE_OK)
            continue;
        while (sqlite3_step(r) == SQLITE_ROW) {
            char *line = NULL;
            size_t ln = 0, lc = 0;
            sb_add(&line, &ln, &lc, "", 0);
            for (int c = 0; c < sqlite3_column_count(r); c++) {
                const char *v = (const char *)sqlite3_column_text(r, c);
                if (v == NULL)
                    v = "NULL";
                sb_add(&line, &ln, &lc, v, strlen(v));
                sb_add(&line, &ln, &lc, "|", 1);
            }
            if (strstr(line, input) == NULL && strstr(line, "created_at") == NULL &&
                strstr(line, "fragscope_version") == NULL) {
                sb_add(&b, &n, &cap, line, ln);
                sb_add(&b, &n, &cap, "\n", 1);
            }
            free(line);
        }
        sqlite3_finalize(r);
    }
    sqlite3_finalize(t);
    sqlite3_close(h);
    return b;
}

/* JSON has no tuples: a pickle's (a, b), kept in a record as
 * {"__tuple__":[a,b]}, is [a,b] in its JSON twin. Rewrite the pickle's. */
static void untuple(char *s)
{
    static const char k_tag[] = "{\"__tuple__\":";
    char *p;
    while ((p = strstr(s, k_tag)) != NULL) {
        size_t tl = sizeof k_tag - 1;
        memmove(p, p + tl, strlen(p + tl) + 1);
        int depth = 0;
        char *q = p;
        for (; *q; q++) {
            if (*q == '[')
                depth++;
            else if (*q == ']' && --depth == 0)
                break;
        }
        if (*q == ']' && q[1] == '}')
            memmove(q + 1, q + 2, strlen(q + 2) + 1);
    }
}

/* fragscope analyze of path into a database, as text (NULL when it failed). */
static char *analyze_text(const char *path, const char *name)
{
    char db[1024];
    snprintf(db, sizeof db, "%s", fsc_test_path(name));
    unlink(db);
    const char *args[] = {"analyze", path, "-o", db, "--no-suggest", NULL};
    long rss = 0;
    if (fsc_test_run_fragscope(args, "/dev/null", 0, &rss) != 0)
        return NULL;
    char *t = db_text(db, path);
    unlink(db);
    return t;
}

/* ---- twins --------------------------------------------------------------- */

static void test_twins(void)
{
    /* NULL: the twin is written now (see the top of the file) */
    static const char *const k_pairs[][2] = {
        {"gpu/pinned.pickle", NULL},
        {"gpu/unknown_keys.pickle", NULL},
        {"gpu/mempool_oom.pickle", NULL},
        {"gpu/mempool_nosplit.pickle", NULL},
        {"gpu/mempool_live.pickle", NULL},
        {"pytorch/midrun.pickle", "pytorch/json/midrun.json"},
        {"pytorch/expandable.pickle", "pytorch/json/expandable.json"},
    };
    for (size_t i = 0; i < sizeof k_pairs / sizeof k_pairs[0]; i++) {
        char pk[1024], js[1024], out[256];
        snprintf(pk, sizeof pk, "%s", fsc_test_data(k_pairs[i][0]));
        if (k_pairs[i][1] != NULL) {
            snprintf(js, sizeof js, "%s", fsc_test_data(k_pairs[i][1]));
        } else {
            snprintf(js, sizeof js, "%s/twin%zu.json", fsc_test_tmpdir(), i);
            int st = fsc_test_sh(out, sizeof out,
                                 "python3 -c \"import pickle,json,sys;"
                                 " json.dump(pickle.load(open(sys.argv[1],'rb')),"
                                 " open(sys.argv[2],'w'), separators=(',',':'))\" %s %s",
                                 pk, js);
            CU_ASSERT_EQUAL_FATAL(st, 0);
        }
        tp_col_t a, b;
        fsc_import_stats_t sa, sb;
        fsc_err_t err = {0};
        CU_ASSERT_EQUAL_FATAL(tp_import(pk, -1, 0, &a, &sa, &err), 0);
        CU_ASSERT_EQUAL_FATAL(tp_import(js, -1, 0, &b, &sb, &err), 0);
        const char *why;
        long at = tp_diff(&a, &b, 0, 0, &why);
        if (at >= 0)
            fprintf(stderr, "\n%s: differs at event %ld (%s)\n", js, at, why);
        CU_ASSERT_EQUAL(at, -1);
        CU_ASSERT(a.n > 0);
        CU_ASSERT_EQUAL(sb.format, FSC_SNAP_JSON);
        CU_ASSERT_EQUAL(sa.format, FSC_SNAP_PICKLE);
        sb.format = sa.format;
        CU_ASSERT_EQUAL(memcmp(&sa, &sb, sizeof sa), 0);
        CU_ASSERT_STRING_EQUAL(a.config, b.config);
        CU_ASSERT_EQUAL(a.clock_origin_ns, b.clock_origin_ns);
        CU_ASSERT_EQUAL(a.flags, b.flags);
        tp_free(&a);
        tp_free(&b);

        char *ta = analyze_text(pk, "twin_p.db"), *tb = analyze_text(js, "twin_j.db");
        CU_ASSERT_PTR_NOT_NULL(ta);
        CU_ASSERT_PTR_NOT_NULL(tb);
        if (ta != NULL && tb != NULL) {
            untuple(ta);
            if (strcmp(ta, tb) != 0)
                fprintf(stderr, "\n%s: the database differs from its pickle's\n", js);
            CU_ASSERT_STRING_EQUAL(ta, tb);
            CU_ASSERT(fsc_test_count(tb, "\n") > 100); /* the dump holds the run */
        }
        free(ta);
        free(tb);
    }
}

/* Two devices: each imports as from the pickle (the second through the
 * import's pass for another device); without --device both refuse alike. */
static void test_twin_devices(void)
{
    char pk[1024], js[1024];
    snprintf(pk, sizeof pk, "%s", fsc_test_data("pytorch/multidev.pickle"));
    snprintf(js, sizeof js, "%s", fsc_test_data("pytorch/json/multidev.json"));
    for (int dev = 0; dev < 2; dev++) {
        tp_col_t a, b;
        fsc_err_t err = {0};
        CU_ASSERT_EQUAL_FATAL(tp_import(pk, dev, 0, &a, NULL, &err), 0);
        CU_ASSERT_EQUAL_FATAL(tp_import(js, dev, 0, &b, NULL, &err), 0);
        const char *why;
        CU_ASSERT_EQUAL(tp_diff(&a, &b, 0, 0, &why), -1);
        CU_ASSERT(a.n > 0);
        tp_free(&a);
        tp_free(&b);
    }
    fsc_err_t ea = {0}, eb = {0};
    tp_col_t a, b;
    CU_ASSERT_EQUAL(tp_import(pk, -1, 0, &a, NULL, &ea), FSC_EINVAL);
    CU_ASSERT_EQUAL(tp_import(js, -1, 0, &b, NULL, &eb), FSC_EINVAL);
    CU_ASSERT_STRING_EQUAL(ea.msg + strlen(pk), eb.msg + strlen(js));
    tp_free(&a);
    tp_free(&b);
    /* a snapshot that fails in its history fails alike */
    snprintf(pk, sizeof pk, "%s", fsc_test_data("pytorch/unknown_free.pickle"));
    snprintf(js, sizeof js, "%s", fsc_test_data("pytorch/json/unknown_free.json"));
    CU_ASSERT_EQUAL(tp_import(pk, -1, 0, &a, NULL, &ea), FSC_ESTATE);
    CU_ASSERT_EQUAL(tp_import(js, -1, 0, &b, NULL, &eb), FSC_ESTATE);
    CU_ASSERT_STRING_EQUAL(ea.msg + strlen(pk), eb.msg + strlen(js));
    CU_ASSERT_EQUAL(a.n, b.n); /* what was replayed before the bad entry */
    tp_free(&a);
    tp_free(&b);
}

/* ---- values -------------------------------------------------------------- */

#define SEG "{\"action\":\"segment_alloc\",\"addr\":%s,\"size\":20971520,\"stream\":0,\"time_us\":%s}"

/* Times past 2^53 µs keep their last digit, a line of 2^64 - 1 is the
 * unknown line of a pickle, escapes decode to UTF-8, and the last of
 * duplicate keys wins. */
static void test_values(void)
{
    const char *p = fsc_test_path("values.json");
    static const char k_text[] =
        "{\"segments\":[],\"device_traces\":[["
        "{\"action\":\"segment_alloc\",\"addr\":268435456,\"size\":20971520,\"stream\":0,"
        "\"time_us\":9007199254740993},"
        "{\"action\":\"alloc\",\"addr\":268435456,\"size\":7,\"size\":1048576,\"stream\":0,"
        "\"time_us\":9007199254740995,\"frames\":["
        "{\"filename\":\"caf\\u00e9.py\",\"line\":18446744073709551615,\"name\":\"f\\ud83d\\ude00\"},"
        "{\"filename\":\"a\\/b\\\\c.py\",\"line\":3,\"line\":4,\"name\":\"t\\tab\\n\"}]}]]}";
    put_file(p, k_text, sizeof k_text - 1);
    tp_col_t c;
    fsc_import_stats_t st;
    fsc_err_t err = {0};
    int rc = tp_import(p, -1, 0, &c, &st, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(st.first_time_us, 9007199254740993ull);
    CU_ASSERT_EQUAL(st.unknown_lines, 1);
    size_t ai = c.n;
    for (size_t i = 0; i < c.n; i++)
        if (c.r[i].ev.type == FSC_EV_ALLOC)
            ai = i;
    CU_ASSERT_FATAL(ai < c.n);
    CU_ASSERT_EQUAL(c.r[ai].ev.size, 1048576);
    CU_ASSERT_EQUAL(c.r[ai].ev.time_ns, 2000); /* 2 µs after the first entry */
    CU_ASSERT_STRING_EQUAL(tp_path_of(&c, ai), "a/b\\c.py:4:t\tab\n/caf\xc3\xa9.py:?:f\xf0\x9f\x98\x80");
    tp_free(&c);
}

typedef struct seen {
    uint64_t n, dev1;
    int stable;
    char first[64];
} seen_t;

static int on_entry(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    seen_t *s = ud;
    (void)idx;
    s->n++;
    s->dev1 += dev == 1;
    s->stable |= fsc__pv_stable(v);
    const fsc__pv_t *a = fsc__pv_get(v, "action");
    if (s->n == 1 && a != NULL && a->kind == FSC__PV_STR)
        snprintf(s->first, sizeof s->first, "%.*s", (int)a->len, a->u.s);
    return 0;
}

/* The reader itself: the tree without history, the kinds of numbers, the
 * entries handed out (not stable), and a later top-level 'device_traces'
 * reported for a second read. */
static void test_reader(void)
{
    static const char k_doc[] =
        " {\"device_traces\":[[{\"action\":\"x\"},{\"action\":\"y\"}],[{\"action\":\"z\"}],7],"
        "\"n\":[0,-9223372036854775808,9223372036854775807,9223372036854775808,"
        "18446744073709551615,-9223372036854775809,1.0,-0.0,1e999,NaN,-Infinity,true,false,"
        "null,\"\"],\"device_traces\":[[{\"action\":\"w\"}]]}\n";
    seen_t s = {0};
    fsc__pstream_t cb = {&s, on_entry, NULL, NULL, 0, 0, 0, NULL};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    size_t redo = 0;
    CU_ASSERT_EQUAL_FATAL(
        fsc__json_stream(k_doc, sizeof k_doc - 1, "mem", 0, &cb, &d, &redo, &err), 0);
    CU_ASSERT_EQUAL(s.n, 3);
    CU_ASSERT_EQUAL(s.dev1, 1);
    CU_ASSERT_EQUAL(s.stable, 0);
    CU_ASSERT_STRING_EQUAL(s.first, "x");
    const char *later = strstr(k_doc, "\"device_traces\":[[{\"action\":\"w\"");
    CU_ASSERT_EQUAL(redo, (size_t)(later - k_doc) + 16);
    const fsc__pv_t *root = fsc__pdoc_root(d);
    CU_ASSERT_EQUAL(root->len, 2); /* the later 'device_traces' is left out */
    const fsc__pv_t *t = fsc__pv_get(root, "device_traces");
    fsc__pv_t *const *it;
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(t, &it), 3);
    CU_ASSERT_EQUAL(fsc__pv_count(it[0]), 2);
    CU_ASSERT_EQUAL(it[0]->len, 0);
    CU_ASSERT_EQUAL(fsc__pv_count(it[1]), 1);
    CU_ASSERT_EQUAL(it[2]->kind, FSC__PV_INT);
    CU_ASSERT_EQUAL(fsc__pv_seq(fsc__pv_get(root, "n"), &it), 15);
    static const int k_kinds[] = {FSC__PV_INT,   FSC__PV_INT,   FSC__PV_INT,    FSC__PV_BIGINT,
                                  FSC__PV_BIGINT, FSC__PV_BIGINT, FSC__PV_FLOAT, FSC__PV_FLOAT,
                                  FSC__PV_FLOAT, FSC__PV_FLOAT, FSC__PV_FLOAT,  FSC__PV_BOOL,
                                  FSC__PV_BOOL,  FSC__PV_NONE,  FSC__PV_STR};
    for (int i = 0; i < 15; i++)
        CU_ASSERT_EQUAL(it[i]->kind, k_kinds[i]);
    CU_ASSERT_EQUAL(it[1]->u.i, INT64_MIN);
    CU_ASSERT_EQUAL(it[2]->u.i, INT64_MAX);
    CU_ASSERT_EQUAL(it[4]->len, 20);
    CU_ASSERT_EQUAL(memcmp(it[4]->u.s, "18446744073709551615", 20), 0);
    CU_ASSERT_EQUAL(it[6]->u.f, 1.0);
    CU_ASSERT(it[8]->u.f > 1e308);
    CU_ASSERT(it[9]->u.f != it[9]->u.f);
    CU_ASSERT(it[10]->u.f < -1e308);
    CU_ASSERT_EQUAL(it[11]->u.i, 1);
    CU_ASSERT_EQUAL(it[12]->u.i, 0);
    CU_ASSERT(fsc__pv_stable(it[0]));
    fsc__pdoc_free(d);

    /* read again at the later one: its entries, and the first left out */
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL_FATAL(
        fsc__json_stream(k_doc, sizeof k_doc - 1, "mem", redo, &cb, &d, &redo, &err), 0);
    CU_ASSERT_EQUAL(redo, 0);
    CU_ASSERT_EQUAL(s.n, 1);
    CU_ASSERT_STRING_EQUAL(s.first, "w");
    t = fsc__pv_get(fsc__pdoc_root(d), "device_traces");
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(t, &it), 1);
    CU_ASSERT_EQUAL(fsc__pv_count(it[0]), 1);
    fsc__pdoc_free(d);
}

/* With skip_frames, an entry's 'frames' is None, and still checked. */
static int on_frames(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    int *none = ud;
    (void)dev;
    (void)idx;
    const fsc__pv_t *f = fsc__pv_get(v, "frames");
    *none += f != NULL && f->kind == FSC__PV_NONE && fsc__pv_get(v, "size")->u.i == 512;
    return 0;
}

static void test_skip_frames(void)
{
    static const char k_doc[] =
        "{\"device_traces\":[[{\"action\":\"alloc\",\"frames\":[{\"filename\":\"a\\u00e9\","
        "\"line\":18446744073709551616,\"x\":[[[1.5,null,true]]]}],\"size\":512},"
        "{\"frames\":7,\"size\":512}]],\"frames\":[1]}";
    int none = 0;
    fsc__pstream_t cb = {&none, on_frames, NULL, NULL, 1, 0, 0, NULL};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    size_t redo = 0;
    CU_ASSERT_EQUAL_FATAL(
        fsc__json_stream(k_doc, sizeof k_doc - 1, "mem", 0, &cb, &d, &redo, &err), 0);
    CU_ASSERT_EQUAL(none, 2);
    /* a key 'frames' outside the entries is read */
    fsc__pv_t *const *it;
    CU_ASSERT_EQUAL(fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(d), "frames"), &it), 1);
    fsc__pdoc_free(d);
    /* a bad escape or nesting inside them is the same error either way */
    static const char k_bad[] = "{\"device_traces\":[[{\"frames\":[\"\\x\"]}]]}";
    for (int skip = 0; skip < 2; skip++) {
        cb.skip_frames = skip;
        CU_ASSERT_EQUAL(fsc__json_stream(k_bad, sizeof k_bad - 1, "mem", 0, &cb, &d, &redo, &err),
                        FSC_EFORMAT);
        CU_ASSERT_STRING_EQUAL(err.msg, "mem: offset 31: invalid JSON: bad escape \\x");
        CU_ASSERT_PTR_NULL(d);
    }
}

/* Frame dicts of the same text are one kept node, as a pickle's memo
 * shares them; other dicts of an entry are not kept. */
typedef struct fr_seen {
    const fsc__pv_t *f[4];
    int n, stable_other;
} fr_seen_t;

static int on_stack(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    fr_seen_t *s = ud;
    (void)dev;
    (void)idx;
    fsc__pv_t *const *it;
    uint32_t n = fsc__pv_seq(fsc__pv_get(v, "frames"), &it);
    for (uint32_t i = 0; i < n && s->n < 4; i++)
        s->f[s->n++] = it[i];
    s->stable_other |= fsc__pv_stable(fsc__pv_get(v, "x")) | fsc__pv_stable(v);
    return 0;
}

static void test_frame_dicts(void)
{
    static const char k_doc[] =
        "{\"device_traces\":[[{\"frames\":[{\"filename\":\"a.py\",\"line\":1,\"name\":\"f\"}],"
        "\"x\":{\"k\":1}},{\"frames\":[{\"filename\":\"a.py\",\"line\":1,\"name\":\"f\"},"
        "{\"filename\":\"a.py\",\"line\":2,\"name\":\"f\"}],\"x\":{\"k\":1}}]]}";
    fr_seen_t s = {{0}, 0, 0};
    fsc__pstream_t cb = {&s, on_stack, NULL, NULL, 0, 0, 0, NULL};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    size_t redo = 0;
    CU_ASSERT_EQUAL_FATAL(
        fsc__json_stream(k_doc, sizeof k_doc - 1, "mem", 0, &cb, &d, &redo, &err), 0);
    CU_ASSERT_EQUAL_FATAL(s.n, 3);
    CU_ASSERT_PTR_EQUAL(s.f[0], s.f[1]);
    CU_ASSERT_PTR_NOT_EQUAL(s.f[1], s.f[2]);
    CU_ASSERT(fsc__pv_stable(s.f[0]) && fsc__pv_stable(s.f[2]));
    CU_ASSERT_EQUAL(fsc__pv_get(s.f[2], "line")->u.i, 2);
    CU_ASSERT_EQUAL(s.stable_other, 0);
    fsc__pdoc_free(d);
}

/* The import follows the last top-level 'device_traces', as Python does:
 * the same events as the file holding only that one. */
static void test_duplicate_traces(void)
{
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s", fsc_test_path("dup.json"));
    snprintf(b, sizeof b, "%s", fsc_test_path("last.json"));
    char ta[1024], tb[1024];
    snprintf(ta, sizeof ta,
             "{\"segments\":[],\"device_traces\":[[{\"action\":\"free_completed\",\"addr\":1,"
             "\"size\":1,\"stream\":0,\"time_us\":1}]],\"device_traces\":[[" SEG "]]}",
             "268435456", "5");
    snprintf(tb, sizeof tb, "{\"segments\":[],\"device_traces\":[[" SEG "]]}", "268435456", "5");
    put_file(a, ta, strlen(ta));
    put_file(b, tb, strlen(tb));
    tp_col_t ca, cb;
    fsc_import_stats_t sa, sb;
    fsc_err_t err = {0};
    int rc = tp_import(a, -1, 0, &ca, &sa, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(tp_import(b, -1, 0, &cb, &sb, &err), 0);
    const char *why;
    CU_ASSERT_EQUAL(tp_diff(&ca, &cb, 0, 0, &why), -1);
    CU_ASSERT_EQUAL(sa.entries, 1);
    CU_ASSERT_EQUAL(sa.segment_allocs, 1);
    tp_free(&ca);
    tp_free(&cb);
}

/* ---- hostile input ------------------------------------------------------- */

/* Import of text fails with code and one line "PATH: ...want...", and
 * nothing reaches the sink. */
static void expect_error(const char *text, size_t n, int code, const char *want)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", fsc_test_path("hostile.json"));
    put_file(p, text, n);
    tp_col_t c;
    fsc_err_t err = {0};
    int rc = tp_import(p, -1, 0, &c, NULL, &err);
    if (rc != code || strstr(err.msg, want) == NULL)
        fprintf(stderr, "\n'%.60s': rc %d '%s' (want %d '%s')\n", text, rc, err.msg, code, want);
    CU_ASSERT_EQUAL(rc, code);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
    CU_ASSERT_EQUAL(strncmp(err.msg, p, strlen(p)), 0);
    CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
    CU_ASSERT_EQUAL(c.headers, 0);
    CU_ASSERT_EQUAL(c.n, 0);
    tp_free(&c);
}

#define EXPECT(text, code, want) expect_error(text, sizeof text - 1, code, want)

static void test_bad_json(void)
{
    /* offsets are those of the offending byte */
    EXPECT("{\"segments\":[],\"device_traces\":[[{\"action\":\"a\\qb\"}]]}", FSC_EFORMAT,
           ": offset 45: invalid JSON: bad escape \\q");
    EXPECT("{\"segments\":[\"\\u12G4\"]}", FSC_EFORMAT,
           ": offset 14: invalid JSON: \\u is not followed by four hex digits");
    EXPECT("{\"segments\":[\"ab\\u12\"]}", FSC_EFORMAT, "four hex digits");
    EXPECT("{\"segments\":[\"a\tb\"]}", FSC_EFORMAT,
           ": offset 15: invalid JSON: control character 0x09 inside a string");
    EXPECT("{\"segments\":[\"a\xff\"]}", FSC_EFORMAT,
           ": offset 15: invalid UTF-8 byte 0xff inside a string");
    EXPECT("{\"segments\":[\"\xed\xa0\x80\"]}", FSC_EFORMAT, "invalid UTF-8 byte 0xed");
    EXPECT("{\"device_traces\":[[{\"k\xc3\":1}]]}", FSC_EFORMAT, "invalid UTF-8 byte 0xc3");
    EXPECT("{\"segments\":[01]}", FSC_EFORMAT, ": offset 14: invalid JSON: expected ',' or ']'");
    EXPECT("{\"segments\":[1.]}", FSC_EFORMAT, "'.' is not followed by a digit");
    EXPECT("{\"segments\":[1e+]}", FSC_EFORMAT, "exponent has no digits");
    EXPECT("{\"segments\":[-x]}", FSC_EFORMAT, "'-' is not followed by a digit");
    EXPECT("{\"segments\":[tru]}", FSC_EFORMAT, ": offset 13: invalid JSON: unexpected 't'");
    EXPECT("{\"segments\":[], }", FSC_EFORMAT, "expected a string key");
    EXPECT("{\"segments\" []}", FSC_EFORMAT, ": offset 12: invalid JSON: expected ':'");
    EXPECT("{\"segments\":[]}x", FSC_EFORMAT,
           ": offset 15: invalid JSON: more data after the end of the document");
    EXPECT("{\"segments\":[]", FSC_EFORMAT,
           ": offset 14: invalid JSON: the text ends inside an object (from offset 0)");
    EXPECT("{\"segments\":[\"abc", FSC_EFORMAT, "the text ends inside a string (from offset 13)");
    /* numbers */
    static char big[3000];
    int k = snprintf(big, sizeof big, "{\"segments\":[");
    memset(big + k, '7', 2000);
    snprintf(big + k + 2000, sizeof big - (size_t)k - 2000, "]}");
    expect_error(big, strlen(big), FSC_ELIMIT, ": offset 13: a number of 2000 characters");
    EXPECT("{\"segments\":[],\"device_traces\":[[{\"action\":\"alloc\",\"addr\":1e999,"
           "\"size\":512,\"stream\":0,\"time_us\":1}]]}",
           FSC_EFORMAT, "device_traces[0][0] (alloc) lacks a non-negative 'addr' or 'size'");
    EXPECT("{\"segments\":[],\"device_traces\":[[{\"action\":\"alloc\",\"addr\":4096,"
           "\"size\":18446744073709551616,\"stream\":0,\"time_us\":1}]]}",
           FSC_EFORMAT, "device_traces[0][0] (alloc) lacks a non-negative 'addr' or 'size'");
    /* entries that are not dicts */
    EXPECT("{\"segments\":[],\"device_traces\":[[5]]}", FSC_EFORMAT,
           "device_traces[0][0] is not a dict");
    EXPECT("{\"segments\":[],\"device_traces\":[[{\"action\":\"segment_alloc\",\"addr\":"
           "268435456,\"size\":20971520,\"stream\":0,\"time_us\":5},[]]]}",
           FSC_EFORMAT, "device_traces[0][1] is not a dict");
    EXPECT("{\"segments\":[],\"device_traces\":[{\"action\":\"alloc\"}]}", FSC_EFORMAT,
           "device_traces[0] is not a list");
}

static void test_deep(void)
{
    char buf[400];
    /* 64 levels are read; a 65th is refused, in the tree or in an entry */
    char p[1024];
    snprintf(p, sizeof p, "%s", fsc_test_path("deep64.json"));
    memset(buf, '[', 64);
    memset(buf + 64, ']', 64);
    put_file(p, buf, 128);
    tp_col_t c;
    fsc_err_t err = {0};
    CU_ASSERT_NOT_EQUAL(tp_import(p, -1, 0, &c, NULL, &err), FSC_ELIMIT);
    CU_ASSERT_PTR_NULL(strstr(err.msg, "nested"));
    tp_free(&c);
    memset(buf, '[', 65);
    memset(buf + 65, ']', 65);
    expect_error(buf, 130, FSC_ELIMIT, ": offset 64: JSON nested deeper than 64 levels");
    memset(buf, '[', 64);
    buf[64] = '1';
    memset(buf + 65, ']', 64);
    expect_error(buf, 129, FSC_ELIMIT, ": offset 64: JSON nested deeper than 64 levels");
    int k = snprintf(buf, sizeof buf, "{\"device_traces\":[[{\"a\":");
    memset(buf + k, '[', 70);
    memset(buf + k + 70, ']', 70);
    snprintf(buf + k + 140, sizeof buf - (size_t)k - 140, "}]]}");
    expect_error(buf, strlen(buf), FSC_ELIMIT, ": offset 84: JSON nested deeper than 64 levels");
}

/* Every cut of a real JSON snapshot fails cleanly, naming the file. */
static void test_truncated(void)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/tiny.json"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    char p[1024];
    snprintf(p, sizeof p, "%s", fsc_test_path("cut.json"));
    size_t end = len;
    while (end > 0 && (data[end - 1] == '\n' || data[end - 1] == ' '))
        end--;
    size_t bad = 0;
    for (size_t n = 1; n < end; n++) {
        put_file(p, data, n);
        tp_col_t c;
        fsc_err_t err = {0};
        int rc = tp_import(p, -1, 0, &c, NULL, &err);
        int ok = rc == FSC_EFORMAT && strncmp(err.msg, p, strlen(p)) == 0 &&
                 strchr(err.msg, '\n') == NULL && strstr(err.msg, "invalid JSON") != NULL &&
                 c.headers == 0 && c.n == 0;
        if (!ok && bad++ < 3)
            fprintf(stderr, "\ncut at %zu: rc %d '%s'\n", n, rc, err.msg);
        tp_free(&c);
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(data);
}

/* fragscope import of hostile JSON: exit 2, one line, no output file. */
static void test_cli_errors(void)
{
    char in[1024], out[1024], errf[1024];
    snprintf(in, sizeof in, "%s", fsc_test_path("cli.json"));
    snprintf(out, sizeof out, "%s", fsc_test_path("cli.fstrace"));
    snprintf(errf, sizeof errf, "%s", fsc_test_path("cli.err"));
    static const char k_bad[] = "{\"segments\":[],\"device_traces\":[[" SEG ",{\"action\":\"a\\x\"}]]}";
    char text[512];
    snprintf(text, sizeof text, k_bad, "268435456", "5");
    put_file(in, text, strlen(text));
    const char *args[] = {"import", in, "-o", out, NULL};
    long rss = 0;
    CU_ASSERT_EQUAL(fsc_test_run_fragscope(args, errf, 0, &rss), 2);
    char *msg = fsc_test_slurp(errf, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
    CU_ASSERT_EQUAL(fsc_test_count(msg, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, in));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "invalid JSON: bad escape \\x"));
    CU_ASSERT_FALSE(fsc_test_file_exists(out));
    free(msg);
}

/* ---- memory -------------------------------------------------------------- */

/* A snapshot of n steps: one segment, then per step an alloc with an
 * 8-frame stack, its free_requested and free_completed, all written out
 * in full as json.dump does (JSON shares nothing). */
static long long write_history(const char *path, int n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const unsigned long long base = 0x7f0000000000ull;
    fprintf(f, "{\"segments\": [], \"device_traces\": [[{\"action\": \"segment_alloc\", \"addr\": "
               "%llu, \"size\": 1073741824, \"stream\": 0, \"time_us\": 1000}",
            base);
    static const char *const k_act[] = {"alloc", "free_requested", "free_completed"};
    for (int i = 0; i < n; i++) {
        unsigned long long a = base; /* freed before the next: the segment is whole again */
        for (int k = 0; k < 3; k++) {
            fprintf(f,
                    ", {\"action\": \"%s\", \"addr\": %llu, \"size\": 1048576, \"stream\": 0, "
                    "\"time_us\": %d, \"frames\": [",
                    k_act[k], a, 2000 + 3 * i + k);
            for (int j = 0; j < 8; j++)
                fprintf(f,
                        "%s{\"filename\": \"/opt/venv/lib/python3.12/site-packages/model/"
                        "layer%d.py\", \"line\": %d, \"name\": \"forward_%d\"}",
                        j ? ", " : "", j, 100 + j + (i % 7), j);
            fprintf(f, "], \"compile_context\": \"N/A\", \"user_metadata\": \"\"}");
        }
    }
    fprintf(f, "]], \"allocator_settings\": {\"garbage_collection_threshold\": 0.0}}");
    long long size = ftell(f);
    fclose(f);
    return size;
}

#ifdef FSC_TEST_SANITIZED
#define RSS_JSON_KB (512L * 1024)
#define RSS_GROWTH_KB (64L * 1024)
#else
/* measured: 19 MB for 15, 45 and 120 MB of input (the heap and the pages
 * of the mapped file that are not handed back yet, up to 12 MiB) */
#define RSS_JSON_KB (40L * 1024)
#define RSS_GROWTH_KB (4L * 1024)
#endif

static void test_bounded_rss(void)
{
    char small[1024], big[1024], out[1024];
    snprintf(small, sizeof small, "%s", fsc_test_path("hist_small.json"));
    snprintf(big, sizeof big, "%s", fsc_test_path("hist_big.json"));
    snprintf(out, sizeof out, "%s", fsc_test_path("hist.fstrace"));
    long long ns = write_history(small, 5000), nb = write_history(big, 15000);
    CU_ASSERT(ns > 12000000 && nb > 3 * ns - 1000 && nb < 50000000);
    long rs = 0, rb = 0;
    const char *as[] = {"import", small, "-o", out, NULL};
    const char *ab[] = {"import", big, "-o", out, NULL};
    CU_ASSERT_EQUAL_FATAL(fsc_test_run_fragscope(as, "/dev/null", 0, &rs), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_run_fragscope(ab, "/dev/null", 0, &rb), 0);
    fprintf(stderr, "\n  JSON history: %lld bytes %ld KiB peak RSS, %lld bytes %ld KiB\n", ns,
            rs, nb, rb);
    /* the whole text as a tree (cJSON, before) needed ~10x the input: 432 MiB
     * for the larger */
    CU_ASSERT(rb < RSS_JSON_KB);
    CU_ASSERT(rb < rs + RSS_GROWTH_KB);
    unlink(small);
    unlink(big);
    unlink(out);
}

static const fsc_test_case_t k_tests[] = {
    {"JSON twins import and analyze as their pickles", test_twins},
    {"JSON twin with two devices, and a failing one", test_twin_devices},
    {"exact integers, full escapes, duplicate keys", test_values},
    {"the reader: tree, numbers, entries, a later device_traces", test_reader},
    {"frames stepped over in the passes that need no stack", test_skip_frames},
    {"frame dicts of the same text are one kept node", test_frame_dicts},
    {"the last top-level device_traces is imported", test_duplicate_traces},
    {"bad JSON: one line naming file and offset", test_bad_json},
    {"nesting beyond 64 levels is refused", test_deep},
    {"every cut of a JSON snapshot fails cleanly", test_truncated},
    {"fragscope import of bad JSON: exit 2, nothing written", test_cli_errors},
    {"peak RSS does not grow with the history", test_bounded_rss},
    {NULL, NULL},
};

FSC_TEST_MAIN("pytorch_json", k_tests)
