/*
 * test_viewer.c — the HTML report: escaping, what the page contains for a
 * hand-built database (tests/viewer/small.sql, numbers worked out in its
 * comments), the size bound on a database far larger than a page may embed
 * (tests/viewer/large.sql), layout aggregation, bad input through the
 * library and the command line, and view of a snapshot or trace in one
 * command.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "fragscope/rundb.h"
#include "fragscope/viewer.h"
#include "fsc_test.h"
#include "model.h"
#include "sbuf.h"

#define HOSTILE "</script><img src=x onerror=alert(1)>"

/* ---- helpers ------------------------------------------------------------ */

/* Text of the element whose opening tag contains `id="..."`, up to `end`. */
static char *between(const char *hay, const char *start, const char *end)
{
    const char *a = strstr(hay, start);
    if (a == NULL)
        return NULL;
    a += strlen(start);
    const char *b = strstr(a, end);
    if (b == NULL)
        return NULL;
    char *out = malloc((size_t)(b - a) + 1);
    memcpy(out, a, (size_t)(b - a));
    out[b - a] = '\0';
    return out;
}

static cJSON *page_data(const char *html)
{
    char *json = between(html, "<script type=\"application/json\" id=\"data\">", "</script>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    cJSON *d = cJSON_Parse(json);
    free(json);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

static cJSON *get(const cJSON *o, const char *path)
{
    /* "a.b.2.c": object members and array indices */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = o;
    for (char *tok = strtok(buf, "."); tok != NULL && cur != NULL; tok = strtok(NULL, ".")) {
        if (tok[0] >= '0' && tok[0] <= '9')
            cur = cJSON_GetArrayItem(cur, atoi(tok));
        else
            cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
    }
    return (cJSON *)cur;
}

static double num(const cJSON *o, const char *path)
{
    const cJSON *v = get(o, path);
    CU_ASSERT_PTR_NOT_NULL(v);
    return v != NULL && cJSON_IsNumber(v) ? v->valuedouble : -12345.0;
}

static const char *str(const cJSON *o, const char *path)
{
    const cJSON *v = get(o, path);
    return v != NULL && cJSON_IsString(v) ? v->valuestring : "";
}

static int len(const cJSON *o, const char *path)
{
    const cJSON *v = get(o, path);
    return v != NULL && cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
}

/* Does any file in dir have ".tmp." in its name? */
static int tmp_left(const char *dir)
{
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.") != NULL)
            found = 1;
    if (d != NULL)
        closedir(d);
    return found;
}

/* ---- escaping ------------------------------------------------------------ */

static char *json_of(const char *s, size_t max_chars)
{
    fsc__sb_t sb = {0};
    fsc__sb_json_str(&sb, s, max_chars);
    return fsc__sb_take(&sb, NULL);
}

static char *html_of(const char *s, size_t max_chars)
{
    fsc__sb_t sb = {0};
    fsc__sb_html(&sb, s, max_chars);
    return fsc__sb_take(&sb, NULL);
}

static void test_json_escaping(void)
{
    static const struct {
        const char *in;
        size_t max;
        const char *out;
    } cases[] = {
        {HOSTILE, 0, "\"\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\""},
        {"a\"b\\c\n\t\x01&", 0, "\"a\\\"b\\\\c\\n\\t\\u0001\\u0026\""},
        {"bad \xff byte, cut \xe2\x82", 0, "\"bad \\ufffd byte, cut \\ufffd\""}, /* a cut sequence: one U+FFFD */
        {"line\xe2\x80\xa8sep", 0, "\"line\\u2028sep\""},
        {"h\xc3\xa9llo", 3, "\"h\xc3\xa9l\xe2\x80\xa6\""},
        {"\xf0\x9f\x99\x82 ok", 0, "\"\xf0\x9f\x99\x82 ok\""},
        {"\xed\xa0\x80", 0, "\"\\ufffd\\ufffd\\ufffd\""}, /* a UTF-16 surrogate is not UTF-8 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = json_of(cases[i].in, cases[i].max);
        CU_ASSERT_STRING_EQUAL(got, cases[i].out);
        free(got);
    }
    char *n = json_of(NULL, 0);
    CU_ASSERT_STRING_EQUAL(n, "null");
    free(n);
}

static void test_html_escaping(void)
{
    char *a = html_of("<a href=\"x\" title='y'>&amp;</a>", 0);
    CU_ASSERT_STRING_EQUAL(a, "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
    free(a);
    char *b = html_of(HOSTILE, 10);
    CU_ASSERT_STRING_EQUAL(b, "&lt;/script&gt;&lt;\xe2\x80\xa6"); /* 10 characters, then "…" */
    free(b);
    char *c = html_of("x\xc0\xafy\x07z", 0); /* overlong '/' and a control byte */
    CU_ASSERT_STRING_EQUAL(c, "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbdz");
    free(c);
}

static void test_json_writer(void)
{
    fsc__sb_t sb = {0};
    fsc__js_t js;
    fsc__js_init(&js, &sb);
    fsc__js_obj(&js, NULL);
    fsc__js_int(&js, "a", -9007199254740993LL);
    fsc__js_arr(&js, "b");
    fsc__js_num(&js, NULL, 0.25);
    fsc__js_num(&js, NULL, 3.0);
    fsc__js_num(&js, NULL, 1.0 / 0.0);
    fsc__js_bool(&js, NULL, 1);
    fsc__js_null(&js, NULL);
    fsc__js_end(&js, ']');
    fsc__js_str(&js, "<k>", "v", 0);
    fsc__js_end(&js, '}');
    char *s = fsc__sb_take(&sb, NULL);
    CU_ASSERT_STRING_EQUAL(s, "{\"a\":-9007199254740993,\"b\":[0.25,3,null,true,null],\"\\u003ck\\u003e\":\"v\"}");
    free(s);
}

/* ---- the small fixture ---------------------------------------------------- */

static void test_small_report(void)
{
    const char *db = fsc_test_viewer_db("small.db", "small.sql");
    const char *out = fsc_test_path("small.html");
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_view_write(db, out, &err), 0);
    size_t n = 0;
    char *html = fsc_test_slurp(out, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    CU_ASSERT(n > 10000 && n < FSC_VIEW_MAX_BYTES_DEFAULT);
    CU_ASSERT_FALSE(tmp_left(fsc_test_tmpdir()));

    /* Self-contained: nothing that could reach the network. */
    CU_ASSERT_PTR_NULL(strstr(html, "http://"));
    CU_ASSERT_PTR_NULL(strstr(html, "https://"));
    CU_ASSERT_PTR_NULL(strstr(html, "src=\"//"));
    CU_ASSERT_PTR_NULL(strstr(html, "<link"));
    CU_ASSERT_PTR_NULL(strstr(html, "url(http"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "content=\"default-src 'none'; script-src 'unsafe-inline'; "
                                        "style-src 'unsafe-inline'; img-src data:\""));

    /* Escaping: the hostile strings never appear as markup; three script
     * elements open and three close (the guard, the data, the program). */
    CU_ASSERT_PTR_NULL(strstr(html, "<img"));
    CU_ASSERT_EQUAL(fsc_test_count(html, "<script"), 3);
    CU_ASSERT_EQUAL(fsc_test_count(html, "</script>"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "max_split_size_mb:128,&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "\">step/&lt;img src=x onerror=alert(1)&gt;</code>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e"));

    /* The static summary (small.sql comments give the arithmetic). */
    struct {
        const char *id, *value;
    } cards[] = {
        {"sum-peak-allocated", "<div class=\"value\">34.00 MiB</div>"},
        {"sum-peak-reserved", "<div class=\"value\">42.00 MiB</div>"},
        {"sum-utilization", "<div class=\"value\">81.0 %</div>"},
        {"sum-internal", "<div class=\"value\">1.02 KiB</div>"},
        {"sum-external", "<div class=\"value\">50.0 %</div>"},
        {"sum-rbu", "<div class=\"value\">8.00 MiB</div>"},
        {"sum-ooms", "<div class=\"value\">1</div><div class=\"sub\">1 fragmentation</div>"},
        {"sum-leaks", "<div class=\"value\">2.00 KiB</div><div class=\"sub\">4 blocks"},
    };
    for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
        char open[96];
        snprintf(open, sizeof open, "id=\"%s\">", cards[i].id);
        char *card = between(html, open, "</div>\n");
        CU_ASSERT_PTR_NOT_NULL(card);
        if (card != NULL && strstr(card, cards[i].value) == NULL) {
            fprintf(stderr, "\n%s: want %s in %s\n", cards[i].id, cards[i].value, card);
            CU_FAIL("summary card value");
        }
        free(card);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "first reached at 1.250 s (event 20)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<tr><th>capacity</th><td>66.00 MiB</td></tr>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<b>OOM #0</b> at 2.400 s (event 38): <span class=\"cause fragmentation\">"
                                        "fragmentation</span> &mdash; requested 30.00 MiB with 34.00 MiB "
                                        "allocated and 42.00 MiB reserved"));

    /* The data block. */
    cJSON *d = page_data(html);
    CU_ASSERT_EQUAL(len(d, "timeline.allocated"), 10);
    CU_ASSERT_EQUAL(len(d, "timeline.t"), 10);
    CU_ASSERT_EQUAL(num(d, "timeline.allocated.5"), 35653632);
    CU_ASSERT_EQUAL(num(d, "timeline.reserved.4"), 44040192);
    CU_ASSERT_EQUAL(num(d, "timeline.rbu.4"), 29358080);
    CU_ASSERT_EQUAL(num(d, "timeline.requested.0"), 8387608);
    CU_ASSERT_EQUAL(num(d, "timeline.t.9"), 2250000000.0);
    CU_ASSERT_EQUAL(num(d, "timeline.t_end"), 2450000000.0);
    CU_ASSERT_EQUAL(num(d, "timeline.seq_end"), 39);
    CU_ASSERT_EQUAL(len(d, "markers"), 3);
    CU_ASSERT_STRING_EQUAL(str(d, "markers.2.text"), HOSTILE);
    CU_ASSERT_EQUAL(num(d, "markers.1.t"), 1500000000.0);
    CU_ASSERT_EQUAL(num(d, "summary.peak_allocated_bytes"), 35653632);

    CU_ASSERT_EQUAL(len(d, "layouts"), 2);
    CU_ASSERT_STRING_EQUAL(str(d, "layouts.0.kind"), "peak");
    CU_ASSERT_STRING_EQUAL(str(d, "layouts.1.name"), "at OOM #0"); /* ooms.id */
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments"), 3);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.0.addr"), (double)0x7f0000000000LL);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.0.size"), 20971520);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.1.size"), 2097152);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.1.pool"), 0);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.0.blocks"), 4);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.1.blocks"), 5);
    /* block rows: [offset, size, requested, state, tag, age_events, age_ns] */
    static const double free_blk[] = {8388608, 4194304, 0, 0, -1, 0, 0};
    static const double pinned[] = {12582912, 6291456, 6291456, 1, -2, 14, 900000000};
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.0.blocks.1"), 7);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.0.blocks.2"), 7);
    for (int i = 0; i < 7; i++) {
        char p[64];
        snprintf(p, sizeof p, "layouts.0.segments.0.blocks.1.%d", i);
        CU_ASSERT_EQUAL(num(d, p), free_blk[i]);
        snprintf(p, sizeof p, "layouts.0.segments.0.blocks.2.%d", i);
        if (pinned[i] != -2)
            CU_ASSERT_EQUAL(num(d, p), pinned[i]);
    }
    /* Tags are indices into one table holding the full paths. */
    int t3 = (int)num(d, "layouts.0.segments.0.blocks.2.4");
    char tp[32];
    snprintf(tp, sizeof tp, "tags.%d", t3);
    CU_ASSERT_STRING_EQUAL(str(d, tp), "step/</script>");
    snprintf(tp, sizeof tp, "tags.%d", (int)num(d, "ooms.0.tag"));
    CU_ASSERT_STRING_EQUAL(str(d, tp), "step/<img src=x onerror=alert(1)>");
    CU_ASSERT_EQUAL(len(d, "tags"), 3);

    CU_ASSERT_EQUAL(len(d, "ooms"), 1);
    CU_ASSERT_STRING_EQUAL(str(d, "ooms.0.cause"), "fragmentation");
    CU_ASSERT_EQUAL(num(d, "ooms.0.layout"), 1);
    CU_ASSERT_EQUAL(num(d, "ooms.0.requested_bytes"), 31457275);
    CU_ASSERT_EQUAL(num(d, "ooms.0.capacity_bytes"), 69206016);
    CU_ASSERT(cJSON_IsNull(get(d, "ooms.0.device_free_bytes")));
    CU_ASSERT_EQUAL(len(d, "ooms.0.segments"), 2);
    CU_ASSERT_EQUAL(len(d, "ooms.0.segments.0.pinning_blocks"), 2);
    CU_ASSERT_EQUAL(len(d, "ooms.0.segments.1.pinning_blocks"), 4);
    CU_ASSERT_EQUAL(num(d, "ooms.0.segments.0.pinning_blocks.0.size_bytes"), 8388608);
    CU_ASSERT_EQUAL(num(d, "ooms.0.segments.0.pinning_blocks.0.age_events"), 36);
    CU_ASSERT_EQUAL(len(d, "ooms.0.tags"), 3);
    CU_ASSERT_EQUAL(len(d, "ooms.0.suggestions"), 2);
    CU_ASSERT_STRING_EQUAL(str(d, "ooms.0.suggestions.0.config"), "max_split_size_mb:64");
    CU_ASSERT(cJSON_IsNull(get(d, "ooms.0.suggestions.1.needed_capacity")));

    /* Bins with requests or free blocks at the peak: 0, 11, 12, 13, 14, 15. */
    CU_ASSERT_EQUAL(len(d, "bins"), 6);
    CU_ASSERT_EQUAL(num(d, "bins.0.lo"), 512);
    CU_ASSERT_EQUAL(num(d, "bins.0.hits"), 3);
    CU_ASSERT_EQUAL(num(d, "bins.1.bin"), 11);
    CU_ASSERT_EQUAL(num(d, "bins.5.allocated"), 41943040);
    CU_ASSERT_EQUAL(len(d, "top_tags"), 3);
    CU_ASSERT_EQUAL(num(d, "top_tags.0.bytes"), 20971520);
    snprintf(tp, sizeof tp, "tags.%d", (int)num(d, "top_tags.0.tag"));
    CU_ASSERT_STRING_EQUAL(str(d, tp), "step");
    CU_ASSERT_EQUAL(len(d, "leaks"), 1);
    CU_ASSERT_EQUAL(num(d, "leaks.0.bytes"), 2048);
    CU_ASSERT_EQUAL(num(d, "leaks.0.blocks"), 4);
    cJSON_Delete(d);
    free(html);
}

