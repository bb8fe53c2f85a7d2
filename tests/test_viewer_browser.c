/*
 * test_viewer_browser.c — the report in a real browser: headless Chromium
 * loads it from file:// with every network feature off and dumps the DOM
 * after the scripts ran (tests/viewer/chromium_dump.sh). Checks that the
 * charts rendered with the expected elements, that no script error and no
 * blocked request (the page's Content-Security-Policy reports them into the
 * DOM) happened, and that the hostile tag stayed text. Skips, passing with a
 * note, when Chromium is not installed.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/viewer.h"
#include "fsc_test.h"

static int g_no_browser;


static size_t count_in(const char *dom, const char *start, const char *end, const char *needle)
{
    char *p = fsc_test_dom_part(dom, start, end);
    size_t n = p ? fsc_test_count(p, needle) : 0;
    free(p);
    return n;
}

/* Render db, load it in Chromium; returns the dumped DOM or NULL (skip). */
static char *load_in_browser(const char *db, const char *name)
{
    char html[512], dom[600];
    snprintf(html, sizeof html, "%s", fsc_test_path(name));
    snprintf(dom, sizeof dom, "%s.dom", html);
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_view_write(db, html, &err), 0);
    char out[2048];
    int rc = fsc_test_sh(out, sizeof out, "sh '%s/tests/viewer/chromium_dump.sh' '%s' '%s'",
                         FSC_SOURCE_DIR, html, dom);
    if (rc == 77) {
        if (!g_no_browser)
            printf("\n  note: chromium is not installed; browser checks skipped\n");
        g_no_browser = 1;
        return NULL;
    }
    if (rc != 0) {
        fprintf(stderr, "\nchromium failed (%d): %s\n", rc, out);
        CU_FAIL_FATAL("chromium failed");
    }
    char *d = fsc_test_slurp(dom, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

/* What every rendered report must satisfy. */
static void check_clean(const char *dom)
{
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "data-rendered=\"yes\""));
    /* No script error, no blocked request of any kind. */
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<pre id=\"js-errors\" class=\"diag\"></pre>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<ul id=\"csp-violations\" class=\"diag\"></ul>"));
    if (strstr(dom, "<pre id=\"js-errors\" class=\"diag\"></pre>") == NULL) {
        char *e = fsc_test_dom_part(dom, "<pre id=\"js-errors\"", "</pre>");
        fprintf(stderr, "\n%s\n", e ? e : "?");
        free(e);
    }
    /* The hostile tag stayed text: no img element anywhere. */
    CU_ASSERT_PTR_NULL(strstr(dom, "<img"));
    CU_ASSERT_PTR_NULL(strstr(dom, "onerror=\"alert"));
}

static void test_small_in_browser(void)
{
    const char *db = fsc_test_viewer_db("small.db", "small.sql");
    char *dom = load_in_browser(db, "small.html");
    if (dom == NULL)
        return;
    check_clean(dom);
    /* One path per series: allocated, requested, reserved; internal,
     * external, reserved-but-unallocated; the brush shows two. */
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-memory\"", "</svg>", "class=\"series\""), 3);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-frag\"", "</svg>", "class=\"series\""), 3);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-brush\"", "</svg>", "class=\"overview-series\""), 2);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-memory\"", "</svg>", "data-series=\"allocated\""), 1);
    /* Three markers and one OOM line in each time chart. */
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-memory\"", "</svg>", "class=\"marker\""), 3);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-memory\"", "</svg>", "class=\"oom-line\""), 1);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-frag\"", "</svg>", "class=\"oom-line\""), 1);
    /* Segment map at the peak: one bar per segment, one rect per allocated
     * block (2 + 4 + 1) and one hover target per free block (2 + 1). */
    CU_ASSERT_EQUAL(count_in(dom, "id=\"segmap\"", "</svg>", "class=\"segbar\""), 3);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"segmap\"", "</svg>", "class=\"blk\""), 7);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"segmap\"", "</svg>", "class=\"blk free\""), 3);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"seg-layout\"", "</select>", "<option"), 2);
    /* The OOM card, its two segments with six pinning blocks, three tags and
     * two suggestions. */
    CU_ASSERT_EQUAL(fsc_test_count(dom, "class=\"oom-card\""), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<span class=\"cause fragmentation\">fragmentation</span>"));
    CU_ASSERT_EQUAL(count_in(dom, "class=\"oom-card\"", "Top tags by live bytes", " ev / "), 6);
    CU_ASSERT_EQUAL(count_in(dom, "class=\"oom-card\"", "What-if suggestions", "pinning blocks"), 2);
    CU_ASSERT_EQUAL(count_in(dom, "What-if suggestions", "</table>", "<tr>"), 3);
    /* Bins: six rows plus the header; top tags three, leaks one. */
    CU_ASSERT_EQUAL(count_in(dom, "id=\"bins-table\"", "</table>", "<tr>"), 7);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"tags-peak\"", "</table>", "<tr>"), 4);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"tags-leaks\"", "</table>", "<tr>"), 2);
    /* The hostile strings are on the page, as text. */
    CU_ASSERT(fsc_test_count(dom, "step/&lt;img src=x onerror=alert(1)&gt;") >= 3);
    CU_ASSERT(fsc_test_count(dom, "step/&lt;/script&gt;") >= 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "<td class=\"tag\" title=\"step\">step</td>"));
    /* Hover values and axes carry units. */
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "40 MiB</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dom, "2.0 s</text>"));
    free(dom);
}

