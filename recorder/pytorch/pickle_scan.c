/*
 * pickle_scan.c — the first pass of the streaming pickle reader: one walk
 * over the opcodes that notes which memo indices a GET reads again and how
 * often, so that the parse (pickle.c) keeps those memo entries and no
 * others, and frees each after its last read.
 *
 * On large inputs the walk runs on several cores. Pickles of protocols 4
 * and 5 are cut into frames (FRAME and an 8-byte length, about 64 KiB
 * each, no opcode straddling two; a large string or bytes may sit between
 * two frames, as Python writes them). The input is cut into ranges, a few
 * per thread and at most 2 MiB each, which a pool of threads takes in
 * order. A range starts at the first likely FRAME at or after its share of
 * the input: a 0x95 byte whose length stays in the input and leads to the
 * next FRAME (over at most a few opcodes between frames) or to the end.
 * Each thread finds the start of its range and of the next one itself
 * (both sides of a cut compute the same function of the input), so no
 * thread reads ahead of the walk: hopping the whole chain of headers first
 * would fault in every page of a mapped file (the kernel maps 64 KiB around
 * each fault, a frame's length), all of it resident before the importer
 * could hand any back. Each range is walked exactly as the sequential walk
 * would (arguments are checked against the whole input, not the range) and
 * its GETs are counted straight into the shared result: an index's bit is
 * tested before it is set, its read count is a saturating increment, so
 * the indices read all the time (dict keys, shared frames) saturate early,
 * are only read from then on and their cache lines stay shared between
 * cores. A saturating sum does not depend on the order of its terms, so the
 * counts are those of one walk.
 *
 * The headers are a hint, never trusted: a range is known to start at an
 * opcode boundary when the range before it, itself known to, ends exactly
 * where it begins (the first starts at 0). A range whose last opcode runs
 * past its end (a FRAME whose length lies, a boundary inside an opcode, a
 * line of text that does not end in it), or with no likely FRAME within
 * 1 MiB, sends the whole scan back to the sequential walk. A range that
 * stops (STOP, an unsupported opcode, a truncated argument: wherever the
 * parser will stop with an error) voids every later one, whose counts may
 * be in the shared arrays already: the ranges up to it are walked again,
 * alone (unless the later ones were all empty, as past the frame that
 * holds the STOP). Pickles of protocols 0-3
 * (no frames), inputs under 8 MiB, a process allowed one CPU only and
 * FRAGSCOPE_THREADS=1 take the sequential walk.
 *
 * Memory. The sequential walk holds 1 bit and 1 byte per memo index, up
 * to the highest index read, and grows them as it goes. Threads must not
 * reallocate under each other, so the parallel walk allocates the same two
 * arrays at once for every index the walk can count (any below the input's
 * length): 1.125 bytes of address space per input byte, zeroed lazily by
 * the kernel, of which only the pages up to the highest index read are
 * touched, as in the sequential walk; at the end they shrink to the
 * sequential walk's sizes. No other memory per memo index, per thread or
 * in all: each thread adds its stack and a few words, each range 32 bytes.
 * Where the address space is refused the walk is sequential. Of a mapped
 * input, the pages of the ranges being walked and of those done but not
 * yet reported stay resident (about two ranges per thread, 2 MiB each).
 *
 * Progress is reported from the calling thread only, in increasing order:
 * within the first range as it is walked, then as the prefix of ranges
 * done grows (a rerun or the fallback reports only past what was reported).
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "pickle_scan.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fsc/thread.h"

#define FSC__PSCAN_EVERY ((size_t)4 << 20)    /* progress every 4 MiB */
#define FSC__PSCAN_PAR_MIN ((size_t)8 << 20)  /* smaller inputs: one walk */
#define FSC__PSCAN_MAX_THREADS 16u
#define FSC__PSCAN_RANGES_PER_THREAD 4u
/* At most this much per range: pages of the file walked stay resident
 * until the calling thread reports the ranges before them done (the
 * importer hands them back to the kernel then). */
#define FSC__PSCAN_RANGE_MAX ((size_t)2 << 20)
#define FSC__PSCAN_MAX_RANGES 65536u
/* Opcodes stepped over between two frames (Python writes one there per
 * large string) before a FRAME is not taken for a boundary. */
