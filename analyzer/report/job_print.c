/*
 * job_print.c — the job section of the report (docs/metrics.md, "Jobs"):
 * a table of the runs, the least-headroom run, the run that ran out of
 * memory first with what that order rests on, and the spread of the peaks;
 * as text, Markdown and JSON. A job of many runs stays readable: beyond
 * JOB_ROWS_ALL runs the table lists only the runs the figures below it
 * name (least headroom, first OOMs, extreme peaks, the detail run) and
 * counts the others; `--all-ranks` and the JSON list every run.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_job.h"

#define JOB_ROWS_ALL 20 /* up to this many runs the table lists every one */
#define JOB_TOP 5       /* least-headroom and first-OOM runs listed beyond it */
#define JOB_BOUND_LINES 8

static const char *sz(int64_t v, char *buf, size_t cap)
{
    if (v >= 0)
        return fsc_size_format((uint64_t)v, buf, cap);
    char t[32];
    fsc_size_format((uint64_t)(-(v + 1)) + 1u, t, sizeof t);
    if (cap == 0)
        return buf;
    size_t n = strlen(t) < cap - 1 ? strlen(t) : cap - 1;
    buf[0] = '-';
    memcpy(buf + 1, t, n > 0 ? n - (n == cap - 1) : 0);
    buf[n + 1 - (n == cap - 1)] = '\0';
    return buf;
}

static const char *num_or_dash(int64_t v, char *buf, size_t cap)
{
    if (v == FSC_RUNDB_NULL)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%lld", (long long)v);
    return buf;
}

/* What the table's note column says of run i (bits). */
enum {
    N_DETAIL = 1,
    N_LEAST = 2,
    N_HEADROOM_TOP = 4,
    N_FIRST_OOM = 8,
    N_OOM_TOP = 16,
    N_MAX_RES = 32,
    N_MIN_RES = 64,
    N_MAX_ALLOC = 128,
    N_MIN_ALLOC = 256
};

typedef struct marks {
    unsigned *bits;
    int *oom_pos;      /* 1-based position among OOM runs, 0 none */
    int *headroom_pos; /* 1-based position by headroom, 0 none or beyond JOB_TOP */
} marks_t;

typedef struct hk {
    int64_t h, run;
    int idx;
} hk_t;

static int by_headroom(const void *a, const void *b)
{
    const hk_t *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->run < y->run ? -1 : x->run > y->run;
}

static int mark(const job_t *j, marks_t *m)
{
    m->bits = calloc((size_t)j->n, sizeof *m->bits);
    m->oom_pos = calloc((size_t)j->n, sizeof *m->oom_pos);
    m->headroom_pos = calloc((size_t)j->n, sizeof *m->headroom_pos);
    hk_t *k = malloc((size_t)j->n * sizeof *k);
    if (!m->bits || !m->oom_pos || !m->headroom_pos || !k) {
        free(k);
        return FSC_ENOMEM;
    }
    int nk = 0;
    for (int i = 0; i < j->n; i++)
        if (j->runs[i].capacity_known)
            k[nk++] = (hk_t){j->runs[i].headroom, j->runs[i].run, i};
    qsort(k, (size_t)nk, sizeof *k, by_headroom);
    for (int i = 0; i < nk && i < JOB_TOP; i++) {
        m->headroom_pos[k[i].idx] = i + 1;
        m->bits[k[i].idx] |= i == 0 ? N_LEAST : N_HEADROOM_TOP;
    }
    free(k);
    for (int i = 0; i < j->noom; i++) {
        m->oom_pos[j->oom_order[i]] = i + 1;
        if (i < JOB_TOP)
            m->bits[j->oom_order[i]] |= i == 0 ? N_FIRST_OOM : N_OOM_TOP;
    }
    if (j->n > 1) {
        m->bits[j->reserved.max_i] |= N_MAX_RES;
        m->bits[j->reserved.min_i] |= N_MIN_RES;
        m->bits[j->alloc.max_i] |= N_MAX_ALLOC;
        m->bits[j->alloc.min_i] |= N_MIN_ALLOC;
    }
    if (j->detail >= 0)
        m->bits[j->detail] |= N_DETAIL;
    return 0;
}