static void test_large_in_browser(void)
{
    const char *db = fsc_test_viewer_db("large.db", "large.sql");
    char *dom = load_in_browser(db, "large.html");
    if (dom == NULL)
        return;
    check_clean(dom);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-memory\"", "</svg>", "class=\"series\""), 3);
    CU_ASSERT(count_in(dom, "id=\"segmap\"", "</svg>", "class=\"segbar\"") >= 1);
    CU_ASSERT_EQUAL(fsc_test_count(dom, "class=\"oom-card\""), 40);
    /* The data block says how many segments the peak layout embeds; the map
     * draws exactly those. */
    char *json = fsc_test_dom_part(dom, "<script type=\"application/json\" id=\"data\">", "</script>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    cJSON *d = cJSON_Parse(strchr(json, '>') + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    const cJSON *segs = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "layouts"), 0), "segments");
    CU_ASSERT_EQUAL(count_in(dom, "id=\"segmap\"", "</svg>", "class=\"segbar\""),
                    (size_t)cJSON_GetArraySize(segs));
    cJSON_Delete(d);
    free(json);
    free(dom);
}

/* Damaged values (NULLs, text for numbers, invalid UTF-8) draw without a
 * script error. */
static void test_odd_in_browser(void)
{
    const char *db = fsc_test_viewer_db("odd.db", "odd.sql");
    char *dom = load_in_browser(db, "odd.html");
    if (dom == NULL)
        return;
    check_clean(dom);
    CU_ASSERT_PTR_NULL(strstr(dom, "<svg onload"));
    CU_ASSERT_EQUAL(fsc_test_count(dom, "class=\"oom-card\""), 2);
    CU_ASSERT_EQUAL(count_in(dom, "id=\"chart-memory\"", "</svg>", "class=\"series\""), 3);
    free(dom);
}


static void expect_probe(const char *dom, const char *name, const char *want, int exact)
{
    char *v = fsc_test_probe_value(dom, name);
    int ok = v != NULL && (exact ? strcmp(v, want) == 0 : strstr(v, want) != NULL);
    if (!ok) {
        fprintf(stderr, "\nprobe %s: want %s'%s', got '%s'\n", name, exact ? "" : "to contain ", want,
                v ? v : "(missing)");
        CU_FAIL("probe value");
    }
    free(v);
}

/* Zoom, pan, reset, hover, brush, segment hover, colour by tag and the OOM
 * card's button, driven by tests/viewer/probe.js on the hand-built report. */
