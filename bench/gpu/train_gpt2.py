"""GPT-2 training workload for GPU measurements (the workload of the shared
snapshots): transformers GPT2LMHeadModel from a config, random init, AdamW,
batch 8, sequence length drawn from 128-1024 each step (seeded, so every run
sees the same lengths).

  --alloc native     PyTorch's caching allocator; --snapshot records PyTorch's
                     memory history and dumps it (also after an OOM)
  --alloc fragscope  fragscope's allocator through fragscope_torch (records to
                     --trace with module tags and step markers)
  --cap-gib G        set_per_process_memory_fraction (native) / capacity (fragscope)
Prints one JSON line: step times, outcome, peaks, the OOM message if any.
"""
import argparse
import json
import os
import random
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--alloc", choices=["native", "fragscope"], default="native")
ap.add_argument("--steps", type=int, default=8)
ap.add_argument("--layers", type=int, default=12)
ap.add_argument("--width", type=int, default=768)
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--min-len", type=int, default=128)
ap.add_argument("--max-len", type=int, default=1024)
ap.add_argument("--cap-gib", type=float, default=0.0)
ap.add_argument("--snapshot", default="")
ap.add_argument("--trace", default="")
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--label", default="")
ap.add_argument("--hooks", choices=["none", "forward", "all"], default="all",
                help="fragscope only: which module hooks push tags")
ap.add_argument("--leave-gib", type=float, default=0.0,
                help="before training, cudaMalloc outside any allocator until this much is left")
ap.add_argument("--shuffle", type=int, default=0, help="sort lengths: 0 as drawn, 1 ascending")
args = ap.parse_args()

import torch  # noqa: E402

if args.alloc == "fragscope":
    import fragscope_torch
    cap = int(args.cap_gib * (1 << 30)) if args.cap_gib > 0 else None
    fragscope_torch.install(trace=args.trace or None, capacity=cap)

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

torch.manual_seed(args.seed)
rng = random.Random(args.seed)
lens = [rng.randint(args.min_len, args.max_len) for _ in range(args.steps)]
if args.shuffle == 1:
    lens.sort()

dev = torch.device("cuda")
if args.alloc == "native":
    if args.cap_gib > 0:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(args.cap_gib * (1 << 30) / total)
    if args.snapshot:
        torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")

raw_keep = None
if args.leave_gib > 0:
    # Memory taken behind the allocator's back, as NCCL or a library would.
    import ctypes
    import glob
    cands = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libcudart*.so*"))
    cands += glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libcudart.so*")
    cands += glob.glob("/usr/local/cuda/lib64/libcudart.so*") + ["libcudart.so"]
    cudart = None
    for c in cands:
        try:
            cudart = ctypes.CDLL(c)
            break
        except OSError:
            continue
    torch.cuda.init()
    free0, total0 = torch.cuda.mem_get_info()
    want = max(0, free0 - int(args.leave_gib * (1 << 30)))
    raw_keep = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(raw_keep), ctypes.c_size_t(want))
    raw_info = {"bytes": want, "rc": rc, "device_total": total0,
                "mem_get_info_after": list(torch.cuda.mem_get_info())}

cfg = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=max(1, args.width // 64),
                 n_positions=1024)
out = {"label": args.label, "alloc": args.alloc, "hooks": args.hooks, "cap_gib": args.cap_gib,
       "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "lens": lens}
times = []
try:
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if args.alloc == "fragscope":
        if args.hooks != "none":
            fragscope_torch.watch(model, backward=(args.hooks == "all"))
        fragscope_torch.watch_optimizer(opt)
    for step, n in enumerate(lens):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ids = torch.randint(0, cfg.vocab_size, (args.batch, n), device=dev)
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    out["outcome"] = "ok"
except (torch.OutOfMemoryError, RuntimeError) as e:
    # A pluggable allocator's failure reaches Python as a RuntimeError.
    if not isinstance(e, torch.OutOfMemoryError) and args.alloc != "fragscope":
        raise
    out["outcome"] = "oom"
    out["oom_step"] = len(times)
    out["message"] = str(e).split("\n")[0][:600]
if args.alloc == "native":
    st = torch.cuda.memory_stats()
    out["peak_allocated"] = st.get("allocated_bytes.all.peak", 0)
    out["peak_reserved"] = st.get("reserved_bytes.all.peak", 0)
    out["num_alloc_retries"] = st.get("num_alloc_retries", 0)
    out["num_ooms"] = st.get("num_ooms", 0)
    if args.snapshot:
        torch.cuda.memory._dump_snapshot(args.snapshot)
        with open(args.snapshot.rsplit(".", 1)[0] + ".stats.json", "w") as f:
            json.dump(dict(st, outcome=out["outcome"], message=out.get("message", "")), f,
                      indent=1, sort_keys=True)
else:
    st = fragscope_torch.memory_stats()
    out["peak_allocated"] = st["allocated_bytes.all.peak"]
    out["peak_reserved"] = st["reserved_bytes.all.peak"]
    out["num_alloc_retries"] = st["num_alloc_retries"]
    out["num_ooms"] = st["num_ooms"]
    fragscope_torch.flush()
if raw_keep is not None:
    out["raw_cudamalloc"] = raw_info
out["step_s"] = times
steady = times[2:] if len(times) > 3 else times
out["mean_step_s"] = sum(steady) / len(steady) if steady else None
print(json.dumps(out), flush=True)
sys.exit(0)
