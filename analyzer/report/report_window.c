/*
 * report_window.c — a run that began mid-run (a PyTorch snapshot whose
 * history ring had wrapped): what the report's figures cover. The
 * analysis stores where the rebuilt starting state ends (meta window.*),
 * the importer's "pytorch.rebuild" record says what was rebuilt and which
 * block sizes were guessed (docs/pytorch.md). Every peak of such a run is
 * the window's: what PyTorch's memory_stats() saw before it is unknown.
 * A snapshot with no history at all (device_traces empty, or a list of
 * segments) is the limit case: the rebuilt state is all there is, and the
 * report says the figures are the state at the moment of the snapshot.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fragscope/common.h"
#include "report_model.h"
#include "rundb_internal.h"

static uint64_t num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

int fsc__report_window_load(fsc_rundb_t *db, rep_t *r)
{
    rep_window_t *w = &r->window;
    memset(w, 0, sizeof *w);
    int64_t seq = -1;
    int rc = fsc_rundb_meta_int(db, "window.first_seq", -1, &seq);
    if (rc != 0 || seq < 0)
        return rc;
    w->on = 1;
    w->first_seq = seq;
    /* nothing after the rebuilt state: no history was recorded */
    int64_t total = -1;
    if ((rc = fsc_rundb_meta_int(db, "events_total", -1, &total)) != 0)
        return rc;
    w->no_history = total >= 0 && seq >= total;
    if ((rc = fsc_rundb_meta_int(db, "window.start_reserved", 0, &w->start_reserved)) != 0 ||
        (rc = fsc_rundb_meta_int(db, "window.start_allocated", 0, &w->start_allocated)) != 0)
        return rc;
    sqlite3_stmt *s = NULL;
    rc = fsc__rundb_lookup(db, FSC__RQ_PYMETA_SNAP, "rebuild", 0, 0, &s);
    if (rc <= 0)
        return rc;
    const char *j = (const char *)sqlite3_column_text(s, 0);
    cJSON *o = j ? cJSON_Parse(j) : NULL;
    sqlite3_reset(s);
    if (o == NULL)
        return 0;
    w->have_record = 1;
    w->entries = num(o, "entries");
    w->first_time_us = num(o, "first_time_us");
    w->segments = num(o, "segments");
    w->blocks = num(o, "blocks");
    w->guessed = num(o, "guessed");
    w->settled = num(o, "settled");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "guessed_blocks"), *it;
    cJSON_ArrayForEach(it, list)
    {
        const cJSON *a = cJSON_GetArrayItem(it, 0), *lo = cJSON_GetArrayItem(it, 2),
                    *hi = cJSON_GetArrayItem(it, 3);
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi))
            continue;
        if (hi->valuedouble > lo->valuedouble)
            w->uncertain += (uint64_t)(hi->valuedouble - lo->valuedouble);
        if (w->nlisted < REP_WINDOW_LISTED)
            w->listed[w->nlisted++] = (uint64_t)a->valuedouble;
    }
    cJSON_Delete(o);
    return 0;
}

static void when(const rep_window_t *w, char *out, size_t cap)
{
    out[0] = '\0';
    if (w->first_time_us == 0)
        return;
    time_t secs = (time_t)(w->first_time_us / 1000000u);
    struct tm tm;
    if (gmtime_r(&secs, &tm) != NULL)
        strftime(out, cap, ", the first at %Y-%m-%d %H:%M:%S UTC", &tm);
}

/* A snapshot without history: what the figures are, and how to get more. */
static void no_history(const rep_window_t *w, const char *indent, FILE *f)
{
    char r[32], a[32];
    fprintf(f,
            "%sthe snapshot holds no recorded history (its device_traces are empty, or it is a "
            "list of\n%ssegments): every figure is the state at the moment of the snapshot, "
            "rebuilt from its\n%ssegments",
            indent, indent, indent);
    if (w->have_record)
        fprintf(f, " (%" PRIu64 " segments or mapped ranges, %" PRIu64 " live blocks)",
                w->segments, w->blocks);
    fprintf(f, ": %s reserved, %s allocated.\n",
            fsc_size_format((uint64_t)w->start_reserved, r, sizeof r),
            fsc_size_format((uint64_t)w->start_allocated, a, sizeof a));
    fprintf(f, "%sPeaks over the run, OOMs, the timeline and cache hits were not recorded "
               "(memory_stats()\n%shas the run's peaks). To record them, call "
               "torch.cuda.memory._record_memory_history()\n%sbefore the run and take the "
               "snapshot after it.\n",
            indent, indent, indent);
}

