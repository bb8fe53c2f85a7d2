/*
 * test_viewer_runs.c — the report of a job database: four simulated ranks
 * of different peaks (GPT-2, two steps, each under its own capacity; ranks
 * 0 and 1 run out of memory; rank 1 simulated first, so it runs out of
 * memory first on the wall clock) analyzed into one database in the order
 * rank 3, 2, 1, 0, so that run order and rank order differ. Checks the overview (one
 * chart per run with fsc_rundb_run_label's words, sorted by rank, a fixed
 * number of points, the first-OOM and least-headroom runs marked), the
 * picker in headless Chromium (picking a run shows that run's exact peaks
 * in the summary and in the data the views draw from, its OOM cards, and
 * every view drew), the #run-N anchors, the bound on the runs carried in
 * detail and on their size, and that a one-run database renders without
 * any of it. The browser checks skip, passing with a note, when Chromium
 * is not installed.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "fsc_test.h"

#define NRUNS 4

static int g_no_browser;
static char g_job[512];
static char g_single[NRUNS][512]; /* the single-run database of rank r */

static void sh_ok(const char *what, const char *cmd)
{
    char out[4096];
    int rc = fsc_test_sh(out, sizeof out, "%s", cmd);
    if (rc != 0)
        fprintf(stderr, "\n%s failed (%d): %s\n", what, rc, out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* Four ranks: rank r simulates GPT-2 for two steps with seed r + 1 under a
 * capacity of 10 + 2r GiB (ranks 0 and 1 run out of memory). */
static const char *job_db(void)
{
    if (g_job[0] != '\0')
        return g_job;
    char cmd[2048];
    /* Rank 1 first: on the wall clock it runs out of memory first. */
    static const int sim_order[NRUNS] = {1, 0, 2, 3};
    for (int i = 0; i < NRUNS; i++) {
        int r = sim_order[i];
        char trace[400];
        snprintf(trace, sizeof trace, "%s", fsc_test_path(""));
        snprintf(trace + strlen(trace), sizeof trace - strlen(trace), "rank%d.fstrace", r);
        /* no host: the labels below are the same on every machine */
        snprintf(cmd, sizeof cmd, "FRAGSCOPE_HOST= %s simulate --workload gpt2 --steps 2 --seed %d --capacity %dGiB -o %s",
                 fsc_test_fragscope(), r + 1, 10 + 2 * r, trace);
        sh_ok("simulate", cmd);
        snprintf(g_single[r], sizeof g_single[r], "%s.db", trace);
        snprintf(cmd, sizeof cmd, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s -o %s --no-suggest",
                 fsc_test_fragscope(), trace, g_single[r]);
        sh_ok("analyze", cmd);
    }
    /* One job database of the four, in the order rank 3, 2, 1, 0 (the ranks
     * from the file names). */
    snprintf(g_job, sizeof g_job, "%s", fsc_test_path("job.db"));
    snprintf(cmd, sizeof cmd, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %srank3.fstrace %srank2.fstrace "
             "%srank1.fstrace %srank0.fstrace -o %s --no-suggest -j 2", fsc_test_fragscope(),
             fsc_test_path(""), fsc_test_path(""), fsc_test_path(""), fsc_test_path(""), g_job);
    sh_ok("analyze of the four", cmd);
    return g_job;
}

static int run_of_rank(int rank) { return NRUNS - 1 - rank; }

static long long single_sum(int rank, const char *key)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(g_single[rank], &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    if (sqlite3_prepare_v2(h, "SELECT value FROM summary WHERE key = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* Write the report of db with extra options into tmpdir/name; its text. */
static char *view(const char *db, const char *name, const char *extra, size_t *len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s view %s -o %s %s", fsc_test_fragscope(), db, fsc_test_path(name),
             extra ? extra : "");
    sh_ok("view", cmd);
    char *html = fsc_test_slurp(fsc_test_path(name), len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    return html;
}

static int label_row(const fsc_rundb_run_t *r, void *ctx)
{
    char (*labels)[256] = ctx;
    if (r->run >= 0 && r->run < NRUNS)
        fsc_rundb_run_label(r, labels[r->run], sizeof labels[r->run]);
    return 0;
}

/* The i-th run card of the page, from its start to the next card's. */
static char *card_at(const char *html, size_t i)
{
    const char *p = html;
    for (size_t k = 0; k <= i; k++) {
        p = strstr(p, "<a class=\"run-card");
        if (p == NULL)
            return NULL;
        if (k < i)
            p++;
    }
    return fsc_test_dom_part(p, "<a class=\"run-card", "</a>");
}

static void test_overview(void)
{
    const char *db = job_db();
    size_t len = 0;
    char *html = view(db, "job.html", NULL, &len);
    char labels[NRUNS][256] = {{0}};
    fsc_rundb_t *h = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_rundb_open(db, &h, &err), 0);
    CU_ASSERT_EQUAL(fsc_rundb_each_run(h, label_row, labels), 0);
    fsc_rundb_close(h);
    /* One chart per run, sorted by rank, labelled with the reader's words,
     * the peaks the run's own database has. */
    CU_ASSERT_EQUAL(fsc_test_count(html, "<a class=\"run-card"), NRUNS);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<svg class=\"spark\""), NRUNS);
    for (int rank = 0; rank < NRUNS; rank++) {
        char *c = card_at(html, (size_t)rank);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        char want[512];
        snprintf(want, sizeof want, "data-run=\"%d\" data-rank=\"%d\" data-peak-reserved=\"%lld\" "
                 "data-peak-allocated=\"%lld\"", run_of_rank(rank), rank,
                 single_sum(rank, "peak_reserved_bytes"), single_sum(rank, "peak_allocated_bytes"));
        CU_ASSERT_PTR_NOT_NULL(strstr(c, want));
        snprintf(want, sizeof want, "<div class=\"run-label\">%s</div>", labels[run_of_rank(rank)]);
        CU_ASSERT_PTR_NOT_NULL(strstr(c, want));
        CU_ASSERT(strncmp(labels[run_of_rank(rank)], "rank ", 5) == 0);
        /* The fixed number of points: 120 steps of each series (every run
         * has more timeline rows than that). */
        char *path = fsc_test_dom_part(c, "class=\"sp-alloc\" d=\"", "\"/>");
        CU_ASSERT_PTR_NOT_NULL_FATAL(path);
        CU_ASSERT_EQUAL(fsc_test_count(path, "H"), 120);
        free(path);
        /* The capacity line, and one OOM mark on the two ranks that ran out. */
        CU_ASSERT_EQUAL(fsc_test_count(c, "class=\"sp-cap\""), 1);
        CU_ASSERT_EQUAL(fsc_test_count(c, "class=\"sp-oom\""), rank <= 1 ? 1 : 0);
        /* Rank 1 ran out of memory first (simulated first, so earlier on
         * the wall clock than rank 0's); rank 0 has the least headroom
         * (10 GiB less 9.87 GiB reserved). */
        CU_ASSERT_EQUAL(strstr(c, "run-card first-oom") != NULL || strstr(c, " first-oom\"") != NULL, rank == 1);
        CU_ASSERT_EQUAL(strstr(c, "least-headroom\"") != NULL, rank == 0);
        free(c);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<span class=\"flag first-oom\">first to run out of memory</span>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "headroom <b class=\"rf-head\">136.00 MiB</b> of 10.00 GiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "This page carries the detail of all 4 runs."));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "rank 1</a> (event 1020, cause capacity; the runs' first OOMs "
                                        "compared on the wall clock)"));
    /* The picker: every run, by rank, the first OOM's shown first; the page
     * is that run's, the other three carried beside it. */
    char *sel = fsc_test_dom_part(html, "<select id=\"run-pick\"", "</select>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sel);
    CU_ASSERT_EQUAL(fsc_test_count(sel, "<option"), NRUNS);
    CU_ASSERT_PTR_NOT_NULL(strstr(sel, "data-default=\"2\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(sel, "<option value=\"2\" selected>rank 1"));
    CU_ASSERT(strstr(sel, "<option value=\"3\">") < strstr(sel, "<option value=\"2\"") &&
              strstr(sel, "<option value=\"1\">") < strstr(sel, "<option value=\"0\">"));
    free(sel);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<script type=\"application/json\" id=\"data\">"), 1);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<script type=\"application/json\" id=\"data-run-"), 3);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<template id=\"static-run-"), 3);
    CU_ASSERT_PTR_NULL(strstr(html, "id=\"data-run-2\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<a href=\"#runs\">Runs</a>"));
    free(html);
}

