/*
 * test_viewer_state.c — the report's state-at-any-event, active memory
 * timeline and stacks views in headless Chromium, checked against the run
 * database they were built from: the live blocks the page draws at an event
 * are the rows of `blocks` live at that event, the hover text of a band is
 * its block's row, a click on a band highlights that block, and
 * #state?event=N in the address opens event N. Runs on a real PyTorch
 * snapshot and on a simulated run too long for the page to carry every
 * event. Skips, passing with a note, when Chromium is not installed.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"

static int g_no_browser;



static void check_clean(const char *dom)
{
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "data-rendered=\"yes\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<pre id=\"js-errors\" class=\"diag\"></pre>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<ul id=\"csp-violations\" class=\"diag\"></ul>"));
    if (strstr(dom, "<pre id=\"js-errors\" class=\"diag\"></pre>") == NULL) {
        char *e = fsc_test_dom_part(dom, "<pre id=\"js-errors\"", "</pre>");
        fprintf(stderr, "\n%.2000s\n", e ? e : "?");
        free(e);
    }
    /* Each view is there, in the element its anchor names, and drew. */
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<section id=\"timeline\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<section id=\"state\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<section id=\"stacks\""));
    char *tl = fsc_test_dom_part(dom, "<section id=\"timeline\"", "</section>");
    CU_ASSERT(tl != NULL && strstr(tl, "<canvas id=\"bands\"") != NULL && strstr(tl, "data-drawn=\"") != NULL);
    free(tl);
    char *st = fsc_test_dom_part(dom, "<section id=\"state\"", "</section>");
    CU_ASSERT(st != NULL && strstr(st, "class=\"segbar\"") != NULL);
    free(st);
    char *sk = fsc_test_dom_part(dom, "<section id=\"stacks\"", "</section>");
    CU_ASSERT(sk != NULL && strstr(sk, "class=\"frame\"") != NULL);
    free(sk);
}

/* Analyze input into name.db, render name.html; returns the db path. */
static const char *build(const char *input, const char *name, const char *extra)
{
    static char db[512];
    char out[4096];
    snprintf(db, sizeof db, "%s", fsc_test_path(name));
    strcat(db, ".db");
    int rc = fsc_test_sh(out, sizeof out, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s --no-suggest",
                         fsc_test_fragscope(), input, db);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = fsc_test_sh(out, sizeof out, "%s view %s -o %s.html %s", fsc_test_fragscope(), db,
                     fsc_test_path(name), extra ? extra : "");
    if (rc != 0)
        fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return db;
}

/* Load name.html (with the probe and its inputs appended when probe_js is
 * given) and return the DOM, or NULL when there is no browser. */
static char *load(const char *name, const char *probe_js, const char *hash)
{
    char html[600];
    snprintf(html, sizeof html, "%s.html", fsc_test_path(name));
    if (probe_js != NULL) {
        char page_path[600];
        snprintf(page_path, sizeof page_path, "%s", html);
        snprintf(html, sizeof html, "%s.probe.html", fsc_test_path(name));
        fsc_test_page_with_probe(page_path, probe_js, "probe_state.js", html);
    }
    return fsc_test_chromium_dom(html, hash, 0, &g_no_browser);
}

/* "alloc_seq + a|p, ..." of the blocks live right after event N. */
static char *live_in_db(sqlite3 *h, long long N)
{
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h,
        "SELECT alloc_seq, free_requested_seq IS NOT NULL AND free_requested_seq <= ?1 FROM blocks"
        " WHERE alloc_seq <= ?1 AND (free_completed_seq IS NULL OR free_completed_seq > ?1)"
        " ORDER BY alloc_seq", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, N);
    size_t cap = 1024, len = 0;
    char *s = malloc(cap);
    s[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (len + 32 > cap)
            s = realloc(s, cap *= 2);
        len += (size_t)sprintf(s + len, "%s%lld%s", len ? "," : "",
                               (long long)sqlite3_column_int64(st, 0),
                               sqlite3_column_int(st, 1) ? "p" : "a");
    }
    sqlite3_finalize(st);
    return s;
}

