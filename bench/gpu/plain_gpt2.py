"""A GPT-2 training script that knows nothing of fragscope's recording: the
program `bench/gpu/record_cmd.sh` records with `fragscope record -- python
plain_gpt2.py`, as a user would record their own script.

transformers GPT2LMHeadModel from a config (random init), AdamW, sequence
length drawn per step (seeded). Its own options, from the environment (all
optional):
  GPT2_STEPS, GPT2_LAYERS, GPT2_WIDTH, GPT2_BATCH   size of the run (6, 6, 768, 8)
  GPT2_MIN_LEN, GPT2_MAX_LEN   sequence lengths drawn per step (128, 1024)
  GPT2_FIXED_LEN    every step this length instead (step-time runs)
  GPT2_CAP_GIB      torch.cuda.set_per_process_memory_fraction to this many GiB
  GPT2_SNAPSHOT     PyTorch's own memory history (Python stacks) dumped here
                    with _dump_snapshot, and memory_stats() as JSON beside it
                    (.stats.json), also after an out-of-memory error
  GPT2_WATCH        1: name module tags with fragscope_torch.watch (the one
                    fragscope call a program may make; recording itself is
                    `fragscope record`'s)
  GPT2_DIST         1: a torch.distributed job (torchrun): gloo, every rank on
                    cuda:0, the loss all-reduced on the CPU each step
  GPT2_RESULT       one JSON line (step times, outcome) written here (%r: the rank)
An out-of-memory error is not caught: the program dies of it as any would.
"""
import json
import os
import random
import time

import torch

CUDA_AT_IMPORT = torch.cuda.is_initialized()  # must stay False under fragscope record


def env(name, default):
    v = os.environ.get(name)
    return type(default)(v) if v else default


steps = env("GPT2_STEPS", 6)
layers, width, batch = env("GPT2_LAYERS", 6), env("GPT2_WIDTH", 768), env("GPT2_BATCH", 8)
min_len, max_len, fixed = env("GPT2_MIN_LEN", 128), env("GPT2_MAX_LEN", 1024), env("GPT2_FIXED_LEN", 0)
cap_gib = env("GPT2_CAP_GIB", 0.0)
snapshot = os.environ.get("GPT2_SNAPSHOT", "")
result = {"cuda_initialized_after_import": CUDA_AT_IMPORT, "pid": os.getpid(),
          "rank": os.environ.get("RANK")}

dist = None
if os.environ.get("GPT2_DIST") == "1":
    import torch.distributed as dist
    dist.init_process_group("gloo")
torch.cuda.set_device(0)
dev = torch.device("cuda", 0)
if cap_gib > 0:
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(cap_gib * (1 << 30) / total)
if snapshot:
    torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

torch.manual_seed(0)
rng = random.Random(0)
lens = [fixed or rng.randint(min_len, max_len) for _ in range(steps)]
cfg = GPT2Config(n_layer=layers, n_embd=width, n_head=max(1, width // 64), n_positions=1024)


def dump():
    if not snapshot:
        return
    torch.cuda.memory._dump_snapshot(snapshot)
    stem = snapshot[:-len(".pickle")] if snapshot.endswith(".pickle") else snapshot
    with open(stem + ".stats.json", "w") as f:
        json.dump(dict(torch.cuda.memory_stats()), f, indent=1, sort_keys=True)


times = []
try:
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    if os.environ.get("GPT2_WATCH") == "1":
        import fragscope_torch
        fragscope_torch.watch(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for n in lens:
        t = time.perf_counter()
        ids = torch.randint(0, cfg.vocab_size, (batch, n), device=dev)
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if dist is not None:
            x = loss.detach().cpu()
            dist.all_reduce(x)
        del loss, ids
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    result["outcome"] = "ok"
except torch.OutOfMemoryError:
    result["outcome"] = "oom"
    dump()
    raise
finally:
    result["step_s"] = times
    if os.environ.get("GPT2_RESULT"):  # %r: the rank
        with open(os.environ["GPT2_RESULT"].replace("%r", str(result["rank"] or 0)), "w") as f:
            f.write(json.dumps(result) + "\n")
dump()
if dist is not None:
    dist.destroy_process_group()
