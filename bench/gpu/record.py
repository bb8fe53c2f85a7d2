"""Record one real PyTorch allocator run on a GPU: a memory snapshot
(`_record_memory_history` + `_dump_snapshot`) and, beside it, a JSON file with
`torch.cuda.memory_stats()`, the outcome (ok / oom, PyTorch's message), the
device's memory, the settings and what the snapshot holds.

  python3 bench/gpu/record.py SCENARIO OUTDIR [--cap-gib G] [--name NAME] [--steps N]

Scenarios (each a habit of real training code):
  gpt2             GPT-2 (transformers, random init, AdamW), sequence length drawn per step
  gpt2_emptycache  the same, calling torch.cuda.empty_cache() every 3 steps
  ckpt             GPT-2 with gradient checkpointing
  graphed          an MLP wrapped in torch.cuda.make_graphed_callables (a CUDA-graph private pool)
  mempool          allocations under torch.cuda.use_mem_pool(MemPool()), then the pool released
  mempool_live     the same, snapshot taken while the pools still hold memory
  mempool_oom      a MemPool(use_on_oom=True) whose cached blocks serve default-pool requests
                   that the cap (--cap-gib) refuses, until an OOM; MemPool's signature recorded
  mempool_nosplit  a MemPool(no_split=True), if this PyTorch has the option (else outcome error)
  side_stream      work on a side stream, with Tensor.record_stream and pending frees
  compile_ro       torch.compile(mode="reduce-overhead") (CUDA graphs), compile_context recorded;
                   --shapes input shapes in turn (default 2)
  stacks_all       stacks="all" (C++ frames)
  annotations      record_function ranges with global_record_annotations, user metadata
  pinned           pinned host memory recorded (record_pinned_host_memory) if this PyTorch can
  external         raw cudaMalloc behind the allocator's back until --leave-gib is left, then GPT-2
  rank             one pipeline "stage": GPT-2 with --layers layers, RANK from the environment
  moe              a Mixtral-style model (8 experts, top-2 routing, deterministic algorithms),
                   batch and length drawn per step: per-expert token counts make requests of
                   every size
  serve_graphs     a serving loop: one CUDA graph captured per batch size (--shapes sizes, each
                   in its own private pool), then replayed in a random order with eager work
  fsdp2            GPT-2 with every block and the model wrapped by FSDP2's fully_shard, in a
                   one-process NCCL group (all-gathers and reduce-scatters on their own streams)
--max-entries sets _record_memory_history's ring (PyTorch's default is 100000): a run
that makes more entries than that leaves a snapshot that starts mid-run.
Settings come from PYTORCH_CUDA_ALLOC_CONF; --cap-gib sets set_per_process_memory_fraction.
"""
import argparse
import contextlib
import ctypes
import json
import os
import random
import sys
import time
import traceback

ap = argparse.ArgumentParser()
ap.add_argument("scenario")
ap.add_argument("outdir")
ap.add_argument("--name", default="")
ap.add_argument("--cap-gib", type=float, default=0.0)
ap.add_argument("--steps", type=int, default=0)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--min-len", type=int, default=128)
ap.add_argument("--max-len", type=int, default=512)
ap.add_argument("--leave-gib", type=float, default=6.0)
ap.add_argument("--max-entries", type=int, default=3_000_000)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--ckpt-mode", choices=["reentrant", "nonreentrant"], default="reentrant",
                help="ckpt: torch.utils.checkpoint's use_reentrant")
ap.add_argument("--native", default="",
                help="also record with fragscope's native recorder into this trace "
                     "(fragscope_torch.record, module tags through watch)")
ap.add_argument("--native-late", action="store_true",
                help="with --native: start recording after the model is built and one step "
                     "ran (the allocator's state at that moment comes first)")
ap.add_argument("--no-watch", action="store_true",
                help="with --native: no module or optimizer tags (the native trace's tags are "
                     "then the stacks alone, as the snapshot's)")
ap.add_argument("--stacks", default="python", choices=["python", "all"],
                help="_record_memory_history's stacks")