/* A one-run database: the page as before, no overview, no picker. */
static void test_single_run(void)
{
    job_db();
    size_t len = 0;
    char *html = view(g_single[0], "single.html", NULL, &len);
    CU_ASSERT_PTR_NULL(strstr(html, "id=\"runs\""));
    CU_ASSERT_PTR_NULL(strstr(html, "id=\"run-pick\""));
    CU_ASSERT_PTR_NULL(strstr(html, "id=\"run-bar\""));
    CU_ASSERT_PTR_NULL(strstr(html, "class=\"run-card"));
    CU_ASSERT_PTR_NULL(strstr(html, "id=\"data-run-"));
    CU_ASSERT_PTR_NULL(strstr(html, "<template"));
    CU_ASSERT_PTR_NULL(strstr(html, "href=\"#runs\""));
    CU_ASSERT_EQUAL(fsc_test_count(html, "<script type=\"application/json\" id=\"data\">"), 1);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<script"), 3);
    free(html);
}

/* Beyond the limit, only the first OOM, the least headroom and --runs are
 * carried; each carried run's part stays under --max-size. */
static void test_detail_bound(void)
{
    const char *db = job_db();
    size_t full = 0, two = 0, three = 0;
    free(view(db, "full.html", NULL, &full));
    char *html = view(db, "two.html", "--detail-limit 2", &two);
    /* rank 1 (run 2) is the page's own, rank 0 (run 3) beside it. */
    CU_ASSERT_EQUAL(fsc_test_count(html, "id=\"data-run-"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "id=\"data-run-3\""));
    CU_ASSERT_EQUAL(fsc_test_count(html, "run-card no-detail"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "no detail in this page: <code>fragscope view job.db --runs 1</code>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "no detail in this page: <code>fragscope view job.db --runs 0</code>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "This page carries the detail of 2 of the 4 runs"));
    CU_ASSERT(two < full);
    free(html);
    html = view(db, "three.html", "--detail-limit 2 --runs 0", &three);
    CU_ASSERT_EQUAL(fsc_test_count(html, "id=\"data-run-"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "id=\"data-run-0\""));
    CU_ASSERT(three > two);
    free(html);
    /* --rank picks the run shown first. */
    html = view(db, "rank3.html", "--rank 3 --detail-limit 1", &three);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<option value=\"0\" selected>rank 3"));
    CU_ASSERT_EQUAL(fsc_test_count(html, "id=\"data-run-"), 2); /* the first OOM, the least headroom */
    free(html);

    /* Under a 400 kB bound every run's part fits: the page less the overview
     * and the other runs' parts, and each of those with the page's fixed
     * cost (measured on the one-run page of an empty-ish database). */
    const size_t bound = 400000;
    size_t n = 0;
    html = view(db, "bounded.html", "--max-size 400000", &n);
    char *ov = fsc_test_dom_part(html, "<section id=\"runs\"", "<div id=\"detail\">");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ov);
    size_t overview = strlen(ov), extras = 0;
    /* The overview costs a few kB per run. */
    CU_ASSERT(overview < NRUNS * 4000 + 4000);
    free(ov);
    for (const char *p = strstr(html, "<template id=\"static-run-"); p != NULL;
         p = strstr(p + 1, "<template id=\"static-run-")) {
        const char *e = strstr(strstr(p, "id=\"data-run-"), "</script>");
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        size_t part = (size_t)(e - p) + 10;
        CU_ASSERT(part < bound);
        extras += part;
    }
    CU_ASSERT(n - overview - extras <= bound);
    CU_ASSERT(n < full);
    free(html);

    /* A run that is not there: one line, exit 2, no file. */
    char out[1024];
    int rc = fsc_test_sh(out, sizeof out, "%s view %s --runs 9 -o %s 2>&1", fsc_test_fragscope(), db,
                         fsc_test_path("none.html"));
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "job.db: no run 9 (the runs are 0 to 3)"));
    CU_ASSERT_FALSE(fsc_test_file_exists(fsc_test_path("none.html")));
    rc = fsc_test_sh(out, sizeof out, "%s view %s --runs 2-x -o %s 2>&1", fsc_test_fragscope(), db,
                     fsc_test_path("none.html"));
    CU_ASSERT_EQUAL(rc, 2);
}

