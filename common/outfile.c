/*
 * outfile.c — the one way every output file is written, so that no failure,
 * signal or mistake of the user leaves a half-written file or destroys one.
 *
 * - A converted output (database, pickle, HTML, report, imported trace) is
 *   written under "<path>.tmp.<pid>" in the same directory, then fsynced
 *   and renamed over the path as the very last step (fsc_outfile_commit);
 *   the directory is fsynced after the rename. An intermediate file that
 *   is read back and removed (a job's per-input database, merged into the
 *   output) sets no_sync: renamed into place, not synced.
 * - Temporaries not yet committed are listed in a fixed table that an
 *   interrupting signal's handler walks (fsc_outfile_remove_all): unlink is
 *   async-signal-safe, and each slot is published by an atomic flag.
 * - An output that is the same file as one of the process's inputs is
 *   refused before anything is written: identity is the device and inode
 *   (so another name, a symlink or a hard link of the input is caught).
 * - A recording (a trace written while the events happen) cannot wait for
 *   a rename at the end: a kill must leave it readable under its real name.
 *   fsc_outfile_claim publishes its temporary (holding just the header)
 *   right away, under an exclusive flock that a second recorder of the same
 *   path finds taken: two writers never share one file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fragscope/common.h"

/* ---- temporaries not yet committed ------------------------------------- */

/* Copies of the names, not pointers to the callers' structs: a caller that
 * forgets to commit or abort leaves a name here, never a dangling pointer
 * for the handler to follow. A slot is claimed by its flag, filled, then
 * published (state 2); the handler reads only published slots. */
#define MAX_LIVE 256 /* analyze of many inputs: 2 per worker (<= 64) and a window of 128 */
typedef struct live {
    atomic_int state; /* 0 free, 1 being filled, 2 published */
    char tmp[sizeof ((fsc_outfile_t *)0)->tmp_path];
    char shown[512]; /* the final path, for the handler's message */
} live_t;
static live_t g_live[MAX_LIVE];

static void live_add(fsc_outfile_t *o)
{
    o->slot = 0;
    for (int i = 0; i < MAX_LIVE; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&g_live[i].state, &expected, 1)) {
            snprintf(g_live[i].tmp, sizeof g_live[i].tmp, "%s", o->tmp_path);
            size_t n = strnlen(o->path, sizeof g_live[i].shown - 1);
            memcpy(g_live[i].shown, o->path, n); /* a long name is shown cut */
            g_live[i].shown[n] = '\0';
            atomic_store(&g_live[i].state, 2);
            o->slot = i + 1;
            return;
        }
    }
    /* Table full: the file is still written safely, only a signal would
     * leave this one temporary behind. */
}

static void live_remove(fsc_outfile_t *o)
{
    if (o->slot > 0 && o->slot <= MAX_LIVE)
        atomic_store(&g_live[o->slot - 1].state, 0);
    o->slot = 0;
}

/* A database written under the temporary name may have SQLite's side files
 * next to it; they go with it. Async-signal-safe (no allocation). */
static void unlink_tmp(const char *tmp)
{
    static const char *const k_side[] = {"-journal", "-wal", "-shm"};
    char buf[sizeof ((fsc_outfile_t *)0)->tmp_path + 16];
    size_t n = strlen(tmp);
    unlink(tmp);
    if (n + 9 > sizeof buf)
        return;
    for (size_t k = 0; k < sizeof k_side / sizeof k_side[0]; k++) {
        memcpy(buf, tmp, n);
        size_t m = strlen(k_side[k]);
        memcpy(buf + n, k_side[k], m + 1);
        unlink(buf);
    }
}

const char *fsc_outfile_remove_all(void)
{
    const char *first = NULL;
    for (int i = 0; i < MAX_LIVE; i++) {
        int expected = 2;
        /* 3: removed, name kept readable for the message; never reused by
         * this process after a signal (it exits). */
        if (!atomic_compare_exchange_strong(&g_live[i].state, &expected, 3))
            continue;
        unlink_tmp(g_live[i].tmp);
        if (first == NULL)
            first = g_live[i].shown;
    }
    return first;
}