/* One paragraph, each line starting with `indent` (text) or none (Markdown). */
static void paragraph(const rep_window_t *w, const char *indent, FILE *f)
{
    char t[64], r[32], a[32], u[32];
    if (w->no_history) {
        no_history(w, indent, f);
        return;
    }
    when(w, t, sizeof t);
    if (w->entries > 0)
        fprintf(f, "%sthe recording began mid-run: the snapshot kept the last %" PRIu64
                   " history entries%s,\n",
                indent, w->entries, t);
    else
        fprintf(f, "%sthe recording began mid-run (its history had wrapped),\n", indent);
    fprintf(f,
            "%sfrom event %" PRId64 " on; every figure here covers that window. The state it "
            "began in was\n%srebuilt from the snapshot's segments",
            indent, w->first_seq, indent);
    if (w->have_record)
        fprintf(f, " (%" PRIu64 " segments or mapped ranges, %" PRIu64 " live blocks)",
                w->segments, w->blocks);
    fprintf(f, ": %s reserved, %s allocated.\n",
            fsc_size_format((uint64_t)w->start_reserved, r, sizeof r),
            fsc_size_format((uint64_t)w->start_allocated, a, sizeof a));
    fprintf(f, "%sThe peaks are the window's: the run reserved at least %s before it, and what "
               "it reached\n%searlier was not recorded (memory_stats() covers the whole run).\n",
            indent, r, indent);
    if (w->settled > 0)
        fprintf(f, "%s%" PRIu64 " rebuilt block sizes were settled by what-if from the window's "
                   "best-fit choices.\n", indent, w->settled);
    if (w->guessed > 0) {
        fprintf(f, "%s%" PRIu64 " rebuilt blocks end where the window does not prove (a remainder "
                   "PyTorch may have left\n%sunsplit): allocated bytes are known to within %s;",
                indent, w->guessed, indent, fsc_size_format(w->uncertain, u, sizeof u));
        for (size_t i = 0; i < w->nlisted; i++)
            fprintf(f, "%s0x%" PRIx64, i ? ", " : " ", w->listed[i]);
        fprintf(f, "%s\n", w->guessed > w->nlisted ? ", ..." : "");
    }
}

void fsc__report_window_text(const rep_t *r, FILE *f)
{
    if (!r->window.on)
        return;
    fputs(r->window.no_history ? "\nno history\n" : "\nwindow\n", f);
    paragraph(&r->window, "  ", f);
}

void fsc__report_window_markdown(const rep_t *r, FILE *f)
{
    if (!r->window.on)
        return;
    fputs(r->window.no_history ? "**No recorded history.** " : "**A window of the run.** ", f);
    paragraph(&r->window, "", f);
    fputc('\n', f);
}

void fsc__report_window_json(const rep_t *r, cJSON *root)
{
    const rep_window_t *w = &r->window;
    if (!w->on) {
        cJSON_AddNullToObject(root, "window");
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(root, "window");
    cJSON_AddNumberToObject(o, "first_seq", (double)w->first_seq);
    /* true: no history at all; every figure is the snapshot's state */
    cJSON_AddBoolToObject(o, "no_history", w->no_history);
    if (w->have_record) {
        cJSON_AddNumberToObject(o, "entries", (double)w->entries);
        cJSON_AddNumberToObject(o, "first_time_us", (double)w->first_time_us);
        cJSON_AddNumberToObject(o, "start_segments", (double)w->segments);
        cJSON_AddNumberToObject(o, "start_blocks", (double)w->blocks);
        cJSON_AddNumberToObject(o, "guessed_blocks", (double)w->guessed);
        cJSON_AddNumberToObject(o, "settled_blocks", (double)w->settled);
        cJSON_AddNumberToObject(o, "uncertain_bytes", (double)w->uncertain);
    } else {
        cJSON_AddNullToObject(o, "entries");
    }
    cJSON_AddNumberToObject(o, "start_reserved_bytes", (double)w->start_reserved);
    cJSON_AddNumberToObject(o, "start_allocated_bytes", (double)w->start_allocated);
    cJSON *l = cJSON_AddArrayToObject(o, "still_guessed");
    for (size_t i = 0; i < w->nlisted; i++) {
        char a[24];
        snprintf(a, sizeof a, "0x%" PRIx64, w->listed[i]);
        cJSON_AddItemToArray(l, cJSON_CreateString(a));
    }
    cJSON_AddBoolToObject(o, "peaks_cover_window_only", 1);
}