/* The real three-rank job recorded on one H200 (tests/data/gpu/ranks): each
 * chart carries its process's own peak statistics (pipe.run.rN.json), rank
 * 1 has the least headroom (512 MiB, the smallest margin of the caps), rank
 * 2 ran out of memory first, diagnosed external, and is shown first. */
static void test_h200_job(void)
{
    char cmd[4096];
    const char *db = fsc_test_path("h200.db");
    snprintf(cmd, sizeof cmd, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %s %s %s -o %s --no-suggest -j 2",
             fsc_test_fragscope(), fsc_test_data("gpu/ranks/pipe.r0.fstrace"),
             fsc_test_data("gpu/ranks/pipe.r1.fstrace"), fsc_test_data("gpu/ranks/pipe.r2.fstrace"), db);
    sh_ok("analyze of the H200 job", cmd);
    char *html = view(db, "h200.html", NULL, NULL);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<a class=\"run-card"), 3);
    for (int rank = 0; rank < 3; rank++) {
        char rel[64];
        snprintf(rel, sizeof rel, "gpu/ranks/pipe.run.r%d.json", rank);
        char *text = fsc_test_slurp(fsc_test_data(rel), NULL);
        cJSON *j = text ? cJSON_Parse(text) : NULL;
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        const cJSON *st = cJSON_GetObjectItem(j, "memory_stats");
        char want[256];
        snprintf(want, sizeof want, "data-run=\"%d\" data-rank=\"%d\" data-peak-reserved=\"%.0f\" "
                 "data-peak-allocated=\"%.0f\"", rank, rank,
                 cJSON_GetObjectItem(st, "reserved_bytes.all.peak")->valuedouble,
                 cJSON_GetObjectItem(st, "allocated_bytes.all.peak")->valuedouble);
        char *c = card_at(html, (size_t)rank);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL(strstr(c, want));
        CU_ASSERT_EQUAL(strstr(c, " least-headroom\"") != NULL, rank == 1);
        CU_ASSERT_EQUAL(strstr(c, " first-oom\"") != NULL, rank == 2);
        free(c);
        cJSON_Delete(j);
        free(text);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "headroom <b class=\"rf-head\">512.00 MiB</b>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, ", cause external; the runs' first OOMs compared on the wall clock)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "data-default=\"2\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "(external): memory outside the allocator took the device, whatever "
                                        "the headroom"));
    free(html);
}

