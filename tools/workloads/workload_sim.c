/*
 * workload_sim.c — a workload through the caching allocator on the sim
 * backend: the part `simulate` and `demo` share.
 *
 * The allocator's events go through a small sink that counts them, keeps the
 * OOM event's figures and forwards everything to the recorder when the run
 * is recorded. Tags and markers use the recorder's process-wide tag stack, so
 * every event carries "step/forward/layer.3/attn"-style paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fragscope/allocator.h"
#include "fragscope/recorder.h"
#include "workload.h"

typedef struct sim_ctx {
    fsc_allocator_t *alloc;
    fsc_recorder_t *rec;
    fsc_sim_result_t *res;
    const fsc_sim_opts_t *o;
    int step;
    int closed; /* the run is over: ignore what the allocator's teardown emits */
} sim_ctx_t;

static void sink(void *ud, const fsc_event_t *ev)
{
    sim_ctx_t *c = ud;
    if (c->closed)
        return;
    c->res->events++;
    if (ev->type < 16)
        c->res->events_by_type[ev->type]++;
    if (ev->type == FSC_EV_OOM) {
        c->res->oom_request = ev->requested;
        c->res->oom_rounded = ev->size;
        c->res->oom_allocated = ev->oom.allocated;
        c->res->oom_reserved = ev->oom.reserved;
        c->res->oom_capacity = ev->oom.capacity;
    }
    if (c->rec != NULL)
        fsc_recorder_sink(c->rec, ev);
}

static int op_alloc(void *ud, uint64_t size, uint64_t stream, uint64_t *addr)
{
    sim_ctx_t *c = ud;
    return fsc_allocator_malloc(c->alloc, size, stream, addr);
}

static int op_free(void *ud, uint64_t addr)
{
    sim_ctx_t *c = ud;
    return fsc_allocator_free(c->alloc, addr);
}

static void op_push(void *ud, const char *name)
{
    (void)ud;
    fsc_tag_push(name);
}

static void op_pop(void *ud)
{
    (void)ud;
    fsc_tag_pop();
}

static void op_mark(void *ud, const char *text)
{
    sim_ctx_t *c = ud;
    if (c->rec != NULL)
        fsc_mark(text);
    c->res->events++; /* counted either way: every trace has it */
    c->res->events_by_type[FSC_EV_MARKER]++;
    if (c->o->on_step != NULL)
        c->o->on_step(c->o->ud, c->step, c->o->steps);
    c->step++;
}

static int open_recorder(const fsc_sim_opts_t *o, sim_ctx_t *c, const char *backend,
                         fsc_err_t *err)
{
    char producer[96];
    snprintf(producer, sizeof producer, "fragscope %s %s", FSC_VERSION_STRING,
             o->producer ? o->producer : "simulate");
    fsc_trace_header_t hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.producer = producer;
    hdr.config = c->res->config;
    hdr.backend = backend;
    hdr.capacity = c->res->capacity;
    hdr.device_total = c->res->capacity > FSC_SIM_DEVICE_BYTES ? c->res->capacity
                                                               : FSC_SIM_DEVICE_BYTES;
    hdr.pid = (uint32_t)getpid();
    /* a process of a distributed job records its launcher's rank, with -o
     * as through FRAGSCOPE_TRACE */
    hdr.rank = fsc_recorder_env_rank();
    if (o->output != NULL) {
        /* A trace is a recording, like one made through FRAGSCOPE_TRACE:
         * it carries its real name from the start, so that what reached the
         * disk before a kill or a write error stays readable. */
        fsc_recorder_opts_t ro = FSC_RECORDER_OPTS_DEFAULT;
        ro.install_signal_handlers = 1;
        return fsc_recorder_open(o->output, &hdr, &ro, &c->rec, err);
    }
    if (o->use_env)
        return fsc_recorder_from_env(&hdr, &c->rec, err);
    return 0;
}