static long long db_int(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The page's data block, parsed. */
static cJSON *page_data(const char *name)
{
    char html[600];
    snprintf(html, sizeof html, "%s.html", fsc_test_path(name));
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    char *json = fsc_test_dom_part(page, "<script type=\"application/json\" id=\"data\">", "</script>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    cJSON *d = cJSON_Parse(strchr(json, '>') + 1);
    free(json);
    free(page);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

/* Open each event through the page's anchor handling and compare the blocks
 * it draws with the database's. */
static void check_events(const char *dom, sqlite3 *h, const long long *ev, size_t n, int exact)
{
    for (size_t i = 0; i < n; i++) {
        char key[40];
        snprintf(key, sizeof key, "ev%lld", ev[i]);
        char *got = fsc_test_probe_value(dom, key);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        char *want = live_in_db(h, ev[i]);
        char head[64];
        snprintf(head, sizeof head, "%lld %s ", ev[i], exact ? "yes" : "no");
        int ok = strncmp(got, head, strlen(head)) == 0 && strcmp(got + strlen(head), want) == 0;
        if (!ok) {
            fprintf(stderr, "\nevent %lld: page '%.300s'\n  database '%.300s'\n", ev[i], got, want);
            CU_FAIL("live blocks differ from the database");
        }
        free(got);
        free(want);
    }
}

static void fmt_bytes(char *b, size_t n, long long v)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (v < 1024) {
        snprintf(b, n, "%lld B", v);
        return;
    }
    double x = (double)v;
    int i = 0;
    while (x >= 1024 && i < 5) {
        x /= 1024;
        i++;
    }
    snprintf(b, n, "%.2f %s", x, u[i]);
}

static void fmt_count(char *b, size_t n, long long v)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", v);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            b[o++] = ',';
        b[o++] = raw[i];
    }
    b[o] = '\0';
}

static void expect_in(const char *hay, const char *needle, const char *what)
{
    if (strstr(hay, needle) == NULL) {
        fprintf(stderr, "\n%s: '%s' not in '%.600s'\n", what, needle, hay);
        CU_FAIL("hover text");
    }
}

/* The tooltip of band k is its row of the blocks table. */
static void check_band(const char *dom, sqlite3 *h, int k)
{
    char key[32];
    snprintf(key, sizeof key, "band%d", k);
    char *got = fsc_test_probe_value(dom, key);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    long long a = atoll(got);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h,
        "SELECT addr, size, requested, free_requested_seq, free_completed_seq, tag FROM blocks"
        " WHERE alloc_seq = ?1", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, a);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    char want[256], num[64];
    snprintf(want, sizeof want, "block 0x%llx", (long long)sqlite3_column_int64(st, 0));
    expect_in(got, want, key);
    fmt_bytes(num, sizeof num, sqlite3_column_int64(st, 1));
    snprintf(want, sizeof want, "size%s", num);
    expect_in(got, want, key);
    fmt_bytes(num, sizeof num, sqlite3_column_int64(st, 2));
    snprintf(want, sizeof want, "requested%s", num);
    expect_in(got, want, key);
    fmt_count(num, sizeof num, a);
    snprintf(want, sizeof want, "allocatedevent %s at", num);
    expect_in(got, want, key);
    if (sqlite3_column_type(st, 3) == SQLITE_NULL) {
        expect_in(got, "free requestednever", key);
    } else {
        fmt_count(num, sizeof num, sqlite3_column_int64(st, 3));
        snprintf(want, sizeof want, "free requestedevent %s at", num);
        expect_in(got, want, key);
    }
    if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
        fmt_count(num, sizeof num, sqlite3_column_int64(st, 4));
        snprintf(want, sizeof want, "free completedevent %s at", num);
        expect_in(got, want, key);
    }
    sqlite3_finalize(st);
    free(got);
    /* The click highlighted that very block in the state view. */
    snprintf(key, sizeof key, "click%d", k);
    got = fsc_test_probe_value(dom, key);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL(atoll(got), a);
    free(got);
}