/* ---- in the browser ---------------------------------------------------- */

/* Load tmpdir/name (+ hash) with the probe appended; the DOM or NULL. */
static char *load(const char *name, const char *hash, int pick)
{
    char html[600], probe_page[700], pre[64];
    snprintf(html, sizeof html, "%s", fsc_test_path(name));
    snprintf(probe_page, sizeof probe_page, "%s.probe.html", html);
    snprintf(pre, sizeof pre, "window.FSC_PROBE_PICK = %d;", pick);
    fsc_test_page_with_probe(html, pre, "probe_runs.js", probe_page);
    char *d = fsc_test_chromium_dom(probe_page, hash, 0, &g_no_browser);
    if (d == NULL)
        return NULL;
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "<pre id=\"js-errors\" class=\"diag\"></pre>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "<ul id=\"csp-violations\" class=\"diag\"></ul>"));
    if (strstr(d, "<pre id=\"js-errors\" class=\"diag\"></pre>") == NULL) {
        char *e = fsc_test_dom_part(d, "<pre id=\"js-errors\"", "</pre>");
        fprintf(stderr, "\n%.2000s\n", e ? e : "?");
        free(e);
    }
    char *error = fsc_test_probe_value(d, "error");
    if (error != NULL)
        fprintf(stderr, "\nprobe error: %s\n", error);
    CU_ASSERT_PTR_NULL(error);
    free(error);
    return d;
}

static void fmt_size(long long b, char *buf, size_t n) { fsc_size_format((uint64_t)b, buf, n); }

/* What the probe's read() reports for run `run` (of rank `rank`), up to
 * the state view's event, which is checked separately. */