/* ---- one set of OOM keys ---------------------------------------------------- */

/* Every one of keys is in both a and b, with equal values. */
static void same_keys(const cJSON *a, const cJSON *b, const char *const *keys, const char *where)
{
    for (size_t i = 0; keys[i] != NULL; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[i]);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, keys[i]);
        if (x != NULL && y != NULL && cJSON_Compare(x, y, 1))
            continue;
        char *px = x ? cJSON_PrintUnformatted(x) : NULL, *py = y ? cJSON_PrintUnformatted(y) : NULL;
        fprintf(stderr, "\n%s.%s: report %s, viewer %s\n", where, keys[i], px ? px : "(none)",
                py ? py : "(none)");
        cJSON_free(px);
        cJSON_free(py);
        CU_FAIL("OOM key");
    }
}

/* `report --format json` and the page's data block name every OOM figure
 * they both carry the same way (the report's names), with the same value. */
static void test_oom_keys_match_report(void)
{
    const char *db = fsc_test_viewer_db("keys.db", "small.sql");
    char *json = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&json, &n);
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_report_write(db, FSC_REPORT_JSON, f, &err), 0);
    fclose(f);
    cJSON *rep = cJSON_Parse(json);
    free(json);
    char *html = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc_view_render(db, NULL, &html, &n, &err), 0);
    cJSON *page = page_data(html);
    free(html);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    const cJSON *ro = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "ooms"), 0);
    const cJSON *vo = get(page, "ooms.0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ro);
    CU_ASSERT_PTR_NOT_NULL_FATAL(vo);
    static const char *const oom_keys[] = {
        "id", "seq", "cause", "requested_bytes", "rounded_bytes", "allocated_bytes",
        "reserved_bytes", "capacity_bytes", "capacity_inferred", "capacity_lower_bytes",
        "capacity_upper_bytes", "free_in_reserved_bytes", "largest_free_bytes", "explanation",
        NULL};
    same_keys(ro, vo, oom_keys, "ooms[0]");
    static const char *const seg_keys[] = {"segment", "size_bytes", "free_bytes",
                                           "largest_free_bytes", "live_blocks", "live_bytes",
                                           NULL};
    static const char *const pin_keys[] = {"addr", "size_bytes", "age_events", "age_ns", NULL};
    const cJSON *rs = cJSON_GetObjectItem(ro, "segments"), *vs = cJSON_GetObjectItem(vo, "segments");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(rs), 2);
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(vs), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *a = cJSON_GetArrayItem(rs, i), *b = cJSON_GetArrayItem(vs, i);
        same_keys(a, b, seg_keys, "segments[]");
        const cJSON *ra = cJSON_GetObjectItem(a, "pinning_blocks");
        const cJSON *rb = cJSON_GetObjectItem(b, "pinning_blocks");
        CU_ASSERT(cJSON_GetArraySize(ra) >= 2);
        CU_ASSERT(cJSON_GetArraySize(rb) >= cJSON_GetArraySize(ra));
        for (int k = 0; k < cJSON_GetArraySize(ra); k++)
            same_keys(cJSON_GetArrayItem(ra, k), cJSON_GetArrayItem(rb, k), pin_keys,
                      "pinning_blocks[]");
    }
    /* The figure the issue was about, by value. */
    CU_ASSERT_EQUAL(num(page, "ooms.0.requested_bytes"), 31457275);
    CU_ASSERT_PTR_NULL(get(page, "ooms.0.requested"));
    cJSON_Delete(rep);
    cJSON_Delete(page);
}

