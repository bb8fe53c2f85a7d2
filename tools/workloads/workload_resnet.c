/*
 * workload_resnet.c — ResNet-50 (torchvision layout: bottleneck blocks
 * [3, 4, 6, 3], stride in the 3x3 conv) trained with SGD + momentum in fp32,
 * batch drawn from {32, 48, 64} and resolution from {160, 192, 224} each step.
 *
 * What autograd keeps: every conv output (batchnorm's input), every
 * batchnorm output (ReLU is in place, so it doubles as the next conv's
 * input) and batchnorm's saved mean / inverse std, the max-pool indices.
 * Convolutions allocate a cuDNN-style workspace that is freed right away;
 * the downsample branch's batchnorm output is added in place into the main
 * branch and freed. Backward allocates one gradient per conv/bn/ReLU and
 * residual sum, weight gradients (set_to_none=True: freed by zero_grad),
 * and the momentum buffers appear at the first optimizer step (later steps
 * update in place: no allocations).
 *
 * Against the real 12-step resnet50_varbatch snapshot (docs/workloads.md):
 * 320 parameter/buffer tensors at init like torchvision's model, 664
 * allocations a step vs 675-691, and over 12 steps a peak of 4.09 GiB
 * allocated / 6.69 GiB reserved vs the real 4.15 / 6.56 GiB.
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NUNIT = 53, NBLOCK = 16, NPARAM = 3 * NUNIT + 2, NCLASS = 1000 };

/* One conv followed by its batchnorm. */
typedef struct unit {
    int cin, cout, k, stride;
    int pconv;            /* parameter index of the conv weight; bn w/b follow */
    uint64_t out_bytes;   /* this step's output size */
    fsc__wl_buf_t conv, bn, mean, invstd;
} unit_t;

typedef struct block {
    int u1, u2, u3, uds;  /* unit indices; uds = -1 without downsample */
} block_t;

typedef struct resnet {
    fsc__wl_t *w;
    unit_t unit[NUNIT];
    block_t block[NBLOCK];
    int nunit, nblock;
    uint64_t psize[NPARAM];
    fsc__wl_buf_t param[NPARAM], grad[NPARAM], momentum[NPARAM];
    fsc__wl_buf_t buffers[3 * NUNIT];
    uint64_t b, r;
    fsc__wl_buf_t images, labels, prev_images, prev_labels, prev_logits;
    fsc__wl_buf_t mp_out, mp_idx, pooled, logits, logp, loss, total_w;
} resnet_t;

static int add_unit(resnet_t *n, int cin, int cout, int k, int stride, int *np)
{
    unit_t *u = &n->unit[n->nunit];
    u->cin = cin;
    u->cout = cout;
    u->k = k;
    u->stride = stride;
    u->pconv = *np;
    n->psize[(*np)++] = (uint64_t)cout * cin * k * k * 4;
    n->psize[(*np)++] = (uint64_t)cout * 4;
    n->psize[(*np)++] = (uint64_t)cout * 4;
    return n->nunit++;
}

static void build(resnet_t *n)
{
    static const int nblocks[4] = {3, 4, 6, 3};
    int np = 0, cin = 64;
    add_unit(n, 3, 64, 7, 2, &np);
    for (int stage = 0; stage < 4; stage++) {
        int width = 64 << stage, cout = 4 * width;
        for (int i = 0; i < nblocks[stage]; i++) {
            block_t *b = &n->block[n->nblock++];
            int stride = (i == 0 && stage > 0) ? 2 : 1;
            b->u1 = add_unit(n, cin, width, 1, 1, &np);
            b->u2 = add_unit(n, width, width, 3, stride, &np);
            b->u3 = add_unit(n, width, cout, 1, 1, &np);
            b->uds = i == 0 ? add_unit(n, cin, cout, 1, stride, &np) : -1;
            cin = cout;
        }
    }
    n->psize[np++] = (uint64_t)NCLASS * 2048 * 4; /* fc */
    n->psize[np++] = (uint64_t)NCLASS * 4;
}