static void expect_run(const char *dom, const char *key, int rank, int ooms)
{
    char *v = fsc_test_probe_value(dom, key);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    char pa[64], pr[64], want[512];
    long long a = single_sum(rank, "peak_allocated_bytes"), r = single_sum(rank, "peak_reserved_bytes");
    fmt_size(a, pa, sizeof pa);
    fmt_size(r, pr, sizeof pr);
    snprintf(want, sizeof want, "%d|yes|%s|%s|Summary of rank %d|%lld|%lld|%d|3|", run_of_rank(rank), pa, pr,
             rank, a, r, ooms);
    if (strncmp(v, want, strlen(want)) != 0) {
        fprintf(stderr, "\nprobe %s: want '%s...', got '%s'\n", key, want, v);
        CU_FAIL("run shown");
    }
    /* One card marked as shown, the run's, and the picker on it; no error. */
    char tail[256];
    snprintf(tail, sizeof tail, "|1|rank %d", rank);
    CU_ASSERT_PTR_NOT_NULL(strstr(v, tail));
    snprintf(tail, sizeof tail, "|%d|0", run_of_rank(rank));
    CU_ASSERT(strlen(v) >= strlen(tail) && strcmp(v + strlen(v) - strlen(tail), tail) == 0);
    free(v);
}

static void test_picker_in_browser(void)
{
    const char *db = job_db();
    free(view(db, "pick.html", NULL, NULL));
    char *dom = load("pick.html", NULL, 1);
    if (dom == NULL)
        return;
    /* First shown: rank 1, the first to run out of memory. */
    expect_run(dom, "first", 1, 1);
    char *v = fsc_test_probe_value(dom, "options");
    CU_ASSERT_PTR_NOT_NULL(v);
    CU_ASSERT(v != NULL && strcmp(v, "3,2,1,0") == 0);
    free(v);
    /* Picking rank 0, 1, 2, 3 and rank 0 again: each time that run's
     * figures, its OOM cards and its charts. */
    for (int k = 0; k <= NRUNS; k++) {
        char key[16];
        snprintf(key, sizeof key, "pick%d", k);
        int rank = k % NRUNS;
        expect_run(dom, key, rank, rank <= 1 ? 1 : 0);
    }
    /* Anchors still work within the run picked, and the runs drawn before
     * left no window listener behind (those of one run: resize x3,
     * pointermove, hashchange). */
    v = fsc_test_probe_value(dom, "state_after_pick");
    CU_ASSERT(v != NULL && strcmp(v, "7") == 0);
    free(v);
    v = fsc_test_probe_value(dom, "listeners");
    CU_ASSERT(v != NULL && strcmp(v, "5") == 0);
    free(v);
    free(dom);
}

static void test_anchors_in_browser(void)
{
    const char *db = job_db();
    free(view(db, "anchor.html", NULL, NULL));
    /* #run-N opens run N (rank 0 is run 3). */
    char *dom = load("anchor.html", "#run-3", 0);
    if (dom == NULL)
        return;
    expect_run(dom, "first", 0, 1);
    free(dom);
    /* #run-N/state?event=E: run N's state view at event E. */
    dom = load("anchor.html", "#run-0/state?event=500", 0);
    expect_run(dom, "first", 3, 0);
    char *v = fsc_test_probe_value(dom, "first");
    CU_ASSERT(v != NULL && strstr(v, "|3|500|") != NULL);
    free(v);
    free(dom);
    /* #run-N/oom-0: run N's first OOM card is there. */
    dom = load("anchor.html", "#run-3/oom-0", 0);
    expect_run(dom, "first", 0, 1);
    v = fsc_test_probe_value(dom, "oom0");
    CU_ASSERT(v != NULL && strcmp(v, "yes") == 0);
    free(v);
    free(dom);
    /* A run the page does not carry: the first is shown, and the note says
     * how to get the other. */
    free(view(db, "anchor2.html", "--detail-limit 2", NULL));
    dom = load("anchor2.html", "#run-1", 0);
    expect_run(dom, "first", 1, 1);
    v = fsc_test_probe_value(dom, "note");
    CU_ASSERT(v != NULL && strstr(v, "rank 2") == v &&
              strstr(v, "has no detail in this page: write one that carries it with fragscope view "
                        "job.db --runs 1.") != NULL);
    free(v);
    free(dom);
}