static unsigned long long g_rng = 14;
static long long rnd(long long n)
{
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (long long)((g_rng >> 33) % (unsigned long long)n);
}

static void test_snapshot_state(void)
{
    const char *db = build(fsc_test_data("pytorch/gpt2_varlen.pickle"), "gpt2", NULL);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long long events = db_int(h, "SELECT value FROM meta WHERE key = 'events_total'");
    CU_ASSERT_EQUAL_FATAL(events, 108585);
    cJSON *d = page_data("gpt2");
    /* Every lifetime of this run fits: one window over the whole run. */
    CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "state"), "exact_all")));
    int nbands = cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "bands"), "a"));
    CU_ASSERT_EQUAL(nbands, 2000);
    cJSON_Delete(d);
    long long ev[20];
    char js[1024];
    int o = snprintf(js, sizeof js, "window.FSC_PROBE_EVENTS=[");
    for (int i = 0; i < 20; i++) {
        ev[i] = i == 0 ? 81858 /* the peak */ : rnd(events);
        o += snprintf(js + o, sizeof js - (size_t)o, "%s%lld", i ? "," : "", ev[i]);
    }
    snprintf(js + o, sizeof js - (size_t)o, "];window.FSC_PROBE_BANDS=[0,%d,%d];", nbands / 2,
             nbands - 1);
    char *dom = load("gpt2", js, NULL);
    if (dom != NULL) {
        check_clean(dom);
        char *err = fsc_test_probe_value(dom, "error");
        CU_ASSERT_PTR_NULL(err);
        if (err)
            fprintf(stderr, "\nprobe error: %s\n", err);
        free(err);
        check_events(dom, h, ev, 20, 1);
        check_band(dom, h, 0);
        check_band(dom, h, nbands / 2);
        check_band(dom, h, nbands - 1);
        char *c = fsc_test_probe_value(dom, "stacks_choices");
        /* the peak and the chosen event (no OOM in this run) */
        CU_ASSERT(c != NULL && strcmp(c, "2") == 0);
        free(c);
        free(dom);
    }
    /* #state?event=N in the address opens that event. */
    dom = load("gpt2", NULL, "#state?event=4321");
    if (dom != NULL) {
        check_clean(dom);
        char *map = fsc_test_dom_part(dom, "<svg id=\"statemap\"", ">");
        CU_ASSERT(map != NULL && strstr(map, "data-event=\"4321\"") != NULL &&
                  strstr(map, "data-exact=\"yes\"") != NULL);
        free(map);
        free(dom);
    }
    sqlite3_close(h);
}

/* An OOM run: each OOM has its anchor and drawing, and the stacks view
 * offers it. */
static void test_oom_anchor(void)
{
    build(fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), "oom", NULL);
    char *dom = load("oom", "window.FSC_PROBE_EVENTS=[];", NULL);
    if (dom == NULL)
        return;
    check_clean(dom);
    /* numbered as report and whatif number it: ooms.id, from 0 */
    char *card = fsc_test_dom_part(dom, "id=\"oom-0\"", "</h3>");
    CU_ASSERT(card != NULL && strstr(card, "OOM #0") != NULL);
    free(card);
    card = fsc_test_dom_part(dom, "id=\"oom-0\"", "</svg>");
    CU_ASSERT(card != NULL && strstr(card, "<svg") != NULL);
    free(card);
    char *c = fsc_test_probe_value(dom, "stacks_choices");
    CU_ASSERT(c != NULL && strcmp(c, "3") == 0); /* peak, the OOM, the chosen event */
    free(c);
    free(dom);
}

/* A run with more lifetimes than the page carries: events inside the
 * carried windows are exact, one outside is shown at the nearest carried
 * event and marked so. */