static void grad(resnet_t *n, int i)
{
    if (n->grad[i].addr == 0)
        fsc__wl_alloc(n->w, &n->grad[i], n->psize[i]);
}

static uint64_t ws_bytes(const unit_t *u)
{
    /* 1x1 convs run as GEMMs with a token workspace; larger kernels get
     * one sized like their output plus the unrolled filter. */
    return u->k == 1 ? 400 : u->out_bytes + (uint64_t)u->k * u->k * u->cin * u->cout * 4 + 16;
}

/* conv + batchnorm forward; hw: the output's side. */
static void unit_forward(resnet_t *n, int ui, uint64_t hw)
{
    fsc__wl_t *w = n->w;
    unit_t *u = &n->unit[ui];
    fsc__wl_buf_t ws = {0, 0};
    u->out_bytes = n->b * (uint64_t)u->cout * hw * hw * 4;
    fsc__wl_alloc(w, &u->conv, u->out_bytes);
    fsc__wl_alloc(w, &ws, ws_bytes(u));
    fsc__wl_free(w, &ws);
    fsc__wl_alloc(w, &u->bn, u->out_bytes);
    fsc__wl_alloc(w, &u->mean, (uint64_t)u->cout * 4);
    fsc__wl_alloc(w, &u->invstd, (uint64_t)u->cout * 4);
}

/* batchnorm + conv backward. dout: gradient of the bn output (consumed).
 * din: receives the gradient of the conv input (NULL: none needed). */
static void unit_backward(resnet_t *n, int ui, fsc__wl_buf_t *dout, fsc__wl_buf_t *din,
                          uint64_t in_bytes)
{
    fsc__wl_t *w = n->w;
    unit_t *u = &n->unit[ui];
    fsc__wl_buf_t dconv = {0, 0}, ws = {0, 0};
    fsc__wl_alloc(w, &dconv, u->out_bytes);
    grad(n, u->pconv + 1);
    grad(n, u->pconv + 2);
    fsc__wl_free(w, &u->conv);
    fsc__wl_free(w, &u->mean);
    fsc__wl_free(w, &u->invstd);
    fsc__wl_free(w, dout);
    if (din != NULL)
        fsc__wl_alloc(w, din, in_bytes);
    fsc__wl_alloc(w, &ws, ws_bytes(u));
    grad(n, u->pconv);
    fsc__wl_free(w, &ws);
    fsc__wl_free(w, &dconv);
}

/* ReLU backward (in place forward: the saved output is the bn output). */
static void relu_backward(resnet_t *n, fsc__wl_buf_t *d, unit_t *u)
{
    fsc__wl_buf_t dr = {0, 0};
    fsc__wl_alloc(n->w, &dr, u->out_bytes);
    fsc__wl_free(n->w, d);
    fsc__wl_free(n->w, &u->bn);
    *d = dr;
}

static void forward(resnet_t *n)
{
    fsc__wl_t *w = n->w;
    uint64_t hw = n->r / 2;
    fsc__wl_push(w, "forward");
    fsc__wl_push(w, "stem");
    unit_forward(n, 0, hw);
    hw /= 2;
    fsc__wl_alloc(w, &n->mp_out, n->b * 64 * hw * hw * 4);
    fsc__wl_alloc(w, &n->mp_idx, n->b * 64 * hw * hw * 8);
    fsc__wl_pop(w);
    for (int bi = 0; bi < n->nblock && w->rc == 0; bi++) {
        block_t *b = &n->block[bi];
        fsc__wl_pushf(w, "block.%d", bi);
        unit_forward(n, b->u1, hw);
        if (n->unit[b->u2].stride == 2)
            hw /= 2;
        unit_forward(n, b->u2, hw);
        unit_forward(n, b->u3, hw);
        if (b->uds >= 0) {
            fsc__wl_push(w, "downsample");
            unit_forward(n, b->uds, hw);
            fsc__wl_free(w, &n->unit[b->uds].bn); /* added in place */
            fsc__wl_pop(w);
        }
        fsc__wl_pop(w);
    }
    fsc__wl_push(w, "head");
    fsc__wl_alloc(w, &n->pooled, n->b * 2048 * 4);
    fsc__wl_alloc(w, &n->logits, n->b * NCLASS * 4);
    fsc__wl_alloc(w, &n->logp, n->b * NCLASS * 4);
    fsc__wl_alloc(w, &n->loss, 4);
    fsc__wl_alloc(w, &n->total_w, 4);
    fsc__wl_free(w, &n->prev_logits);
    fsc__wl_pop(w);
    fsc__wl_pop(w);
}