/* Beyond --overview-limit only the runs that matter get a chart. A job of
 * nine runs in rank order: ranks 0-3 as above, ranks 4-7 copies of rank
 * 2's trace (the largest peak reserved, 11.17 GiB; the tie goes to the
 * highest run, rank 7) and rank 8 a copy of rank 1's (an OOM at the same
 * moment, so rank 1 stays the first). Under a limit of 4: rank 1 (first
 * OOM), rank 0 (least headroom), rank 3 (smallest peak) and rank 7
 * (largest) drawn; ranks 2, 4-6 and 8 in the aggregate, rank 8's OOM
 * counted there. Under 5 the OOM run rank 8 is drawn too; --runs 5 draws
 * run 5. */
static void test_overview_limit(void)
{
    job_db();
    char cmd[4096], in[2048] = "";
    for (int r = 4; r <= 8; r++) {
        snprintf(cmd, sizeof cmd, "cp %srank%d.fstrace %srank%d.fstrace", fsc_test_path(""),
                 r == 8 ? 1 : 2, fsc_test_path(""), r);
        sh_ok("cp", cmd);
    }
    for (int r = 0; r <= 8; r++)
        snprintf(in + strlen(in), sizeof in - strlen(in), " %srank%d.fstrace", fsc_test_path(""), r);
    char db[1024]; /* fsc_test_path's buffers rotate */
    snprintf(db, sizeof db, "%s", fsc_test_path("job9.db"));
    snprintf(cmd, sizeof cmd, "FRAGSCOPE_NO_PROGRESS=1 %s analyze%s -o %s --no-suggest -j 2",
             fsc_test_fragscope(), in, db);
    sh_ok("analyze of the nine", cmd);
    size_t len = 0, full = 0;
    char *html = view(db, "all9.html", "--detail-limit 1", &full);
    CU_ASSERT_EQUAL(fsc_test_count(html, "<a class=\"run-card"), 9);
    char *ov = fsc_test_dom_part(html, "<section id=\"runs\"", "<div id=\"detail\">");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ov);
    size_t ov_full = strlen(ov);
    free(ov);
    CU_ASSERT_PTR_NULL(strstr(html, "runs-aggregate"));
    CU_ASSERT_PTR_NULL(strstr(html, "runs-drawn-note"));
    free(html);

    static const struct {
        const char *opts;
        int drawn[9];
        int ndrawn, noom;
        const char *rest;
    } k[] = {
        {"--detail-limit 1 --overview-limit 4", {1, 1, 0, 1, 0, 0, 0, 1, 0}, 4, 1, "runs 2, 4&ndash;6, 8"},
        {"--detail-limit 1 --overview-limit 5", {1, 1, 0, 1, 0, 0, 0, 1, 1}, 5, 0, "runs 2, 4&ndash;6<"},
        {"--detail-limit 1 --overview-limit 4 --runs 5", {1, 1, 0, 1, 0, 1, 0, 1, 0}, 5, 1, "runs 2, 4, 6, 8<"},
    };
    for (size_t t = 0; t < sizeof k / sizeof k[0]; t++) {
        html = view(db, "lim.html", k[t].opts, &len);
        /* the overview is smaller: fewer charts */
        ov = fsc_test_dom_part(html, "<section id=\"runs\"", "<div id=\"detail\">");
        CU_ASSERT_PTR_NOT_NULL_FATAL(ov);
        CU_ASSERT(strlen(ov) < ov_full);
        free(ov);
        CU_ASSERT_EQUAL(fsc_test_count(html, "<a class=\"run-card"), k[t].ndrawn);
        /* the charts: one per run drawn, one for the others */
        CU_ASSERT_EQUAL(fsc_test_count(html, "<svg class=\"spark\""), k[t].ndrawn + 1);
        for (int r = 0; r < 9; r++) {
            char want[64];
            snprintf(want, sizeof want, "id=\"run-card-%d\"", r);
            CU_ASSERT_EQUAL(strstr(html, want) != NULL, k[t].drawn[r]);
        }
        char want[512];
        snprintf(want, sizeof want, "id=\"runs-drawn-note\" data-drawn=\"%d\" data-runs=\"9\">%d of the 9 "
                 "runs are drawn as a chart each", k[t].ndrawn, k[t].ndrawn);
        CU_ASSERT_PTR_NOT_NULL(strstr(html, want));
        snprintf(want, sizeof want, "the other %d are one chart at the end", 9 - k[t].ndrawn);
        CU_ASSERT_PTR_NOT_NULL(strstr(html, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(html, "name it: <code>fragscope view job9.db --runs 2</code>"));
        snprintf(want, sizeof want, "id=\"runs-aggregate\" data-runs=\"%d\" data-ooms=\"%d\">",
                 9 - k[t].ndrawn, k[t].noom);
        CU_ASSERT_PTR_NOT_NULL(strstr(html, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(html, k[t].rest));
        /* the marks are drawn, as before */
        CU_ASSERT_PTR_NOT_NULL(strstr(html, "id=\"run-card-1\" data-run=\"1\" data-rank=\"1\""));
        CU_ASSERT_PTR_NOT_NULL(strstr(html, "<span class=\"flag first-oom\">"));
        CU_ASSERT_PTR_NOT_NULL(strstr(html, "<span class=\"flag least-headroom\">"));
        free(html);
    }
    /* The aggregate's figures: peaks reserved of ranks 2, 4-6 (11.17 GiB)
     * and rank 8 (rank 1's, 10.76 GiB). */
    html = view(db, "lim.html", k[0].opts, &len);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "peak reserved: least <b>10.76 GiB</b> &middot; median <b>11.17 GiB"
                                        "</b> &middot; most <b>11.17 GiB</b>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<div class=\"run-figs\">1 of them ran out of memory</div>"));
    free(html);
    char out[1024];
    int rc = fsc_test_sh(out, sizeof out, "%s view %s --overview-limit 0 -o %s 2>&1", fsc_test_fragscope(),
                         db, fsc_test_path("none.html"));
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_FALSE(fsc_test_file_exists(fsc_test_path("none.html")));
}