/* ---- layout aggregation --------------------------------------------------- */

static cJSON *emit_with(const fsc__model_t *m, size_t layouts, size_t blocks)
{
    fsc__vcaps_t caps;
    fsc__vcaps_for_level(0, &caps);
    caps.layouts = layouts;
    caps.layout_blocks = blocks;
    fsc__sb_t sb = {0};
    fsc__emit_json(&sb, m, &caps);
    char *s = fsc__sb_take(&sb, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    cJSON *d = cJSON_Parse(s);
    free(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

static void test_layout_aggregation(void)
{
    const char *db = fsc_test_viewer_db("agg.db", "small.sql");
    fsc__model_t m;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc__model_load(db, &m, &err), 0);
    CU_ASSERT_EQUAL(m.nlayouts, 2);
    CU_ASSERT_EQUAL(m.layouts[0].nblocks, 10);

    /* 10 blocks fit a budget of 10: nothing merged. */
    cJSON *d = emit_with(&m, 1, 10);
    CU_ASSERT_EQUAL(len(d, "layouts"), 1);
    CU_ASSERT(cJSON_IsFalse(get(d, "layouts.0.blocks_merged")));
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.1.blocks"), 5);
    CU_ASSERT_EQUAL(num(d, "ooms.0.layout"), -1); /* its layout was not embedded */
    cJSON_Delete(d);

    /* Budget 7: the four 512 B blocks of segment B (same state and tag)
     * become one run of 2048 B, requested 4 * 500, count 4; A keeps its
     * alternating 4 blocks and C its one: 4 + 2 + 1 = 7. */
    d = emit_with(&m, 1, 7);
    CU_ASSERT(cJSON_IsTrue(get(d, "layouts.0.blocks_merged")));
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments"), 3);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.0.blocks"), 4);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.1.blocks"), 2);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments.1.blocks.0"), 8);
    static const double run[] = {0, 2048, 2000, 1, -2, 8, 400000000, 4};
    for (int i = 0; i < 8; i++) {
        char p[64];
        snprintf(p, sizeof p, "layouts.0.segments.1.blocks.0.%d", i);
        if (run[i] != -2)
            CU_ASSERT_EQUAL(num(d, p), run[i]);
    }
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.1.blocks.1.0"), 2048);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.1.blocks.1.1"), 2095104);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments_dropped"), 0);
    cJSON_Delete(d);

    /* Budget 5: merging cannot get below 7, so the smallest segment (B, 2 MiB)
     * is left out: A (4 runs) + C (1 run) = 5, in address order. */
    d = emit_with(&m, 1, 5);
    CU_ASSERT_EQUAL(len(d, "layouts.0.segments"), 2);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.0.addr"), (double)0x7f0000000000LL);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments.1.addr"), (double)0x7f0001600000LL);
    CU_ASSERT_EQUAL(num(d, "layouts.0.segments_dropped"), 1);
    CU_ASSERT_EQUAL(num(d, "layouts.0.bytes_dropped"), 2097152);
    cJSON_Delete(d);

    /* Both layouts: the OOM points at the second. */
    d = emit_with(&m, 9, 100);
    CU_ASSERT_EQUAL(len(d, "layouts"), 2);
    CU_ASSERT_EQUAL(num(d, "ooms.0.layout"), 1);
    CU_ASSERT_EQUAL(num(d, "layouts.1.oom"), 0);
    cJSON_Delete(d);
    fsc__model_free(&m);
    fsc__model_free(NULL);
}