static void test_long_run_windows(void)
{
    char out[4096];
    const char *trace = fsc_test_path("long.fstrace");
    char tr[512];
    snprintf(tr, sizeof tr, "%s", trace);
    int rc = fsc_test_sh(out, sizeof out, "%s simulate --workload gpt2 --steps 60 -o %s",
                         fsc_test_fragscope(), tr);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const char *db = build(tr, "long", "--bands 500");
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    long long blocks = db_int(h, "SELECT count(*) FROM blocks");
    CU_ASSERT(blocks > 36000);
    cJSON *d = page_data("long");
    const cJSON *state = cJSON_GetObjectItem(d, "state");
    CU_ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(state, "exact_all")));
    const cJSON *wins = cJSON_GetObjectItem(state, "windows");
    int nw = cJSON_GetArraySize(wins);
    CU_ASSERT(nw >= 8);
    CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "bands"), "a")), 500);
    long long ev[21];
    char js[1024];
    int o = snprintf(js, sizeof js, "window.FSC_PROBE_EVENTS=[");
    for (int i = 0; i < 20; i++) {
        const cJSON *w = cJSON_GetArrayItem(wins, (int)rnd(nw));
        long long lo = (long long)cJSON_GetArrayItem(w, 0)->valuedouble;
        long long hi = (long long)cJSON_GetArrayItem(w, 1)->valuedouble;
        ev[i] = lo + rnd(hi - lo + 1);
        o += snprintf(js + o, sizeof js - (size_t)o, "%s%lld", i ? "," : "", ev[i]);
    }
    /* Just past the end of a window, where no window is near: not carried,
     * shown at that window's end. */
    long long cand = -1, edge = -1;
    for (int i = 0; i < nw && cand < 0; i++) {
        long long c = (long long)cJSON_GetArrayItem(cJSON_GetArrayItem(wins, i), 1)->valuedouble + 2;
        int clear = 1;
        for (int j = 0; j < nw; j++) {
            long long lo = (long long)cJSON_GetArrayItem(cJSON_GetArrayItem(wins, j), 0)->valuedouble;
            long long hi = (long long)cJSON_GetArrayItem(cJSON_GetArrayItem(wins, j), 1)->valuedouble;
            if ((c >= lo - 3 && c <= hi) || (j != i && hi == c - 2))
                clear = 0;
        }
        if (clear) {
            cand = c;
            edge = c - 2;
        }
    }
    CU_ASSERT_FATAL(cand > 0);
    ev[20] = cand;
    /* The first band, and the last one whose block is live in a carried window. */
    const cJSON *ba = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "bands"), "a");
    const cJSON *bc = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "bands"), "c");
    int last = -1;
    for (int k = cJSON_GetArraySize(ba) - 1; k >= 0 && last < 0; k--) {
        double a = cJSON_GetArrayItem(ba, k)->valuedouble, c = cJSON_GetArrayItem(bc, k)->valuedouble;
        double e = c >= 0 ? c : 1e18;
        for (int j = 0; j < nw; j++) {
            double lo = cJSON_GetArrayItem(cJSON_GetArrayItem(wins, j), 0)->valuedouble;
            double hi = cJSON_GetArrayItem(cJSON_GetArrayItem(wins, j), 1)->valuedouble;
            if (a <= hi && e > lo)
                last = k;
        }
    }
    CU_ASSERT_FATAL(last > 0);
    snprintf(js + o, sizeof js - (size_t)o, ",%lld];window.FSC_PROBE_BANDS=[0,%d];", ev[20], last);
    cJSON_Delete(d);
    char *dom = load("long", js, NULL);
    if (dom != NULL) {
        check_clean(dom);
        check_events(dom, h, ev, 20, 1);
        char key[40];
        snprintf(key, sizeof key, "ev%lld", ev[20]);
        char *got = fsc_test_probe_value(dom, key);
        char head[64];
        snprintf(head, sizeof head, "%lld no ", edge);
        CU_ASSERT(got != NULL && strncmp(got, head, strlen(head)) == 0);
        free(got);
        snprintf(key, sizeof key, "note%lld", ev[20]);
        char *note = fsc_test_probe_value(dom, key);
        CU_ASSERT(note != NULL && strstr(note, "is not carried by this page") != NULL);
        free(note);
        check_band(dom, h, 0);
        check_band(dom, h, last);
        free(dom);
    }
    sqlite3_close(h);
}

