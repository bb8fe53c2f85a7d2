/*
 * test_recorder_util.h — helpers shared by the recorder suites: comparing
 * events field by field, reading a whole trace back, and walking a file's
 * frames independently of the reader to know what it should recover.
 */
#ifndef FSC_TEST_RECORDER_UTIL_H
#define FSC_TEST_RECORDER_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/recorder.h"
#include "fsc_test.h"
#include "trace_format.h"

/* 1 when every field of a and b is equal (text compared by content when
 * both carry it; rt_read_all drops texts). */
static inline int rt_event_eq(const fsc_event_t *a, const fsc_event_t *b)
{
    return a->type == b->type && a->pool == b->pool && a->reserved0 == b->reserved0 &&
           a->tag == b->tag && a->time_ns == b->time_ns && a->addr == b->addr &&
           a->size == b->size && a->requested == b->requested && a->stream == b->stream &&
           a->segment == b->segment && a->other == b->other && a->thread == b->thread &&
           a->text_len == b->text_len &&
           (a->text_len == 0 || a->text == NULL || b->text == NULL ||
            memcmp(a->text, b->text, a->text_len) == 0) &&
           memcmp(&a->oom, &b->oom, sizeof a->oom) == 0;
}

/* Read every event of path into a malloc'd array (texts are dropped);
 * returns the count, or -1 when the open fails (code in *rc). */
static inline long rt_read_all(const char *path, fsc_event_t **out, fsc_trace_integrity_t *integ,
                               int *rc)
{
    fsc_trace_reader_t *r = NULL;
    fsc_err_t err;
    *rc = fsc_trace_open(path, &r, &err);
    if (*rc != 0) {
        *out = NULL;
        return -1;
    }
    size_t cap = 64, n = 0;
    fsc_event_t *v = malloc(cap * sizeof *v);
    fsc_event_t ev;
    int got;
    while ((got = fsc_trace_next(r, &ev)) == 1) {
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
        }
        ev.text = NULL;
        v[n++] = ev;
    }
    *rc = got;
    if (integ != NULL)
        fsc_trace_get_integrity(r, integ);
    fsc_trace_close(r);
    *out = v;
    return (long)n;
}

/* Frame walk: for a file image, the number of events in chunks that end at
 * or before `cut` (what a reader of the first `cut` bytes must return). */
static inline uint64_t rt_events_before(const uint8_t *b, size_t len, size_t cut)
{
    size_t off = 8 + fsc__get_le32(b + 4);
    uint64_t events = 0;
    while (off + 8 <= len) {
        uint32_t magic = fsc__get_le32(b + off), n = fsc__get_le32(b + off + 4);
        if (magic != FSC__SKIP_CHUNK)
            break;
        uint32_t ev = fsc__get_le32(b + off + 16), csize = fsc__get_le32(b + off + 20);
        size_t end = off + 8 + n + csize;
        if (end > cut)
            break;
        events += ev;
        off = end;
    }
    return events;
}

static inline int rt_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

#endif
