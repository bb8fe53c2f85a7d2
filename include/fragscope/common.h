/*
 * fragscope/common.h — what every subsystem shares: the error model, size
 * parsing/formatting and output files.
 *
 * Error model: every function that can fail returns int — 0 on success, a
 * negative FSC_E* code on failure — and delivers results through
 * out-parameters. Handles (allocator, recorder, reader, analysis, ...) embed
 * an fsc_err_t holding the last error code and a message that names what went
 * wrong; there is no process-global error state. Errors from CUDA, zstd and
 * SQLite are wrapped into FSC_ECUDA / FSC_EZSTD / FSC_ESQLITE with the
 * library's own message kept in the handle's message.
 */
#ifndef FRAGSCOPE_COMMON_H
#define FRAGSCOPE_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fragscope/version.h" /* FSC_VERSION_*, generated from CMakeLists.txt */

#ifdef __cplusplus
extern "C" {
#endif


/* X(name, value, message). Values are stable: they may appear in logs. */
#define FSC_ERRNO_MAP(X)                                                   \
    X(OK, 0, "success")                                                    \
    X(EINVAL, -1, "invalid argument")                                      \
    X(ENOMEM, -2, "out of host memory")                                    \
    X(EOOM, -3, "out of device memory")                                    \
    X(EIO, -4, "I/O error")                                                \
    X(EFORMAT, -5, "malformed input")                                      \
    X(EVERSION, -6, "unsupported format version")                          \
    X(ETRUNC, -7, "truncated input")                                       \
    X(ECONFIG, -8, "bad allocator configuration")                          \
    X(ECUDA, -9, "CUDA error")                                             \
    X(EZSTD, -10, "zstd error")                                            \
    X(ESQLITE, -11, "SQLite error")                                        \
    X(ESTATE, -12, "event contradicts the replayed state")                 \
    X(ENOENT, -13, "not found")                                            \
    X(EUNSUPPORTED, -14, "not supported")                                  \
    X(ELIMIT, -15, "input exceeds a limit")                                \
    X(EBUSY, -16, "resource busy")                                         \
    X(EUSAGE, -17, "bad command-line usage")

typedef enum fsc_errno {
#define FSC__ERR_ENUM(name, val, msg) FSC_##name = (val),
    FSC_ERRNO_MAP(FSC__ERR_ENUM)
#undef FSC__ERR_ENUM
} fsc_errno_t;

/* Short stable name ("EFORMAT") and generic message of a code. Never NULL. */
const char *fsc_err_name(int code);
const char *fsc_strerror(int code);

#define FSC_ERR_MSG_MAX 512

/* Last error of a handle. Embed one in every handle. */
typedef struct fsc_err {
    int code;
    char msg[FSC_ERR_MSG_MAX];
} fsc_err_t;

/* Record an error in *e (may be NULL) with a printf-style message and return
 * code, so that callers can write `return fsc_err_set(&h->err, FSC_EIO, ...)`. */
int fsc_err_set(fsc_err_t *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fsc_err_vset(fsc_err_t *e, int code, const char *fmt, va_list ap);
/* Copy src into dst (both may be NULL); returns src->code (0 if src NULL). */
int fsc_err_copy(fsc_err_t *dst, const fsc_err_t *src);
void fsc_err_clear(fsc_err_t *e);
/* Say that e is about the file `path`: its message gets "PATH: " in front
 * unless it already starts with it. Returns e->code. */
int fsc_err_name_file(fsc_err_t *e, const char *path);
/* The message, or the generic message of the code when none was set. */
const char *fsc_err_msg(const fsc_err_t *e);

/* There is no logging sink: the library reports through return codes and
 * the handle's message, and what a lenient replay skipped goes into the run
 * database's warnings table, where the report and the viewer show it. */

/* ---- sizes ------------------------------------------------------------ */

/* Parse "512", "4KiB", "1.5GiB", "18GB", "512MiB", "2k", "3 MB" (case-
 * insensitive units B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB; decimal units
 * KB/MB/GB/TB are powers of 1000, binary KiB/MiB/GiB/TiB and the bare K/M/G/T
 * are powers of 1024). The result is rounded to the nearest byte. Returns 0,
 * or FSC_EINVAL for empty/garbage/negative input and overflow. */
int fsc_size_parse(const char *s, uint64_t *out);

/* Human form with binary units and two decimals ("20.51 GiB", "512 B").
 * Writes at most cap bytes including the NUL; returns buf. */
char *fsc_size_format(uint64_t bytes, char *buf, size_t cap);

/* ---- output files ------------------------------------------------------ */

/* Every output file is written under a temporary name in the same directory,
 * fsynced, and renamed over the final path only when complete, so a failure
 * or a signal never leaves a half-written file and never removes the old
 * one (common/outfile.c says how). */
typedef struct fsc_outfile {
    char path[4096];     /* final path */
    char tmp_path[4096]; /* "<path>.tmp.<pid>" */
    int slot;            /* place in the table of live temporaries; 0 = none */
    int no_sync;         /* set after init: commit renames without fsync (for
                            an intermediate file that is read and removed) */
} fsc_outfile_t;

/* Fill o with the final and temporary names (does not create anything) and
 * list the temporary for fsc_outfile_remove_all. FSC_EUSAGE when path is the
 * same file as an input given to fsc_outfile_guard_input. */
int fsc_outfile_init(fsc_outfile_t *o, const char *path, fsc_err_t *err);
/* When no file can be written at path: FSC_ENOENT (its folder does not
 * exist) or FSC_EINVAL (path is a directory, its folder is not a folder or
 * cannot be written to), with a one-line message naming path. fsc_outfile_init checks it; a
 * command may call it first, to refuse such an output before any work. */
int fsc_outfile_check_dest(const char *path, fsc_err_t *err);
/* When path cannot be read as an input file: FSC_ENOENT ("no such file")
 * or FSC_EINVAL (a directory; no permission to read), with a one-line
 * message naming it. 0 for a readable file, pipe or device (read as a
 * stream by the readers that take one). */
int fsc_infile_check(const char *path, fsc_err_t *err);
/* fsync the temporary file, rename it over the final path, fsync the
 * directory. On failure the temporary is removed. */
int fsc_outfile_commit(fsc_outfile_t *o, fsc_err_t *err);
/* Remove the temporary file if it exists. */
void fsc_outfile_abort(fsc_outfile_t *o);
/* For a recording, whose file must carry its real name while it is being
 * written: fd is the open temporary, holding a complete header. Takes an
 * exclusive flock on it and puts it under the final path, unless a live
 * recorder holds the file there (FSC_EBUSY, with a message that says so).
 * The lock lasts as long as fd stays open. */
int fsc_outfile_claim(fsc_outfile_t *o, int fd, fsc_err_t *err);

/* Remember an input of this process by identity (device and inode): no
 * output may then be that file, under whatever name. A path that cannot be
 * stat'ed is ignored (its reader reports it). */
int fsc_outfile_guard_input(const char *path);
/* Forget every input given to fsc_outfile_guard_input. */
void fsc_outfile_guard_clear(void);
/* FSC_EUSAGE, with a message naming both, when path is a guarded input. */
int fsc_outfile_check(const char *path, fsc_err_t *err);
/* Remove every temporary not yet committed or aborted, and return the final
 * path of one of them (NULL when none). Async-signal-safe: for the handler
 * of an interrupting signal. */
const char *fsc_outfile_remove_all(void);

/* Monotonic clock in nanoseconds. */
uint64_t fsc_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_COMMON_H */