static void unmark(marks_t *m)
{
    free(m->bits);
    free(m->oom_pos);
    free(m->headroom_pos);
}

static void note_text(const marks_t *m, int i, char *buf, size_t cap)
{
    static const struct {
        unsigned bit;
        const char *text;
    } k[] = {{N_LEAST, "least headroom"}, {N_FIRST_OOM, "first OOM"},
             {N_MAX_RES, "max reserved"},  {N_MIN_RES, "min reserved"},
             {N_MAX_ALLOC, "max allocated"}, {N_MIN_ALLOC, "min allocated"},
             {N_DETAIL, "detail"}};
    size_t len = 0;
    buf[0] = '\0';
    unsigned b = m->bits[i];
#define ADD(...)                                                                   \
    do {                                                                           \
        if (len < cap)                                                             \
            len += (size_t)snprintf(buf + len, cap - len, "%s", len ? ", " : "");   \
        if (len < cap)                                                             \
            len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__);             \
    } while (0)
    for (size_t q = 0; q < sizeof k / sizeof k[0]; q++) {
        if (k[q].bit == N_DETAIL) {
            if (b & N_HEADROOM_TOP)
                ADD("headroom #%d", m->headroom_pos[i]);
            if (b & N_OOM_TOP)
                ADD("OOM #%d", m->oom_pos[i]);
        }
        if (b & k[q].bit)
            ADD("%s", k[q].text);
    }
#undef ADD
}

static int shown(const job_t *j, const marks_t *m, int all, int i)
{
    return all || j->n <= JOB_ROWS_ALL || m->bits[i] != 0;
}

/* "capacity unknown: at least X (the most it reserved), below Y (...)" */
static void bounds_text(const job_run_t *r, char *buf, size_t cap)
{
    char b[2][32];
    if (r->cap_upper == FSC_RUNDB_NULL)
        snprintf(buf, cap, "capacity unknown: at least %s (the most it reserved), no upper "
                           "bound recorded", sz(r->cap_lower, b[0], sizeof b[0]));
    else
        snprintf(buf, cap, "capacity unknown: at least %s (the most it reserved), %s %s (%s)",
                 sz(r->cap_lower, b[0], sizeof b[0]), r->cap_upper_exclusive ? "below" : "at most",
                 sz(r->cap_upper, b[1], sizeof b[1]),
                 r->cap_upper_exclusive
                     ? "reserved at its OOM + the segment that did not fit"
                     : "the device's total memory");
}

/* The unknown-capacity run whose bounds leave it the least headroom, when
 * that is less than the least known headroom (it may then have less). */
static int tighter_unknown(const job_t *j, int64_t *upper)
{
    int best = -1;
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        if (r->capacity_known || r->cap_upper == FSC_RUNDB_NULL)
            continue;
        int64_t h = r->cap_upper - r->peak_reserved;
        if (best < 0 || h < *upper) {
            best = i;
            *upper = h;
        }
    }
    if (best >= 0 && j->least >= 0 && *upper >= j->runs[j->least].headroom)
        return -1;
    return best;
}

