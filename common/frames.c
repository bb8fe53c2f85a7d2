/*
 * frames.c — splitting "file:line:function" tag names back into frames, and
 * the frame filter used when a report names a tag (fragscope/frames.h).
 *
 * Why a filter of our own: stacks='all' snapshots put a dozen frames of the
 * unwinder, the interpreter loop and the allocator between an allocation
 * and the Python line that caused it. The patterns follow the families
 * PyTorch's memory_viz leaves out of its flame graphs (unwind::unwind,
 * CapturedTraceback::gather, gather_with_cpp, PyEval_/PyObject_/PyFunction_,
 * _start/__libc_start_main, ceval.c, core/boxing, Register*, Redispatch*,
 * ...), widened to what an H200 PyTorch 2.11 snapshot shows: the Python C
 * API by its naming convention, the caching allocator's and the
 * dispatcher's C++ frames, and unresolved "??" symbols.
 *
 * The name a tag gets from its frames is made here too (fsc_frame_label),
 * once for every command: report, diff and whatif read their frames from
 * different places (the run database, a request stream) but must call the
 * same tag by the same name.
 */
#include "fragscope/frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/common.h"

static int all_digits(const char *p, size_t n)
{
    if (n == 0 || n > 20)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

int fsc_frame_parse(const char *name, size_t len, fsc_frame_t *out)
{
    memset(out, 0, sizeof *out);
    out->file = name;
    out->function = name;
    out->function_len = len;
    if (name == NULL)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (name[i] != ':')
            continue;
        size_t j = i + 1;
        /* "?": a line the importer could not hold (PyTorch's 2^64 - 1) */
        if (j + 1 < len && name[j] == '?' && name[j + 1] == ':') {
            out->file_len = i;
            out->line = UINT64_MAX;
            out->function = name + j + 2;
            out->function_len = len - (j + 2);
            return 1;
        }
        while (j < len && name[j] >= '0' && name[j] <= '9')
            j++;
        if (j >= len || name[j] != ':' || !all_digits(name + i + 1, j - i - 1))
            continue;
        uint64_t line = 0;
        int overflow = 0;
        for (size_t k = i + 1; k < j; k++) {
            uint64_t d = (uint64_t)(name[k] - '0');
            if (line > (UINT64_MAX - d) / 10)
                overflow = 1;
            line = line * 10 + d;
        }
        if (overflow)
            continue;
        out->file_len = i;
        out->line = line;
        out->function = name + j + 1;
        out->function_len = len - (j + 1);
        return 1;
    }
    return 0;
}

static int has(const char *s, size_t n, const char *pat)
{
    size_t m = strlen(pat);
    if (m > n)
        return 0;
    for (size_t i = 0; i + m <= n; i++)
        if (s[i] == pat[0] && memcmp(s + i, pat, m) == 0)
            return 1;
    return 0;
}

static int starts(const char *s, size_t n, const char *pat)
{
    size_t m = strlen(pat);
    return n >= m && memcmp(s, pat, m) == 0;
}

static const char *const k_noise_functions[] = {
    /* memory_viz's families */
    "unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "__libc_start_main",
    "PyEval_", "PyObject_", "PyFunction_",
    /* the caching allocator and what calls it to make a tensor */
    "CUDACachingAllocator", "c10::cuda::", "at::detail::empty", "c10::intrusive_ptr<",
    "c10::TensorImpl::", "c10::StorageImpl", "c10::Allocator",
    /* dispatcher glue */
    "c10::impl::", "c10::Dispatcher", "c10::OperatorHandle", "c10::BoxedKernel",
    "c10::KernelFunction", "::redispatch(",
    /* threads and process start */
    "__clone", "pthread_", "__libc_", "std::thread", "start_thread",
};

static const char *const k_noise_files[] = {
    "core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
    "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
    "cpython/abstract.h", "CUDACachingAllocator", "memory_snapshot.cpp", "TensorImpl.cpp",
};

/* A Python C API name: Py or _Py, then an upper-case letter (PyObject_Call,
 * _PyEval_EvalFrameDefault, Py_RunMain, PyType_GetModule). */