/* ---- inputs ------------------------------------------------------------ */

#define MAX_INPUTS 16
typedef struct guarded {
    dev_t dev;
    ino_t ino;
    char path[256]; /* as the user named it, for the message */
} guarded_t;
static guarded_t g_inputs[MAX_INPUTS];
static int g_ninputs;

int fsc_outfile_guard_input(const char *path)
{
    struct stat st;
    if (path == NULL || stat(path, &st) != 0)
        return 0; /* not readable: the reader will say so */
    for (int i = 0; i < g_ninputs; i++)
        if (g_inputs[i].dev == st.st_dev && g_inputs[i].ino == st.st_ino)
            return 0;
    if (g_ninputs == MAX_INPUTS)
        return FSC_ELIMIT;
    guarded_t *g = &g_inputs[g_ninputs++];
    g->dev = st.st_dev;
    g->ino = st.st_ino;
    snprintf(g->path, sizeof g->path, "%s", path);
    return 0;
}

void fsc_outfile_guard_clear(void)
{
    g_ninputs = 0;
}

int fsc_outfile_check(const char *path, fsc_err_t *err)
{
    struct stat st;
    if (path == NULL || stat(path, &st) != 0)
        return 0; /* does not exist yet: cannot be an input */
    for (int i = 0; i < g_ninputs; i++)
        if (g_inputs[i].dev == st.st_dev && g_inputs[i].ino == st.st_ino)
            return fsc_err_set(err, FSC_EUSAGE,
                               "%s: the output is the input %s; writing it would destroy "
                               "the input (choose another output file)",
                               path, g_inputs[i].path);
    return 0;
}

int fsc_infile_check(const char *path, fsc_err_t *err)
{
    if (path == NULL || path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no input file given");
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return fsc_err_set(err, FSC_ENOENT, "%s: no such file", path);
        return fsc_err_set(err, FSC_EINVAL, "%s: cannot read: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode))
        return fsc_err_set(err, FSC_EINVAL, "%s: is a directory, not a file", path);
    /* A FIFO is not opened here: that would wait for its writer. */
    if (S_ISREG(st.st_mode)) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            return fsc_err_set(err, FSC_EINVAL, "%s: cannot read: %s", path, strerror(e));
        }
        close(fd);
    } else if (access(path, R_OK) != 0) {
        int e = errno;
        return fsc_err_set(err, FSC_EINVAL, "%s: cannot read: %s", path, strerror(e));
    }
    return 0;
}

/* ---- converted outputs ------------------------------------------------- */

