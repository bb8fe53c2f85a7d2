/*
 * workload_gpt2.c — GPT-2 small trained with AdamW in fp32, batch 8, with a
 * sequence length drawn from {128, 256, ..., 1024} each step.
 *
 * The allocation pattern follows what PyTorch's autograd does with a
 * Hugging Face-style GPT-2 (eager attention, tied lm_head):
 *  - parameters: one buffer per weight/bias with its real shape (148);
 *  - forward: per layer the buffers autograd saves (layernorm outputs and
 *    statistics, qkv, attention probabilities [b,h,s,s], merged heads,
 *    dropout masks, residual sums, MLP 4x hidden and GELU output) stay live
 *    until backward; scores, scaled/masked scores, projections and dropout
 *    outputs are temporaries;
 *  - the loss keeps logits [b,s,50257] (the training loop holds them until
 *    the next step's loss is computed), the log-softmax, and in backward the
 *    two [b,s,50257] gradients exist together with them;
 *  - backward frees the saved buffers in reverse layer order and allocates
 *    the gradients (set_to_none=True: new gradient buffers every step, freed
 *    by zero_grad), plus layernorm partial-sum workspaces;
 *  - AdamW (foreach): exp_avg/exp_avg_sq created at the first step, then one
 *    temporary per parameter (the denominator) each step.
 * Attention-probability dropout is left out (only embedding and residual
 * dropout), which keeps the peak at seq 1024 near the real run's.
 *
 * Against the real 24-step gpt2_varlen snapshot (docs/workloads.md has the
 * numbers): 861 allocations a step vs 1054-1068, the same dominant size
 * range (1-16 MiB: 38% vs 37% of all allocations), and the peak in a seq-1024
 * step: 16.72 GiB vs 16.23 GiB allocated over 24 steps.
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    B = 8,          /* batch */
    H = 12,         /* heads */
    D = 768,        /* width */
    FF = 4 * 768,   /* MLP hidden */
    V = 50257,      /* vocabulary */
    NPOS = 1024,    /* positions */
    NL = 12,        /* layers */
    PER_LAYER = 12, /* parameter tensors per layer */
    NPARAM = 2 + NL * PER_LAYER + 2
};

/* Index of a layer parameter: ln_1.w, ln_1.b, attn.c_attn.w/b, attn.c_proj.w/b,
 * ln_2.w, ln_2.b, mlp.c_fc.w/b, mlp.c_proj.w/b — the order of named_parameters. */
enum { LN1W, LN1B, ATTNW, ATTNB, APROJW, APROJB, LN2W, LN2B, FCW, FCB, MPROJW, MPROJB };
#define P_WTE 0
#define P_WPE 1
#define P_LAYER(l, k) (2 + (l) * PER_LAYER + (k))
#define P_LNFW (NPARAM - 2)
#define P_LNFB (NPARAM - 1)

typedef struct layer_act {
    fsc__wl_buf_t ln1, ln1_mean, ln1_rstd, qkv, probs, merged, mask1, h1;
    fsc__wl_buf_t ln2, ln2_mean, ln2_rstd, fc, gelu, mask2, out;
} layer_act_t;

typedef struct gpt2 {
    fsc__wl_t *w;
    uint64_t psize[NPARAM];
    fsc__wl_buf_t param[NPARAM], grad[NPARAM], exp_avg[NPARAM], exp_avg_sq[NPARAM];
    fsc__wl_buf_t ids, prev_ids, prev_logits;
    /* per-step activations */
    uint64_t s;
    fsc__wl_buf_t pos_ids, mask0, h0, lnf, lnf_mean, lnf_rstd, logits, labels, logp, loss, total_w;
    layer_act_t layer[NL];
} gpt2_t;

