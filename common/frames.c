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
 */
#include "fragscope/frames.h"

#include <stdio.h>
#include <string.h>

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
