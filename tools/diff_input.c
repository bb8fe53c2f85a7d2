/*
 * diff_input.c — the inputs of `fragscope diff` and `check --baseline`:
 * a run database is read as it is; a trace or a PyTorch snapshot (a ring
 * window too, its guessed block sizes settled by what-if as `analyze`
 * does) is analyzed into a temporary database in a private temporary
 * folder, removed when the command ends. And the settings replay: the base
 * run's requests replayed under its own settings and under the new run's,
 * so the difference is what the settings alone explain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze_job.h"
#include "diff_input.h"
#include "fragscope/source.h"
#include "fragscope/whatif.h"

static int is_sqlite(const char *path)
{
    char head[16];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return n == sizeof head && memcmp(head, "SQLite format 3", 16) == 0;
}

int fsc__diff_input_open(const char *path, int device, fsc__diff_input_t *in, fsc_err_t *err)
{
    memset(in, 0, sizeof *in);
    in->path = path;
    in->device = device;
    /* missing, a directory, no permission: bad input, in the words the run
     * database's reader uses, so that every command says the same */
    struct stat st;
    if (stat(path, &st) != 0)
        return fsc_err_set(err, FSC_ENOENT, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fsc_err_set(err, FSC_EFORMAT, "%s: not a regular file", path);
    int irc = fsc_infile_check(path, err);
    if (irc != 0)
        return irc;
    if (is_sqlite(path)) {
        in->is_db = 1;
        snprintf(in->db, sizeof in->db, "%s", path);
        return 0;
    }
    int kind = fsc_source_detect(path);
    if (kind < 0)
        return fsc_err_set(err, kind, "%s: cannot read: %s", path, strerror(errno));
    if (kind != FSC_SOURCE_TRACE && kind != FSC_SOURCE_SNAPSHOT) {
        /* neither: refused as every command that reads a run database
         * refuses it, in the same words */
        fsc_rundb_t *h = NULL;
        int rc = fsc_rundb_open(path, &h, err);
        fsc_rundb_close(h);
        return rc != 0 ? rc : fsc_err_set(err, FSC_EFORMAT, "%s: not a run database, a trace "
                                                            "or a snapshot", path);
    }
    const char *t = getenv("TMPDIR");
    snprintf(in->tmpdir, sizeof in->tmpdir, "%s/fragscope-diff.XXXXXX", t && *t ? t : "/tmp");
    if (mkdtemp(in->tmpdir) == NULL) {
        int e = errno;
        in->tmpdir[0] = '\0';
        return fsc_err_set(err, FSC_EIO, "cannot create a temporary folder for %s: %s", path,
                           strerror(e));
    }
    snprintf(in->db, sizeof in->db, "%s/run.db", in->tmpdir);
    fsc_analyze_opts_t o;
    memset(&o, 0, sizeof o);
    o.pick_device = device >= 0;
    o.device = device >= 0 ? device : 0;
    fsc_analysis_summary_t sum;
    fsc_source_info_t info;
    memset(&info, 0, sizeof info);
    int rc = fsc__analyze_settled(path, in->db, &o, &sum, &info, err);
    if (rc != 0)
        fsc__diff_input_close(in);
    return rc;
}

void fsc__diff_input_close(fsc__diff_input_t *in)
{
    if (in->tmpdir[0] == '\0')
        return;
    static const char *const tails[] = {"", "-journal", "-wal", "-shm"};
    char p[4300];
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(p, sizeof p, "%s%s", in->db, tails[i]);
        unlink(p);
    }
    rmdir(in->tmpdir);
    in->tmpdir[0] = '\0';
}

/* config and cap of the run in db (cap 0 when unknown or inferred) */
static int run_settings(const char *db, char *config, size_t cap, uint64_t *capacity,
                        char *source, size_t scap)
{
    fsc_rundb_t *h = NULL;
    fsc_err_t e;
    fsc_err_clear(&e);
    int64_t c = 0, inferred = 0;
    int rc = fsc_rundb_open(db, &h, &e);
    if (rc == 0)
        rc = fsc_rundb_meta_text(h, "config", config, cap);
    if (rc == 0)
        rc = fsc_rundb_meta_int(h, "capacity", 0, &c);
    if (rc == 0)
        rc = fsc_rundb_meta_int(h, "capacity_inferred", 0, &inferred);
    if (rc == 0)
        rc = fsc_rundb_meta_text(h, "source_path", source, scap);
    fsc_rundb_close(h);
    *capacity = c > 0 && !inferred ? (uint64_t)c : 0;
    return rc;
}

