"""Record one side of a `fragscope diff` pair: GPT-2 (transformers, random init,
AdamW) trained for a few steps with a memory snapshot (`_record_memory_history`;
the optimizer's step annotations it records are fragscope's step markers)
and, beside it, NAME.stats.json with `torch.cuda.memory_stats()`, the outcome,
the settings and the step lengths (the same keys as bench/gpu/record.py).

  python3 bench/gpu/diff_pairs.py OUTDIR NAME [--batch B] [--ckpt] [--early]
                                  [--steps N] [--cap-gib G]

Both sides of a pair use the same seed, so they draw the same sequence lengths
and the same weights: the only difference is the one option that changed.
--early allocates the run's lookup buffers (three tensors kept to the end)
before the model is built instead of after the first step: the same bytes,
held to the end in both runs, only allocated earlier.
Settings come from PYTORCH_CUDA_ALLOC_CONF; --cap-gib sets
set_per_process_memory_fraction.
"""
import argparse
import json
import os
import random
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("outdir")
ap.add_argument("name")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--ckpt", action="store_true")
ap.add_argument("--early", action="store_true")
ap.add_argument("--steps", type=int, default=6)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--min-len", type=int, default=128)
ap.add_argument("--max-len", type=int, default=512)
ap.add_argument("--cap-gib", type=float, default=0.0)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
os.makedirs(args.outdir, exist_ok=True)
base = os.path.join(args.outdir, args.name)

import torch  # noqa: E402

dev = torch.device("cuda")
total = torch.cuda.get_device_properties(0).total_memory
info = {"name": args.name, "torch": torch.__version__,
        "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "cap_gib": args.cap_gib,
        "device_total": total, "device_name": torch.cuda.get_device_name(0),
        "batch": args.batch, "ckpt": args.ckpt, "early": args.early, "steps": args.steps}
if args.cap_gib > 0:
    frac = args.cap_gib * (1 << 30) / total
    torch.cuda.set_per_process_memory_fraction(frac)
    info["cap_bytes"] = int(args.cap_gib * (1 << 30))
    info["fraction"] = frac

# History: PyTorch records the optimizer's "START/END Optimizer.step#AdamW.step"
# annotations by itself; they become the snapshot's markers, fragscope's steps.
kw = dict(max_entries=3_000_000, stacks="python", context="all")
torch.cuda.memory._record_memory_history(**kw)
info["history_kwargs"] = kw


def lookup_buffers():
    # sizes that fall in different rounding cases: large pool, one above a
    # segment multiple, one from the small pool
    return [torch.empty(96 << 20, dtype=torch.uint8, device=dev),
            torch.empty((20 << 20) + 4096, dtype=torch.uint8, device=dev),
            torch.empty(600_000, dtype=torch.uint8, device=dev)]


def train():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(args.seed)
    keep = lookup_buffers() if args.early else None
    cfg = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=max(1, args.width // 64),
                     n_positions=1024)
    model = GPT2LMHeadModel(cfg).to(dev)
    if args.ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.config.use_cache = False
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = random.Random(args.seed)
    info["lens"] = lens = [rng.randint(args.min_len, args.max_len) for _ in range(args.steps)]
    for step, n in enumerate(lens):
        info["step"] = step
        ids = torch.randint(0, cfg.vocab_size, (args.batch, n), device=dev)
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss, ids
        if step == 0 and keep is None:
            keep = lookup_buffers()
    torch.cuda.synchronize()
    return keep


t0 = time.time()
try:
    kept = train()  # noqa: F841 (held to the end, in the snapshot's live blocks)
    info["outcome"] = "ok"
except torch.OutOfMemoryError as e:
    info["outcome"] = "oom"
    info["message"] = str(e).split("\n")[0][:1000]
info["seconds"] = round(time.time() - t0, 2)
st = torch.cuda.memory_stats()
torch.cuda.memory._dump_snapshot(base + ".pickle")
out = dict(st)
out.update(info)
with open(base + ".stats.json", "w") as f:
    json.dump(out, f, indent=1, sort_keys=True, default=str)
print(json.dumps({"name": args.name, "outcome": info["outcome"], "seconds": info["seconds"],
                  "peak_reserved": st.get("reserved_bytes.all.peak", 0),
                  "peak_allocated": st.get("allocated_bytes.all.peak", 0)}), flush=True)
sys.exit(0)