static void param_sizes(uint64_t *ps)
{
    const uint64_t f = 4; /* fp32 */
    ps[P_WTE] = (uint64_t)V * D * f;
    ps[P_WPE] = (uint64_t)NPOS * D * f;
    for (int l = 0; l < NL; l++) {
        uint64_t *p = ps + P_LAYER(l, 0);
        p[LN1W] = p[LN1B] = D * f;
        p[ATTNW] = (uint64_t)D * 3 * D * f;
        p[ATTNB] = 3 * D * f;
        p[APROJW] = (uint64_t)D * D * f;
        p[APROJB] = D * f;
        p[LN2W] = p[LN2B] = D * f;
        p[FCW] = (uint64_t)D * FF * f;
        p[FCB] = FF * f;
        p[MPROJW] = (uint64_t)FF * D * f;
        p[MPROJB] = D * f;
    }
    ps[P_LNFW] = ps[P_LNFB] = D * f;
}

/* A gradient buffer for parameter i (created by the first contributor). */
static void grad(gpt2_t *g, int i)
{
    if (g->grad[i].addr == 0)
        fsc__wl_alloc(g->w, &g->grad[i], g->psize[i]);
}

/* Layernorm backward: input gradient, weight/bias gradients and two
 * partial-sum workspaces reduced into them. */
static void layernorm_backward(gpt2_t *g, fsc__wl_buf_t *dx, int pw, int pb)
{
    fsc__wl_t *w = g->w;
    uint64_t U = B * g->s * D * 4;
    fsc__wl_buf_t ws_g = {0, 0}, ws_b = {0, 0};
    fsc__wl_alloc(w, dx, U);
    fsc__wl_alloc(w, &ws_g, 32 * D * 4);
    fsc__wl_alloc(w, &ws_b, 32 * D * 4);
    grad(g, pw);
    grad(g, pb);
    fsc__wl_free(w, &ws_b);
    fsc__wl_free(w, &ws_g);
}

static void layer_forward(gpt2_t *g, int l)
{
    fsc__wl_t *w = g->w;
    layer_act_t *a = &g->layer[l];
    uint64_t s = g->s, U = B * s * D * 4, P = (uint64_t)B * H * s * s * 4, S = B * s * 4;
    fsc__wl_buf_t scores = {0, 0}, scaled = {0, 0}, ctx = {0, 0}, proj = {0, 0}, drop = {0, 0};
    fsc__wl_pushf(w, "layer.%d", l);

    fsc__wl_push(w, "ln_1");
    fsc__wl_alloc(w, &a->ln1, U);
    fsc__wl_alloc(w, &a->ln1_mean, S);
    fsc__wl_alloc(w, &a->ln1_rstd, S);
    fsc__wl_pop(w);

    fsc__wl_push(w, "attn");
    fsc__wl_alloc(w, &a->qkv, 3 * U);
    fsc__wl_alloc(w, &scores, P);    /* q @ k^T */
    fsc__wl_alloc(w, &scaled, P);    /* / sqrt(d), causal mask */
    fsc__wl_free(w, &scores);
    fsc__wl_alloc(w, &a->probs, P);  /* softmax, saved */
    fsc__wl_free(w, &scaled);
    fsc__wl_alloc(w, &ctx, U);       /* probs @ v */
    fsc__wl_alloc(w, &a->merged, U); /* merge heads (contiguous) */
    fsc__wl_free(w, &ctx);
    fsc__wl_alloc(w, &proj, U);      /* c_proj */
    fsc__wl_alloc(w, &a->mask1, U / 4);
    fsc__wl_alloc(w, &drop, U);
    fsc__wl_free(w, &proj);
    fsc__wl_pop(w);

    fsc__wl_alloc(w, &a->h1, U);     /* x + attn */
    fsc__wl_free(w, &drop);

    fsc__wl_push(w, "ln_2");
    fsc__wl_alloc(w, &a->ln2, U);
    fsc__wl_alloc(w, &a->ln2_mean, S);
    fsc__wl_alloc(w, &a->ln2_rstd, S);
    fsc__wl_pop(w);

    fsc__wl_push(w, "mlp");
    fsc__wl_alloc(w, &a->fc, 4 * U);
    fsc__wl_alloc(w, &a->gelu, 4 * U);
    fsc__wl_alloc(w, &proj, U);
    fsc__wl_alloc(w, &a->mask2, U / 4);
    fsc__wl_alloc(w, &drop, U);
    fsc__wl_free(w, &proj);
    fsc__wl_pop(w);

    fsc__wl_alloc(w, &a->out, U);    /* h1 + mlp */
    fsc__wl_free(w, &drop);
    fsc__wl_pop(w);
}

