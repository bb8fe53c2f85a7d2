"""record_big.py — a large real memory snapshot for the snapshot reader's
benchmark (bench/bench_snapshot.py): GPT-2 (transformers, random init,
AdamW) trained for a fixed time with the allocator's history on, then
_dump_snapshot.

  python3 bench/gpu/record_big.py OUT.pickle [--seconds 100] [--max-entries 12000000]
                                  [--layers 6] [--width 512] [--batch 2]
                                  [--min-len 64] [--max-len 256]

Prints one JSON line: steps run, seconds, history entries, file size and
torch.cuda.memory_stats()'s peaks.
"""
import argparse
import json
import os
import random
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--seconds", type=float, default=100.0)
ap.add_argument("--max-entries", type=int, default=12_000_000)
ap.add_argument("--layers", type=int, default=6)
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--batch", type=int, default=2)
ap.add_argument("--min-len", type=int, default=64)
ap.add_argument("--max-len", type=int, default=256)
ap.add_argument("--seed", type=int, default=0)
a = ap.parse_args()

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

dev = torch.device("cuda")
torch.manual_seed(a.seed)
rng = random.Random(a.seed)
cfg = GPT2Config(n_layer=a.layers, n_embd=a.width, n_head=max(1, a.width // 64), n_positions=1024)
model = GPT2LMHeadModel(cfg).to(dev)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
torch.cuda.memory._record_memory_history(max_entries=a.max_entries)
t0 = time.monotonic()
steps = 0
while time.monotonic() - t0 < a.seconds:
    n = rng.randint(a.min_len, a.max_len)
    ids = torch.randint(0, cfg.vocab_size, (a.batch, n), device=dev)
    loss = model(ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del loss, ids
    steps += 1
torch.cuda.synchronize()
trained = time.monotonic() - t0
t1 = time.monotonic()
torch.cuda.memory._dump_snapshot(a.out)
dumped = time.monotonic() - t1
torch.cuda.memory._record_memory_history(enabled=None)
st = torch.cuda.memory_stats()
stats_path = os.path.splitext(a.out)[0] + ".stats.json"
with open(stats_path, "w") as f:
    json.dump(dict(st), f, indent=1, sort_keys=True)
print(json.dumps({"steps": steps, "train_seconds": round(trained, 1),
                  "dump_seconds": round(dumped, 1), "bytes": os.path.getsize(a.out),
                  "allocated_bytes.all.peak": st.get("allocated_bytes.all.peak"),
                  "reserved_bytes.all.peak": st.get("reserved_bytes.all.peak"),
                  "torch": torch.__version__}))
