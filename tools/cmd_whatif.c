/*
 * cmd_whatif.c — `fragscope whatif`: replay a recorded run's requests with
 * other allocator settings or capacities, search for better settings, check
 * that a replay with the run's own settings reproduces it, and store
 * suggestions in a run database.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "fsc/utf8.h"
#include "fragscope/rundb.h"
#include "fragscope/whatif.h"

const char fsc_cmd_whatif_summary[] = "replay a run with other allocator settings or capacities";
const char fsc_cmd_whatif_usage[] =
    "usage: fragscope whatif TRACE|SNAPSHOT [--capacity SIZE] --config STR [--config STR ...]\n"
    "                        [--suggest] [--verify] [--verify-against OTHER]\n"
    "                        [--db run.db] [--format text|json]\n"
    "                        [--threads N] [--device N] [--device-memory SIZE]\n"
    "                        [--lenient] [--all-frames] [--torch VERSION]\n"
    "\n"
    "Extracts what the program asked of its allocator (allocation sizes, frees,\n"
    "streams, record_stream completions, markers) from a .fstrace or a PyTorch\n"
    "snapshot and replays it through fragscope's allocator once per setting, on\n"
    "as many cores as there are settings. A recorded OOM is replayed as the\n"
    "allocation it was: a setting that serves it survives. A recording that\n"
    "ends at an OOM is a prefix of the run: its results say run_complete false\n"
    "(\"ok*\" in text), covering the failed request and what came before it only.\n"
    "A snapshot with no history (its device_traces empty: taken without\n"
    "_record_memory_history) holds no request to replay and is refused (exit 2);\n"
    "'fragscope analyze' shows its state at the moment of the snapshot.\n"
    "\n"
    "options:\n"
    "  --config STR     allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax; \"\"\n"
    "                   means PyTorch's defaults. Repeat to compare several.\n"
    "  --capacity SIZE  bytes the process may reserve (the cap that\n"
    "                   set_per_process_memory_fraction sets; also arms\n"
    "                   garbage_collection_threshold). Default: the trace's\n"
    "                   capacity; for a snapshot that ran out of memory under a\n"
    "                   cap it does not record, the lowest cap it is consistent\n"
    "                   with (said in the output); else unlimited.\n"
    "  --suggest        try a grid of settings and list those that avoid the OOM\n"
    "                   or lower the peak, each with the smallest capacity it needs\n"
    "                   (bisection to 2 MiB)\n"
    "  --verify         replay with the run's own settings and compare with the\n"
    "                   recording: segment sequence, peaks, block addresses\n"
    "  --verify-against OTHER\n"
    "                   OTHER is the same job recorded under other settings:\n"
    "                   replay this recording under OTHER's settings (or the\n"
    "                   one --config) at OTHER's cap (or --capacity), and\n"
    "                   compare with OTHER: its segment sequence, both peaks,\n"
    "                   its address for each request in order. Names the first\n"
    "                   request placed elsewhere, with its size and our rounding\n"
    "                   of it. Both must be whole runs, not ring windows\n"
    "  --db FILE        write the suggestions for the run's OOMs into FILE's\n"
    "                   suggestions table (FILE from `fragscope analyze` of the\n"
    "                   same input)\n"
    "  --rank R         with --db of a job database (several runs: `analyze A B\n"
    "                   ...`, `merge`): the suggestions are for the run of rank R\n"
    "  --run N          the same for run N (runs.run). A job database needs one\n"
    "                   of the two: the input is one recording, so its\n"
    "                   suggestions belong to its own run only, and whatif\n"
    "                   refuses (exit 2, naming the runs) rather than guess\n"
    "                   which; run it once per rank, each with its own input\n"
    "  --format F       text (default) or json. JSON output is a list with one\n"
    "                   object per config (--config), per suggestion (--suggest),\n"
    "                   or one object (--verify, --verify-against); it takes\n"
    "                   one of them.\n"
    "  --torch VERSION  replay each --config under PyTorch VERSION's rules (e.g.\n"
    "                   2.8): a setting that version does not have is refused\n"
    "                   (exit 2, naming it), and the rules that differ from\n"
    "                   fragscope's (PyTorch's 2026 sources) are listed\n"
    "  --threads N      replays at once (default: one per core)\n"
    "  --device N       the CUDA device of a snapshot with several\n"
    "  --device-memory SIZE\n"
    "                   the device's total memory, for inputs that do not\n"
    "                   record it (a PyTorch snapshot): with it an OOM's bytes\n"
    "                   outside the allocator are counted (as analyze does)\n"
    "                   instead of unknown, and the sim device is that large\n"
    "  --lenient        skip the history entries of a snapshot that contradict\n"
    "                   the importer's block model (as `import --lenient`)\n"
    "  --all-frames     name an OOM's call site by all its frames, without the\n"
    "                   frame filter (as `report --all-frames`)\n"
    "\n"
    "An OOM's call site is named as `report` names it: its innermost user\n"
    "frames, and where two sites read alike, the frame where their paths part.\n"
    "\"the recording's OOM #N\" is the OOM of `report` and `view` with that\n"
    "number (ooms.id).\n"
    "\n"
    "exit status: 0 done (OOMs in replays are results), 1 --verify or\n"
    "--verify-against found a difference (or --verify: the recorder left entries\n"
    "out of the trace), 2 bad input or usage (a bad --config is named), 3 other\n"
    "errors.\n";

#define MAX_CONFIGS 64

typedef struct wopts {
    const char *input;
    const char *configs[MAX_CONFIGS];
    size_t nconfigs;
    uint64_t capacity, device_memory;
    int suggest, verify, json, threads, device, lenient, all_frames;
    const char *db;
    const char *against; /* --verify-against */
    fsc_job_opts_t job; /* --rank R / --run N */
    int torch;          /* --torch: major*100+minor; 0 = fragscope's rules */
    /* --config strings read under an older parser, in the canonical form
     * that gives the same settings under fragscope's */
    char canon[MAX_CONFIGS][512];
} wopts_t;