#define FSC__PSCAN_MAX_BETWEEN 16u
#define FSC__PSCAN_CUT_SEARCH ((size_t)1 << 20) /* bytes looked through for a cut */

static int scan_ref_grow(fsc__pscan_t *sc, uint64_t idx, size_t len);

/* One GET counted (the arrays grow in scan_ref_grow, off the hot path). */
static inline int scan_ref(fsc__pscan_t *sc, uint64_t idx, size_t len)
{
    if (idx < sc->nreads && (idx >> 6) < sc->words && idx < len) {
        sc->bits[idx >> 6] |= 1ull << (idx & 63);
        if (sc->reads[idx] < FSC__PSCAN_MANY)
            sc->reads[idx]++;
        return 0;
    }
    return scan_ref_grow(sc, idx, len);
}

static __attribute__((noinline)) int scan_ref_grow(fsc__pscan_t *sc, uint64_t idx, size_t len)
{
    if (idx >= len)
        return 0; /* out of range: the parser reports it */
    size_t w = (size_t)(idx >> 6);
    if (w >= sc->words) {
        size_t nw = sc->words ? sc->words : 1024;
        while (nw <= w)
            nw *= 2;
        uint64_t *nb = realloc(sc->bits, nw * sizeof *nb);
        if (nb == NULL)
            return FSC_ENOMEM;
        memset(nb + sc->words, 0, (nw - sc->words) * sizeof *nb);
        sc->bits = nb;
        sc->words = nw;
    }
    sc->bits[w] |= 1ull << (idx & 63);
    if (idx >= sc->nreads) {
        size_t nn = sc->nreads ? sc->nreads : 65536;
        while (nn <= idx)
            nn *= 2;
        uint8_t *nr = realloc(sc->reads, nn);
        if (nr == NULL)
            return FSC_ENOMEM;
        memset(nr + sc->nreads, 0, nn - sc->nreads);
        sc->reads = nr;
        sc->nreads = nn;
    }
    if (sc->reads[idx] < FSC__PSCAN_MANY)
        sc->reads[idx]++;
    return 0;
}

static size_t text_end(const uint8_t *p, size_t len, size_t pos)
{
    const uint8_t *nl = memchr(p + pos, '\n', len - pos);
    return nl == NULL ? SIZE_MAX : (size_t)(nl - p) + 1;
}

/* ---- one walk ------------------------------------------------------------ */

/* Progress of the calling thread: reported at most every 4 MiB, and only
 * past what was reported already. */
typedef struct prog {
    const fsc__pstream_t *cb;
    size_t len;
    size_t next; /* no report before this position */
    size_t done; /* last position reported */
} prog_t;

static void progress_at(prog_t *g, size_t pos)
{
    if (pos < g->next || pos >= g->len)
        return;
    g->next = pos + FSC__PSCAN_EVERY;
    if (g->cb != NULL && g->cb->progress != NULL && pos > g->done) {
        g->done = pos;
        g->cb->progress(g->cb->ud, pos, g->len);
    }
}

enum { COUNT_NONE, COUNT_OWN, COUNT_SHARED };
enum { WALK_END = 1, WALK_STOP = 2, WALK_PAST = 3 };

typedef struct walk {
    const uint8_t *p;
    size_t len;       /* the whole input: arguments are checked against it */
    fsc__pscan_t *sc; /* COUNT_OWN: arrays grown as indices appear */
    uint64_t *bits;   /* COUNT_SHARED: arrays for any index below len */
    uint8_t *reads;
    uint64_t top;     /* COUNT_SHARED: highest index counted, plus 1 */
    prog_t *prog;     /* NULL: no progress from this walk */
    uint64_t memos;   /* COUNT_SHARED: MEMOIZE opcodes walked */
    int puts;         /* COUNT_SHARED: a PUT (explicit memo index) walked */
} walk_t;