static void test_interaction(void)
{
    const char *db = fsc_test_viewer_db("probe.db", "small.sql");
    const char *html = fsc_test_path("probe.html");
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_view_write(db, html, &err), 0);
    size_t n = 0;
    char *page = fsc_test_slurp(html, &n);
    char probe_path[1024];
    snprintf(probe_path, sizeof probe_path, "%s/tests/viewer/probe.js", FSC_SOURCE_DIR);
    char *probe = fsc_test_slurp(probe_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL_FATAL(probe);
    char *end = strstr(page, "</body>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    FILE *f = fopen(html, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%.*s<script>%s</script>%s", (int)(end - page), page, probe, end);
    fclose(f);
    free(page);
    free(probe);

    char dom_path[600], out[2048];
    snprintf(dom_path, sizeof dom_path, "%s.dom", html);
    int rc = fsc_test_sh(out, sizeof out, "sh '%s/tests/viewer/chromium_dump.sh' '%s' '%s'",
                         FSC_SOURCE_DIR, html, dom_path);
    if (rc == 77)
        return; /* no browser: noted by the first test */
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char *dom = fsc_test_slurp(dom_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dom);
    check_clean(dom);
    char *error = fsc_test_probe_value(dom, "error");
    CU_ASSERT_PTR_NULL(error);
    free(error);
    /* Five wheel steps in, each to 0.8 of the span: 0.8^5 = 0.32768. */
    expect_probe(dom, "zoom_span", "0.3277", 1);
    /* Dragging 100 px to the left moves the view right by 100 px worth. */
    expect_probe(dom, "pan_shift", "1.000", 1);
    expect_probe(dom, "reset", "yes", 1);
    /* '+' zooms to 0.8 around the middle (0.1 .. 0.9), the right arrow pans
     * by a tenth of that span (0.08). */
    expect_probe(dom, "keys", "0.180..0.980", 1);
    /* At 1.3 s the bucket starting at 1.25 s (event 20) is in force: the peak. */
    expect_probe(dom, "tip_peak", "1.250 s", 0);
    expect_probe(dom, "tip_peak", "reserved42.00 MiB", 0);
    expect_probe(dom, "tip_peak", "allocated34.00 MiB", 0);
    expect_probe(dom, "tip_peak", "event20", 0);
    expect_probe(dom, "tip_oom", "OOM #030.00 MiB requested", 0); /* ooms.id 0 */
    /* The brush selects a quarter of the run, from 25 % to 50 %. */
    expect_probe(dom, "brush", "0.250..0.500", 1);
    expect_probe(dom, "tip_block", "block 0x7f0000000000", 0);
    expect_probe(dom, "tip_block", "size8.00 MiB", 0);
    expect_probe(dom, "tip_block", "internal waste1000 B", 0);
    expect_probe(dom, "tip_block", "tagstep/&lt;img src=x onerror=alert(1)&gt;", 0);
    expect_probe(dom, "tip_block", "age18 events, 1.150 s", 0);
    expect_probe(dom, "legend_tags", "step (20.00 MiB)", 0);
    expect_probe(dom, "legend_tags", "step/&lt;/script&gt; (6.00 MiB)", 0);
    /* Largest first: A and C (20 MiB, by address), then B (2 MiB). */
    expect_probe(dom, "order_size", "0x7f0000000000,0x7f0001600000,0x7f0001400000", 1);
    /* The OOM card, drawn from the OOM's figures in the data block. */
    expect_probe(dom, "oom_grid",
                 "requested: 30.00 MiB (rounded 30.00 MiB)allocated: 34.00 MiBreserved: 42.00 MiB"
                 "capacity: 66.00 MiBreserved but unallocated: 8.00 MiBfree inside segments: 8.00 "
                 "MiBlargest free block: 4.00 MiB", 1);
    expect_probe(dom, "oom_segments", "|0x7f000000000020.00 MiB6.00 MiB4.00 MiB2 pinning blocks|"
                 "0x7f0000000000 · 8.00 MiB36 ev / 2.300 s", 0);
    expect_probe(dom, "oom_segments", "|0x7f00014000002.00 MiB2.00 MiB2.00 MiB4 pinning blocks|", 0);
    expect_probe(dom, "layout", "1 3 segments shown", 0);
    expect_probe(dom, "layout", "at 2.400 s", 0);
    free(dom);
}

static const fsc_test_case_t k_tests[] = {
    {"hand-built report renders in Chromium", test_small_in_browser},
    {"a capped huge report renders in Chromium", test_large_in_browser},
    {"zoom, pan, brush, hover and layout switching", test_interaction},
    {"damaged values render without a script error", test_odd_in_browser},
    {NULL, NULL},
};

FSC_TEST_MAIN("viewer_browser", k_tests)