static int python_c_api(const char *f, size_t n)
{
    size_t i = n > 0 && f[0] == '_' ? 1 : 0;
    return n >= i + 3 && f[i] == 'P' && f[i + 1] == 'y' &&
           ((f[i + 2] >= 'A' && f[i + 2] <= 'Z') || f[i + 2] == '_');
}

static size_t base_off(const char *file, size_t n)
{
    size_t b = 0;
    for (size_t i = 0; i < n; i++)
        if (file[i] == '/' || file[i] == '\\')
            b = i + 1;
    return b;
}

int fsc_frame_class(const fsc_frame_t *f, int is_frame)
{
    const char *fn = f->function;
    size_t fl = f->function_len;
    int cxx_like = has(fn, fl, "::") || has(fn, fl, "(");
    if (!is_frame && !cxx_like)
        return python_c_api(fn, fl) || starts(fn, fl, "_start") ? FSC_FRAME_NOISE
                                                                 : FSC_FRAME_USER;
    for (size_t i = 0; i < sizeof k_noise_functions / sizeof *k_noise_functions; i++)
        if (has(fn, fl, k_noise_functions[i]))
            return FSC_FRAME_NOISE;
    if (python_c_api(fn, fl) || (fl == 6 && memcmp(fn, "_start", 6) == 0))
        return FSC_FRAME_NOISE;
    if (is_frame) {
        for (size_t i = 0; i < sizeof k_noise_files / sizeof *k_noise_files; i++)
            if (has(f->file, f->file_len, k_noise_files[i]))
                return FSC_FRAME_NOISE;
        size_t b = base_off(f->file, f->file_len);
        const char *base = f->file + b;
        size_t bl = f->file_len - b;
        if (starts(base, bl, "Register") || starts(base, bl, "Redispatch"))
            return FSC_FRAME_NOISE;
        /* nn.Module's call machinery between a forward and the one that
         * called it: every module call has these two frames, and a third,
         * _call_impl's inner(), when the module has hooks (watch() adds
         * some) */
        if (has(f->file, f->file_len, "torch/nn/modules/module.py") &&
            ((fl == 10 && memcmp(fn, "_call_impl", 10) == 0) ||
             (fl == 18 && memcmp(fn, "_wrapped_call_impl", 18) == 0) ||
             (fl == 5 && memcmp(fn, "inner", 5) == 0)))
            return FSC_FRAME_NOISE;
        /* An unresolved symbol without a C++ signature says nothing. */
        if (bl == 2 && memcmp(base, "??", 2) == 0 && !cxx_like)
            return FSC_FRAME_NOISE;
        int py = (bl > 3 && memcmp(base + bl - 3, ".py", 3) == 0) ||
                 (f->line > 0 && !has(base, bl, ".cpp") && !has(base, bl, ".cu") &&
                  !has(base, bl, ".h"));
        return py ? FSC_FRAME_USER : FSC_FRAME_NATIVE;
    }
    return FSC_FRAME_NATIVE;
}

size_t fsc_frame_short(const fsc_frame_t *f, int is_frame, char *buf, size_t cap)
{
    if (cap == 0)
        return 0;
    const char *fn = f->function;
    size_t fl = f->function_len;
    size_t n;
    if (!is_frame) {
        n = fl < cap - 1 ? fl : cap - 1;
        memcpy(buf, fn, n);
    } else {
        size_t b = base_off(f->file, f->file_len);
        /* C++ names: drop the final argument list (and a trailing
         * " const"), it is rarely what tells two frames apart and it can be
         * kilobytes long; "(anonymous namespace)" inside the name stays. */
        size_t e = fl;
        if (e > 6 && memcmp(fn + e - 6, " const", 6) == 0)
            e -= 6;
        if (e > 0 && fn[e - 1] == ')') {
            int d = 0;
            size_t i = e;
            while (i-- > 0) {
                if (fn[i] == ')')
                    d++;
                else if (fn[i] == '(' && --d == 0)
                    break;
            }
            if (d == 0 && i > 0 && i < e)
                fl = i;
        }
        char line[24];
        int ll = f->line > 0 && f->line < UINT64_MAX
                     ? snprintf(line, sizeof line, ":%llu", (unsigned long long)f->line)
                     : 0;
        n = 0;
        size_t fnl = f->file_len - b;
        if (fnl > 0 && !(fnl == 2 && memcmp(f->file + b, "??", 2) == 0)) {
            size_t k = fnl < cap - 1 ? fnl : cap - 1;
            memcpy(buf, f->file + b, k);
            n = k;
            if (ll > 0 && n + (size_t)ll < cap) {
                memcpy(buf + n, line, (size_t)ll);
                n += (size_t)ll;
            }
            if (n + 1 < cap)
                buf[n++] = ' ';
        }
        size_t k = fl < cap - 1 - n ? fl : cap - 1 - n;
        memcpy(buf + n, fn, k);
        n += k;
    }
    buf[n] = '\0';
    return n;
}