static int parse_args(int argc, char **argv, wopts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (fsc_cli_job_option("whatif", argc, argv, &i, &o->job, &rc)) {
            if (rc != 0)
                return rc;
            continue;
        }
        if (strcmp(a, "--suggest") == 0) {
            o->suggest = 1;
            continue;
        }
        if (strcmp(a, "--verify") == 0) {
            o->verify = 1;
            continue;
        }
        if (strcmp(a, "--lenient") == 0) {
            o->lenient = 1;
            continue;
        }
        if (strcmp(a, "--all-frames") == 0) {
            o->all_frames = 1;
            continue;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (o->input != NULL)
                return fsc_cli_usage_error("whatif", "one input file only ('%s', '%s')",
                                           o->input, a);
            o->input = a;
            continue;
        }
        int takes = strcmp(a, "--config") == 0 || strcmp(a, "--capacity") == 0 ||
                    strcmp(a, "--format") == 0 || strcmp(a, "--db") == 0 ||
                    strcmp(a, "--threads") == 0 || strcmp(a, "--device") == 0 ||
                    strcmp(a, "--verify-against") == 0 || strcmp(a, "--device-memory") == 0 ||
                    strcmp(a, "--torch") == 0;
        if (!takes)
            return fsc_cli_usage_error("whatif", "unknown option '%s'", a);
        if (i + 1 >= argc)
            return fsc_cli_usage_error("whatif", "%s needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "--config") == 0) {
            if (o->nconfigs == MAX_CONFIGS)
                return fsc_cli_usage_error("whatif", "at most %d --config", MAX_CONFIGS);
            o->configs[o->nconfigs++] = v;
        } else if (strcmp(a, "--capacity") == 0) {
            int rc = fsc_cli_size("whatif", a, v, &o->capacity);
            if (rc != 0)
                return rc;
            if (o->capacity == 0)
                return fsc_cli_usage_error("whatif", "--capacity must be more than 0");
        } else if (strcmp(a, "--format") == 0) {
            if (strcmp(v, "json") == 0)
                o->json = 1;
            else if (strcmp(v, "text") != 0)
                return fsc_cli_usage_error("whatif", "--format: '%s' is not text or json", v);
        } else if (strcmp(a, "--db") == 0) {
            o->db = v;
        } else if (strcmp(a, "--verify-against") == 0) {
            o->against = v;
        } else if (strcmp(a, "--torch") == 0) {
            if (fsc_alloc_torch_version_parse(v, &o->torch) != 0)
                return fsc_cli_usage_error("whatif", "--torch: '%s' is not a version such as 2.8",
                                           v);
        } else if (strcmp(a, "--device-memory") == 0) {
            int rc = fsc_cli_size("whatif", a, v, &o->device_memory);
            if (rc != 0)
                return rc;
            if (o->device_memory == 0)
                return fsc_cli_usage_error("whatif", "--device-memory must be more than 0");
        } else if (strcmp(a, "--device") == 0) {
            char *end = NULL;
            long d = strtol(v, &end, 10);
            if (*end != '\0' || end == v || d < 0 || d > 1024)
                return fsc_cli_usage_error("whatif", "--device: '%s' is not a device number", v);
            o->device = (int)d;
        } else {
            char *end = NULL;
            long t = strtol(v, &end, 10);
            if (*end != '\0' || t < 1 || t > 256)
                return fsc_cli_usage_error("whatif", "--threads: '%s' is not in 1..256", v);
            o->threads = (int)t;
        }
    }
    if (o->input == NULL)
        return fsc_cli_usage_error("whatif", "no input file (a .fstrace or a PyTorch snapshot)");
    if (o->against != NULL) {
        if (o->suggest || o->verify || o->db != NULL || o->nconfigs > 1)
            return fsc_cli_usage_error("whatif", "--verify-against takes at most one --config "
                                                 "and none of --suggest, --verify, --db");
        return 0;
    }
    if (o->torch && (o->nconfigs == 0 || o->suggest || o->verify || o->db != NULL))
        return fsc_cli_usage_error("whatif", "--torch applies to --config replays only");
    if (o->nconfigs == 0 && !o->suggest && !o->verify && o->db == NULL)
        return fsc_cli_usage_error("whatif", "nothing to do: give --config, --suggest, "
                                             "--verify, --verify-against or --db");
    if ((o->job.has_rank || o->job.has_run) && o->db == NULL)
        return fsc_cli_usage_error("whatif", "--%s picks the run of --db: give --db",
                                   o->job.has_run ? "run" : "rank");
    if (o->json && (o->nconfigs > 0) + o->suggest + o->verify > 1)
        return fsc_cli_usage_error("whatif", "--format json takes one of --config, --suggest "
                                             "and --verify");
    return 0;
}

/* ---- output ------------------------------------------------------------------ */

static void json_str(FILE *f, const char *text)
{
    /* names from user files as UTF-8 (fsc/utf8.h); out of memory: as is */
    char *clean = NULL;
    fsc__utf8_sanitize(text, strlen(text), &clean, NULL, NULL);
    const char *s = clean != NULL ? clean : text;
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
    free(clean);
}

static const char *cfg_name(const char *c)
{
    return c[0] ? c : "(defaults)";
}

/* The call site of r[i]'s first OOM as the report names it; told apart
 * from another result's site that reads the same but is another tag. */
/* A recording that began mid-run (a ring snapshot): what the figures cover
 * and what the state it began in was, rebuilt (docs/whatif.md). */