/* dh: gradient of the layer's output (consumed); x: the layer's input,
 * freed once its last saved use is done. Returns the input gradient in dh. */
static void layer_backward(gpt2_t *g, int l, fsc__wl_buf_t *dh, fsc__wl_buf_t *x)
{
    fsc__wl_t *w = g->w;
    layer_act_t *a = &g->layer[l];
    uint64_t s = g->s, U = B * s * D * 4, P = (uint64_t)B * H * s * s * 4;
    fsc__wl_buf_t d2 = {0, 0}, dg = {0, 0}, dfc = {0, 0}, dln = {0, 0}, dpart = {0, 0};
    fsc__wl_buf_t dh1 = {0, 0}, d1 = {0, 0}, dm = {0, 0}, dctx = {0, 0}, dprobs = {0, 0};
    fsc__wl_buf_t dv = {0, 0}, dscaled = {0, 0}, dscores = {0, 0}, dq = {0, 0}, dk = {0, 0};
    fsc__wl_buf_t dqkv = {0, 0}, dx = {0, 0};
    fsc__wl_pushf(w, "layer.%d", l);

    fsc__wl_push(w, "mlp");
    fsc__wl_alloc(w, &d2, U); /* dropout backward */
    fsc__wl_free(w, &a->mask2);
    fsc__wl_alloc(w, &dg, 4 * U);
    grad(g, P_LAYER(l, MPROJW));
    grad(g, P_LAYER(l, MPROJB));
    fsc__wl_free(w, &d2);
    fsc__wl_free(w, &a->gelu);
    fsc__wl_alloc(w, &dfc, 4 * U); /* gelu backward */
    fsc__wl_free(w, &dg);
    fsc__wl_free(w, &a->fc);
    fsc__wl_alloc(w, &dln, U);
    grad(g, P_LAYER(l, FCW));
    grad(g, P_LAYER(l, FCB));
    fsc__wl_free(w, &dfc);
    fsc__wl_free(w, &a->ln2);
    fsc__wl_pop(w);

    fsc__wl_push(w, "ln_2");
    layernorm_backward(g, &dpart, P_LAYER(l, LN2W), P_LAYER(l, LN2B));
    fsc__wl_free(w, &dln);
    fsc__wl_free(w, &a->ln2_mean);
    fsc__wl_free(w, &a->ln2_rstd);
    fsc__wl_alloc(w, &dh1, U); /* residual: both branches' gradients summed */
    fsc__wl_free(w, &dpart);
    fsc__wl_free(w, dh);
    fsc__wl_free(w, &a->h1);
    fsc__wl_pop(w);

    fsc__wl_push(w, "attn");
    fsc__wl_alloc(w, &d1, U);
    fsc__wl_free(w, &a->mask1);
    fsc__wl_alloc(w, &dm, U);
    grad(g, P_LAYER(l, APROJW));
    grad(g, P_LAYER(l, APROJB));
    fsc__wl_free(w, &d1);
    fsc__wl_free(w, &a->merged);
    fsc__wl_alloc(w, &dctx, U); /* split heads */
    fsc__wl_free(w, &dm);
    fsc__wl_alloc(w, &dprobs, P);
    fsc__wl_alloc(w, &dv, U);
    fsc__wl_free(w, &dctx);
    fsc__wl_alloc(w, &dscaled, P); /* softmax backward */
    fsc__wl_free(w, &dprobs);
    fsc__wl_free(w, &a->probs);
    fsc__wl_alloc(w, &dscores, P);
    fsc__wl_free(w, &dscaled);
    fsc__wl_alloc(w, &dq, U);
    fsc__wl_alloc(w, &dk, U);
    fsc__wl_free(w, &dscores);
    fsc__wl_alloc(w, &dqkv, 3 * U);
    fsc__wl_free(w, &dq);
    fsc__wl_free(w, &dk);
    fsc__wl_free(w, &dv);
    fsc__wl_alloc(w, &dln, U);
    grad(g, P_LAYER(l, ATTNW));
    grad(g, P_LAYER(l, ATTNB));
    fsc__wl_free(w, &dqkv);
    fsc__wl_free(w, &a->qkv);
    fsc__wl_free(w, &a->ln1);
    fsc__wl_pop(w);

    fsc__wl_push(w, "ln_1");
    layernorm_backward(g, &dpart, P_LAYER(l, LN1W), P_LAYER(l, LN1B));
    fsc__wl_free(w, &dln);
    fsc__wl_free(w, &a->ln1_mean);
    fsc__wl_free(w, &a->ln1_rstd);
    fsc__wl_alloc(w, &dx, U);
    fsc__wl_free(w, &dpart);
    fsc__wl_free(w, &dh1);
    fsc__wl_free(w, x);
    fsc__wl_pop(w);

    *dh = dx;
    fsc__wl_pop(w);
}