void fsc__diff_settings(const fsc__diff_input_t *a, const fsc__diff_input_t *b,
                        fsc_diff_settings_t *s)
{
    memset(s, 0, sizeof *s);
    char src_a[4096], src_b[4096];
    if (run_settings(a->db, s->base_config, sizeof s->base_config, &s->base_capacity, src_a,
                     sizeof src_a) != 0 ||
        run_settings(b->db, s->new_config, sizeof s->new_config, &s->new_capacity, src_b,
                     sizeof src_b) != 0) {
        snprintf(s->note, sizeof s->note, "the settings could not be read");
        return;
    }
    s->differ = strcmp(s->base_config, s->new_config) != 0 ||
                (s->base_capacity && s->new_capacity && s->base_capacity != s->new_capacity);
    if (!s->differ)
        return;
    /* the base's requests: its trace or snapshot, or the one its database
     * was analyzed from when that file is still there */
    const char *src = a->is_db ? src_a : a->path;
    struct stat st;
    if (src[0] == '\0' || stat(src, &st) != 0) {
        snprintf(s->note, sizeof s->note,
                 "the base's requests are not at hand (give its trace or snapshot instead of "
                 "the database%s%.300s)",
                 src[0] ? "; it was analyzed from " : "", src[0] ? src : "");
        return;
    }
    fsc_request_stream_t *rs = NULL;
    fsc_err_t e;
    fsc_err_clear(&e);
    if (fsc_request_stream_load_device(src, a->device, &rs, &e) != 0) {
        snprintf(s->note, sizeof s->note, "the base's requests could not be read: %.400s",
                 fsc_err_msg(&e));
        return;
    }
    fsc_request_stream_info_t ri;
    fsc_request_stream_info(rs, &ri);
    s->run_complete = ri.run_complete;
    /* each replay under its own run's cap. Where a cap is unknown
     * (snapshots do not record it) both run under the same one, so that the
     * difference is the settings' alone: the base's inferred cap when its
     * recording ended at an OOM (the lowest that fails where it failed),
     * else none */
    uint64_t cap_a = s->base_capacity, cap_b = s->new_capacity;
    const char *how = "each run's cap";
    if (cap_a == 0 || cap_b == 0) {
        cap_a = cap_b = ri.ends_at_oom ? ri.capacity_lower : 0;
        how = cap_a ? "the base's inferred cap, the least that fails where it failed, for "
                      "both (a cap is not recorded)"
                    : "no cap (a cap is not recorded)";
    }
    fsc_whatif_opts_t wo = FSC_WHATIF_OPTS_DEFAULT;
    fsc_whatif_result_t ra, rb;
    wo.capacity = cap_a;
    int rc = fsc_whatif_replay(rs, s->base_config, &wo, &ra, &e);
    wo.capacity = cap_b;
    if (rc == 0)
        rc = fsc_whatif_replay(rs, s->new_config, &wo, &rb, &e);
    if (rc == 0 && (ra.rc != 0 || rb.rc != 0))
        snprintf(s->note, sizeof s->note, "the replay failed: %.400s", ra.rc ? ra.error : rb.error);
    else if (rc != 0)
        snprintf(s->note, sizeof s->note, "the replay failed: %.400s", fsc_err_msg(&e));
    else {
        s->replayed = 1;
        s->base_peak_reserved = ra.peak_reserved;
        s->new_peak_reserved = rb.peak_reserved;
        s->base_peak_allocated = ra.peak_allocated;
        s->new_peak_allocated = rb.peak_allocated;
        s->base_oom = ra.oom;
        s->new_oom = rb.oom;
        s->capacity = cap_b;
        char c1[32], c2[32];
        snprintf(s->note, sizeof s->note, "Replayed under %s%s%s%s%s%s.", how,
                 cap_a ? " (" : "", cap_a ? fsc_size_format(cap_a, c1, sizeof c1) : "",
                 cap_a && cap_b != cap_a ? ", " : "",
                 cap_a && cap_b != cap_a ? fsc_size_format(cap_b, c2, sizeof c2) : "",
                 cap_a ? ")" : "");
        if (cap_a && (s->base_capacity == 0 || s->new_capacity == 0) &&
            (strstr(s->base_config, "garbage_collection_threshold") ||
             strstr(s->new_config, "garbage_collection_threshold"))) {
            size_t l = strlen(s->note);
            snprintf(s->note + l, sizeof s->note - l,
                     " garbage_collection_threshold acts on a fraction of the cap, and the cap "
                     "replayed is inferred: `fragscope analyze --capacity` makes it exact.");
        }
        if (!s->run_complete) {
            size_t l = strlen(s->note);
            snprintf(s->note + l, sizeof s->note - l,
                     " The base's recording is a prefix of its run (it ends at an OOM or lost "
                     "its end): the replays cover that prefix, the rest is unknown.");
        }
    }
    fsc_request_stream_destroy(rs);
}