static void print_window(const fsc_request_stream_info_t *in, int results, FILE *f)
{
    if (in->recorder_skipped.total > 0) {
        char line[1024];
        fprintf(f, "recorder: %s; the requests replayed lack them\n",
                fsc_trace_skips_text(&in->recorder_skipped, line, sizeof line));
    }
    if (!in->window)
        return;
    char r[32], a[32], when[64] = "";
    if (in->window_first_time_us != 0) {
        time_t secs = (time_t)(in->window_first_time_us / 1000000u);
        struct tm tm;
        if (gmtime_r(&secs, &tm) != NULL)
            strftime(when, sizeof when, ", the first at %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    if (in->window_entries != 0)
        fprintf(f, "window: the recording began mid-run: the snapshot kept the last %" PRIu64
                   " history entries%s\n",
                in->window_entries, when);
    else
        fputs("window: the recording began mid-run (its history had wrapped)\n", f);
    fprintf(f,
            "  every figure covers that window (from recorded event %" PRIu64 "), replayed from "
            "the state it began in,\n  rebuilt: %" PRIu64 " segments or mapped ranges (%s "
            "reserved), %" PRIu64 " live blocks (%s).\n"
            "  The run reserved at least %s before the window; its peaks before it were not "
            "recorded.\n",
            in->window_first_event, in->start_segments,
            fsc_size_format(in->start_reserved, r, sizeof r), in->start_blocks,
            fsc_size_format(in->start_allocated, a, sizeof a), r);
    if (in->start_guessed > 0) {
        char u[32];
        fprintf(f, "  block sizes: %" PRIu64 " of the rebuilt blocks end where the window does not "
                   "prove (PyTorch may\n  have left them a remainder unsplit); %" PRIu64
                   " settled by the window's best-fit choices;\n  allocated bytes are known to "
                   "within %s",
                in->start_guessed, in->start_settled,
                fsc_size_format(in->start_uncertain_bytes, u, sizeof u));
        for (size_t i = 0; i < in->n_guessed_listed; i++)
            fprintf(f, "%s0x%" PRIx64, i == 0 ? "; still guessed: " : ", ", in->guessed_blocks[i]);
        if (in->start_guessed > in->start_settled + in->n_guessed_listed)
            fputs(", ...", f);
        fputc('\n', f);
    }
    if (results)
        fputs("  Other settings start from the same state (the recorded settings' layout), and "
              "the run's\n  steps before the window may have needed more memory than these "
              "figures show:\n  torch.cuda.memory_stats()['reserved_bytes.all.peak'] covers the "
              "whole run.\n",
              f);
    fputc('\n', f);
}

static void json_window_only(const fsc_request_stream_info_t *in, FILE *f);

/* The window, then the entries the recorder left out (by kind). */
static void json_window(const fsc_request_stream_info_t *in, FILE *f)
{
    json_window_only(in, f);
    const fsc_trace_skips_t *sk = &in->recorder_skipped;
    fprintf(f, ", \"recorder_skipped\": %" PRIu64 ", \"recorder_skipped_by_kind\": {", sk->total);
    for (uint32_t k = 0, first = 1; k < FSC_TRACE_SKIP_KINDS; k++)
        if (sk->by_kind[k] > 0) {
            fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", fsc_trace_skip_kind_name(k),
                    sk->by_kind[k]);
            first = 0;
        }
    fputs("}", f);
}

static void json_window_only(const fsc_request_stream_info_t *in, FILE *f)
{
    if (!in->window) {
        fputs(", \"window\": null", f);
        return;
    }
    fprintf(f,
            ", \"window\": {\"entries\": %" PRIu64 ", \"first_time_us\": %" PRIu64
            ", \"first_event\": %" PRIu64 ", \"start_segments\": %" PRIu64
            ", \"start_blocks\": %" PRIu64 ", \"start_reserved_bytes\": %" PRIu64
            ", \"start_allocated_bytes\": %" PRIu64 ", \"guessed_blocks\": %" PRIu64
            ", \"settled_blocks\": %" PRIu64 ", \"uncertain_bytes\": %" PRIu64
            ", \"still_guessed\": [",
            in->window_entries, in->window_first_time_us, in->window_first_event,
            in->start_segments, in->start_blocks, in->start_reserved, in->start_allocated,
            in->start_guessed, in->start_settled, in->start_uncertain_bytes);
    for (size_t i = 0; i < in->n_guessed_listed; i++)
        fprintf(f, "%s\"0x%" PRIx64 "\"", i ? ", " : "", in->guessed_blocks[i]);
    fputs("], \"earlier_steps_unknown\": true}", f);
}

static void site_name(const fsc_request_stream_t *rs, const fsc_whatif_result_t *r, size_t n,
                      size_t i, int all_frames, char *buf, size_t cap)
{
    const fsc_whatif_oom_t *o = &r[i].first_oom;
    uint32_t other = 0;
    for (size_t k = 0; k < n && other == 0; k++)
        if (k != i && r[k].oom && r[k].first_oom.tag_node != o->tag_node &&
            strcmp(r[k].first_oom.tag, o->tag) == 0)
            other = r[k].first_oom.tag_node;
    if (!all_frames && other == 0) {
        snprintf(buf, cap, "%s", o->tag);
        return;
    }
    if (fsc_request_stream_tag_label(rs, o->tag_node, other, all_frames, FSC_WHATIF_SITE_DEPTH,
                                     buf, cap) != 0)
        snprintf(buf, cap, "%s", o->tag);
}

/* The settings a replay's result depends on that fragscope does not model:
 * the replayed config's, and the recording's own (its run followed them,
 * the request stream carries their effect). "" = none. */
static void not_modelled(const char *config, const char *recorded, char *buf, size_t cap)
{
    char a[256], b[256];
    fsc_alloc_config_unmodelled_str(config, a, sizeof a);
    fsc_alloc_config_unmodelled_str(recorded, b, sizeof b);
    snprintf(buf, cap, "%s", a);
    char *save = NULL;
    for (char *k = strtok_r(b, ",", &save); k != NULL; k = strtok_r(NULL, ",", &save)) {
        size_t kl = strlen(k), len = strlen(buf);
        int have = 0;
        for (const char *p = buf; (p = strstr(p, k)) != NULL; p += kl)
            if ((p == buf || p[-1] == ',') && (p[kl] == ',' || p[kl] == '\0'))
                have = 1;
        if (!have)
            snprintf(buf + len, cap - len, "%s%s", len ? "," : "", k);
    }
}

static void json_not_modelled(const char *list, FILE *f)
{
    if (list[0] == '\0')
        return;
    fputs(", \"exact\": false, \"not_modelled\": [", f);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", list);
    int first = 1;
    char *save = NULL;
    for (char *k = strtok_r(tmp, ",", &save); k != NULL; k = strtok_r(NULL, ",", &save)) {
        fputs(first ? "" : ", ", f);
        json_str(f, k);
        first = 0;
    }
    fputc(']', f);
}

/* The program's empty_cache() calls are known here only by the segments
 * they released (PyTorch snapshots record no such action): a call that
 * released nothing in the recording leaves no trace, and under another
 * setting or capacity, where more may be cached at that point, the replay
 * makes no call there. On the boundary job with empty_cache() every 150
 * requests (bench/gpu/results/2026-12-07), 3 of the defaults run's 20 calls
 * released nothing; under roundup_power2_divisions:4 they released
 * segments and the replay from the defaults run, even given the other
 * run's addresses, diverged at its 42nd segment (docs/whatif.md). */
static int empty_cache_unseen(const fsc_request_stream_info_t *in)
{
    return in->inferred_empty_caches > 0 && in->empty_caches == 0;
}

static void print_results_json(const fsc_request_stream_t *rs, const fsc_whatif_result_t *r,
                               size_t n, int all_frames, const fsc_request_stream_info_t *in,
                               FILE *f)
{
    fputs("[\n", f);
    for (size_t i = 0; i < n; i++) {
        const fsc_whatif_result_t *x = &r[i];
        fputs("  {\"config\": ", f);
        json_str(f, x->config);
        fprintf(f,
                ", \"capacity_bytes\": %" PRIu64 ", \"peak_reserved_bytes\": %" PRIu64
                ", \"peak_allocated_bytes\": %" PRIu64 ", \"utilization\": %.6f"
                ", \"external_frag_at_peak\": %.6f, \"segments\": %" PRIu64
                ", \"segment_maps\": %" PRIu64 ", \"num_alloc_retries\": %" PRId64
                ", \"num_ooms\": %" PRId64 ", \"oom\": %s, \"run_complete\": %s"
                ", \"margin_bytes\": ",
                x->capacity, x->peak_reserved, x->peak_allocated, x->utilization,
                x->external_frag_at_peak, x->segments, x->segment_maps, x->num_alloc_retries,
                x->num_ooms, x->oom ? "true" : "false", x->run_complete ? "true" : "false");
        if (x->has_margin)
            fprintf(f, "%" PRIu64, x->margin);
        else
            fputs("null", f);
        json_window(in, f);
        fputs(", \"first_oom\": ", f);
        if (!x->oom) {
            fputs("null", f);
        } else {
            const fsc_whatif_oom_t *o = &x->first_oom;
            fprintf(f, "{\"index\": %" PRIu64 ", \"event\": %" PRIu64 ", \"marker\": ",
                    o->request, o->event);
            if (o->has_marker)
                json_str(f, o->marker);
            else
                fputs("null", f);
            char site[FSC_WHATIF_NOTE_MAX];
            site_name(rs, r, n, i, all_frames, site, sizeof site);
            fputs(", \"tag\": ", f);
            json_str(f, site);
            fputs(", \"recorded_oom\": ", f);
            if (o->recorded_oom >= 0)
                fprintf(f, "%" PRId64, o->recorded_oom);
            else
                fputs("null", f);
            fprintf(f, ", \"recorded_oom_external\": %s",
                    o->recorded_oom >= 0 && o->recorded_oom == in->first_external_oom ? "true"
                                                                                     : "false");
            fprintf(f, ", \"requested_bytes\": %" PRIu64 ", \"stream\": %" PRIu64 "}",
                    o->requested, o->stream);
        }
        fprintf(f,
                ", \"placement\": {\"uncertain_segments\": %" PRIu64 ", \"variants\": %d"
                ", \"decides\": %s, \"peak_reserved_range\": [%" PRIu64 ", %" PRIu64 "]"
                ", \"peak_allocated_range\": [%" PRIu64 ", %" PRIu64 "]"
                ", \"oom_in_variants\": %d}",
                x->placement_uncertain, x->placement_variants,
                x->placement_decides ? "true" : "false", x->peak_reserved_lo, x->peak_reserved_hi,
                x->peak_allocated_lo, x->peak_allocated_hi, x->oom_variants);
        fprintf(f,
                ", \"empty_cache_inferred\": %" PRIu64 ", \"empty_cache_unseen_possible\": %s",
                in->inferred_empty_caches, empty_cache_unseen(in) ? "true" : "false");
        char nm[256];
        not_modelled(x->config, in->config, nm, sizeof nm);
        json_not_modelled(nm, f);
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fputs("]\n", f);
}

static void print_results_text(const fsc_request_stream_t *rs, const fsc_whatif_result_t *r,
                               size_t n, uint64_t capacity, int all_frames,
                               const fsc_request_stream_info_t *in, FILE *f)
{
    char s1[32], s2[32];
    print_window(in, 1, f);
    if (capacity)
        fprintf(f, "capacity: %s\n\n", fsc_size_format(capacity, s1, sizeof s1));
    else
        fprintf(f, "capacity: unlimited\n\n");
    fprintf(f, "%-40s %15s %15s %7s %8s %8s %7s  %s\n", "config", "peak reserved",
            "peak allocated", "util", "ext.frag", "segments", "retries", "outcome");
    for (size_t i = 0; i < n; i++) {
        const fsc_whatif_result_t *x = &r[i];
        fprintf(f, "%-40s %15s %15s %6.1f%% %8.3f %8" PRIu64 " %7" PRId64 "  %s\n",
                cfg_name(x->config), fsc_size_format(x->peak_reserved, s1, sizeof s1),
                fsc_size_format(x->peak_allocated, s2, sizeof s2), 100.0 * x->utilization,
                x->external_frag_at_peak, x->segments, x->num_alloc_retries,
                x->oom ? "OOM" : x->run_complete ? "ok" : "ok*");
    }
    for (size_t i = 0; i < n; i++) {
        char nm[256];
        not_modelled(r[i].config, in->config, nm, sizeof nm);
        if (nm[0])
            fprintf(f, "\nnot exact: %s: settings fragscope does not model: %s; the replay "
                       "cannot follow them,\n  so it differs from what PyTorch would do "
                       "wherever they matter.\n",
                    cfg_name(r[i].config), nm);
        const fsc_whatif_result_t *x = &r[i];
        if (!x->placement_decides && x->placement_uncertain > 0) {
            /* The variants agree, but rule 4 is known to be incomplete: on
             * the empty_cache recordings of 2026-12-07 a replay whose four
             * placements agreed still missed the real run's outcome. */
            fprintf(f,
                    "\n%s: %" PRIu64 " segment%s went where chunks had been given back, a "
                    "choice the\n  recordings do not settle. The %d placements tried agree, but "
                    "the real run's\n  may differ from all of them (docs/allocator.md, \"Where "
                    "the driver places\n  segments\", rule 4): the figures depend on it.\n",
                    cfg_name(x->config), x->placement_uncertain,
                    x->placement_uncertain == 1 ? "" : "s", x->placement_variants);
            continue;
        }
        if (!x->placement_decides)
            continue;
        fprintf(f,
                "\n%s: where the driver places segments decides it. %" PRIu64 " segment%s went "
                "where\n  chunks had been given back, a choice the recordings do not settle. "
                "Over the %d\n  placements tried: peak reserved %" PRIu64 " to %" PRIu64
                " B, peak allocated\n  %" PRIu64 " to %" PRIu64 " B",
                cfg_name(x->config), x->placement_uncertain,
                x->placement_uncertain == 1 ? "" : "s", x->placement_variants,
                x->peak_reserved_lo, x->peak_reserved_hi, x->peak_allocated_lo,
                x->peak_allocated_hi);
        if (x->oom_variants != 0 && x->oom_variants != x->placement_variants)
            fprintf(f, ", out of memory in %d of them", x->oom_variants);
        fputs(". The row above is the model's\n  own placement; the real run's figures may lie "
              "outside the range (docs/allocator.md,\n  \"Where the driver places segments\", "
              "rule 4).\n", f);
    }
    if (empty_cache_unseen(in))
        fprintf(f,
                "\nempty_cache(): %" PRIu64 " call%s of the program inferred from the segments "
                "%s released; a call\n  that released nothing leaves no trace in the recording. "
                "Under another setting or\n  capacity such a call may release cached segments, "
                "which this replay does not do:\n  the figures above assume no empty_cache() "
                "but those seen.\n",
                in->inferred_empty_caches, in->inferred_empty_caches == 1 ? "" : "s",
                in->inferred_empty_caches == 1 ? "it" : "they");
    int partial = 0;
    for (size_t i = 0; i < n; i++)
        partial |= !r[i].oom && !r[i].run_complete;
    if (partial && in->window && !in->ends_at_oom) {
        fputs("\n* the recording is a window of the run: \"ok*\" serves every request of the "
              "window,\n  from the state it began in; the steps before it were not recorded.\n",
              f);
        partial = 0;
    }
    if (partial) {
        fputs("\n* the recording ends at an OOM: \"ok*\" serves the request that failed and "
              "everything\n  recorded before it; the rest of the run was not recorded.\n", f);
        for (size_t i = 0; i < n; i++)
            if (!r[i].oom && r[i].has_margin)
                fprintf(f, "  %s: %s left under the cap when the failed request is served\n",
                        cfg_name(r[i].config), fsc_size_format(r[i].margin, s1, sizeof s1));
        fputs("  For a complete answer, record one run with more memory or without the cap, "
              "then\n  `fragscope whatif RUN --capacity X`.\n", f);
    }
    for (size_t i = 0; i < n; i++) {
        const fsc_whatif_result_t *x = &r[i];
        if (!x->oom)
            continue;
        const fsc_whatif_oom_t *o = &x->first_oom;
        fprintf(f, "\n%s: first OOM at request %" PRIu64 " (recorded event %" PRIu64
                   "), %s requested",
                cfg_name(x->config), o->request, o->event,
                fsc_size_format(o->requested, s1, sizeof s1));
        if (o->has_marker)
            fprintf(f, ", after marker \"%s\"", o->marker);
        if (o->recorded_oom >= 0)
            fprintf(f, "; the recording's OOM #%" PRId64 " failed there too%s", o->recorded_oom,
                    o->recorded_oom == in->first_external_oom ? " (external)" : "");
        fputc('\n', f);
        char site[FSC_WHATIF_NOTE_MAX];
        site_name(rs, r, n, i, all_frames, site, sizeof site);
        if (site[0])
            fprintf(f, "  call site: %s\n", site);
    }
    if (in->first_external_oom >= 0)
        fprintf(f, "\nThe recording's OOM #%" PRId64 " was external: memory outside this "
                   "allocator took what the\nrequest needed. On that device no allocator "
                   "setting avoids it, whatever a replay\nunder another capacity shows "
                   "(`whatif --suggest` says what would help).\n",
                in->first_external_oom);
}

/* What helps with memory outside the allocator (as the report's
 * explanation of an `external` OOM says it). */
#define EXTERNAL_HELP                                                                        \
    "find the other user of the device and free it or make room: other processes on the "  \
    "GPU (nvidia-smi), NCCL buffers, raw cudaMalloc calls (extensions, libraries), the "    \
    "CUDA context and library workspaces (cuBLAS, cuDNN)"

/* An OOM of the recording diagnosed `external`: said instead of settings,
 * since none can avoid it (docs/whatif.md). */
static void print_external(const fsc_request_stream_info_t *in, int json, FILE *f)
{
    char b[32], what[256];
    if (in->external_bytes_known)
        snprintf(what, sizeof what, "%s: the device's total less its free bytes and this "
                                    "allocator's reserved bytes",
                 fsc_size_format(in->external_bytes, b, sizeof b));
    else
        snprintf(what, sizeof what, "how much is unknown: the device's total was not recorded; "
                                    "give --device-memory SIZE to measure it");
    if (json) {
        fprintf(f, "[\n  {\"config\": null, \"external\": true, \"external_bytes\": ");
        if (in->external_bytes_known)
            fprintf(f, "%" PRIu64, in->external_bytes);
        else
            fputs("null", f);
        fprintf(f, ", \"recorded_oom\": %" PRId64 ", \"external_ooms\": %" PRIu64
                   ", \"avoids_oom\": false, \"note\": ",
                in->first_external_oom, in->external_ooms);
        json_str(f, "the OOM was external: no allocator setting can avoid it");
        fputs(", \"advice\": ", f);
        json_str(f, EXTERNAL_HELP);
        fputs("}\n]\n", f);
        return;
    }
    fprintf(f, "the recording's OOM #%" PRId64 " was external: memory outside this allocator "
               "took what the\nrequest needed (%s).\n"
               "No allocator setting can avoid it, so none is listed.\n"
               "What would help: " EXTERNAL_HELP ".\n",
            in->first_external_oom, what);
    if (in->external_ooms > 1)
        fprintf(f, "(%" PRIu64 " of the recording's OOMs were external.)\n", in->external_ooms);
}

/* A "does not help" note up to what the setting needs ("; ..."), which
 * differs from one setting to the next. */
static size_t why_len(const char *note)
{
    const char *p = strstr(note, "; ");
    return p ? (size_t)(p - note) : strlen(note);
}

static int same_why(const char *a, const char *b)
{
    size_t n = why_len(a);
    return n == why_len(b) && strncmp(a, b, n) == 0;
}

static void print_suggestions(const fsc_suggestion_t *s, size_t n, int json,
                              const fsc_request_stream_info_t *in, FILE *f)
{
    char s1[32];
    if (!json)
        print_window(in, 1, f);
    if (json) {
        fputs("[\n", f);
        for (size_t i = 0; i < n; i++) {
            fputs("  {\"config\": ", f);
            json_str(f, s[i].config);
            fprintf(f,
                    ", \"helps\": %s, \"capacity_bytes\": %" PRIu64 ", \"capacity_upper_bytes\": ",
                    s[i].helps ? "true" : "false", s[i].capacity);
            /* the cap inferred to lie in [capacity, upper): each claim says
             * whether it holds at both ends */
            if (s[i].capacity_upper)
                fprintf(f, "%" PRIu64 ", \"avoids_at_lower\": %s, \"avoids_at_upper\": %s",
                        s[i].capacity_upper, s[i].avoids_at_lower ? "true" : "false",
                        s[i].avoids_at_upper ? "true" : "false");
            else
                fputs("null", f);
            fprintf(f,
                    ", \"avoids_oom\": %s, \"placement_decides\": %s, \"run_complete\": %s"
                    ", \"margin_bytes\": ",
                    s[i].avoids_oom ? "true" : "false", s[i].placement_decides ? "true" : "false",
                    s[i].run_complete ? "true" : "false");
            if (s[i].has_margin)
                fprintf(f, "%" PRIu64 ", \"margin_at\": \"%s\"", s[i].margin,
                        !s[i].capacity_upper ? "capacity"
                        : s[i].margin_at_upper ? "upper" : "lower");
            else
                fputs("null", f);
            fputs(", \"needed_capacity_bytes\": ", f);
            if (s[i].needed_capacity)
                fprintf(f, "%" PRIu64, s[i].needed_capacity);
            else
                fputs("null", f);
            fprintf(f,
                    ", \"baseline_needed_capacity_bytes\": %" PRIu64
                    ", \"peak_reserved_bytes\": %" PRIu64 ", \"peak_allocated_bytes\": %" PRIu64
                    ", \"baseline_peak_reserved_bytes\": %" PRIu64
                    ", \"external\": false, \"external_bytes\": null, \"note\": ",
                    s[i].baseline_needed, s[i].peak_reserved, s[i].peak_allocated,
                    s[i].baseline_peak_reserved);
            json_str(f, s[i].note);
            json_window(in, f);
            char nm[256];
            not_modelled(s[i].config, in->config, nm, sizeof nm);
            json_not_modelled(nm, f);
            fprintf(f, "}%s\n", i + 1 < n ? "," : "");
        }
        fputs("]\n", f);
        return;
    }
    size_t nh = 0;
    while (nh < n && s[nh].helps)
        nh++;
    if (n > 0 && s[0].baseline_needed)
        fprintf(f, "the run's own settings need %s\n",
                fsc_size_format(s[0].baseline_needed, s1, sizeof s1));
    if (nh == 0 && n > 0 && s[0].capacity_upper != 0)
        fprintf(f, "no setting of the grid serves the failed request at every cap the recording "
                   "allows (docs/whatif.md)\n");
    else if (nh == 0)
        fprintf(f, "no setting of the grid avoids the OOM or lowers the peak (docs/whatif.md)\n");
    if (nh > 0)
        fprintf(f, "settings that do better, best first:\n");
    for (size_t i = 0; i < nh; i++)
        fprintf(f, "  %-58s %s\n", s[i].config, s[i].note);
    if (nh < n) {
        /* grouped by what they do, each group once */
        fprintf(f, "settings that do not help, or only at some of the caps the recording "
                   "allows:\n");
        const char *pre = "does not help: ";
        for (size_t i = nh; i < n; i++) {
            int seen = 0;
            for (size_t k = nh; k < i && !seen; k++)
                seen = same_why(s[k].note, s[i].note);
            if (seen)
                continue;
            const char *why = s[i].note;
            if (strncmp(why, pre, strlen(pre)) == 0)
                why += strlen(pre);
            fprintf(f, "  %.*s:\n   ", (int)why_len(why), why);
            size_t col = 3;
            for (size_t k = i; k < n; k++) {
                if (!same_why(s[k].note, s[i].note))
                    continue;
                size_t len = strlen(s[k].config) + 1;
                if (col + len > 96 && col > 3) {
                    fputs("\n   ", f);
                    col = 3;
                }
                fprintf(f, " %s", s[k].config);
                col += len;
            }
            fputc('\n', f);
        }
    }
    char nm[256];
    not_modelled("", in->config, nm, sizeof nm);
    if (nm[0])
        fprintf(f, "\nnot exact: the recording's settings include %s, which fragscope does not "
                   "model:\n  every figure above comes from a replay that cannot follow them.\n",
                nm);
    if (n == 0)
        return;
    if (!s[0].run_complete && in->window && !in->ends_at_oom)
        fputs("\nThe recording is a window of the run, so these figures cover that window, "
              "from the\nstate it began in; the steps before it were not recorded and may have "
              "needed more.\n",
              f);
    else if (!s[0].run_complete)
        fputs("\nThe recording ends at an OOM, so these figures cover the request that failed "
              "and\neverything recorded before it; the rest of the run was not recorded and may "
              "need\nmore. For a complete answer, record one run with more memory or without the "
              "cap,\nthen `fragscope whatif RUN --capacity X`.\n",
              f);
}

/* Private pools the snapshot no longer names, inferred (docs/whatif.md). */
static void print_pools_note(const fsc_request_stream_info_t *info, const char *indent, FILE *f)
{
    if (info->use_on_oom_pools > 0)
        fprintf(f,
                "%sMemPool use_on_oom: %" PRIu64 " pool(s) served %" PRIu64
                " default-pool requests that the cap refused\n%s(replayed as default-pool "
                "requests that fall back to them only when they must)\n",
                indent, info->use_on_oom_pools, info->use_on_oom_allocs, indent);
    if (info->no_split_pools > 0)
        fprintf(f, "%sMemPool no_split: %" PRIu64 " pool(s) hand out whole blocks "
                   "(replayed that way)\n", indent, info->no_split_pools);
    if (info->pool_inference_capped)
        fprintf(f,
                "%sprivate pools: the inference stopped at its bound on time and memory (the\n"
                "%srecording's requests skipped very many free blocks): released pools may be\n"
                "%sinferred fewer than there were, and the replay may differ from the recording\n",
                indent, indent, indent);
    if (info->inferred_pools == 0)
        return;
    fprintf(f,
            "%sprivate pools: %" PRIu64 " inferred, %" PRIu64 " segments and %" PRIu64
            " requests the snapshot names no pool for\n%s(released before it was taken); "
            "replayed in the pools the recorded placements imply\n",
            indent, info->inferred_pools, info->inferred_pool_segments,
            info->inferred_pool_allocs, indent);
}

/* The comparison's figures shared by --verify and --verify-against, JSON:
 * segments, the first divergence, both peaks and the address counts, up to
 * the first_addr_mismatch key (each writes its own object). */
static void json_compared(const fsc_whatif_verify_t *v, FILE *f)
{
    fprintf(f,
            ", \"segments_expected\": %" PRIu64 ", \"segments_got\": %" PRIu64
            ", \"first_divergence\": ",
            v->segments_expected, v->segments_got);
    if (v->first_divergence < 0)
        fputs("null", f);
    else
        fprintf(f,
                "{\"index\": %ld, \"expected_type\": \"%s\", \"expected_size\": %" PRIu64
                ", \"got_type\": \"%s\", \"got_size\": %" PRIu64 "}",
                v->first_divergence, v->expected_type ? fsc_event_type_name(v->expected_type) : "none",
                v->expected_size, v->got_type ? fsc_event_type_name(v->got_type) : "none",
                v->got_size);
    fprintf(f,
            ", \"peak_reserved_expected\": %" PRIu64 ", \"peak_reserved_got\": %" PRIu64
            ", \"peak_allocated_expected\": %" PRIu64 ", \"peak_allocated_got\": %" PRIu64
            ", \"allocs_compared\": %" PRIu64 ", \"alloc_addr_matches\": %" PRIu64
            ", \"first_addr_mismatch\": ",
            v->peak_reserved_expected, v->peak_reserved_got, v->peak_allocated_expected,
            v->peak_allocated_got, v->allocs_compared, v->alloc_addr_matches);
}

/* The same, text: the first segment that differs; `other` names what the
 * replay is compared with ("the recording", "the other"). */
static void text_divergence(const fsc_whatif_verify_t *v, const char *other, FILE *f)
{
    if (v->first_divergence < 0)
        return;
    fprintf(f, "  first divergence at segment %ld: ", v->first_divergence);
    if (v->expected_type == 0)
        fprintf(f, "%s has no more, the replay made a %s of %" PRIu64 " B\n", other,
                fsc_event_type_name(v->got_type), v->got_size);
    else if (v->got_type == 0)
        fprintf(f, "%s made a %s of %" PRIu64 " B, the replay no more\n", other,
                fsc_event_type_name(v->expected_type), v->expected_size);
    else
        fprintf(f, "expected %s %" PRIu64 " B, got %s %" PRIu64 " B\n",
                fsc_event_type_name(v->expected_type), v->expected_size,
                fsc_event_type_name(v->got_type), v->got_size);
}

/* The segments (and where their sequence parts), both peaks and the
 * addresses matched, of the replay against `theirs` ("the recording" or
 * "the other"), whose figures are called `had` ("recorded", "in the
 * other"). */
static void text_figures(const fsc_whatif_verify_t *v, const char *had, const char *theirs,
                         FILE *f)
{
    fprintf(f, "  segments       %" PRIu64 " %s, %" PRIu64 " replayed\n", v->segments_expected,
            had, v->segments_got);
    text_divergence(v, theirs, f);
    fprintf(f, "  peak reserved  %" PRIu64 " %s, %" PRIu64 " replayed\n",
            v->peak_reserved_expected, had, v->peak_reserved_got);
    fprintf(f, "  peak allocated %" PRIu64 " %s, %" PRIu64 " replayed\n",
            v->peak_allocated_expected, had, v->peak_allocated_got);
    fprintf(f, "  block addresses matching %s: %" PRIu64 " of %" PRIu64 "\n", theirs,
            v->alloc_addr_matches, v->allocs_compared);
}

static int print_verify(const fsc_whatif_verify_t *v, const fsc_request_stream_info_t *info,
                        int inferred, int json, FILE *f)
{
    /* Entries the recorder left out are not in the stream: however well the
     * replay matches what was kept, it is not a faithful replay of the run. */
    uint64_t skipped = info->recorder_skipped.total;
    int faithful = v->match && skipped == 0;
    if (json) {
        fprintf(f, "{\"match\": %s, \"kept_entries_match\": %s, \"config\": ",
                faithful ? "true" : "false", v->match ? "true" : "false");
        json_str(f, v->replay.config);
        fprintf(f, ", \"capacity_bytes\": %" PRIu64, v->replay.capacity);
        fprintf(f, ", \"capacity_inferred\": %s", inferred ? "true" : "false");
        if (inferred)
            fprintf(f, ", \"capacity_lower\": %" PRIu64 ", \"capacity_upper\": %" PRIu64,
                    info->capacity_lower, info->capacity_upper);
        fprintf(f, ", \"run_complete\": %s", info->run_complete ? "true" : "false");
        json_window(info, f);
        fprintf(f,
                ", \"pool_inference_capped\": %s"
                ", \"pools_inferred\": %" PRIu64 ", \"pool_segments_inferred\": %" PRIu64
                ", \"pool_allocs_inferred\": %" PRIu64 ", \"pool_releases\": %" PRIu64,
                info->pool_inference_capped ? "true" : "false", info->inferred_pools,
                info->inferred_pool_segments, info->inferred_pool_allocs, info->pool_releases);
        fprintf(f,
                ", \"use_on_oom_pools\": %" PRIu64 ", \"use_on_oom_allocs\": %" PRIu64
                ", \"no_split_pools\": %" PRIu64,
                info->use_on_oom_pools, info->use_on_oom_allocs, info->no_split_pools);
        json_compared(v, f);
        if (v->first_addr_mismatch < 0)
            fputs("null", f);
        else
            fprintf(f,
                    "{\"request\": %ld, \"event\": %" PRIu64 ", \"expected_addr\": %" PRIu64
                    ", \"got_addr\": %" PRIu64 "}",
                    v->first_addr_mismatch, v->mismatch_event, v->mismatch_expected_addr,
                    v->mismatch_got_addr);
        fprintf(f, ", \"oom_expected\": %s, \"oom_got\": %s",
                v->oom_expected ? "true" : "false", v->oom_got ? "true" : "false");
        char nm[256];
        not_modelled(v->replay.config, info->config, nm, sizeof nm);
        json_not_modelled(nm, f);
        fputs("}\n", f);
        return faithful ? FSC_EXIT_OK : FSC_EXIT_CHECK_FAILED;
    }
    print_window(info, 0, f);
    if (skipped > 0 && v->match)
        fprintf(f, "verify (settings \"%s\"): NOT FAITHFUL: the replay reproduces the entries "
                   "the trace kept, but the recorder left %" PRIu64 " out\n",
                v->replay.config, skipped);
    else
        fprintf(f, "verify (settings \"%s\"): %s%s\n", v->replay.config,
                v->match ? "the replay reproduces the recording" : "the replay DIFFERS",
                skipped > 0 ? " (and the recorder left entries out)" : "");
    if (inferred) {
        char lo[32], hi[32];
        fprintf(f,
                "  capacity       not recorded; replayed at %s, the lowest cap the run is\n"
                "                 consistent with (it lies in [%s, %s): every cap in that\n"
                "                 range fails at the same request). PyTorch's OOM message\n"
                "                 says the cap (\"X GiB allowed\"); give it with --capacity.\n",
                fsc_size_format(info->capacity_lower, lo, sizeof lo), lo,
                fsc_size_format(info->capacity_upper, hi, sizeof hi));
    }
    print_pools_note(info, "  ", f);
    text_figures(v, "recorded", "the recording", f);
    if (v->first_addr_mismatch >= 0) {
        fprintf(f, "  first address that differs: request %ld (recorded event %" PRIu64
                   "), recorded 0x%" PRIx64 ", ",
                v->first_addr_mismatch, v->mismatch_event, v->mismatch_expected_addr);
        if (v->mismatch_got_addr != 0)
            fprintf(f, "replayed 0x%" PRIx64 "\n", v->mismatch_got_addr);
        else
            fputs("not served in the replay\n", f);
    }
    fprintf(f, "  OOM            %s recorded, %s replayed\n", v->oom_expected ? "yes" : "no",
            v->oom_got ? "yes" : "no");
    char nm[256];
    not_modelled(v->replay.config, info->config, nm, sizeof nm);
    if (nm[0])
        fprintf(f, "  not exact      settings fragscope does not model: %s; the replay cannot "
                   "follow them\n", nm);
    return faithful ? FSC_EXIT_OK : FSC_EXIT_CHECK_FAILED;
}

/* --verify-against: this recording replayed under the other's settings,
 * compared with the other. */
static int print_against(const fsc_whatif_verify_t *v, const char *other,
                         const fsc_request_stream_info_t *binfo, int inferred, int json, FILE *f)
{
    int partial = v->first_request_diff >= 0 || v->requests_compared < v->requests_b;
    if (json) {
        fprintf(f, "{\"match\": %s, \"against\": ", v->match ? "true" : "false");
        json_str(f, other);
        fputs(", \"config\": ", f);
        json_str(f, v->replay.config);
        fprintf(f, ", \"capacity_bytes\": %" PRIu64 ", \"capacity_inferred\": %s",
                v->replay.capacity, inferred ? "true" : "false");
        if (inferred)
            fprintf(f, ", \"capacity_lower\": %" PRIu64 ", \"capacity_upper\": %" PRIu64,
                    binfo->capacity_lower, binfo->capacity_upper);
        fprintf(f,
                ", \"requests\": %" PRIu64 ", \"requests_other\": %" PRIu64
                ", \"requests_compared\": %" PRIu64 ", \"complete\": %s"
                ", \"first_request_diff\": ",
                v->requests_a, v->requests_b, v->requests_compared, partial ? "false" : "true");
        if (v->first_request_diff < 0)
            fputs("null", f);
        else
            fprintf(f, "{\"request\": %ld, \"requested\": %" PRIu64
                       ", \"requested_other\": %" PRIu64 "}",
                    v->first_request_diff, v->diff_requested_a, v->diff_requested_b);
        json_compared(v, f);
        if (v->first_addr_mismatch < 0)
            fputs("null", f);
        else
            fprintf(f,
                    "{\"request\": %ld, \"event_other\": %" PRIu64 ", \"requested\": %" PRIu64
                    ", \"rounded\": %" PRIu64 ", \"expected_addr\": %" PRIu64
                    ", \"got_addr\": %" PRIu64 "}",
                    v->first_addr_mismatch, v->mismatch_event, v->mismatch_requested,
                    v->mismatch_rounded, v->mismatch_expected_addr, v->mismatch_got_addr);
        fprintf(f, ", \"oom_expected\": %s, \"oom_got\": %s",
                v->oom_expected ? "true" : "false", v->oom_got ? "true" : "false");
        char nm[256];
        not_modelled(v->replay.config, binfo->config, nm, sizeof nm);
        json_not_modelled(nm, f);
        fputs("}\n", f);
        return v->match ? FSC_EXIT_OK : FSC_EXIT_CHECK_FAILED;
    }
    char nm[256];
    not_modelled(v->replay.config, binfo->config, nm, sizeof nm);
    if (nm[0])
        fprintf(f, "not exact: settings fragscope does not model: %s; the replay cannot follow "
                   "them\n", nm);
    fprintf(f, "verify against %s (settings \"%s\"): %s\n", other, v->replay.config,
            v->match ? "the replay reproduces it" : "the replay DIFFERS");
    char cap[32];
    if (v->replay.capacity == 0)
        fputs(v->match ? "  capacity       unlimited (the other run records no cap)\n"
                       : "  capacity       unlimited: the other run records no cap. If it ran under\n"
                         "                 one (set_per_process_memory_fraction), give it with\n"
                         "                 --capacity: without it the replay never has to free\n"
                         "                 cached segments where that run did\n",
              f);
    else if (inferred) {
        char hi[32];
        fprintf(f,
                "  capacity       %s, the lowest cap the other run is consistent with (it\n"
                "                 lies in [%s, %s)); give its \"X GiB allowed\" with --capacity\n",
                fsc_size_format(v->replay.capacity, cap, sizeof cap), cap,
                fsc_size_format(binfo->capacity_upper, hi, sizeof hi));
    } else
        fprintf(f, "  capacity       %s\n", fsc_size_format(v->replay.capacity, cap, sizeof cap));
    fprintf(f, "  requests       %" PRIu64 " here, %" PRIu64 " in the other, %" PRIu64
               " compared\n",
            v->requests_a, v->requests_b, v->requests_compared);
    if (v->first_request_diff >= 0)
        fprintf(f,
                "  the runs part at request %ld: %" PRIu64 " B here, %" PRIu64
                " B in the other;\n"
                "                 they are not the same job past it (a seed, a shape or the\n"
                "                 data differs), and nothing after it is compared\n",
                v->first_request_diff, v->diff_requested_a, v->diff_requested_b);
    else if (v->requests_compared < v->requests_b)
        fprintf(f, "  this recording ends first: the other's last %" PRIu64
                   " requests are not compared, and its peaks may lie among them\n",
                v->requests_b - v->requests_compared);
    text_figures(v, "in the other", "the other", f);
    if (v->first_addr_mismatch >= 0) {
        fprintf(f,
                "  first request placed elsewhere: request %ld, %" PRIu64
                " B asked, rounded here to %" PRIu64 " B;\n"
                "                 the other placed it at 0x%" PRIx64 " (its event %" PRIu64 "), ",
                v->first_addr_mismatch, v->mismatch_requested, v->mismatch_rounded,
                v->mismatch_expected_addr, v->mismatch_event);
        if (v->mismatch_got_addr != 0)
            fprintf(f, "the replay at 0x%" PRIx64 "\n", v->mismatch_got_addr);
        else
            fputs("the replay could not serve it\n", f);
    }
    fprintf(f, "  OOM            %s in the other, %s replayed\n", v->oom_expected ? "yes" : "no",
            v->oom_got ? "yes" : "no");
    return v->match ? FSC_EXIT_OK : FSC_EXIT_CHECK_FAILED;
}

/* The input (or the other recording) into a stream, with the options
 * that shape how it is read. */
static int load_input(const wopts_t *o, const char *path, fsc_request_stream_t **out,
                      fsc_err_t *err)
{
    fsc_source_opts_t so;
    memset(&so, 0, sizeof so);
    so.pick_device = o->device >= 0;
    so.device = o->device;
    so.lenient = o->lenient;
    so.device_memory = o->device_memory;
    return fsc_request_stream_load_source(path, &so, out, err);
}

static int run_against(const wopts_t *o, const fsc_request_stream_t *rs)
{
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *b = NULL;
    int rc = load_input(o, o->against, &b, &err);
    if (rc != 0)
        return fsc_cli_input_error("whatif: ", rc, &err, o->lenient);
    fsc_request_stream_info_t binfo;
    fsc_request_stream_info(b, &binfo);
    fsc_whatif_opts_t wo = FSC_WHATIF_OPTS_DEFAULT;
    wo.capacity = o->capacity;
    int inferred = o->capacity == 0 && binfo.capacity_lower != 0;
    fsc_whatif_verify_t *v = malloc(sizeof *v);
    if (v == NULL) {
        fsc_request_stream_destroy(b);
        return fsc_cli_error("whatif: out of host memory"), FSC_EXIT_FAILURE;
    }
    rc = fsc_whatif_verify_against(rs, b, o->nconfigs ? o->configs[0] : NULL, &wo, v, &err);
    int status = FSC_EXIT_OK;
    if (rc == 0)
        status = print_against(v, o->against, &binfo, inferred, o->json, stdout);
    free(v);
    fsc_request_stream_destroy(b);
    if (rc != 0) {
        fsc_cli_error("whatif: %s, %s: %s", o->input, o->against, fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return status;
}

/* ---- the command ---------------------------------------------------------------- */

static void on_progress(void *ud, uint64_t done, uint64_t total)
{
    fsc_progress_update(ud, done, total);
}

/* Every --config parses (under --torch's parser when given), and under
 * --torch has only settings that version knows. A string the old parser
 * reads differently is replaced by the canonical form of what it read. */
static int check_configs(wopts_t *o)
{
    int rules = o->torch ? fsc_alloc_torch_parser_rules(o->torch) : FSC_PARSER_NEW;
    for (size_t i = 0; i < o->nconfigs; i++) {
        fsc_alloc_config_t c;
        fsc_err_t err = {0, ""};
        if (fsc_alloc_config_parse_rules(o->configs[i], rules, &c, &err) != 0)
            return fsc_cli_error("whatif: bad --config '%s': %s", o->configs[i],
                                 fsc_err_msg(&err));
        if (!o->torch)
            continue;
        char missing[256];
        if (fsc_alloc_config_missing_in(&c, o->torch, missing, sizeof missing) > 0)
            return fsc_cli_error("whatif: --config '%s': PyTorch %d.%d has no %s (refused: "
                                 "fragscope cannot replay that version with it)",
                                 o->configs[i], o->torch / 100, o->torch % 100, missing);
        fsc_alloc_config_t mine;
        if (rules != FSC_PARSER_NEW &&
            fsc_alloc_config_parse(o->configs[i], &mine, &err) == 0 &&
            memcmp(mine.roundup_power2_divisions, c.roundup_power2_divisions,
                   sizeof c.roundup_power2_divisions) != 0) {
            if (fsc_alloc_config_format(&c, o->canon[i], sizeof o->canon[i]) != 0)
                return fsc_cli_error("whatif: --config '%s': too long", o->configs[i]);
            o->configs[i] = o->canon[i];
        }
    }
    return 0;
}

/* What --torch changes, before the results. */
static void print_torch_profile(const wopts_t *o, const fsc_request_stream_info_t *in, FILE *f)
{
    char buf[2048];
    int n = fsc_alloc_torch_rule_differences(o->torch, buf, sizeof buf);
    fprintf(f, "PyTorch %d.%d rules: %s\n%s", o->torch / 100, o->torch % 100,
            n ? "where they differ from fragscope's (PyTorch's sources of 2026):"
              : "the same as fragscope's for every setting it models",
            buf);
    for (size_t i = 0; i < o->nconfigs; i++)
        if (o->configs[i] == o->canon[i])
            fprintf(f, "a --config reads differently there; replayed as \"%s\"\n",
                    o->canon[i]);
    fsc_alloc_config_t rec;
    fsc_err_t err = {0, ""};
    char missing[256];
    if (in->config != NULL && fsc_alloc_config_parse(in->config, &rec, &err) == 0 &&
        fsc_alloc_config_missing_in(&rec, o->torch, missing, sizeof missing) > 0)
        fprintf(f, "the recording's own settings have %s, which PyTorch %d.%d does not: it was "
                   "not recorded under that version\n",
                missing, o->torch / 100, o->torch % 100);
    fputc('\n', f);
}

int fsc_cmd_whatif(int argc, char **argv)
{
    wopts_t o;
    memset(&o, 0, sizeof o);
    o.device = -1;
    int rc = parse_args(argc, argv, &o);
    if (rc == 0)
        rc = check_configs(&o);
    if (rc != 0)
        return rc;
    fsc_err_t err = {0, ""};
    fsc_request_stream_t *rs = NULL;
    rc = load_input(&o, o.input, &rs, &err);
    if (rc != 0)
        return fsc_cli_input_error("whatif: ", rc, &err, o.lenient);
    fsc_request_stream_info_t info;
    fsc_request_stream_info(rs, &info);
    /* A snapshot without history holds its final state and no request:
     * there is nothing to replay under other settings. */
    if (info.window && info.window_first_event >= info.events) {
        fsc_request_stream_destroy(rs);
        return fsc_cli_error("whatif: %s: the snapshot holds no recorded history (its "
                             "device_traces are empty): no request to replay; record one with "
                             "torch.cuda.memory._record_memory_history() before the run "
                             "('fragscope analyze' shows the state at the snapshot)",
                             o.input);
    }
    if (o.against != NULL) {
        rc = run_against(&o, rs);
        fsc_request_stream_destroy(rs);
        return rc;
    }
    const char *about = o.input; /* the file a failing step is about */
    fsc_whatif_opts_t wo = FSC_WHATIF_OPTS_DEFAULT;
    wo.capacity = o.capacity ? o.capacity : info.capacity;
    /* A snapshot that ran out of memory under a cap it does not record:
     * replay at the lowest cap consistent with it, which fails where the
     * recording failed, instead of unlimited, where nothing fails. */
    int inferred = 0;
    if (o.capacity == 0 && info.capacity_lower != 0) {
        wo.capacity = info.capacity_lower;
        wo.capacity_upper = info.capacity_upper; /* suggestions hold at both ends */
        inferred = 1;
        if (o.nconfigs > 0 || (o.suggest && info.first_external_oom != 0)) {
            char lo[32], hi[32];
            fprintf(o.json ? stderr : stdout,
                    "the capacity was not recorded: replaying at %s, the lowest cap the run is "
                    "consistent with (it lay in [%s, %s)); give PyTorch's \"X GiB allowed\" "
                    "with --capacity for a firm answer\n%s",
                    fsc_size_format(info.capacity_lower, lo, sizeof lo), lo,
                    fsc_size_format(info.capacity_upper, hi, sizeof hi), o.json ? "" : "\n");
        }
    }
    if (o.torch)
        print_torch_profile(&o, &info, o.json ? stderr : stdout);
    /* A fraction in a --config caps a replay only where no capacity is in
     * force: the allocator lets an explicit capacity win. */
    size_t ppmf;
    fsc_alloc_setting_find("per_process_memory_fraction", &ppmf);
    for (size_t i = 0; wo.capacity != 0 && i < o.nconfigs; i++) {
        fsc_alloc_config_t c;
        fsc_err_t e2 = {0, ""};
        char cap[32];
        if (fsc_alloc_config_parse(o.configs[i], &c, &e2) == 0 && fsc_alloc_config_is_set(&c, ppmf))
            fprintf(o.json ? stderr : stdout,
                    "--config '%s': its per_process_memory_fraction gives way to the capacity in "
                    "force, %s (--capacity or the recording's)\n",
                    o.configs[i], fsc_size_format(wo.capacity, cap, sizeof cap));
    }
    if (o.nconfigs > 0 || o.suggest) {
        print_pools_note(&info, "", o.json ? stderr : stdout);
        if ((info.inferred_pools || info.use_on_oom_pools || info.no_split_pools ||
             info.pool_inference_capped) && !o.json)
            fputc('\n', stdout);
    }
    wo.threads = o.threads;
    fsc_progress_t prog;
    wo.progress = on_progress;
    wo.progress_ud = &prog;
    int status = FSC_EXIT_OK;
    if (o.nconfigs > 0) {
        fsc_whatif_result_t *res = calloc(o.nconfigs, sizeof *res);
        if (res == NULL) {
            fsc_request_stream_destroy(rs);
            return fsc_cli_error("whatif: out of host memory"), FSC_EXIT_FAILURE;
        }
        fsc_progress_init(&prog, "whatif: replaying");
        rc = fsc_whatif_run(rs, o.configs, o.nconfigs, &wo, res, &err);
        fsc_progress_done(&prog);
        if (rc == 0) {
            if (o.json)
                print_results_json(rs, res, o.nconfigs, o.all_frames, &info, stdout);
            else
                print_results_text(rs, res, o.nconfigs, wo.capacity, o.all_frames, &info,
                                   stdout);
        }
        free(res);
    }
    if (rc == 0 && o.verify) {
        fsc_whatif_verify_t v;
        rc = fsc_whatif_verify(rs, &wo, &v, &err);
        if (rc == 0) {
            if (!o.json && o.nconfigs > 0)
                fputc('\n', stdout);
            status = print_verify(&v, &info, inferred, o.json, stdout);
        }
    }
    if (rc == 0 && o.suggest && info.first_external_oom == 0) {
        /* The OOM the suggestions are about was external. */
        if (!o.json && (o.nconfigs > 0 || o.verify))
            fputc('\n', stdout);
        print_external(&info, o.json, stdout);
    } else if (rc == 0 && o.suggest) {
        fsc_suggestion_t *s = NULL;
        size_t n = 0;
        fsc_progress_init(&prog, "whatif: searching settings");
        rc = fsc_whatif_suggest_opts(rs, &wo, &s, &n, &err);
        fsc_progress_done(&prog);
        if (rc == 0) {
            if (!o.json && (o.nconfigs > 0 || o.verify))
                fputc('\n', stdout);
            print_suggestions(s, n, o.json, &info, stdout);
        }
        fsc_suggestions_free(s);
    }
    if (rc == 0 && o.db != NULL) {
        size_t rows = 0;
        fsc_whatif_opts_t dbo = wo;
        dbo.capacity = o.capacity; /* 0: the input's, else the OOMs' own */
        fsc_progress_init(&prog, "whatif: suggestions for the database");
        rc = fsc_whatif_fill_db_job(o.db, rs, &dbo, &o.job, &rows, &err);
        about = o.db;
        fsc_progress_done(&prog);
        if (rc == 0)
            fprintf(o.json ? stderr : stdout, "wrote %zu suggestion rows into %s\n", rows, o.db);
    }
    fsc_request_stream_destroy(rs);
    if (rc != 0) {
        /* Errors of the replays (e.g. the recording's own settings do not
         * parse) do not know the input, those of filling the database are
         * about the database: name the file the step was about. */
        fsc_err_name_file(&err, about);
        fsc_cli_error("whatif: %s", fsc_err_msg(&err));
        return fsc_cli_exit_code(rc);
    }
    return status;
}