static void forward(gpt2_t *g)
{
    fsc__wl_t *w = g->w;
    uint64_t s = g->s, U = B * s * D * 4, S = B * s * 4, L = (uint64_t)B * s * V * 4;
    fsc__wl_buf_t tok = {0, 0}, pos = {0, 0}, sum = {0, 0};
    fsc__wl_push(w, "forward");

    fsc__wl_push(w, "embed");
    fsc__wl_alloc(w, &tok, U);
    fsc__wl_alloc(w, &g->pos_ids, s * 8);
    fsc__wl_alloc(w, &pos, s * D * 4);
    fsc__wl_alloc(w, &sum, U);
    fsc__wl_free(w, &tok);
    fsc__wl_free(w, &pos);
    fsc__wl_alloc(w, &g->mask0, U / 4);
    fsc__wl_alloc(w, &g->h0, U);
    fsc__wl_free(w, &sum);
    fsc__wl_pop(w);

    for (int l = 0; l < NL && w->rc == 0; l++)
        layer_forward(g, l);

    fsc__wl_push(w, "ln_f");
    fsc__wl_alloc(w, &g->lnf, U);
    fsc__wl_alloc(w, &g->lnf_mean, S);
    fsc__wl_alloc(w, &g->lnf_rstd, S);
    fsc__wl_pop(w);

    fsc__wl_push(w, "lm_head");
    fsc__wl_alloc(w, &g->logits, L);
    fsc__wl_pop(w);

    fsc__wl_push(w, "loss");
    fsc__wl_alloc(w, &g->labels, B * s * 8); /* shifted labels, contiguous */
    fsc__wl_alloc(w, &g->logp, L);           /* log_softmax, saved */
    fsc__wl_alloc(w, &g->loss, 4);
    fsc__wl_alloc(w, &g->total_w, 4);
    /* the loop rebinds `outputs`: last step's logits go only now */
    fsc__wl_free(w, &g->prev_logits);
    fsc__wl_pop(w);

    fsc__wl_pop(w);
}