/* A tie for the first OOM: rank 9, a copy of rank 1's trace (the same OOM
 * at the same wall-clock moment), analyzed before rank 1, so it is run 0.
 * The page names the run the report names, by the report's rule (ties: the
 * lower run, docs/metrics.md), not the lower rank. */
static void test_first_oom_tie(void)
{
    job_db();
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp %srank1.fstrace %srank9.fstrace", fsc_test_path(""),
             fsc_test_path(""));
    sh_ok("cp", cmd);
    char db[1024];
    snprintf(db, sizeof db, "%s", fsc_test_path("tie.db"));
    snprintf(cmd, sizeof cmd, "FRAGSCOPE_NO_PROGRESS=1 %s analyze %srank9.fstrace %srank1.fstrace "
             "-o %s --no-suggest", fsc_test_fragscope(), fsc_test_path(""), fsc_test_path(""), db);
    sh_ok("analyze of the tie", cmd);
    size_t len = 0;
    char *html = view(db, "tie.html", NULL, &len);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "First to run out of memory: <a href=\"#run-0\">rank 9"));
    free(html);
    char out[65536];
    int rc = fsc_test_sh(out, sizeof out, "%s report %s --format json", fsc_test_fragscope(), db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    cJSON *root = cJSON_Parse(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    cJSON *job = cJSON_GetObjectItem(root, "job");
    cJSON *first = job ? cJSON_GetObjectItem(job, "first_oom_run") : NULL;
    CU_ASSERT(cJSON_IsNumber(first) && first->valuedouble == 0);
    cJSON_Delete(root);
}

static const fsc_test_case_t k_tests[] = {
    {"overview: one chart per run, by rank, marks", test_overview},
    {"a one-run database has no overview and no picker", test_single_run},
    {"detail carried for a bounded set of runs", test_detail_bound},
    {"beyond --overview-limit: the runs that matter drawn, the rest aggregated", test_overview_limit},
    {"a tie for the first OOM goes to the lower run, as in the report", test_first_oom_tie},
    {"the H200 three-rank job: peaks, least headroom, first OOM", test_h200_job},
    {"the picker shows the picked run's figures (Chromium)", test_picker_in_browser},
    {"#run-N anchors (Chromium)", test_anchors_in_browser},
    {NULL, NULL},
};

FSC_TEST_MAIN("viewer_runs", k_tests)