int fsc_outfile_check_dest(const char *path, fsc_err_t *err)
{
    if (path == NULL || path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no output file given");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return fsc_err_set(err, FSC_EINVAL, "%s: is a directory; name a file to write", path);
    /* The temporary is created beside the output: its folder must exist
     * and take a new file. */
    char dir[sizeof ((fsc_outfile_t *)0)->path];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return fsc_err_set(err, FSC_EINVAL, "%s: path too long", path);
    const char *d = dirname(dir);
    if (stat(d, &st) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return fsc_err_set(err, FSC_ENOENT, "%s: the folder %s does not exist", path, d);
        return fsc_err_set(err, FSC_EINVAL, "%s: cannot reach the folder %s: %s", path, d,
                           strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return fsc_err_set(err, FSC_EINVAL, "%s: %s is not a folder", path, d);
    if (access(d, W_OK | X_OK) != 0) {
        int e = errno;
        return fsc_err_set(err, FSC_EINVAL, "%s: cannot write in the folder %s: %s", path, d,
                           strerror(e));
    }
    return 0;
}

int fsc_outfile_init(fsc_outfile_t *o, const char *path, fsc_err_t *err)
{
    if (o == NULL || path == NULL || path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no output path given");
    o->slot = 0;
    o->no_sync = 0;
    int n1 = snprintf(o->path, sizeof o->path, "%s", path);
    int n2 = snprintf(o->tmp_path, sizeof o->tmp_path, "%s.tmp.%ld", path, (long)getpid());
    if (n1 < 0 || (size_t)n1 >= sizeof o->path || n2 < 0 || (size_t)n2 >= sizeof o->tmp_path)
        return fsc_err_set(err, FSC_EINVAL, "%s: path too long", path);
    int rc = fsc_outfile_check(path, err);
    if (rc == 0)
        rc = fsc_outfile_check_dest(path, err);
    if (rc != 0)
        return rc;
    live_add(o);
    return 0;
}

static int sync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The directory entry of a rename is durable once its directory is synced.
 * Some file systems cannot sync a directory (EINVAL): nothing more to do. */
static void sync_dir_of(const char *path)
{
    char dir[sizeof ((fsc_outfile_t *)0)->path];
    snprintf(dir, sizeof dir, "%s", path);
    sync_path(dirname(dir), O_RDONLY | O_DIRECTORY);
}

int fsc_outfile_commit(fsc_outfile_t *o, fsc_err_t *err)
{
    if (!o->no_sync && sync_path(o->tmp_path, O_RDONLY) != 0) {
        int e = errno;
        fsc_outfile_abort(o);
        return fsc_err_set(err, FSC_EIO, "%s: cannot write: %s", o->path, strerror(e));
    }
    if (rename(o->tmp_path, o->path) != 0) {
        int e = errno;
        fsc_outfile_abort(o);
        return fsc_err_set(err, FSC_EIO, "%s: cannot rename into place: %s", o->path, strerror(e));
    }
    live_remove(o);
    if (!o->no_sync)
        sync_dir_of(o->path);
    return 0;
}

void fsc_outfile_abort(fsc_outfile_t *o)
{
    if (o == NULL)
        return;
    live_remove(o);
    if (o->tmp_path[0] != '\0')
        unlink_tmp(o->tmp_path);
}

/* ---- recordings -------------------------------------------------------- */

static int busy(fsc_outfile_t *o, fsc_err_t *err)
{
    fsc_outfile_abort(o);
    return fsc_err_set(err, FSC_EBUSY,
                       "%s: another process is recording into this trace; give each "
                       "process its own file (%%p in the path names the process id)",
                       o->path);
}

int fsc_outfile_claim(fsc_outfile_t *o, int fd, fsc_err_t *err)
{
    /* Our own file is locked first, so that the moment it has the real
     * name nobody else can take it. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        fsc_outfile_abort(o);
        return fsc_err_set(err, FSC_EIO, "%s: cannot lock: %s", o->path, strerror(e));
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        int old = open(o->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (old < 0 && errno == ENOENT) {
            /* Nothing there: link fails if someone else published first. */
            if (link(o->tmp_path, o->path) == 0) {
                unlink(o->tmp_path);
                live_remove(o);
                sync_dir_of(o->path);
                return 0;
            }
            if (errno == EEXIST)
                continue;
            if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP)
                break; /* an error rename will report */
            /* no hard links on this file system: rename (a race with
             * another recorder starting at this very moment is not caught) */
        } else if (old >= 0) {
            /* A recorder alive on the file holds its lock. */
            if (flock(old, LOCK_EX | LOCK_NB) != 0) {
                int e = errno;
                close(old);
                if (e == EWOULDBLOCK)
                    return busy(o, err);
            } else {
                /* Still the file under the name (not replaced since)? */
                struct stat a, b;
                int same = fstat(old, &a) == 0 && stat(o->path, &b) == 0 &&
                           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
                if (!same) {
                    close(old);
                    continue;
                }
                int rc = rename(o->tmp_path, o->path);
                int e = errno;
                close(old);
                if (rc != 0) {
                    fsc_outfile_abort(o);
                    return fsc_err_set(err, FSC_EIO, "%s: cannot rename into place: %s",
                                       o->path, strerror(e));
                }
                live_remove(o);
                sync_dir_of(o->path);
                return 0;
            }
        }
        break; /* not openable (a directory, a symlink, no permission): rename decides */
    }
    return fsc_outfile_commit(o, err);
}