/* ---- size bound ------------------------------------------------------------ */

static void test_large_report_bounded(void)
{
    const char *db = fsc_test_viewer_db("large.db", "large.sql");
    const char *out = fsc_test_path("large.html");
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_view_write(db, out, &err), 0);
    size_t n = 0;
    char *html = fsc_test_slurp(out, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    CU_ASSERT(n <= FSC_VIEW_MAX_BYTES_DEFAULT);
    CU_ASSERT(n > 500000); /* it did embed a lot, not nothing */
    CU_ASSERT_PTR_NULL(strstr(html, "<b>xxx")); /* marker text "<b>" stays escaped */
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "\\u003cb\\u003exxx"));
    cJSON *d = page_data(html);
    int samples = len(d, "timeline.t");
    CU_ASSERT(samples >= 1000 && samples <= 4000);
    /* Re-bucketing keeps every maximum: the largest allocated_max is
     * 30000000000 + 996 * 30000000 + 5. */
    double amax = 0;
    const cJSON *a = get(d, "timeline.allocated"), *v;
    cJSON_ArrayForEach(v, a) if (v->valuedouble > amax) amax = v->valuedouble;
    CU_ASSERT_EQUAL(amax, 30000000000.0 + 996.0 * 30000000.0 + 5.0);
    /* Folding and thinning cover the whole run, not its beginning: the
     * last bucket ends at 49999 ms + 0.9 ms, and the markers reach into the
     * last tenth of the 30000 (marker i is at event 33 i). */
    CU_ASSERT_EQUAL(num(d, "timeline.t_end"), 49999.0 * 1000000 + 900000);
    CU_ASSERT(num(d, "timeline.t.0") == 0);
    {
        int n_t = len(d, "timeline.t"), n_m = len(d, "markers");
        char p[64];
        snprintf(p, sizeof p, "timeline.t.%d", n_t - 1);
        CU_ASSERT(num(d, p) >= 0.99 * 49999.0 * 1000000);
        CU_ASSERT(n_m <= 500 && n_m > 100);
        snprintf(p, sizeof p, "markers.%d.seq", n_m - 1);
        CU_ASSERT(num(d, p) >= 0.9 * 33.0 * 29999);
    }
    CU_ASSERT_EQUAL(num(d, "markers_total"), 30000);
    CU_ASSERT(len(d, "layouts") >= 1 && len(d, "layouts") <= 9);
    CU_ASSERT(num(d, "layouts.0.segments_dropped") > 0);
    CU_ASSERT(len(d, "ooms") >= 1 && len(d, "ooms") <= 40);
    CU_ASSERT_EQUAL(num(d, "ooms_total"), 40);
    CU_ASSERT(len(d, "tags") > 0 && len(d, "tags") < 50000);
    CU_ASSERT(len(d, "top_tags") <= 50);
    cJSON_Delete(d);
    free(html);

    /* A tighter bound is honoured too. */
    fsc_view_opts_t opts = FSC_VIEW_OPTS_DEFAULT;
    opts.max_bytes = 1024 * 1024;
    char *small = NULL;
    size_t slen = 0;
    CU_ASSERT_EQUAL(fsc_view_render(db, &opts, &small, &slen, &err), 0);
    CU_ASSERT(slen > 0 && slen <= 1024 * 1024);
    CU_ASSERT_EQUAL(strlen(small), slen);
    free(small);

    /* An impossible one fails cleanly, leaving no file. */
    opts.max_bytes = 20000;
    const char *out2 = fsc_test_path("never.html");
    CU_ASSERT_EQUAL(fsc_view_write_opts(db, out2, &opts, &err), FSC_ELIMIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "20000 bytes"));
    CU_ASSERT_FALSE(fsc_test_file_exists(out2));
    CU_ASSERT_FALSE(tmp_left(fsc_test_tmpdir()));
}