ap.add_argument("--no-history", action="store_true",
                help="do not call _record_memory_history (a run without a snapshot)")
ap.add_argument("--shapes", type=int, default=2,
                help="compile_ro, serve_graphs: how many input shapes")
ap.add_argument("--compile", default="", choices=["", "default", "reduce-overhead"],
                help="gpt2: torch.compile the model in this mode")
args = ap.parse_args()
name = args.name or args.scenario
os.makedirs(args.outdir, exist_ok=True)
base = os.path.join(args.outdir, name)

import torch  # noqa: E402

dev = torch.device("cuda")
total = torch.cuda.get_device_properties(0).total_memory
info = {"name": name, "scenario": args.scenario, "torch": torch.__version__,
        "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "cap_gib": args.cap_gib,
        "device_total": total, "rank": os.environ.get("RANK")}
if args.cap_gib > 0:
    frac = args.cap_gib * (1 << 30) / total
    torch.cuda.set_per_process_memory_fraction(frac)
    info["cap_bytes"] = int(args.cap_gib * (1 << 30))
    info["fraction"] = frac


_fsc = None
if args.native:
    import fragscope_torch as _fsc  # noqa: E402
    if not args.native_late:
        info["native_trace"] = _fsc.record(args.native)


def watch(model):
    if _fsc is not None and not args.no_watch:
        _fsc.watch(model)


def watch_optimizer(opt):
    if _fsc is not None and not args.no_watch:
        _fsc.watch_optimizer(opt)


def start_history(**extra):
    """Start recording; keyword arguments this PyTorch lacks are dropped (and listed)."""
    if args.no_history:
        return
    kw = dict(max_entries=args.max_entries, stacks=args.stacks, context="all")
    kw.update(extra)
    dropped = []
    while True:
        try:
            torch.cuda.memory._record_memory_history(**kw)
            break
        except TypeError as e:
            bad = [k for k in list(kw) if k in str(e) and k not in ("max_entries", "stacks", "context")]
            if not bad:
                raise
            for k in bad:
                kw.pop(k)
                dropped.append(k)
    info["history_kwargs"] = {k: v for k, v in kw.items()}
    info["history_kwargs_unsupported"] = dropped