int fsc_sim_run(const fsc_sim_opts_t *o, fsc_sim_result_t *res, fsc_err_t *err)
{
    memset(res, 0, sizeof *res);
    if (o->workload == NULL || fsc_workload_describe(o->workload) == NULL)
        return fsc_err_set(err, FSC_ENOENT, "unknown workload '%s' (workloads: %s)",
                           o->workload ? o->workload : "", fsc_workload_names());
    if (o->steps < 0)
        return fsc_err_set(err, FSC_EINVAL, "negative step count");

    fsc_allocator_opts_t ao;
    memset(&ao, 0, sizeof ao);
    int rc = fsc_alloc_config_parse(o->config ? o->config : "", &ao.config, err);
    if (rc != 0)
        return rc;
    fsc_alloc_config_format(&ao.config, res->config, sizeof res->config);

    uint64_t device = o->capacity > FSC_SIM_DEVICE_BYTES ? o->capacity : FSC_SIM_DEVICE_BYTES;
    fsc_backend_t *be = NULL;
    rc = fsc_backend_sim_create(device, 0, &be);
    if (rc != 0)
        return fsc_err_set(err, rc, "cannot create the sim backend: %s", fsc_strerror(rc));
    snprintf(res->backend, sizeof res->backend, "%s", fsc_backend_name(be));
    res->capacity = o->capacity ? o->capacity : fsc_backend_total(be);

    sim_ctx_t c;
    memset(&c, 0, sizeof c);
    c.res = res;
    c.o = o;
    rc = open_recorder(o, &c, res->backend, err);
    if (rc != 0) {
        fsc_backend_destroy(be);
        return rc;
    }

    ao.backend = be;
    ao.capacity = o->capacity;
    ao.sink = sink;
    ao.sink_ud = &c;
    rc = fsc_allocator_create(&ao, &c.alloc, err);
    if (rc == 0) {
        fsc_workload_ops_t ops = {&c, op_alloc, op_free, op_push, op_pop, op_mark};
        fsc_err_t werr = {0, ""};
        int wrc = fsc_workload_run(o->workload, o->steps, o->seed, &ops, &res->wl, &werr);
        if (wrc == FSC_EOOM) {
            res->oom = 1;
            snprintf(res->oom_msg, sizeof res->oom_msg, "%s", fsc_allocator_last_error(c.alloc));
        } else if (wrc != 0) {
            rc = fsc_err_copy(err, &werr);
        }
        fsc_alloc_stats_t st;
        if (fsc_allocator_get_stats(c.alloc, &st) == 0) {
            fsc_alloc_stats_format(&st, res->stats_text, sizeof res->stats_text);
            res->peak_allocated = st.allocated_bytes[FSC_STAT_ALL].peak;
            res->peak_reserved = st.reserved_bytes[FSC_STAT_ALL].peak;
            res->num_alloc_retries = st.num_alloc_retries;
            res->num_ooms = st.num_ooms;
        }
    }

    /* Close the trace before the allocator goes: destroying it releases
     * segments, which is not part of the run. */
    c.closed = 1;
    if (c.rec != NULL && o->output != NULL) {
        /* The recorder's own message names the file and the system error. */
        int crc = fsc_recorder_flush(c.rec);
        if (crc != 0 && rc == 0)
            rc = fsc_err_set(err, crc, "%s; the trace keeps the events written before",
                             fsc_recorder_last_error(c.rec));
        crc = fsc_recorder_close(c.rec);
        if (crc != 0 && rc == 0)
            rc = fsc_err_set(err, crc, "writing %s: %s", o->output, fsc_strerror(crc));
        c.rec = NULL;
        if (rc == 0)
            res->trace = o->output;
    } else if (c.rec != NULL) {
        fsc_recorder_flush(c.rec); /* closed at exit by fsc_recorder_from_env */
        c.rec = NULL;
        res->trace = getenv("FRAGSCOPE_TRACE");
    }
    fsc_allocator_destroy(c.alloc);
    fsc_backend_destroy(be);
    return rc;
}

void fsc_sim_print(const fsc_sim_opts_t *o, const fsc_sim_result_t *r, FILE *out)
{
    char cap[32], a[32], b[32], d[32], e[32];
    fsc_size_format(r->capacity, cap, sizeof cap);
    fprintf(out, "workload %s: %d steps, seed %llu, capacity %s, config %s%s%s, backend %s\n",
            o->workload, o->steps, (unsigned long long)o->seed, cap,
            r->config[0] ? "\"" : "", r->config[0] ? r->config : "(defaults)",
            r->config[0] ? "\"" : "", r->backend);
    if (r->oom) {
        fsc_size_format(r->oom_request, a, sizeof a);
        fprintf(out, "OOM at step %d (%s) after %d complete steps: tried to allocate %s\n",
                r->wl.failed_step, r->wl.failed_tag, r->wl.steps_done, a);
        fprintf(out, "  allocator: %s\n", r->oom_msg);
        uint64_t capb = r->oom_capacity ? r->oom_capacity : r->capacity;
        fsc_size_format(r->oom_allocated, b, sizeof b);
        fsc_size_format(r->oom_reserved, d, sizeof d);
        uint64_t room = capb > r->oom_allocated ? capb - r->oom_allocated : 0;
        fsc_size_format(room, e, sizeof e);
        fsc_size_format(r->oom_rounded, a, sizeof a);
        fprintf(out, "  at the OOM: allocated %s, reserved %s; capacity - allocated = %s %s "
                     "the rounded request %s (%s)\n",
                b, d, e, room >= r->oom_rounded ? ">=" : "<", a,
                room >= r->oom_rounded ? "enough free memory, but fragmented"
                                       : "not enough memory");
    } else {
        fprintf(out, "completed %d steps, no OOM\n", r->wl.steps_done);
    }
    fsc_size_format((uint64_t)r->peak_allocated, a, sizeof a);
    fsc_size_format((uint64_t)r->peak_reserved, b, sizeof b);
    fprintf(out, "peak allocated %lld bytes (%s), peak reserved %lld bytes (%s), "
                 "alloc retries %lld, OOMs %lld\n",
            (long long)r->peak_allocated, a, (long long)r->peak_reserved, b,
            (long long)r->num_alloc_retries, (long long)r->num_ooms);
    fputs(r->stats_text, out);
    if (r->stats_text[0] && r->stats_text[strlen(r->stats_text) - 1] != '\n')
        fputc('\n', out);
    int steps = r->wl.steps_done + (r->oom ? 1 : 0);
    fprintf(out, "events: %llu (%.0f per step)\n", (unsigned long long)r->events,
            steps ? (double)r->events / steps : 0.0);
    if (r->trace != NULL)
        fprintf(out, "trace: %s\n", r->trace);
}