/* ---- bad input --------------------------------------------------------------- */

static void expect_bad(const char *db, int code, const char *msg_part)
{
    const char *out = fsc_test_path("bad.html");
    fsc_err_t err = {0};
    int rc = fsc_view_write(db, out, &err);
    CU_ASSERT_EQUAL(rc, code);
    if (strstr(err.msg, msg_part) == NULL || strstr(err.msg, db) == NULL) {
        fprintf(stderr, "\nwant '%s' and the path in: %s\n", msg_part, err.msg);
        CU_FAIL("error message");
    }
    CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
    CU_ASSERT_FALSE(fsc_test_file_exists(out));
}

static void test_bad_databases(void)
{
    expect_bad(fsc_test_path("missing.db"), FSC_ENOENT, "No such file");

    const char *text = fsc_test_path("text.db");
    FILE *f = fopen(text, "w");
    fputs("this is not a database, just some text that is long enough to look like a header\n", f);
    fclose(f);
    expect_bad(text, FSC_EFORMAT, "not an SQLite database");

    const char *empty = fsc_test_path("empty.db");
    fclose(fopen(empty, "w"));
    expect_bad(empty, FSC_EFORMAT, "not a fragscope run database (empty file)");

    const char *foreign = fsc_test_path("foreign.db");
    remove(foreign);
    sqlite3 *db;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(foreign, &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE people(name TEXT); INSERT INTO people VALUES('x');", NULL, NULL, NULL);
    sqlite3_close(db);
    expect_bad(foreign, FSC_EFORMAT, "not a fragscope run database (no meta table)");

    const char *future = fsc_test_viewer_db("future.db", "small.sql");
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(future, &db), SQLITE_OK);
    sqlite3_exec(db, "UPDATE meta SET value = 99 WHERE key = 'schema_version'", NULL, NULL, NULL);
    sqlite3_close(db);
    expect_bad(future, FSC_EVERSION, "schema version 99");

    const char *broken = fsc_test_viewer_db("broken.db", "small.sql");
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(broken, &db), SQLITE_OK);
    sqlite3_exec(db, "DROP TABLE ooms; CREATE TABLE ooms(id INTEGER, what TEXT);", NULL, NULL, NULL);
    sqlite3_close(db);
    expect_bad(broken, FSC_EFORMAT, "damaged run database: no such column: seq (reading ooms)");

    expect_bad(fsc_test_tmpdir(), FSC_EFORMAT, "not a regular file");
    CU_ASSERT_FALSE(tmp_left(fsc_test_tmpdir()));
}