/* One GET counted into arrays that other threads count into as well. */
static inline void ref_shared(walk_t *w, uint64_t idx)
{
    if (idx >= w->len)
        return; /* out of range: the parser reports it */
    uint64_t *word = &w->bits[idx >> 6], bit = 1ull << (idx & 63);
    if (!(__atomic_load_n(word, __ATOMIC_RELAXED) & bit))
        __atomic_fetch_or(word, bit, __ATOMIC_RELAXED);
    uint8_t *r = &w->reads[idx];
    uint8_t v = __atomic_load_n(r, __ATOMIC_RELAXED);
    while (v < FSC__PSCAN_MANY &&
           !__atomic_compare_exchange_n(r, &v, (uint8_t)(v + 1), 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    if (idx >= w->top)
        w->top = idx + 1;
}

#define WALK_REF(idx)                                                                    \
    do {                                                                                 \
        if (mode == COUNT_OWN) {                                                         \
            int rc_ = scan_ref(w->sc, (idx), len);                                       \
            if (rc_ != 0)                                                                \
                return rc_;                                                              \
        } else if (mode == COUNT_SHARED) {                                               \
            ref_shared(w, (idx));                                                        \
        }                                                                                \
    } while (0)

/* Walks the opcodes from pos as the parser does, while pos < end, and
 * stops wherever the parser will stop with an error (or at STOP):
 * references past that point are never resolved. Returns WALK_STOP there,
 * WALK_END once pos >= end (*at: where it got to, past end when the last
 * opcode runs over it), WALK_PAST for a line of text that does not end in
 * the range (COUNT_SHARED), or FSC_ENOMEM. mode is a constant at every call,
 * so each use gets its own copy of the loop. */
__attribute__((always_inline)) static inline int walk(walk_t *w, int mode, size_t pos, size_t end,
                                                      size_t *at)
{
    const uint8_t *p = w->p;
    size_t len = w->len;
    while (pos < end) {
        if (w->prog != NULL && pos >= w->prog->next)
            progress_at(w->prog, pos);
        uint8_t op = p[pos++];
        size_t fixed = 0, lenbytes = 0;
        switch (op) {
        case '.': goto stop;
        case 0x80: case 'K': case 'U': case 'C': case 0x8a: case 0x8c: fixed = 1; break;
        case 'M': fixed = 2; break;
        case 'J': case 'X': case 'T': case 'B': case 0x8b: fixed = 4; break;
        case 'q': case 'r':
            if (mode == COUNT_SHARED)
                w->puts = 1;
            fixed = op == 'q' ? 1 : 4;
            break;
        case 0x94:
            if (mode == COUNT_SHARED)
                w->memos++;
            continue;
        case 'G': case 0x95: case 0x8d: case 0x8e: case 0x96: fixed = 8; break;
        case 'h':
            if (pos + 1 > len)
                goto stop;
            WALK_REF(p[pos]);
            pos++;
            continue;
        case 'j':
            if (pos + 4 > len)
                goto stop;
            WALK_REF(rd_le(p + pos, 4));
            pos += 4;
            continue;
        case 'I': case 'L': case 'F': case 'V': case 'S': case 'p': case 'g': {
            if (mode == COUNT_NONE)
                goto stop; /* never between frames: not looked for (it could be long) */
            if (mode == COUNT_SHARED && op == 'p')
                w->puts = 1;
            /* a range looks for the line's end in itself only: no range
             * reads the rest of the input for a line that runs past it */
            size_t e = text_end(p, mode == COUNT_SHARED ? end : len, pos);
            if (e == SIZE_MAX && mode == COUNT_SHARED) {
                *at = end + 1;
                return WALK_PAST;
            }
            if (e == SIZE_MAX)
                goto stop;
            if (op == 'g') {
                uint64_t v = 0;
                size_t i = pos;
                for (; i + 1 < e && p[i] >= '0' && p[i] <= '9' && v < len; i++)
                    v = v * 10 + (uint64_t)(p[i] - '0');
                if (i + 1 == e && i > pos)
                    WALK_REF(v);
            }
            pos = e;
            continue;
        }
        case '}': case ']': case ')': case 'N': case 0x88: case 0x89: case '(': case '0':
        case '1': case '2': case 's': case 'u': case 'a': case 'e': case 't': case 0x85:
        case 0x86: case 0x87: case 'd': case 'l':
            continue;
        default: goto stop; /* unsupported: the parser stops here */
        }
        /* opcodes with a fixed argument, some of them a length */
        if (op == 0x8a || op == 0x8b || op == 0x8c || op == 'X' || op == 0x8d || op == 'U' ||
            op == 'T' || op == 'C' || op == 'B' || op == 0x8e || op == 0x96)
            lenbytes = fixed;
        if (len - pos < fixed)
            goto stop;
        if (lenbytes) {
            uint64_t n = rd_le(p + pos, lenbytes);
            pos += lenbytes;
            if (n > len - pos)
                goto stop;
            pos += (size_t)n;
        } else {
            pos += fixed;
        }
    }
    *at = pos;
    return WALK_END;
stop:
    *at = pos;
    return WALK_STOP;
}

/* Ranks, and reads by slot (slots are the referenced indices in order; the
 * reads move in place). Frees sc on failure. */
static int scan_finish(fsc__pscan_t *sc, fsc__pscan_t **out)
{
    if (sc->words > 0 && (sc->rank = malloc(sc->words * sizeof *sc->rank)) == NULL) {
        fsc__pscan_free(sc);
        return FSC_ENOMEM;
    }
    size_t n = 0;
    for (size_t w = 0; w < sc->words; w++) {
        sc->rank[w] = (uint32_t)n;
        n += popcount64(sc->bits[w]);
    }
    sc->refs = n;
    size_t slot = 0;
    for (size_t w = 0; w < sc->words; w++) {
        for (uint64_t b = sc->bits[w]; b != 0; b &= b - 1) {
            size_t idx = (w << 6) + (size_t)__builtin_ctzll(b);
            sc->reads[slot++] = sc->reads[idx];
        }
    }
    *out = sc;
    return 0;
}

static int scan_sequential(const uint8_t *p, size_t len, prog_t *g, fsc__pscan_t **out)
{
    fsc__pscan_t *sc = calloc(1, sizeof *sc);
    if (sc == NULL)
        return FSC_ENOMEM;
    walk_t w = {p, len, sc, NULL, NULL, 0, g, 0, 0};
    size_t at;
    g->next = FSC__PSCAN_EVERY;
    int rc = walk(&w, COUNT_OWN, 0, len, &at);
    if (rc < 0) {
        fsc__pscan_free(sc);
        return rc;
    }
    return scan_finish(sc, out);
}

/* ---- ranges on several threads ------------------------------------------ */

/* A FRAME opcode at q whose length stays in the input and leads to another
 * FRAME or to the end of the input, over at most a few opcodes between the
 * two frames (where Python writes large strings): a likely opcode boundary.
 * Only its header and the next one are read. */
static int frame_at(const uint8_t *p, size_t len, size_t q)
{
    if (p[q] != 0x95 || len - q < 9)
        return 0;
    uint64_t fl = rd_le(p + q + 1, 8);
    if (fl > len - q - 9)
        return 0;
    walk_t w = {p, len, NULL, NULL, NULL, 0, NULL, 0, 0};
    size_t pos = q + 9 + (size_t)fl;
    for (unsigned between = 0; pos < len; between++) {
        if (p[pos] == 0x95)
            return len - pos >= 9 && rd_le(p + pos + 1, 8) <= len - pos - 9;
        if (between == FSC__PSCAN_MAX_BETWEEN ||
            walk(&w, COUNT_NONE, pos, pos + 1, &pos) != WALK_END)
            return 0;
    }
    return 1;
}

#define FSC__PSCAN_NO_CUT SIZE_MAX

/* Start of range i of 'want': the first likely FRAME at or after i/want of
 * the input, looked for over 1 MiB at most, or the input's end when it
 * comes first. A function of (input, want, i) alone, growing with i, so
 * that the ranges on both sides of a cut, each computing it, agree.
 * FSC__PSCAN_NO_CUT: none there (the first range without a cut stops the
 * others from taking more; each search reads 1 MiB and steps over 16
 * opcodes per candidate at most). */
static size_t range_start(const uint8_t *p, size_t len, size_t want, size_t i)
{
    if (i == 0)
        return 0;
    if (i >= want)
        return len;
    size_t t = len / want * i + len % want * i / want; /* len * i / want, without overflow */
    size_t lim = len - t < FSC__PSCAN_CUT_SEARCH ? len : t + FSC__PSCAN_CUT_SEARCH;
    for (size_t q = t; q < lim; q++) {
        const uint8_t *f = memchr(p + q, 0x95, lim - q);
        if (f == NULL)
            break;
        q = (size_t)(f - p);
        if (frame_at(p, len, q))
            return q;
    }
    return lim == len ? len : FSC__PSCAN_NO_CUT; /* no frame up to the end: empty ranges */
}

size_t fsc__pickle_scan_cuts(const void *data, size_t len, size_t want, size_t *cuts)
{
    const uint8_t *p = data;
    cuts[0] = 0;
    if (want < 2 || len < 2 || p[0] != 0x80 || p[1] < 4)
        return 1; /* protocols 0-3 have no frames */
    for (size_t i = 1; i < want; i++)
        if ((cuts[i] = range_start(p, len, want, i)) == FSC__PSCAN_NO_CUT)
            return 1;
    return want;
}

enum { R_EXACT = 1, R_STOP, R_PAST };

typedef struct prange {
    size_t start; /* where it starts */
    size_t end;   /* where the next range starts (the input's length for the last) */
    uint64_t memos; /* MEMOIZE opcodes in it */
    int puts;       /* it holds a PUT */
    uint64_t top; /* highest index counted, plus 1 */
    int how;      /* R_*: ended at end exactly, stopped, ran past end (or no cut) */
    int walked;   /* it read an opcode (it was not empty) */
    int done;     /* set (release) once the fields above are */
} prange_t;

typedef struct ppool {
    walk_t base; /* input and shared arrays */
    prange_t *r;
    size_t want;  /* ranges the input is cut into */
    size_t nr;    /* ranges walked: want, or fewer when a range stops */
    size_t next;  /* next range to take (atomic) */
    size_t limit; /* ranges from here on are void (atomic) */
    int all;      /* walk them anyway (FSC__PSCAN_ALL) */
} ppool_t;

static void run_range(ppool_t *pl, size_t i, prog_t *g)
{
    prange_t *r = &pl->r[i];
    walk_t w = pl->base;
    w.prog = g;
    size_t start = range_start(w.p, w.len, pl->want, i);
    r->start = start;
    r->end = range_start(w.p, w.len, pl->want, i + 1);
    r->how = R_PAST;
    r->walked = start < r->end;
    if (start != FSC__PSCAN_NO_CUT && r->end != FSC__PSCAN_NO_CUT) {
        size_t at = start;
        int how = start < r->end ? walk(&w, COUNT_SHARED, start, r->end, &at) : WALK_END;
        r->how = how == WALK_STOP                    ? R_STOP
                 : how == WALK_END && at == r->end ? R_EXACT
                                                   : R_PAST;
    }
    r->top = w.top;
    r->memos = w.memos;
    r->puts = w.puts;
    if (r->how != R_EXACT) { /* later ranges are void: take no more of them */
        size_t lim = __atomic_load_n(&pl->limit, __ATOMIC_RELAXED);
        while (i + 1 < lim && !__atomic_compare_exchange_n(&pl->limit, &lim, i + 1, 1,
                                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* Ranges walked without a gap from the start: progress up to there. */
static void report_prefix(ppool_t *pl, prog_t *g, size_t *pfx)
{
    while (*pfx < pl->nr && __atomic_load_n(&pl->r[*pfx].done, __ATOMIC_ACQUIRE) &&
           pl->r[*pfx].how == R_EXACT)
        ++*pfx;
    if (*pfx > 0)
        progress_at(g, pl->r[*pfx - 1].end);
}

static void take_ranges(ppool_t *pl, prog_t *g, size_t *pfx)
{
    for (;;) {
        size_t i = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED);
        if (i >= pl->nr || (!pl->all && i >= __atomic_load_n(&pl->limit, __ATOMIC_RELAXED)))
            return;
        run_range(pl, i, NULL);
        if (g != NULL)
            report_prefix(pl, g, pfx);
    }
}

static void *range_worker(void *arg)
{
    fsc__thread_name("fsc-scan");
    take_ranges(arg, NULL, NULL);
    return NULL;
}

/* Walks ranges 0..nr-1 of pl on up to 'threads' threads (the caller's one
 * included, which takes range 0 and reports progress). */
static void run_pool(ppool_t *pl, unsigned threads, prog_t *g)
{
    for (size_t i = 0; i < pl->nr; i++)
        pl->r[i].done = 0;
    pl->next = 1;
    pl->limit = pl->nr;
    pthread_t tid[FSC__PSCAN_MAX_THREADS];
    unsigned started = 0;
    if (threads > pl->nr)
        threads = (unsigned)pl->nr;
    for (unsigned t = 1; t < threads && t < FSC__PSCAN_MAX_THREADS; t++) {
        if (pthread_create(&tid[started], NULL, range_worker, pl) != 0)
            break; /* fewer threads: the ranges are taken by the others */
        started++;
    }
    size_t pfx = 0;
    g->next = FSC__PSCAN_EVERY;
    run_range(pl, 0, g);
    report_prefix(pl, g, &pfx);
    take_ranges(pl, g, &pfx);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    report_prefix(pl, g, &pfx);
}

unsigned fsc__pickle_scan_threads(void)
{
    const char *t = getenv("FRAGSCOPE_THREADS");
    if (t != NULL && strcmp(t, "1") == 0)
        return 1;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set; /* a process pinned to fewer CPUs (taskset) uses those */
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    if (n < 1)
        return 1;
    return n > (long)FSC__PSCAN_MAX_THREADS ? FSC__PSCAN_MAX_THREADS : (unsigned)n;
}

/* Shared arrays to the sequential walk's sizes: words and reads grow from
 * 1024 and 65536 by doubling until the highest index read fits. */
static int shared_result(ppool_t *pl, size_t words_have, fsc__pscan_t **out)
{
    uint64_t top = 0;
    for (size_t i = 0; i < pl->nr; i++)
        if (pl->r[i].top > top)
            top = pl->r[i].top;
    fsc__pscan_t *sc = calloc(1, sizeof *sc);
    if (sc == NULL)
        return FSC_ENOMEM;
    sc->ranges = pl->nr;
    int puts = 0;
    for (size_t i = 0; i < pl->nr; i++)
        puts |= pl->r[i].puts;
    if (!puts && pl->nr > 1) { /* where the parse may cut the input again */
        sc->cut = malloc(pl->nr * sizeof *sc->cut);
        sc->cut_memo = malloc(pl->nr * sizeof *sc->cut_memo);
        if (sc->cut == NULL || sc->cut_memo == NULL) {
            free(pl->base.bits);
            free(pl->base.reads);
            fsc__pscan_free(sc);
            return FSC_ENOMEM;
        }
        uint64_t memo = 0;
        for (size_t i = 0; i < pl->nr; i++) {
            sc->cut[i] = pl->r[i].start;
            sc->cut_memo[i] = memo;
            memo += pl->r[i].memos;
        }
        sc->ncuts = pl->nr;
    }
    if (top == 0) {
        free(pl->base.bits);
        free(pl->base.reads);
        return scan_finish(sc, out);
    }
    size_t max = (size_t)(top - 1), words = 1024, nreads = 65536;
    while (words <= (max >> 6))
        words *= 2;
    while (nreads <= max)
        nreads *= 2;
    size_t reads_have = pl->base.len;
    sc->bits = pl->base.bits;
    sc->reads = pl->base.reads;
    uint64_t *nb = realloc(sc->bits, words * sizeof *nb);
    uint8_t *nr = nb == NULL ? NULL : realloc(sc->reads, nreads);
    if (nb != NULL)
        sc->bits = nb;
    if (nr != NULL)
        sc->reads = nr;
    if (nb == NULL || nr == NULL) {
        fsc__pscan_free(sc);
        return FSC_ENOMEM;
    }
    if (words > words_have)
        memset(sc->bits + words_have, 0, (words - words_have) * sizeof *sc->bits);
    if (nreads > reads_have)
        memset(sc->reads + reads_have, 0, nreads - reads_have);
    sc->words = words;
    sc->nreads = nreads;
    return scan_finish(sc, out);
}

int fsc__pickle_scan_split(const void *data, size_t len, const fsc__pstream_t *cb,
                           size_t ranges, unsigned threads, fsc__pscan_t **out)
{
    const uint8_t *p = data;
    prog_t g = {cb, len, FSC__PSCAN_EVERY, 0};
    int pl_all;
    if (ranges > FSC__PSCAN_MAX_RANGES)
        ranges = FSC__PSCAN_MAX_RANGES;
    pl_all = (threads & FSC__PSCAN_ALL) != 0;
    threads &= ~FSC__PSCAN_ALL;
    if (threads < 1)
        threads = 1;
    ppool_t pl;
    memset(&pl, 0, sizeof pl);
    int framed = len >= 2 && p[0] == 0x80 && p[1] >= 4; /* protocols 0-3 have no frames */
    pl.r = ranges > 1 && framed ? calloc(ranges, sizeof *pl.r) : NULL;
    size_t words_have = (len + 63) / 64;
    if (pl.r != NULL) {
        pl.base.p = p;
        pl.base.len = len;
        pl.want = pl.nr = ranges;
        pl.all = pl_all;
    }
    int rc = 1; /* 1: not done in parallel */
    while (pl.nr > 1) {
        pl.base.bits = calloc(words_have, sizeof *pl.base.bits);
        pl.base.reads = calloc(len, 1);
        if (pl.base.bits == NULL || pl.base.reads == NULL)
            break;
        run_pool(&pl, threads, &g);
        size_t f = 0;
        while (f < pl.nr && pl.r[f].how == R_EXACT)
            f++;
        if (f + 1 >= pl.nr) { /* every range ends where the next begins; the last may stop */
            rc = shared_result(&pl, words_have, out);
            pl.base.bits = NULL;
            pl.base.reads = NULL;
            break;
        }
        if (pl.r[f].how == R_PAST)
            break; /* a cut inside an opcode: the frames lied */
        /* range f stops: the later ones are void; unless none of them
         * counted anything (empty ranges past the last frame, where the
         * STOP is), walk 0..f again alone */
        int later = 0;
        for (size_t i = f + 1; i < pl.nr; i++)
            later |= pl.r[i].done && pl.r[i].walked;
        pl.nr = f + 1;
        if (!later) {
            rc = shared_result(&pl, words_have, out);
            pl.base.bits = NULL;
            pl.base.reads = NULL;
            break;
        }
        free(pl.base.bits);
        free(pl.base.reads);
        pl.base.bits = NULL;
        pl.base.reads = NULL;
    }
    free(pl.base.bits);
    free(pl.base.reads);
    free(pl.r);
    if (rc <= 0)
        return rc;
    return scan_sequential(p, len, &g, out);
}

size_t fsc__pickle_scan_ranges(size_t len, unsigned threads)
{
    size_t n = (size_t)threads * FSC__PSCAN_RANGES_PER_THREAD;
    if (len / FSC__PSCAN_RANGE_MAX > n)
        n = len / FSC__PSCAN_RANGE_MAX;
    return n;
}

int fsc__pickle_scan(const void *data, size_t len, const fsc__pstream_t *cb, fsc__pscan_t **out)
{
    unsigned threads = fsc__pickle_scan_threads();
    if (threads < 2 || len < FSC__PSCAN_PAR_MIN)
        return fsc__pickle_scan_split(data, len, cb, 1, 1, out);
    return fsc__pickle_scan_split(data, len, cb, fsc__pickle_scan_ranges(len, threads), threads,
                                  out);
}

void fsc__pscan_free(fsc__pscan_t *sc)
{
    if (sc == NULL)
        return;
    free(sc->bits);
    free(sc->rank);
    free(sc->reads);
    free(sc->cut);
    free(sc->cut_memo);
    free(sc);
}

size_t fsc__pscan_refs(const fsc__pscan_t *sc) { return sc ? sc->refs : 0; }