/* The other real snapshots (expandable segments, a history that had
 * wrapped, frees of unknown blocks, segments only) draw every view without
 * a script error or a blocked request, and the state view at the peak
 * draws exactly the database's live blocks. */
static void test_other_snapshots(void)
{
    static const char *const k_snaps[] = {"resnet50_varbatch", "expandable", "midrun",
                                          "unknown_free", "segments_only"};
    for (size_t i = 0; i < sizeof k_snaps / sizeof *k_snaps; i++) {
        char in[512], out[4096];
        snprintf(in, sizeof in, "%s/pytorch/%s.pickle", FSC_TEST_DATA, k_snaps[i]);
        const char *db = fsc_test_path(k_snaps[i]);
        char dbp[600];
        snprintf(dbp, sizeof dbp, "%s.db", db);
        int rc = fsc_test_sh(out, sizeof out,
                             "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s --lenient --no-suggest",
                             fsc_test_fragscope(), in, dbp);
        if (rc != 0) {
            fprintf(stderr, "\n%s: %s\n", k_snaps[i], out);
            CU_FAIL("analyze");
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s view %s -o %s.html",
                                          fsc_test_fragscope(), dbp, db), 0);
        sqlite3 *h;
        CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(dbp, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        long long peak = db_int(h, "SELECT value FROM summary WHERE key = 'peak_allocated_seq'");
        long long nblocks = db_int(h, "SELECT count(*) FROM blocks");
        char js[128];
        snprintf(js, sizeof js, "window.FSC_PROBE_EVENTS=[%lld];window.FSC_PROBE_BANDS=[0];", peak);
        char *dom = load(k_snaps[i], js, NULL);
        if (dom == NULL) {
            sqlite3_close(h);
            return;
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(dom, "data-rendered=\"yes\""));
        CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<pre id=\"js-errors\" class=\"diag\"></pre>"));
        CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<ul id=\"csp-violations\" class=\"diag\"></ul>"));
        if (strstr(dom, "<pre id=\"js-errors\" class=\"diag\"></pre>") == NULL) {
            char *e = fsc_test_dom_part(dom, "<pre id=\"js-errors\"", "</pre>");
            fprintf(stderr, "\n%s: %.2000s\n", k_snaps[i], e ? e : "?");
            free(e);
        }
        if (nblocks > 0 && peak >= 0)
            check_events(dom, h, &peak, 1, 1);
        free(dom);
        sqlite3_close(h);
    }
}

/* A JSON array of numbers as a malloc'd vector (walked once: cJSON's
 * indexed access is linear). */
static double *vec(const cJSON *arr, int *n)
{
    int k = cJSON_GetArraySize(arr), i = 0;
    double *v = malloc((size_t)(k ? k : 1) * sizeof *v);
    for (const cJSON *c = arr ? arr->child : NULL; c != NULL; c = c->next)
        v[i++] = c->valuedouble;
    if (n)
        *n = k;
    return v;
}

/* The data block alone (no browser): decoding the state's lifetimes the
 * way docs/viewer.md describes gives the blocks table's live set, with the
 * right segment, offset, size and requested size, at events of every
 * window. */