/* A database with only meta and summary still gives a complete page. */
static void test_minimal_database(void)
{
    const char *path = fsc_test_path("minimal.db");
    remove(path);
    sqlite3 *db;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db,
                                 "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                                 "CREATE TABLE summary(key TEXT PRIMARY KEY, value, unit TEXT);"
                                 "INSERT INTO meta VALUES('schema_version', 1);"
                                 "INSERT INTO summary VALUES('peak_allocated_bytes', 1536, 'bytes');",
                                 NULL, NULL, NULL),
                    SQLITE_OK);
    sqlite3_close(db);
    char *html = NULL;
    size_t n = 0;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_view_render(path, NULL, &html, &n, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<div class=\"value\">1.50 KiB</div>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<tr><th>allocator config</th><td>(defaults)</td></tr>"));
    cJSON *d = page_data(html);
    CU_ASSERT_EQUAL(len(d, "timeline.t"), 0);
    CU_ASSERT_EQUAL(len(d, "layouts"), 0);
    CU_ASSERT_EQUAL(len(d, "ooms"), 0);
    CU_ASSERT_EQUAL(len(d, "tags"), 0);
    cJSON_Delete(d);
    free(html);
}

/* Damaged or foreign-written values (tests/viewer/odd.sql) still render;
 * every string stays escaped and the data block stays valid JSON. */
