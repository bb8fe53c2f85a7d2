/*
 * fsc_test_viewer.c — shared helpers of the viewer suites: hand-built run
 * databases (the tables of fsc_rundb_schema_v1, the one definition of the
 * schema-1 layout the fixtures in tests/viewer/ fill: one run per file,
 * which every reader still reads), and substring counts.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/rundb.h"
#include "fsc_test.h"

size_t fsc_test_count(const char *hay, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + k, needle))
        n++;
    return n;
}

static int exec_sql(sqlite3 *db, const char *name, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", name, msg ? msg : "?");
    sqlite3_free(msg);
    return rc == SQLITE_OK ? 0 : -1;
}

static int exec_file(sqlite3 *db, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/viewer/%s", FSC_SOURCE_DIR, name);
    char *sql = fsc_test_slurp(path, NULL);
    if (sql == NULL)
        return -1;
    int rc = exec_sql(db, name, sql);
    free(sql);
    return rc;
}

const char *fsc_test_viewer_db(const char *name, const char *fixture)
{
    const char *path = fsc_test_path(name);
    remove(path);
    sqlite3 *db = NULL;
    int ok = sqlite3_open(path, &db) == SQLITE_OK &&
             sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
             exec_sql(db, "the schema", fsc_rundb_schema_v1()) == 0 && exec_file(db, fixture) == 0 &&
             sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    CU_ASSERT_FATAL(ok);
    return path;
}

char *fsc_test_dom_part(const char *dom, const char *start, const char *end)
{
    const char *a = strstr(dom, start);
    if (a == NULL)
        return NULL;
    const char *b = strstr(a, end);
    size_t n = b ? (size_t)(b - a) : strlen(a);
    char *out = malloc(n + 1);
    memcpy(out, a, n);
    out[n] = '\0';
    return out;
}

char *fsc_test_probe_value(const char *dom, const char *name)
{
    char *box = fsc_test_dom_part(dom, "<pre id=\"probe\">", "</pre>");
    if (box == NULL)
        return NULL;
    size_t k = strlen(name);
    char *val = NULL;
    /* lines start with "name="; the first follows the tag itself */
    for (char *line = strchr(box, '>') + 1; line != NULL && *line != '\0';) {
        size_t n = strcspn(line, "\n");
        if (n > k && strncmp(line, name, k) == 0 && line[k] == '=') {
            val = malloc(n - k);
            memcpy(val, line + k + 1, n - k - 1);
            val[n - k - 1] = '\0';
            break;
        }
        line = line[n] == '\n' ? line + n + 1 : NULL;
    }
    free(box);
    return val;
}

void fsc_test_page_with_probe(const char *page_path, const char *pre, const char *probe_file,
                              const char *out_path)
{
    char probe_path[1024];
    snprintf(probe_path, sizeof probe_path, "%s/tests/viewer/%s", FSC_SOURCE_DIR, probe_file);
    char *page = fsc_test_slurp(page_path, NULL);
    char *probe = fsc_test_slurp(probe_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(page);
    CU_ASSERT_PTR_NOT_NULL_FATAL(probe);
    char *end = strstr(page, "</body>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    FILE *f = fopen(out_path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%.*s<script>%s</script><script>%s</script>%s", (int)(end - page), page,
            pre ? pre : "", probe, end);
    fclose(f);
    free(page);
    free(probe);
}

char *fsc_test_chromium_dom(const char *page, const char *hash, int width, int *no_browser)
{
    char out[2048], dom[1200], win[48] = "";
    snprintf(dom, sizeof dom, "%s.dom", page);
    if (width > 0)
        snprintf(win, sizeof win, "FSC_WINDOW=%d,900 ", width);
    int rc = fsc_test_sh(out, sizeof out, "%ssh '%s/tests/viewer/chromium_dump.sh' '%s%s' '%s'",
                         win, FSC_SOURCE_DIR, page, hash ? hash : "", dom);
    if (rc == 77) {
        if (!*no_browser)
            printf("\n  note: chromium is not installed; browser checks skipped\n");
        *no_browser = 1;
        return NULL;
    }
    if (rc != 0)
        fprintf(stderr, "\nchromium failed (%d): %s\n", rc, out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char *d = fsc_test_slurp(dom, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}