static void backward(gpt2_t *g)
{
    fsc__wl_t *w = g->w;
    uint64_t s = g->s, U = B * s * D * 4, L = (uint64_t)B * s * V * 4;
    fsc__wl_buf_t one = {0, 0}, dlogp = {0, 0}, dlogits = {0, 0}, dlnf = {0, 0};
    fsc__wl_buf_t dh = {0, 0}, de = {0, 0}, dpos = {0, 0}, dwte = {0, 0};
    fsc__wl_push(w, "backward");

    fsc__wl_push(w, "loss");
    fsc__wl_alloc(w, &one, 4);
    fsc__wl_alloc(w, &dlogp, L);
    fsc__wl_free(w, &one);
    fsc__wl_free(w, &g->loss);
    fsc__wl_alloc(w, &dlogits, L);
    fsc__wl_free(w, &dlogp);
    fsc__wl_free(w, &g->logp);
    fsc__wl_free(w, &g->total_w);
    fsc__wl_free(w, &g->labels);
    fsc__wl_pop(w);

    fsc__wl_push(w, "lm_head");
    fsc__wl_alloc(w, &dlnf, U);
    grad(g, P_WTE); /* tied with wte: first contributor creates it */
    fsc__wl_free(w, &dlogits);
    fsc__wl_free(w, &g->lnf);
    fsc__wl_pop(w);

    fsc__wl_push(w, "ln_f");
    layernorm_backward(g, &dh, P_LNFW, P_LNFB);
    fsc__wl_free(w, &dlnf);
    fsc__wl_free(w, &g->lnf_mean);
    fsc__wl_free(w, &g->lnf_rstd);
    fsc__wl_free(w, &g->layer[NL - 1].out); /* ln_f's input */
    fsc__wl_pop(w);

    for (int l = NL - 1; l >= 0 && w->rc == 0; l--)
        layer_backward(g, l, &dh, l > 0 ? &g->layer[l - 1].out : &g->h0);

    fsc__wl_push(w, "embed");
    fsc__wl_alloc(w, &de, U); /* dropout backward */
    fsc__wl_free(w, &g->mask0);
    fsc__wl_free(w, &dh);
    fsc__wl_alloc(w, &dpos, s * D * 4); /* summed over the batch */
    grad(g, P_WPE);
    fsc__wl_free(w, &dpos);
    fsc__wl_alloc(w, &dwte, g->psize[P_WTE]); /* dense embedding grad, added into wte.grad */
    fsc__wl_free(w, &dwte);
    fsc__wl_free(w, &de);
    fsc__wl_free(w, &g->pos_ids);
    fsc__wl_pop(w);

    fsc__wl_pop(w);
}

static void optimizer_step(gpt2_t *g)
{
    fsc__wl_t *w = g->w;
    fsc__wl_buf_t denom[NPARAM];
    memset(denom, 0, sizeof denom);
    fsc__wl_push(w, "optimizer");
    for (int i = 0; i < NPARAM; i++)
        if (g->exp_avg[i].addr == 0 && w->rc == 0) { /* lazy state, first step */
            fsc__wl_alloc(w, &g->exp_avg[i], g->psize[i]);
            fsc__wl_alloc(w, &g->exp_avg_sq[i], g->psize[i]);
        }
    for (int i = 0; i < NPARAM; i++) /* foreach: sqrt(exp_avg_sq) for all */
        fsc__wl_alloc(w, &denom[i], g->psize[i]);
    for (int i = 0; i < NPARAM; i++)
        fsc__wl_free(w, &denom[i]);
    fsc__wl_pop(w);

    fsc__wl_push(w, "zero_grad"); /* set_to_none=True */
    for (int i = 0; i < NPARAM; i++)
        fsc__wl_free(w, &g->grad[i]);
    fsc__wl_pop(w);
}

static void train_step(gpt2_t *g);

static void step_of(void *ctx)
{
    train_step(ctx);
}

static void train_step(gpt2_t *g)
{
    fsc__wl_t *w = g->w;
    g->s = 128 * fsc__wl_rand(w, 1, 8);
    fsc__wl_push(w, "step");
    fsc__wl_push(w, "data");
    fsc__wl_alloc(w, &g->ids, B * g->s * 8);
    fsc__wl_free(w, &g->prev_ids);
    fsc__wl_pop(w);
    forward(g);
    if (w->rc == 0)
        backward(g);
    if (w->rc == 0)
        optimizer_step(g);
    g->prev_ids = g->ids;
    g->prev_logits = g->logits;
    memset(&g->ids, 0, sizeof g->ids);
    memset(&g->logits, 0, sizeof g->logits);
    fsc__wl_pop(w);
}

int fsc__wl_gpt2(fsc__wl_t *w, int steps)
{
    gpt2_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return w->rc = FSC_ENOMEM;
    g->w = w;
    param_sizes(g->psize);

    fsc__wl_push(w, "init");
    fsc__wl_push(w, "params");
    for (int i = 0; i < NPARAM; i++)
        fsc__wl_alloc(w, &g->param[i], g->psize[i]);
    fsc__wl_pop(w);
    fsc__wl_pop(w);

    fsc__wl_steps(w, steps, step_of, g);
    if (w->rc == 0) {
        /* the loop ends: its last batch and outputs go out of scope */
        fsc__wl_free(w, &g->prev_logits);
        fsc__wl_free(w, &g->prev_ids);
    }
    int rc = w->rc;
    free(g);
    return rc;
}