static void least_text(const job_t *j, char *buf, size_t cap)
{
    char b[4][32];
    size_t len = 0;
    int64_t up = 0;
    int t = tighter_unknown(j, &up);
    if (j->least < 0) {
        len = (size_t)snprintf(buf, cap, "unknown: no run's capacity is known");
    } else {
        const job_run_t *r = &j->runs[j->least];
        len = (size_t)snprintf(buf, cap, "%s: %s under its %s capacity (peak reserved %s)",
                               r->name, sz(r->headroom, b[0], sizeof b[0]),
                               sz(r->capacity, b[1], sizeof b[1]),
                               sz(r->peak_reserved, b[2], sizeof b[2]));
        if (j->nknown < j->n && len < cap)
            len += (size_t)snprintf(buf + len, cap - len,
                                    "\namong the %d runs whose capacity is known (%d not ranked: "
                                    "capacity unknown)", j->nknown, j->n - j->nknown);
    }
    if (t >= 0 && len < cap)
        snprintf(buf + len, cap - len, "\n%s has %s %s headroom by its bounds%s",
                 j->runs[t].name, j->runs[t].cap_upper_exclusive ? "less than" : "at most",
                 sz(up, b[3], sizeof b[3]), j->least >= 0 ? ": it may have less" : "");
}

static void first_oom_text(const job_t *j, char *buf, size_t cap)
{
    if (j->noom == 0) {
        snprintf(buf, cap, "none: no run ran out of memory");
        return;
    }
    char b[3][32], when[64];
    const job_run_t *r = &j->runs[j->oom_order[0]];
    fsc__report_job_oom_when(j, r, when, sizeof when);
    char ext[64] = "";
    if (r->oom_external >= 0)
        snprintf(ext, sizeof ext, ", %s outside the allocator",
                 sz(r->oom_external, b[2], sizeof b[2]));
    size_t len = (size_t)snprintf(buf, cap, "%s at %s: %s (requested %s with %s reserved%s)",
                                  r->name, when, r->oom_cause,
                                  sz(r->oom_requested, b[0], sizeof b[0]),
                                  sz(r->oom_reserved, b[1], sizeof b[1]), ext);
    if (j->noom > 1 && len < cap) {
        const job_run_t *n = &j->runs[j->oom_order[1]];
        int64_t t0 = r->oom_time_ns == FSC_RUNDB_NULL ? 0 : r->oom_time_ns;
        int64_t t1 = n->oom_time_ns == FSC_RUNDB_NULL ? 0 : n->oom_time_ns;
        if (j->order == JOB_ORDER_WALL) {
            t0 += r->clock_origin_ns;
            t1 += n->clock_origin_ns;
        }
        len += (size_t)snprintf(buf + len, cap - len, "\n%d runs ran out of memory, the next: "
                                "%s, %.3f s later\nordered %s", j->noom, n->name,
                                (double)(t1 - t0) / 1e9, j->order_note);
    }
}

static void spread_text(const job_t *j, const job_spread_t *s, char *buf, size_t cap)
{
    char b[3][32], ratio[32];
    if (s->min > 0)
        snprintf(ratio, sizeof ratio, "%.2f", s->max_over_min);
    else
        snprintf(ratio, sizeof ratio, "undefined (min 0)");
    snprintf(buf, cap, "min %s on %s, median %s, max %s on %s, max/min %s",
             sz(s->min, b[0], sizeof b[0]), j->runs[s->min_i].name,
             sz((int64_t)s->median, b[1], sizeof b[1]), sz(s->max, b[2], sizeof b[2]),
             j->runs[s->max_i].name, ratio);
}

static void job_summary_line(const job_t *j, char *buf, size_t cap)
{
    int ranks = 0;
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < j->n; i++) {
        int64_t k = j->runs[i].rank;
        if (k == FSC_RUNDB_NULL)
            continue;
        if (ranks == 0 || k < lo)
            lo = ranks == 0 ? k : lo < k ? lo : k;
        if (ranks == 0 || k > hi)
            hi = ranks == 0 ? k : hi > k ? hi : k;
        ranks++;
    }
    int one_source = j->n > 1, devices = 1;
    for (int i = 1; i < j->n; i++) {
        one_source &= strcmp(j->runs[i].source, j->runs[0].source) == 0;
        devices &= j->runs[i].device != FSC_RUNDB_NULL;
    }
    devices &= j->runs[0].device != FSC_RUNDB_NULL;
    size_t len = (size_t)snprintf(buf, cap, "%d runs", j->n);
    if (one_source && devices && len < cap)
        len += (size_t)snprintf(buf + len, cap - len, ", one per device of %s (%s)",
                                j->runs[0].source, j->runs[0].kind);
    else if (ranks > 0 && len < cap)
        len += (size_t)snprintf(buf + len, cap - len, " (ranks %lld-%lld%s)", (long long)lo,
                                (long long)hi, ranks < j->n ? ", some unknown" : "");
    else if (len < cap)
        len += (size_t)snprintf(buf + len, cap - len, " (ranks unknown: one per device or "
                                "input)");
    if (j->nhosts > 1 && len < cap)
        len += (size_t)snprintf(buf + len, cap - len, " on several hosts");
    if (len < cap)
        snprintf(buf + len, cap - len, "; %d ran out of memory; capacity known for %d", j->noom,
                 j->nknown);
}