static void test_state_encoding(void)
{
    char out[4096], tr[512];
    snprintf(tr, sizeof tr, "%s", fsc_test_path("enc.fstrace"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(out, sizeof out, "%s simulate --workload gpt2 --steps 60 -o %s",
                                      fsc_test_fragscope(), tr), 0);
    const char *db = build(tr, "enc", NULL);
    sqlite3 *h;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cJSON *d = page_data("enc");
    const cJSON *S = cJSON_GetObjectItem(d, "state");
    const cJSON *B = cJSON_GetObjectItem(S, "blocks"), *G = cJSON_GetObjectItem(S, "segs");
    double unit = cJSON_GetObjectItem(S, "unit")->valuedouble;
    int n = 0;
    double *va = vec(cJSON_GetObjectItem(B, "a"), &n), *vr = vec(cJSON_GetObjectItem(B, "r"), NULL);
    double *vc = vec(cJSON_GetObjectItem(B, "c"), NULL), *vs = vec(cJSON_GetObjectItem(B, "s"), NULL);
    double *vo = vec(cJSON_GetObjectItem(B, "o"), NULL), *vz = vec(cJSON_GetObjectItem(B, "z"), NULL);
    double *vw = vec(cJSON_GetObjectItem(B, "w"), NULL), *gaddr = vec(cJSON_GetObjectItem(G, "addr"), NULL);
    CU_ASSERT_FATAL(n > 1000);
    const cJSON *wins = cJSON_GetObjectItem(S, "windows");
    for (int w = 0; w < cJSON_GetArraySize(wins); w++) {
        const cJSON *win = cJSON_GetArrayItem(wins, w);
        long long N = (long long)cJSON_GetArrayItem(win, 0)->valuedouble +
                      rnd((long long)(cJSON_GetArrayItem(win, 1)->valuedouble -
                                      cJSON_GetArrayItem(win, 0)->valuedouble) + 1);
        /* "alloc_seq:addr:size:requested{a|p}" of the page and of the database */
        size_t cap = 1 << 16, len = 0;
        char *got = malloc(cap);
        got[0] = '\0';
        double a = 0;
        for (int i = 0; i < n; i++) {
            a += va[i];
            if (a > (double)N)
                break;
            if (vc[i] >= 0 && a + vc[i] <= (double)N)
                continue;
            double size = vz[i] * unit;
            if (len + 128 > cap)
                got = realloc(got, cap *= 2);
            len += (size_t)sprintf(got + len, "%s%.0f:%.0f:%.0f:%.0f%c", len ? "," : "", a,
                                   gaddr[(int)vs[i]] + vo[i] * unit, size, size - vw[i],
                                   vr[i] >= 0 && a + vr[i] <= (double)N ? 'p' : 'a');
        }
        sqlite3_stmt *st;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h,
            "SELECT alloc_seq, addr, size, requested,"
            " free_requested_seq IS NOT NULL AND free_requested_seq <= ?1 FROM blocks"
            " WHERE alloc_seq <= ?1 AND (free_completed_seq IS NULL OR free_completed_seq > ?1)"
            " ORDER BY alloc_seq", -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_int64(st, 1, N);
        size_t wcap = 1 << 16, wlen = 0;
        char *want = malloc(wcap);
        want[0] = '\0';
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (wlen + 128 > wcap)
                want = realloc(want, wcap *= 2);
            wlen += (size_t)sprintf(want + wlen, "%s%lld:%lld:%lld:%lld%c", wlen ? "," : "",
                                    (long long)sqlite3_column_int64(st, 0),
                                    (long long)sqlite3_column_int64(st, 1),
                                    (long long)sqlite3_column_int64(st, 2),
                                    (long long)sqlite3_column_int64(st, 3),
                                    sqlite3_column_int(st, 4) ? 'p' : 'a');
        }
        sqlite3_finalize(st);
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "\nevent %lld: page '%.200s'\n  database '%.200s'\n", N, got, want);
            CU_FAIL("decoded state differs from the blocks table");
        }
        free(got);
        free(want);
    }
    free(va);
    free(vr);
    free(vc);
    free(vs);
    free(vo);
    free(vz);
    free(vw);
    free(gaddr);
    cJSON_Delete(d);
    sqlite3_close(h);
}

static const fsc_test_case_t k_tests[] = {
    {"the data block's lifetimes decode to the blocks table", test_state_encoding},
    {"the other real snapshots draw cleanly", test_other_snapshots},
    {"state at 20 events of a real snapshot matches the blocks table", test_snapshot_state},
    {"each OOM has its anchor and its drawing", test_oom_anchor},
    {"a long run: carried windows exact, other events marked", test_long_run_windows},
    {NULL, NULL},
};

FSC_TEST_MAIN("viewer_state", k_tests)
