/*
 * fragscope/frames.h — call-stack frames as tag names.
 *
 * An imported PyTorch frame {filename, line, name} becomes the tag node
 * "filename:line:name" (a frame with no file and line 0 becomes the plain
 * tag "name"). Both the exporter and the run database need those fields
 * back, and C++ names hold ':' of their own ("at::native::empty"), so the
 * split is defined once here: the file ends at the first ':' that is
 * followed by one or more digits (or "?", a line number too large to keep,
 * which PyTorch writes as 2^64 - 1 for generated code; read as UINT64_MAX)
 * and another ':'; the line is those digits and the function everything
 * after. A name without that pattern is not a
 * frame (a plain tag such as "forward" or "layer.3").
 *
 * The frame filter decides which frames are noise when naming a tag: the
 * unwinder, the interpreter's evaluation loop, the dispatcher's glue and
 * the caching allocator itself (the same families PyTorch's memory_viz
 * leaves out, plus the allocator's C++ frames and unresolved "??" frames of
 * stacks='all' snapshots). docs/pytorch.md lists the patterns.
 */
#ifndef FRAGSCOPE_FRAMES_H
#define FRAGSCOPE_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fsc_frame {
    const char *file; /* points into the name; not NUL-terminated */
    size_t file_len;
    uint64_t line;
    const char *function;
    size_t function_len;
} fsc_frame_t;

/* Split a tag name into a frame. Returns 1 when the name is a frame, 0 when
 * it is a plain tag (*out is then the whole name as the function, file
 * empty, line 0). */
int fsc_frame_parse(const char *name, size_t len, fsc_frame_t *out);

/* The tag name of a stack frame: "file:line:function", "file:?:function"
 * when the line is not known (line > INT64_MAX: PyTorch writes 2^64 - 1 for
 * generated code), and the plain "function" for a frame with no file and
 * line 0 (how the exporter writes tags that are not frames). The file is
 * cut at 4 000 bytes and the function at 12 000. Snapshot imports and the
 * native recorder both name frames with it, so that a run's snapshot and
 * its native trace have the same tags. Writes at most cap - 1 bytes and a
 * NUL; returns the length written. */
#define FSC_FRAME_NAME_MAX 16384
size_t fsc_frame_name(char *buf, size_t cap, const char *file, size_t file_len, uint64_t line,
                      const char *function, size_t function_len);

/* What a frame is worth when naming a tag: */
enum {
    FSC_FRAME_NOISE = 0,  /* dropped by the filter: interpreter, unwinder,
                             dispatcher glue, the caching allocator */
    FSC_FRAME_NATIVE = 1, /* a C++ frame that is kept */
    FSC_FRAME_USER = 2    /* a Python (or TorchScript) frame, or a plain tag */
};
/* The class of a parsed name (is_frame: what fsc_frame_parse returned). A
 * plain tag that looks like a C++ function ("ns::f(...)": frames without a
 * file import as plain tags) is classed as a C++ frame. */
int fsc_frame_class(const fsc_frame_t *f, int is_frame);

/* "file.py:12 fn" with the file's last path component (or the plain tag's
 * name) into buf; returns the length written (truncated to cap - 1). */
size_t fsc_frame_short(const fsc_frame_t *f, int is_frame, char *buf, size_t cap);

/* ---- naming a tag -----------------------------------------------------------
 * Every command names a tag the same way (report, diff, whatif, check):
 * from its node names, innermost first (names[0] is the tag itself, then
 * its parent, ... up to the root's child), as `fsc_rundb_tag_label`
 * documents: the innermost `depth` frames the filter keeps, shortened by
 * fsc_frame_short and joined with " ← " (all frames when all_frames); a
 * path of plain tags only (the tag-stack API) reads from the root, joined
 * with '/'. At most FSC_FRAME_LABEL_WALK names are read. Returns 0 or
 * FSC_ENOMEM; buf always holds a string. */
#define FSC_FRAME_LABEL_WALK 512
int fsc_frame_label(const char *const *names, const size_t *lens, size_t n, int all_frames,
                    int depth, char *buf, size_t cap);

/* The label of path a (`depth` frames), told apart from path b: when the
 * two differ, the frame where they part (from the root down, among the
 * frames the filter keeps) is appended as " … ← frame" unless it is one of
 * the `depth` innermost, which the label shows already. Reports use depth
 * 2 for tags, whatif 3 for OOM call sites (as the report's call site).
 * Returns 0 or FSC_ENOMEM. */
int fsc_frame_label_apart(const char *const *a, const size_t *alen, size_t na,
                          const char *const *b, const size_t *blen, size_t nb, int all_frames,
                          int depth, char *buf, size_t cap);

/* ---- call sites ---------------------------------------------------------------
 * The line of code a stack is counted under when live bytes are grouped by
 * call site (report's "by line of code", the viewer's table and leaf-first
 * icicle), from its node names innermost first as for fsc_frame_label:
 *   FSC_SITE_LINE  the allocating line: the innermost frame the filter keeps,
 *                  a Python frame when the stack has one (fsc_frame_label at
 *                  depth 1), "file.py:123 func";
 *   FSC_SITE_MINE  the first frame in the program's own code: the innermost
 *                  Python frame whose file is not library code (see
 *                  fsc_frame_is_library); a stack without one falls back to
 *                  FSC_SITE_LINE (*mine_found says which).
 * Two stacks with the same label are the same site, so their bytes add up.
 * A path of plain tags is named as fsc_frame_label names it. Returns 0 or
 * FSC_ENOMEM; buf always holds a string. */
enum { FSC_SITE_LINE = 0, FSC_SITE_MINE = 1 };
int fsc_frame_site(const char *const *names, const size_t *lens, size_t n, int mode, char *buf,
                   size_t cap, int *mine_found);

/* 1 when a parsed frame is library code rather than the program's: a file
 * under site-packages or dist-packages, inside a "torch" package, or in
 * Python's standard library ("/lib/python3.N/", "<frozen ...>"); C++ frames
 * and plain tags count as library too (0 only for the program's Python). */
int fsc_frame_is_library(const fsc_frame_t *f, int is_frame);

#ifdef __cplusplus
}
#endif
#endif /* FRAGSCOPE_FRAMES_H */