/* ---- text ---------------------------------------------------------------- */

/* A figure's words: its clauses ('\n'-separated) one a line under the
 * first, indented to the value column. */
static void put_lines(FILE *f, const char *name, const char *s)
{
    fprintf(f, "  %-16s ", name);
    for (; *s; s++) {
        if (*s == '\n')
            fprintf(f, "\n  %-16s ", "");
        else
            fputc(*s, f);
    }
    fputc('\n', f);
}

/* The same words on one line ("; " between clauses), for Markdown and JSON. */
static void one_line(char *s, size_t cap)
{
    char t[1024];
    size_t k = 0;
    for (const char *p = s; *p && k + 3 < sizeof t; p++) {
        if (*p == '\n') {
            t[k++] = ';';
            t[k++] = ' ';
        } else {
            t[k++] = *p;
        }
    }
    t[k] = '\0';
    snprintf(s, cap, "%s", t);
}

/* The first run before i claiming run i's rank and device, or -1. Ranks
 * of one job are distinct per device: two runs "rank 0 on device 0" are a
 * launcher's mistake or one run under two names (merge warns of them). */
static int same_rank_before(const job_t *j, int i)
{
    const job_run_t *r = &j->runs[i];
    if (r->rank == FSC_RUNDB_NULL)
        return -1;
    for (int k = 0; k < i; k++)
        if (j->runs[k].rank == r->rank && j->runs[k].device == r->device)
            return k;
    return -1;
}

static void duplicate_lines(const job_t *j, FILE *f)
{
    for (int i = 0; i < j->n; i++) {
        int k = same_rank_before(j, i);
        if (k < 0)
            continue;
        char dev[32] = "unknown device";
        if (j->runs[i].device != FSC_RUNDB_NULL)
            snprintf(dev, sizeof dev, "device %lld", (long long)j->runs[i].device);
        fprintf(f, "  warning: rank %lld on %s twice: run %lld (%s) and run %lld (%s)\n",
                (long long)j->runs[i].rank, dev, (long long)j->runs[k].run, j->runs[k].source,
                (long long)j->runs[i].run, j->runs[i].source);
    }
}