static void block_backward(resnet_t *n, int bi, fsc__wl_buf_t *d)
{
    fsc__wl_t *w = n->w;
    block_t *b = &n->block[bi];
    unit_t *u1 = &n->unit[b->u1], *u2 = &n->unit[b->u2], *u3 = &n->unit[b->u3];
    fsc__wl_buf_t dmain = {0, 0}, dds = {0, 0}, dx = {0, 0}, t = {0, 0};
    fsc__wl_pushf(w, "block.%d", bi);
    /* u1 is 1x1 with stride 1: the block input has its side */
    uint64_t in_bytes = u1->out_bytes / (uint64_t)u1->cout * (uint64_t)u1->cin;

    relu_backward(n, d, u3); /* d: gradient at the residual sum */
    unit_backward(n, b->u3, &(fsc__wl_buf_t){0, 0}, &t, u2->out_bytes);
    relu_backward(n, &t, u2);
    fsc__wl_buf_t t2 = {0, 0};
    unit_backward(n, b->u2, &t, &t2, u1->out_bytes);
    relu_backward(n, &t2, u1);
    unit_backward(n, b->u1, &t2, &dmain, in_bytes);
    if (b->uds >= 0) {
        fsc__wl_push(w, "downsample");
        unit_backward(n, b->uds, &(fsc__wl_buf_t){0, 0}, &dds, in_bytes);
        fsc__wl_pop(w);
    }
    fsc__wl_alloc(w, &dx, in_bytes); /* main + identity gradients summed */
    fsc__wl_free(w, &dmain);
    fsc__wl_free(w, &dds);
    fsc__wl_free(w, d);
    *d = dx;
    fsc__wl_pop(w);
}

static void backward(resnet_t *n)
{
    fsc__wl_t *w = n->w;
    fsc__wl_buf_t one = {0, 0}, dlogp = {0, 0}, dlogits = {0, 0}, dfeat = {0, 0};
    fsc__wl_buf_t d = {0, 0};
    fsc__wl_push(w, "backward");
    fsc__wl_push(w, "head");
    fsc__wl_alloc(w, &one, 4);
    fsc__wl_alloc(w, &dlogp, n->b * NCLASS * 4);
    fsc__wl_free(w, &one);
    fsc__wl_free(w, &n->loss);
    fsc__wl_free(w, &n->total_w);
    fsc__wl_alloc(w, &dlogits, n->b * NCLASS * 4);
    fsc__wl_free(w, &dlogp);
    fsc__wl_free(w, &n->logp);
    fsc__wl_alloc(w, &dfeat, n->b * 2048 * 4);
    grad(n, NPARAM - 2);
    grad(n, NPARAM - 1);
    fsc__wl_free(w, &dlogits);
    fsc__wl_free(w, &n->pooled);
    fsc__wl_alloc(w, &d, n->unit[n->block[n->nblock - 1].u3].out_bytes); /* avgpool */
    fsc__wl_free(w, &dfeat);
    fsc__wl_pop(w);

    for (int bi = n->nblock - 1; bi >= 0 && w->rc == 0; bi--)
        block_backward(n, bi, &d);

    fsc__wl_push(w, "stem");
    fsc__wl_buf_t dmp = {0, 0};
    fsc__wl_alloc(w, &dmp, n->unit[0].out_bytes); /* max-pool backward */
    fsc__wl_free(w, &d);
    fsc__wl_free(w, &n->mp_out);
    fsc__wl_free(w, &n->mp_idx);
    relu_backward(n, &dmp, &n->unit[0]);
    unit_backward(n, 0, &dmp, NULL, 0);
    fsc__wl_pop(w);
    fsc__wl_pop(w);
}