def gpt2_model(layers, width, ckpt=False):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=layers, n_embd=width, n_head=max(1, width // 64), n_positions=1024)
    m = GPT2LMHeadModel(cfg).to(dev)
    if ckpt:
        # PyTorch 2.11's non-reentrant recomputation failed under memory
        # history with Python stacks (SystemError in dropout), hence the mode.
        m.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": args.ckpt_mode == "reentrant"})
        m.config.use_cache = False
        info["ckpt_mode"] = args.ckpt_mode
    m.train()
    return m, cfg


def lengths(steps):
    rng = random.Random(args.seed)
    return [rng.randint(args.min_len, args.max_len) for _ in range(steps)]


def train_gpt2(steps, ckpt=False, empty_every=0, annotate=False):
    torch.manual_seed(args.seed)
    model, cfg = gpt2_model(args.layers, args.width, ckpt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if not args.native_late:
        watch(model)
        watch_optimizer(opt)
    if args.compile:
        model = torch.compile(model, mode=args.compile)
    info["lens"] = lens = lengths(steps)
    rf = torch.autograd.profiler.record_function if annotate else (lambda n: contextlib.nullcontext())
    set_meta = getattr(torch.cuda.memory, "_set_memory_metadata", None) if annotate else None
    for step, n in enumerate(lens):
        info["step"] = step
        if args.native_late and step == 1:
            info["native_trace"] = _fsc.record(args.native)
            watch(model)
            watch_optimizer(opt)
        if set_meta:
            set_meta(json.dumps({"step": step, "seq_len": n}))
        ids = torch.randint(0, cfg.vocab_size, (args.batch, n), device=dev)
        with rf("forward"):
            loss = model(ids, labels=ids).loss
        with rf("backward"):
            loss.backward()
        with rf("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        del loss, ids
        if empty_every and (step + 1) % empty_every == 0:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            info.setdefault("empty_cache_after_steps", []).append(step)
    torch.cuda.synchronize()


def scenario_graphed():
    steps = args.steps or 10
    torch.manual_seed(0)
    N, D = 256, 2048
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(D, D), torch.nn.ReLU())]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(N, D, device=dev)
    model = torch.cuda.make_graphed_callables(model, (x,))
    for step in range(steps):
        info["step"] = step
        x = torch.randn(N, D, device=dev)
        y = torch.randn(N, D, device=dev)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        # eager work of varying size between graph replays
        junk = torch.empty(int((step % 4 + 1) * 3.3 * (1 << 20)), dtype=torch.uint8, device=dev)
        del junk, loss
    torch.cuda.synchronize()


def scenario_mempool():
    sizes = [(i % 7 + 1) * 700_000 + 512 * i for i in range(40)]
    pool = torch.cuda.MemPool()
    outside = []
    with torch.cuda.use_mem_pool(pool):
        inside = [torch.empty(s, dtype=torch.uint8, device=dev) for s in sizes]
    for s in sizes[:20]:
        outside.append(torch.empty(s * 3, dtype=torch.uint8, device=dev))
    del inside[::2]
    with torch.cuda.use_mem_pool(pool):
        more = [torch.empty(s // 2 + 4096, dtype=torch.uint8, device=dev) for s in sizes[:25]]
        big = torch.empty(64 << 20, dtype=torch.uint8, device=dev)
    pool2 = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool2):
        p2 = [torch.empty(s, dtype=torch.uint8, device=dev) for s in sizes[10:30]]
    del outside[5:15]
    again = [torch.empty(s, dtype=torch.uint8, device=dev) for s in sizes[::3]]
    del inside, more, big, p2
    torch.cuda.synchronize()
    del pool, pool2
    torch.cuda.empty_cache()
    after = [torch.empty(s * 2, dtype=torch.uint8, device=dev) for s in sizes[:10]]
    del after, again, outside
    torch.cuda.synchronize()


def scenario_mempool_live():
    """MemPool use as in a serving loop: the pool lives on and holds memory
    when the snapshot is taken; a second pool is released midway."""
    sizes = [(i % 5 + 1) * 900_000 + 4096 * i for i in range(30)]
    pool = torch.cuda.MemPool()
    keep = []
    for rnd in range(4):
        with torch.cuda.use_mem_pool(pool):
            batch = [torch.empty(s * (rnd + 1) // 2 + 512, dtype=torch.uint8, device=dev) for s in sizes]
        eager = [torch.empty(s * 2, dtype=torch.uint8, device=dev) for s in sizes[rnd::4]]
        keep.append(batch[rnd])
        del batch[::3]
        if rnd == 1:
            tmp = torch.cuda.MemPool()
            with torch.cuda.use_mem_pool(tmp):
                t = [torch.empty(s, dtype=torch.uint8, device=dev) for s in sizes[:12]]
            del t
            torch.cuda.synchronize()
            del tmp
            torch.cuda.empty_cache()
        del batch, eager
    info["pool_id"] = str(pool.id)
    torch.cuda.synchronize()
    globals()["_live_pool"] = (pool, keep)


def mempool_signature():
    """MemPool's and _MemPool's constructor signatures, as this PyTorch has them."""
    import inspect
    out = {}
    for k, f in (("MemPool", torch.cuda.MemPool.__init__), ("_MemPool", torch._C._MemPool.__init__)):
        try:
            out[k] = str(inspect.signature(f))
        except (TypeError, ValueError):
            out[k] = (getattr(f, "__doc__", "") or "")[:400]
    info["mempool_signature"] = out
    return out


def scenario_mempool_oom():
    """The pool's cached blocks are the last resort of default-pool requests
    that the cap refuses (PyTorch's use_on_oom), until nothing fits."""
    mempool_signature()
    pool = torch.cuda.MemPool(use_on_oom=True)
    with torch.cuda.use_mem_pool(pool):
        ts = [torch.empty(s, dtype=torch.uint8, device=dev)
              for s in (24 << 20, 40 << 20, 64 << 20, 3 << 20, 700_000)]
    del ts  # cached in the pool
    info["pool_id"] = str(pool.id)
    keep = []
    globals()["_live_pool"] = (pool, keep)
    for i in range(64):
        info["step"] = i
        keep.append(torch.empty((i % 4 + 1) * (9 << 20) + 4096 * i, dtype=torch.uint8, device=dev))
        if i % 5 == 4:
            del keep[0]
    torch.cuda.synchronize()


def scenario_mempool_nosplit():
    """A pool that never splits a block: each request takes a whole cached block or segment."""
    sig = mempool_signature()
    if "no_split" not in sig.get("MemPool", ""):
        raise RuntimeError("torch.cuda.MemPool has no no_split here: " + sig.get("MemPool", ""))
    pool = torch.cuda.MemPool(no_split=True)
    with torch.cuda.use_mem_pool(pool):
        a = [torch.empty(s, dtype=torch.uint8, device=dev)
             for s in (100_000, 300_000, 1_500_000, 12 << 20, 25 << 20)]
    del a[1], a[2]
    with torch.cuda.use_mem_pool(pool):
        b = [torch.empty(s, dtype=torch.uint8, device=dev) for s in (200_000, 1_000_000, 5 << 20)]
    eager = [torch.empty(s, dtype=torch.uint8, device=dev) for s in (100_000, 3 << 20)]
    info["pool_id"] = str(pool.id)
    torch.cuda.synchronize()
    globals()["_live_pool"] = (pool, a, b, eager)


def scenario_side_stream():
    steps = args.steps or 12
    s = torch.cuda.Stream()
    w = torch.randn(4096, 4096, device=dev)
    for step in range(steps):
        info["step"] = step
        a = torch.randn(int((step % 5 + 2) * (1 << 20)), device=dev)
        with torch.cuda.stream(s):
            s.wait_stream(torch.cuda.current_stream())
            b = a * 2
            c = torch.empty((step % 3 + 1) * (5 << 20), dtype=torch.uint8, device=dev)
            for _ in range(8):   # keep the side stream busy so frees stay pending
                w = torch.tanh(w @ w * 1e-3)
        a.record_stream(s)
        del a
        x = torch.randn(int((step % 4 + 1) * (3 << 20) // 4), device=dev)
        small = [torch.empty(4096 * (i + 1), dtype=torch.uint8, device=dev) for i in range(20)]
        torch.cuda.current_stream().wait_stream(s)
        b.record_stream(torch.cuda.current_stream())
        del b, c, x, small
    torch.cuda.synchronize()


def scenario_compile_ro():
    steps = args.steps or 12
    torch.manual_seed(0)
    D = 1024
    model = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(), torch.nn.Linear(4 * D, D)).to(dev)
    f = torch.compile(model, mode="reduce-overhead")
    with torch.no_grad():
        for step in range(steps):
            info["step"] = step
            x = torch.randn(64 * (1 + step % args.shapes), D, device=dev)
            y = f(x)
            z = y.sum().item()
            del x, y
    info["result"] = z
    torch.cuda.synchronize()


def scenario_moe():
    """Mixtral-style decoder: attention, then 8 SwiGLU experts with top-2
    routing; tokens are gathered per expert, so each expert's requests take
    the size its share of the batch gives (a new size nearly every time)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    F = torch.nn.functional
    torch.manual_seed(args.seed)
    V, D, H, E, K = 32000, args.width, max(1, args.width // 64), 8, 2

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n1 = torch.nn.RMSNorm(D)
            self.qkv = torch.nn.Linear(D, 3 * D, bias=False)
            self.o = torch.nn.Linear(D, D, bias=False)
            self.n2 = torch.nn.RMSNorm(D)
            self.gate = torch.nn.Linear(D, E, bias=False)
            self.w1 = torch.nn.Parameter(torch.randn(E, D, 2 * D) * D ** -0.5)
            self.w3 = torch.nn.Parameter(torch.randn(E, D, 2 * D) * D ** -0.5)
            self.w2 = torch.nn.Parameter(torch.randn(E, 2 * D, D) * (2 * D) ** -0.5)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, t, 3, H, D // H).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, D))
            h = self.n2(x).reshape(-1, D)
            w, idx = torch.topk(F.softmax(self.gate(h), dim=-1), K, dim=-1)
            w = w / w.sum(-1, keepdim=True)
            out = torch.zeros_like(h)
            for e in range(E):
                tok, slot = torch.where(idx == e)
                if tok.numel() == 0:
                    continue
                he = h[tok]
                y = (F.silu(he @ self.w1[e]) * (he @ self.w3[e])) @ self.w2[e]
                out.index_add_(0, tok, y * w[tok, slot, None])
            return x + out.view(b, t, D)

    class MoE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, D)
            self.h = torch.nn.ModuleList(Block() for _ in range(args.layers))
            self.norm = torch.nn.RMSNorm(D)
            self.head = torch.nn.Linear(D, V, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for blk in self.h:
                x = blk(x)
            return F.cross_entropy(self.head(self.norm(x))[:, :-1].reshape(-1, V),
                                   ids[:, 1:].reshape(-1))

    model = MoE().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    watch(model)
    watch_optimizer(opt)
    rng = random.Random(args.seed)
    shapes = [(rng.randint(max(1, args.batch // 2), args.batch), rng.randint(args.min_len, args.max_len))
              for _ in range(args.steps or 10)]
    info["shapes"] = shapes
    for step, (b, t) in enumerate(shapes):
        info["step"] = step
        ids = torch.randint(0, V, (b, t), device=dev)
        loss = model(ids)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss, ids
    torch.cuda.synchronize()


def scenario_serve_graphs():
    """One CUDA graph per batch size, each captured into its own private
    pool (a serving engine's habit), then replays in a random order with
    eager allocations between them."""
    torch.manual_seed(0)
    D = 1024
    model = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(),
                                torch.nn.Linear(4 * D, D)).to(dev).eval()
    sizes = [8 * (i + 1) for i in range(args.shapes)]
    graphs = {}
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for n in sizes:  # warm-up outside capture
                model(torch.randn(n, D, device=dev))
        torch.cuda.current_stream().wait_stream(s)
        for n in sizes:
            x = torch.randn(n, D, device=dev)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):  # a new pool for each graph
                y = model(x)
            graphs[n] = (g, x, y)
        rng = random.Random(args.seed)
        for step in range(args.steps or 3 * len(sizes)):
            info["step"] = step
            n = rng.choice(sizes)
            g, x, y = graphs[n]
            x.copy_(torch.randn(n, D, device=dev))
            g.replay()
            junk = torch.empty((step % 5 + 1) * 700_000, dtype=torch.uint8, device=dev)
            z = y.sum().item()
            del junk
        if args.shapes > 4:  # release half of the graphs: their pools go back
            for n in sizes[::2]:
                del graphs[n]
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    info["graphs"] = len(sizes)
    info["result"] = z
    torch.cuda.synchronize()
    globals()["_live_graphs"] = graphs


def scenario_fsdp2():
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("nccl", rank=0, world_size=1,
                            device_id=torch.device("cuda", torch.cuda.current_device()))
    try:
        torch.manual_seed(args.seed)
        model, cfg = gpt2_model(args.layers, args.width)
        for block in model.transformer.h:
            fully_shard(block)
        fully_shard(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        watch(model)
        info["lens"] = lens = lengths(args.steps or 8)
        for step, n in enumerate(lens):
            info["step"] = step
            ids = torch.randint(0, cfg.vocab_size, (args.batch, n), device=dev)
            loss = model(ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del loss, ids
        torch.cuda.synchronize()
    finally:
        dist.destroy_process_group()


def scenario_pinned():
    bufs = []
    for i in range(12):
        h = torch.empty((i % 4 + 1) << 20, dtype=torch.uint8, pin_memory=True)
        d = h.to(dev, non_blocking=True)
        bufs.append((h, d))
        if i % 3 == 2:
            bufs.pop(0)
    del bufs
    torch.cuda.synchronize()


def grab_raw(leave):
    """cudaMalloc outside PyTorch until `leave` bytes of the device are left."""
    import glob
    cands = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libcudart*.so*"))
    cands += glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libcudart.so*")
    cands += glob.glob("/usr/local/cuda/lib64/libcudart.so*") + ["libcudart.so"]
    lib = None
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
            break
        except OSError:
            continue
    torch.cuda.init()
    free, tot = torch.cuda.mem_get_info()
    want = max(0, free - leave)
    ptr = ctypes.c_void_p()
    rc = lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(want))
    info["raw_cudamalloc"] = {"bytes": want, "rc": rc, "lib": c}
    return ptr


def main():
    steps = args.steps
    sc = args.scenario
    if sc == "external":
        keep = grab_raw(int(args.leave_gib * (1 << 30)))  # noqa: F841
    if sc == "compile_ro":
        start_history(compile_context=True)
    elif sc == "stacks_all":
        start_history(stacks="all")
    elif sc == "annotations":
        start_history(global_record_annotations=True)
    elif sc == "pinned":
        start_history(record_pinned_host_memory=True)
    else:
        start_history()
    info["mem_get_info_start"] = list(torch.cuda.mem_get_info())
    if sc in ("gpt2", "external", "rank", "stacks_all"):
        train_gpt2(steps or 6)
    elif sc == "annotations":
        train_gpt2(steps or 3, annotate=True)
    elif sc == "gpt2_emptycache":
        train_gpt2(steps or 9, empty_every=3)
    elif sc == "ckpt":
        train_gpt2(steps or 6, ckpt=True)
    else:
        globals()["scenario_" + sc]()


t0 = time.time()
try:
    main()
    info["outcome"] = "ok"
except torch.OutOfMemoryError as e:
    info["outcome"] = "oom"
    info["message"] = str(e).split("\n")[0][:1000]
except Exception as e:  # a scenario this PyTorch cannot run: say why, keep what was recorded
    info["outcome"] = "error"
    info["message"] = "".join(traceback.format_exception(e))[-3000:]
info["seconds"] = round(time.time() - t0, 2)
try:
    info["mem_get_info_end"] = list(torch.cuda.mem_get_info())
except Exception:
    pass
st = torch.cuda.memory_stats()
try:
    from torch._dynamo.utils import counters
    info["dynamo"] = {k: dict(v) for k, v in counters.items() if k in ("stats", "recompiles",
                                                                       "graph_break")}
except Exception:
    pass
if _fsc is not None:
    _fsc.flush()
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._dump_snapshot(base + ".pickle")
keys = {"top": sorted(snap.keys()), "actions": {}, "entry_keys": [], "segment_keys": [],
        "frames_max_line": 0}
ek = set()
for tr in snap.get("device_traces", []):
    for e in tr:
        keys["actions"][e["action"]] = keys["actions"].get(e["action"], 0) + 1
        ek.update(e.keys())
        for f in e.get("frames", []) or []:
            if isinstance(f.get("line"), int):
                keys["frames_max_line"] = max(keys["frames_max_line"], f["line"])
keys["entry_keys"] = sorted(ek)
sk = set()
for s in snap.get("segments", []):
    sk.update(s.keys())
keys["segment_keys"] = sorted(sk)
keys["segment_pool_ids"] = sorted({str(s.get("segment_pool_id")) for s in snap.get("segments", [])})
for k in ("host_segments", "host_traces", "external_annotations"):
    if k in snap:
        keys[k + "_len"] = len(snap[k])
info["snapshot"] = keys
out = dict(st)
out.update(info)
out["frames_max_line"] = str(keys["frames_max_line"])
with open(base + ".stats.json", "w") as f:
    json.dump(out, f, indent=1, sort_keys=True, default=str)
print(json.dumps({k: info.get(k) for k in ("name", "outcome", "seconds", "conf", "cap_gib")}
                 | {"peak_reserved": st.get("reserved_bytes.all.peak", 0),
                    "peak_allocated": st.get("allocated_bytes.all.peak", 0),
                    "message": info.get("message", "")[:300]}), flush=True)