/* ---- naming a tag ------------------------------------------------------------ */

typedef struct lnode {
    const char *name;
    size_t len;
    int is_frame, cls;
    fsc_frame_t f;
} lnode_t;

static lnode_t *parse_all(const char *const *names, const size_t *lens, size_t n)
{
    lnode_t *v = calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        v[i].name = names[i] ? names[i] : "";
        v[i].len = names[i] ? lens[i] : 0;
        v[i].is_frame = fsc_frame_parse(v[i].name, v[i].len, &v[i].f);
        v[i].cls = fsc_frame_class(&v[i].f, v[i].is_frame);
    }
    return v;
}

int fsc_frame_label(const char *const *names, const size_t *lens, size_t n, int all_frames,
                    int depth, char *buf, size_t cap)
{
    if (cap == 0)
        return FSC_EINVAL;
    buf[0] = '\0';
    if (n > FSC_FRAME_LABEL_WALK)
        n = FSC_FRAME_LABEL_WALK;
    if (n == 0)
        return 0;
    if (depth < 1)
        depth = 1;
    if (depth > 16)
        depth = 16;
    lnode_t *v = parse_all(names, lens, n);
    if (v == NULL)
        return FSC_ENOMEM;
    int any_frame = 0;
    for (size_t i = 0; i < n && !any_frame; i++)
        any_frame = v[i].is_frame;
    if (!any_frame) {
        /* tags of the tag-stack API: the path from the root reads best */
        size_t len = 0;
        for (size_t i = n; i-- > 0 && len + 1 < cap;) {
            int w = snprintf(buf + len, cap - len, "%s%.*s", len ? "/" : "", (int)v[i].len,
                             v[i].name);
            if (w < 0 || (size_t)w >= cap - len)
                break;
            len += (size_t)w;
        }
        free(v);
        return 0;
    }
    size_t pick[16];
    int np = 0;
    if (all_frames) {
        for (size_t i = 0; i < n && np < depth; i++)
            pick[np++] = i;
    } else {
        int has_user = 0;
        for (size_t i = 0; i < n && !has_user; i++)
            has_user = v[i].cls == FSC_FRAME_USER;
        for (size_t i = 0; i < n && np < depth; i++)
            if (has_user ? v[i].cls == FSC_FRAME_USER : v[i].cls != FSC_FRAME_NOISE)
                pick[np++] = i;
        if (np == 0)
            pick[np++] = 0; /* only noise: say what there is */
    }
    size_t len = 0;
    for (int k = 0; k < np && len + 8 < cap; k++) {
        if (k > 0) {
            int w = snprintf(buf + len, cap - len, " ← ");
            if (w < 0 || (size_t)w >= cap - len)
                break;
            len += (size_t)w;
        }
        len += fsc_frame_short(&v[pick[k]].f, v[pick[k]].is_frame, buf + len, cap - len);
    }
    free(v);
    return 0;
}

/* The nodes of v[0..n) the filter keeps (all when all_frames), in place;
 * returns their count. */
static size_t keep_filtered(lnode_t *v, size_t n, int all_frames)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (all_frames || v[i].cls != FSC_FRAME_NOISE)
            v[k++] = v[i];
    return k;
}

