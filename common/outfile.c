/*
 * outfile.c — write-to-temporary-then-rename for every output file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/common.h"

int fsc_outfile_init(fsc_outfile_t *o, const char *path, fsc_err_t *err)
{
    if (o == NULL || path == NULL || path[0] == '\0')
        return fsc_err_set(err, FSC_EINVAL, "no output path given");
    int n1 = snprintf(o->path, sizeof o->path, "%s", path);
    int n2 = snprintf(o->tmp_path, sizeof o->tmp_path, "%s.tmp.%ld", path, (long)getpid());
    if (n1 < 0 || (size_t)n1 >= sizeof o->path || n2 < 0 || (size_t)n2 >= sizeof o->tmp_path)
        return fsc_err_set(err, FSC_EINVAL, "%s: path too long", path);
    return 0;
}

int fsc_outfile_commit(fsc_outfile_t *o, fsc_err_t *err)
{
    if (rename(o->tmp_path, o->path) != 0) {
        int e = errno;
        unlink(o->tmp_path);
        return fsc_err_set(err, FSC_EIO, "%s: cannot rename into place: %s", o->path, strerror(e));
    }
    return 0;
}

void fsc_outfile_abort(fsc_outfile_t *o)
{
    if (o != NULL && o->tmp_path[0] != '\0')
        unlink(o->tmp_path);
}