static void optimizer_step(resnet_t *n)
{
    fsc__wl_t *w = n->w;
    fsc__wl_push(w, "optimizer");
    for (int i = 0; i < NPARAM; i++) /* momentum_buffer = grad.clone() once */
        if (n->momentum[i].addr == 0)
            fsc__wl_alloc(w, &n->momentum[i], n->psize[i]);
    fsc__wl_pop(w);
    fsc__wl_push(w, "zero_grad");
    for (int i = 0; i < NPARAM; i++)
        fsc__wl_free(w, &n->grad[i]);
    fsc__wl_pop(w);
}

static void train_step(resnet_t *n);

static void step_of(void *ctx)
{
    train_step(ctx);
}

static void train_step(resnet_t *n)
{
    static const uint64_t batches[3] = {32, 48, 64}, res[3] = {160, 192, 224};
    fsc__wl_t *w = n->w;
    n->b = batches[fsc__wl_rand(w, 0, 2)];
    n->r = res[fsc__wl_rand(w, 0, 2)];
    fsc__wl_push(w, "step");
    fsc__wl_push(w, "data");
    fsc__wl_alloc(w, &n->images, n->b * 3 * n->r * n->r * 4);
    fsc__wl_free(w, &n->prev_images);
    fsc__wl_alloc(w, &n->labels, n->b * 8);
    fsc__wl_free(w, &n->prev_labels);
    fsc__wl_pop(w);
    forward(n);
    if (w->rc == 0)
        backward(n);
    if (w->rc == 0)
        optimizer_step(n);
    n->prev_images = n->images;
    n->prev_labels = n->labels;
    n->prev_logits = n->logits;
    memset(&n->images, 0, sizeof n->images);
    memset(&n->labels, 0, sizeof n->labels);
    memset(&n->logits, 0, sizeof n->logits);
    fsc__wl_pop(w);
}

int fsc__wl_resnet(fsc__wl_t *w, int steps)
{
    resnet_t *n = calloc(1, sizeof *n);
    if (n == NULL)
        return w->rc = FSC_ENOMEM;
    n->w = w;
    build(n);

    /* model.cuda(): per module its parameters, then its buffers
     * (running_mean, running_var, num_batches_tracked). */
    fsc__wl_push(w, "init");
    fsc__wl_push(w, "params");
    for (int ui = 0; ui < n->nunit; ui++) {
        int p = n->unit[ui].pconv;
        uint64_t c = (uint64_t)n->unit[ui].cout * 4;
        fsc__wl_alloc(w, &n->param[p], n->psize[p]);
        fsc__wl_alloc(w, &n->param[p + 1], n->psize[p + 1]);
        fsc__wl_alloc(w, &n->param[p + 2], n->psize[p + 2]);
        fsc__wl_alloc(w, &n->buffers[3 * ui], c);
        fsc__wl_alloc(w, &n->buffers[3 * ui + 1], c);
        fsc__wl_alloc(w, &n->buffers[3 * ui + 2], 8);
    }
    fsc__wl_alloc(w, &n->param[NPARAM - 2], n->psize[NPARAM - 2]);
    fsc__wl_alloc(w, &n->param[NPARAM - 1], n->psize[NPARAM - 1]);
    fsc__wl_pop(w);
    fsc__wl_pop(w);

    fsc__wl_steps(w, steps, step_of, n);
    if (w->rc == 0) {
        fsc__wl_free(w, &n->prev_logits);
        fsc__wl_free(w, &n->prev_images);
        fsc__wl_free(w, &n->prev_labels);
    }
    int rc = w->rc;
    free(n);
    return rc;
}
