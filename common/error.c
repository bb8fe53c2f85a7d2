/*
 * error.c — the one error model: code names and messages from the X-macro
 * list in fragscope/common.h, and the per-handle last-error record.
 */
#include <stdio.h>
#include <string.h>

#include "fragscope/common.h"

const char *fsc_err_name(int code)
{
    switch (code) {
#define FSC__ERR_NAME(name, val, msg) case (val): return #name;
        FSC_ERRNO_MAP(FSC__ERR_NAME)
#undef FSC__ERR_NAME
    default: return "EUNKNOWN";
    }
}

const char *fsc_strerror(int code)
{
    switch (code) {
#define FSC__ERR_MSG(name, val, msg) case (val): return msg;
        FSC_ERRNO_MAP(FSC__ERR_MSG)
#undef FSC__ERR_MSG
    default: return "unknown error";
    }
}

int fsc_err_vset(fsc_err_t *e, int code, const char *fmt, va_list ap)
{
    if (e == NULL)
        return code;
    e->code = code;
    if (fmt == NULL || fmt[0] == '\0') {
        snprintf(e->msg, sizeof e->msg, "%s", fsc_strerror(code));
    } else {
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    }
    return code;
}

int fsc_err_set(fsc_err_t *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fsc_err_vset(e, code, fmt, ap);
    va_end(ap);
    return rc;
}

int fsc_err_copy(fsc_err_t *dst, const fsc_err_t *src)
{
    if (src == NULL)
        return 0;
    if (dst != NULL && dst != src)
        memcpy(dst, src, sizeof *dst);
    return src->code;
}

void fsc_err_clear(fsc_err_t *e)
{
    if (e != NULL) {
        e->code = 0;
        e->msg[0] = '\0';
        }
}

int fsc_err_name_file(fsc_err_t *e, const char *path)
{
    if (e == NULL)
        return 0;
    if (path == NULL || path[0] == '\0')
        return e->code;
    size_t n = strlen(path);
    if (strncmp(e->msg, path, n) != 0) {
        char m[FSC_ERR_MSG_MAX];
        snprintf(m, sizeof m, "%s: %s", path, fsc_err_msg(e));
        memcpy(e->msg, m, sizeof m);
    }
    return e->code;
}

const char *fsc_err_msg(const fsc_err_t *e)
{
    if (e == NULL)
        return "";
    if (e->msg[0] == '\0')
        return fsc_strerror(e->code);
    return e->msg;
}