void fsc__report_job_text(const job_t *j, int all, FILE *f)
{
    marks_t m;
    if (mark(j, &m) != 0) {
        unmark(&m);
        return;
    }
    char line[1024], b[4][32], t[3][32];
    job_summary_line(j, line, sizeof line);
    fprintf(f, "fragscope job report: %s\n  %s\n", j->db_path, line);
    duplicate_lines(j, f);
    fputc('\n', f);
    fprintf(f, "  %5s %5s %6s %-12s %14s %14s %12s %12s %5s  %-24s %s\n", "run", "rank", "device",
            "host", "peak allocated", "peak reserved", "capacity", "headroom", "OOMs", "note",
            "source");
    int hidden = 0, nbounds = 0, unknown_shown = 0;
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        if (!shown(j, &m, all, i)) {
            hidden++;
            continue;
        }
        char note[160];
        note_text(&m, i, note, sizeof note);
        fprintf(f, "  %5lld %5s %6s %-12.12s %14s %14s %12s %12s %5lld  %-24s %s\n",
                (long long)r->run, num_or_dash(r->rank, t[0], sizeof t[0]),
                num_or_dash(r->device, t[1], sizeof t[1]), r->host ? r->host : "-",
                sz(r->peak_allocated, b[0], sizeof b[0]), sz(r->peak_reserved, b[1], sizeof b[1]),
                r->capacity_known ? sz(r->capacity, b[2], sizeof b[2]) : "unknown",
                r->capacity_known ? sz(r->headroom, b[3], sizeof b[3]) : "unknown",
                (long long)r->ooms, note, r->source);
        unknown_shown += !r->capacity_known;
    }
    if (hidden > 0)
        fprintf(f, "  ... %d more runs not listed (only those the figures below name): "
                   "--all-ranks lists every run, --format json has them all\n", hidden);
    if (unknown_shown > 0)
        fprintf(f, "\n  capacity unknown (not recorded, as in PyTorch snapshots; `analyze "
                   "--capacity SIZE` gives it), bounded from each run:\n");
    for (int i = 0; i < j->n && unknown_shown > 0; i++) {
        const job_run_t *r = &j->runs[i];
        if (r->capacity_known || !shown(j, &m, all, i))
            continue;
        if (nbounds++ == JOB_BOUND_LINES) {
            fprintf(f, "    ... (%d more listed runs: --format json has the bounds of every "
                       "run)\n", unknown_shown - JOB_BOUND_LINES);
            break;
        }
        bounds_text(r, line, sizeof line);
        fprintf(f, "    %s: %s\n", r->name, line);
    }
    fputc('\n', f);
    least_text(j, line, sizeof line);
    put_lines(f, "least headroom", line);
    first_oom_text(j, line, sizeof line);
    put_lines(f, "first OOM", line);
    spread_text(j, &j->alloc, line, sizeof line);
    fprintf(f, "  spread of peaks  allocated: %s\n", line);
    spread_text(j, &j->reserved, line, sizeof line);
    fprintf(f, "                   reserved:  %s\n", line);
    if (j->detail >= 0)
        fprintf(f, "\ndetail below: %s, %s (--rank R or --run N picks another)\n\n",
                j->runs[j->detail].name, j->detail_why);
    unmark(&m);
}

/* ---- Markdown ------------------------------------------------------------ */

static void md(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '*' || *s == '_' || *s == '`' || *s == '<' || *s == '>')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void fsc__report_job_markdown(const job_t *j, int all, FILE *f)
{
    marks_t m;
    if (mark(j, &m) != 0) {
        unmark(&m);
        return;
    }
    char line[1024], b[4][32], t[3][32];
    job_summary_line(j, line, sizeof line);
    fprintf(f, "## fragscope job report\n\n");
    md(f, line);
    fprintf(f, ".\n\n| run | rank | device | host | peak allocated | peak reserved | capacity | "
               "headroom | OOMs | note | source |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    int hidden = 0;
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        if (!shown(j, &m, all, i)) {
            hidden++;
            continue;
        }
        char note[160];
        note_text(&m, i, note, sizeof note);
        fprintf(f, "| %lld | %s | %s | ", (long long)r->run,
                num_or_dash(r->rank, t[0], sizeof t[0]), num_or_dash(r->device, t[1], sizeof t[1]));
        md(f, r->host ? r->host : "-");
        fprintf(f, " | %s | %s | %s | %s | %lld | %s | ", sz(r->peak_allocated, b[0], sizeof b[0]),
                sz(r->peak_reserved, b[1], sizeof b[1]),
                r->capacity_known ? sz(r->capacity, b[2], sizeof b[2]) : "unknown",
                r->capacity_known ? sz(r->headroom, b[3], sizeof b[3]) : "unknown",
                (long long)r->ooms, note);
        md(f, r->source);
        fprintf(f, " |\n");
    }
    if (hidden > 0)
        fprintf(f, "\n%d more runs not listed (`--all-ranks` lists every run).\n", hidden);
    fputc('\n', f);
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        if (r->capacity_known || !shown(j, &m, all, i))
            continue;
        bounds_text(r, line, sizeof line);
        fprintf(f, "- ");
        md(f, r->name);
        fprintf(f, ": ");
        md(f, line);
        fprintf(f, "\n");
    }
    least_text(j, line, sizeof line);
    one_line(line, sizeof line);
    fprintf(f, "- **Least headroom:** ");
    md(f, line);
    first_oom_text(j, line, sizeof line);
    one_line(line, sizeof line);
    fprintf(f, "\n- **First OOM:** ");
    md(f, line);
    spread_text(j, &j->alloc, line, sizeof line);
    fprintf(f, "\n- **Spread of peak allocated:** ");
    md(f, line);
    spread_text(j, &j->reserved, line, sizeof line);
    fprintf(f, "\n- **Spread of peak reserved:** ");
    md(f, line);
    fprintf(f, "\n\n");
    if (j->detail >= 0) {
        fprintf(f, "Detail below: ");
        md(f, j->runs[j->detail].name);
        fprintf(f, ", ");
        md(f, j->detail_why);
        fprintf(f, ".\n\n");
    }
    unmark(&m);
}