static void test_odd_values(void)
{
    const char *db = fsc_test_viewer_db("odd.db", "odd.sql");
    char *html = NULL;
    size_t n = 0;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc_view_render(db, NULL, &html, &n, &err), 0);
    CU_ASSERT_PTR_NULL(strstr(html, "<svg onload"));
    CU_ASSERT_PTR_NULL(strstr(html, "<i>"));
    CU_ASSERT_EQUAL(fsc_test_count(html, "</script>"), 3);
    /* Invalid UTF-8 became U+FFFD: config 3c ff 3e. */
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<td>&lt;\xef\xbf\xbd&gt;</td>"));
    cJSON *d = page_data(html);
    CU_ASSERT_EQUAL(len(d, "timeline.t"), 3);
    CU_ASSERT_EQUAL(len(d, "ooms"), 2);
    CU_ASSERT_STRING_EQUAL(str(d, "ooms.1.cause"), "\"><svg onload=alert(1)>");
    CU_ASSERT_EQUAL(num(d, "ooms.1.layout"), -1);
    CU_ASSERT_EQUAL(len(d, "layouts"), 2);
    CU_ASSERT_EQUAL(len(d, "ooms.1.suggestions"), 2);
    /* Tag 99 is not in the tags table: it gets a made-up name. */
    int found = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, get(d, "tags")) found |= cJSON_IsString(t) && strcmp(t->valuestring, "tag 99") == 0;
    CU_ASSERT(found);
    cJSON_Delete(d);
    free(html);
}

/* ---- the command line ------------------------------------------------------- */

static void test_cli(void)
{
    const char *db = fsc_test_viewer_db("cli.db", "small.sql");
    char out[4096];
    const char *bin = fsc_test_fragscope();

    /* Default output: cli.db -> cli.html */
    const char *html = fsc_test_path("cli.html");
    remove(html);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s'", bin, db), 0);
    CU_ASSERT(fsc_test_file_exists(html));

    const char *named = fsc_test_path("named report.html");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s' -o '%s' --title 'T <b>'", bin, db, named), 0);
    char *page = fsc_test_slurp(named, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "<title>T &lt;b&gt;</title>"));
    free(page);

    const char *bad_out = fsc_test_path("bad-cli.html");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s/nope.db' -o '%s'", bin,
                                fsc_test_tmpdir(), bad_out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "nope.db"));
    CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
    CU_ASSERT_FALSE(fsc_test_file_exists(bad_out));

    const char *text = fsc_test_path("cli-text.db");
    FILE *f = fopen(text, "w");
    fputs("SQLite format 2 but not really\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s' -o '%s'", bin, text, bad_out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "not an SQLite database"));
    CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
    CU_ASSERT_FALSE(fsc_test_file_exists(bad_out));

    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view", bin), 2);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s' --bogus", bin, db), 2);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s' --max-size lots", bin, db), 2);
    /* an output in a folder that does not exist: bad input, one line */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' view '%s' -o '%s/no/such/dir/x.html'", bin, db,
                                fsc_test_tmpdir()), 2);
    CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "'%s' help view", bin), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fragscope view RUN.db"));
    CU_ASSERT_FALSE(tmp_left(fsc_test_tmpdir()));
}