int fsc_frame_label_apart(const char *const *a, const size_t *alen, size_t na,
                          const char *const *b, const size_t *blen, size_t nb, int all_frames,
                          int depth, char *buf, size_t cap)
{
    int rc = fsc_frame_label(a, alen, na, all_frames, depth, buf, cap);
    if (rc != 0)
        return rc;
    if (na > FSC_FRAME_LABEL_WALK)
        na = FSC_FRAME_LABEL_WALK;
    if (nb > FSC_FRAME_LABEL_WALK)
        nb = FSC_FRAME_LABEL_WALK;
    lnode_t *x = parse_all(a, alen, na), *y = parse_all(b, blen, nb);
    if (x == NULL || y == NULL) {
        free(x);
        free(y);
        return FSC_ENOMEM;
    }
    na = keep_filtered(x, na, all_frames);
    nb = keep_filtered(y, nb, all_frames);
    /* from the root down, the first frame where the two paths part */
    size_t d = 0;
    while (d < na && d < nb && x[na - 1 - d].len == y[nb - 1 - d].len &&
           memcmp(x[na - 1 - d].name, y[nb - 1 - d].name, x[na - 1 - d].len) == 0)
        d++;
    /* not one of the innermost, which the name shows already */
    if (d < na && na - 1 - d >= (size_t)(depth > 1 ? depth : 1)) {
        const lnode_t *p = &x[na - 1 - d];
        char one[256];
        fsc_frame_short(&p->f, p->is_frame, one, sizeof one);
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, " … ← %s", one);
    }
    free(x);
    free(y);
    return 0;
}

size_t fsc_frame_name(char *buf, size_t cap, const char *file, size_t file_len, uint64_t line,
                      const char *function, size_t function_len)
{
    if (cap == 0)
        return 0;
    int flen = file != NULL ? (int)(file_len > 4000 ? 4000 : file_len) : 0;
    int nlen = function != NULL ? (int)(function_len > 12000 ? 12000 : function_len) : 0;
    int len;
    if (flen == 0 && line == 0)
        len = snprintf(buf, cap, "%.*s", nlen, nlen ? function : "");
    else if (line > (uint64_t)INT64_MAX)
        len = snprintf(buf, cap, "%.*s:?:%.*s", flen, flen ? file : "", nlen,
                       nlen ? function : "");
    else
        len = snprintf(buf, cap, "%.*s:%llu:%.*s", flen, flen ? file : "",
                       (unsigned long long)line, nlen, nlen ? function : "");
    if (len < 0)
        len = 0;
    if ((size_t)len >= cap)
        len = (int)cap - 1;
    return (size_t)len;
}

/* ---- call sites -------------------------------------------------------------- */

int fsc_frame_is_library(const fsc_frame_t *f, int is_frame)
{
    if (!is_frame || fsc_frame_class(f, is_frame) != FSC_FRAME_USER)
        return 1;
    const char *p = f->file;
    size_t n = f->file_len;
    if (has(p, n, "site-packages/") || has(p, n, "dist-packages/") || has(p, n, "/torch/") ||
        starts(p, n, "torch/") || starts(p, n, "<frozen") || starts(p, n, "<string>"))
        return 1;
    /* the standard library: .../lib/python3.12/x.py (site-packages is
     * caught above) */
    for (size_t i = 0; i + 12 <= n; i++)
        if (memcmp(p + i, "/lib/python", 11) == 0 && p[i + 11] >= '2' && p[i + 11] <= '3')
            return 1;
    return 0;
}

int fsc_frame_site(const char *const *names, const size_t *lens, size_t n, int mode, char *buf,
                   size_t cap, int *mine_found)
{
    if (mine_found != NULL)
        *mine_found = 0;
    if (cap == 0)
        return FSC_EINVAL;
    buf[0] = '\0';
    if (n > FSC_FRAME_LABEL_WALK)
        n = FSC_FRAME_LABEL_WALK;
    if (mode == FSC_SITE_MINE) {
        for (size_t i = 0; i < n; i++) {
            fsc_frame_t f;
            const char *nm = names[i] ? names[i] : "";
            int is_frame = fsc_frame_parse(nm, names[i] ? lens[i] : 0, &f);
            if (!fsc_frame_is_library(&f, is_frame)) {
                fsc_frame_short(&f, is_frame, buf, cap);
                if (mine_found != NULL)
                    *mine_found = 1;
                return 0;
            }
        }
    }
    return fsc_frame_label(names, lens, n, 0, 1, buf, cap);
}
