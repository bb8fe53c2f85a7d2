/*
 * trace_clock.h — the time the sink stamps on events that come without one,
 * in nanoseconds since the recorder's origin on the monotonic clock.
 *
 * clock_gettime costs about as much as the whole rest of the hot path, so
 * where the CPU has an invariant TSC the sink reads the TSC instead and
 * converts it with a rate measured against CLOCK_MONOTONIC. The rate and
 * the anchor are renewed every ~2^26 ticks (tens of milliseconds) from a
 * fresh clock_gettime sample, so the conversion never drifts far from the
 * monotonic clock; stamped times never go backwards and are multiples of
 * 64 ns. Everything here runs under the recorder's spinlock. Internal to
 * recorder/.
 */
#ifndef FSC_RECORDER_TRACE_CLOCK_H
#define FSC_RECORDER_TRACE_CLOCK_H

#include <stdint.h>

#include "trace_writer.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define FSC__HAVE_TSC 1
#else
#define FSC__HAVE_TSC 0
#endif

/* Stamps are multiples of this. Digits below it are noise (the TSC rate is
 * measured, clock_gettime itself costs ~20 ns) and cost the most bytes in a
 * trace: on a real GPU run, 64 ns granularity makes the time column ~40%
 * smaller than 1 ns. */
#define FSC__STAMP_QUANTUM_NS 64u
#define FSC__CLK_CALIBRATE (1ull << 22) /* first rate after ~1-2 ms */
#define FSC__CLK_RENEW (1ull << 26)

static inline uint64_t fsc__tsc(void)
{
#if FSC__HAVE_TSC
    return __rdtsc();
#else
    return 0;
#endif
}

/* At open: whether the TSC can be used, and the first anchor. */
static inline void fsc__clock_init(fsc_recorder_t *r)
{
    r->clk_tsc_ok = 0;
#if FSC__HAVE_TSC
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every
     * P-/C-state (and is synchronized across cores on such parts). */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)))
        r->clk_tsc_ok = 1;
#endif
    r->clk_tsc = fsc__tsc();
    r->clk_ns = fsc_now_ns();
    r->clk_mult = 0;
    r->clk_last = 0;
}

__attribute__((noinline)) static uint64_t fsc__clock_renew(fsc_recorder_t *r, uint64_t tsc)
{
    uint64_t ns = fsc_now_ns();
    uint64_t dt = tsc - r->clk_tsc;
    if (ns > r->clk_ns && dt > 0) {
        unsigned __int128 m = ((unsigned __int128)(ns - r->clk_ns) << 32) / dt;
        r->clk_mult = m > UINT32_MAX ? 0 : (uint64_t)m; /* < 1 GHz TSC: not used */
    }
    r->clk_tsc = tsc;
    r->clk_ns = ns;
    return ns;
}

static inline uint64_t fsc__clock_now(fsc_recorder_t *r)
{
    uint64_t ns;
    if (!r->clk_tsc_ok) {
        ns = fsc_now_ns();
    } else {
        uint64_t tsc = fsc__tsc(), dt = tsc - r->clk_tsc;
        if (r->clk_mult == 0) {
            ns = dt >= FSC__CLK_CALIBRATE ? fsc__clock_renew(r, tsc) : fsc_now_ns();
        } else if (dt >= FSC__CLK_RENEW) {
            ns = fsc__clock_renew(r, tsc);
        } else {
            ns = r->clk_ns + ((dt * r->clk_mult) >> 32);
        }
    }
    uint64_t t = (ns - r->origin_ns) & ~(uint64_t)(FSC__STAMP_QUANTUM_NS - 1);
    if (t < r->clk_last)
        t = r->clk_last;
    r->clk_last = t;
    return t;
}

#endif /* FSC_RECORDER_TRACE_CLOCK_H */