/* Entries of a folder but "." and "..": their names, space-separated. */
static const char *entries(const char *dir)
{
    static char buf[4096];
    buf[0] = '\0';
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s ", e->d_name);
    if (d != NULL)
        closedir(d);
    return buf;
}

/* `fragscope view` of a snapshot or a trace: analyzed and drawn in one
 * command, the page the same as analyze then view make (but for the file
 * name it shows), the database kept in a temporary folder and removed; an
 * entry that contradicts the block model says --lenient gets past it. */
static void test_cli_any_input(void)
{
    static char out[1 << 16];
    const char *bin = fsc_test_fragscope();
    char dir[1024], tmp[1100];
    snprintf(dir, sizeof dir, "%s/anyinput", fsc_test_tmpdir());
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(NULL, 0, "mkdir -p '%s' && cp '%s' '%s/s.pickle' && cp '%s' "
                                      "'%s/t.fstrace' && cp '%s' '%s/bad.pickle'", tmp,
                                      fsc_test_data("pytorch/gpt2m_oom_12g.pickle"), dir,
                                      FSC_SOURCE_DIR "/sample_traces/resnet_sim.fstrace", dir,
                                      fsc_test_data("pytorch/unknown_free.pickle"), dir), 0);
    /* one command, default output s.html */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && TMPDIR='%s' '%s' view s.pickle", dir,
                                tmp, bin), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_STRING_EQUAL(entries(tmp), "");
    /* the same page as analyze + view */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && '%s' analyze s.pickle -o s.pickle.db"
                                " && '%s' view s.pickle.db -o two.html && sed 's/s\\.pickle\\.db/"
                                "s.pickle/g' two.html | cmp - s.html", dir, bin, bin), 0);
    char html[1200];
    snprintf(html, sizeof html, "%s/s.html", dir);
    char *page = fsc_test_slurp(html, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL(strstr(page, "<title>Memory report &mdash; s.pickle (pytorch snapshot "
                                        "import)</title>"));
    free(page);
    /* a trace */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && TMPDIR='%s' '%s' view t.fstrace -o "
                                "t.html", dir, tmp, bin), 0);
    snprintf(html, sizeof html, "%s/t.html", dir);
    CU_ASSERT_TRUE(fsc_test_file_exists(html));
    CU_ASSERT_STRING_EQUAL(entries(tmp), "");
    /* strict import error: one line, the --lenient hint, nothing written;
     * with --lenient the page */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && TMPDIR='%s' '%s' view bad.pickle "
                                "2>&1", dir, tmp, bin), 2);
    CU_ASSERT_EQUAL(fsc_test_count(out, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "bad.pickle: device_traces[0][1]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(rerun with --lenient to skip such entries)\n"));
    snprintf(html, sizeof html, "%s/bad.html", dir);
    CU_ASSERT_FALSE(fsc_test_file_exists(html));
    CU_ASSERT_STRING_EQUAL(entries(tmp), "");
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && TMPDIR='%s' '%s' view bad.pickle "
                                "--lenient 2>&1", dir, tmp, bin), 0);
    CU_ASSERT_TRUE(fsc_test_file_exists(html));
    CU_ASSERT_STRING_EQUAL(entries(tmp), "");
    /* an output that cannot be written: refused before the analysis */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && TMPDIR='%s' '%s' view s.pickle -o "
                                "nodir/x.html 2>&1", dir, tmp, bin), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "nodir does not exist"));
    CU_ASSERT_STRING_EQUAL(entries(tmp), "");
    /* analyze's options are for a trace or snapshot only */
    CU_ASSERT_EQUAL(fsc_test_sh(out, sizeof out, "cd '%s' && '%s' view s.pickle.db --lenient "
                                "2>&1", dir, bin), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--lenient is for a trace or snapshot"));
    CU_ASSERT_FALSE(tmp_left(dir));
}

static const fsc_test_case_t k_tests[] = {
    {"JSON strings are safe inside <script>", test_json_escaping},
    {"HTML escaping", test_html_escaping},
    {"JSON writer", test_json_writer},
    {"report of a hand-built run", test_small_report},
    {"OOM keys and values as in the report's JSON", test_oom_keys_match_report},
    {"layout aggregation under a block budget", test_layout_aggregation},
    {"a huge run stays under the size bound", test_large_report_bounded},
    {"bad databases: one message, no output", test_bad_databases},
    {"a database with only meta and summary", test_minimal_database},
    {"damaged values still render, escaped", test_odd_values},
    {"fragscope view command line", test_cli},
    {"fragscope view of a snapshot or trace: analyzed in one command", test_cli_any_input},
    {NULL, NULL},
};

FSC_TEST_MAIN("viewer", k_tests)