/* ---- JSON ---------------------------------------------------------------- */

static void add_i64(cJSON *o, const char *k, int64_t v)
{
    if (v == FSC_RUNDB_NULL)
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddNumberToObject(o, k, (double)v);
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v == NULL)
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddStringToObject(o, k, v);
}

static cJSON *spread_json(const job_t *j, const job_spread_t *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "min", (double)s->min);
    cJSON_AddNumberToObject(o, "min_run", (double)j->runs[s->min_i].run);
    cJSON_AddNumberToObject(o, "median", s->median);
    cJSON_AddNumberToObject(o, "max", (double)s->max);
    cJSON_AddNumberToObject(o, "max_run", (double)j->runs[s->max_i].run);
    if (s->min > 0)
        cJSON_AddNumberToObject(o, "max_over_min", s->max_over_min);
    else
        cJSON_AddNullToObject(o, "max_over_min");
    return o;
}

void fsc__report_job_json(const job_t *j, cJSON *root)
{
    char line[1024];
    cJSON_AddNumberToObject(root, "detail_run", (double)j->runs[j->detail].run);
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    for (int i = 0; i < j->n; i++) {
        const job_run_t *r = &j->runs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "run", (double)r->run);
        add_i64(o, "rank", r->rank);
        add_i64(o, "device", r->device);
        add_str(o, "host", r->host);
        add_i64(o, "pid", r->pid);
        cJSON_AddStringToObject(o, "source", r->source);
        cJSON_AddStringToObject(o, "kind", r->kind);
        cJSON_AddStringToObject(o, "label", r->label);
        cJSON_AddNumberToObject(o, "peak_allocated_bytes", (double)r->peak_allocated);
        cJSON_AddNumberToObject(o, "peak_reserved_bytes", (double)r->peak_reserved);
        add_i64(o, "capacity_bytes", r->capacity_known ? r->capacity : FSC_RUNDB_NULL);
        add_i64(o, "headroom_bytes", r->capacity_known ? r->headroom : FSC_RUNDB_NULL);
        add_i64(o, "capacity_lower_bytes", r->capacity_known ? r->capacity : r->cap_lower);
        add_i64(o, "capacity_upper_bytes", r->capacity_known ? r->capacity : r->cap_upper);
        cJSON_AddBoolToObject(o, "capacity_upper_exclusive",
                              !r->capacity_known && r->cap_upper_exclusive);
        cJSON_AddNumberToObject(o, "ooms", (double)r->ooms);
        if (r->oom_id == FSC_RUNDB_NULL) {
            cJSON_AddNullToObject(o, "first_oom_time_ns");
            cJSON_AddNullToObject(o, "first_oom_clock");
            cJSON_AddNullToObject(o, "first_oom_seq");
            cJSON_AddNullToObject(o, "first_oom_cause");
            cJSON_AddNullToObject(o, "first_oom_external_bytes");
        } else {
            int64_t t = r->oom_time_ns == FSC_RUNDB_NULL ? 0 : r->oom_time_ns;
            int wall = r->clock_origin_ns > 0;
            /* ns since the epoch exceed a double's 53 bits: written exactly */
            char exact[32];
            snprintf(exact, sizeof exact, "%lld", (long long)(wall ? r->clock_origin_ns + t : t));
            cJSON_AddRawToObject(o, "first_oom_time_ns", exact);
            cJSON_AddStringToObject(o, "first_oom_clock", wall ? "wall" : "since_start");
            add_i64(o, "first_oom_seq", r->oom_seq);
            cJSON_AddStringToObject(o, "first_oom_cause", r->oom_cause);
            add_i64(o, "first_oom_external_bytes",
                    r->oom_external >= 0 ? r->oom_external : FSC_RUNDB_NULL);
        }
        cJSON_AddItemToArray(ranks, o);
    }
    cJSON *job = cJSON_AddObjectToObject(root, "job");
    cJSON_AddNumberToObject(job, "runs", j->n);
    cJSON_AddNumberToObject(job, "runs_with_oom", j->noom);
    cJSON_AddNumberToObject(job, "runs_capacity_known", j->nknown);
    if (j->least >= 0)
        cJSON_AddNumberToObject(job, "least_headroom_run", (double)j->runs[j->least].run);
    else
        cJSON_AddNullToObject(job, "least_headroom_run");
    least_text(j, line, sizeof line);
    one_line(line, sizeof line);
    cJSON_AddStringToObject(job, "least_headroom_note", line);
    if (j->noom > 0)
        cJSON_AddNumberToObject(job, "first_oom_run", (double)j->runs[j->oom_order[0]].run);
    else
        cJSON_AddNullToObject(job, "first_oom_run");
    static const char *const order[] = {"none", "only", "wall_clock", "since_start"};
    cJSON_AddStringToObject(job, "first_oom_order", order[j->order]);
    cJSON_AddStringToObject(job, "first_oom_order_note", j->order_note);
    /* runs claiming a rank and device another run holds (see merge) */
    cJSON *dup = cJSON_AddArrayToObject(job, "duplicate_ranks");
    for (int i = 0; i < j->n; i++) {
        int k = same_rank_before(j, i);
        if (k < 0)
            continue;
        cJSON *d = cJSON_CreateObject();
        add_i64(d, "rank", j->runs[i].rank);
        add_i64(d, "device", j->runs[i].device);
        cJSON *rr = cJSON_AddArrayToObject(d, "runs");
        cJSON_AddItemToArray(rr, cJSON_CreateNumber((double)j->runs[k].run));
        cJSON_AddItemToArray(rr, cJSON_CreateNumber((double)j->runs[i].run));
        cJSON *ss = cJSON_AddArrayToObject(d, "sources");
        cJSON_AddItemToArray(ss, cJSON_CreateString(j->runs[k].source));
        cJSON_AddItemToArray(ss, cJSON_CreateString(j->runs[i].source));
        cJSON_AddItemToArray(dup, d);
    }
    cJSON *oo = cJSON_AddArrayToObject(job, "oom_runs_in_order");
    for (int i = 0; i < j->noom; i++)
        cJSON_AddItemToArray(oo, cJSON_CreateNumber((double)j->runs[j->oom_order[i]].run));
    cJSON *sp = cJSON_AddObjectToObject(job, "spread");
    cJSON_AddItemToObject(sp, "peak_allocated_bytes", spread_json(j, &j->alloc));
    cJSON_AddItemToObject(sp, "peak_reserved_bytes", spread_json(j, &j->reserved));
    cJSON_AddStringToObject(job, "detail_reason", j->detail_why);
}
