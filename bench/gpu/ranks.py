"""One pipeline stage of a job of WORLD_SIZE ranks sharing one GPU, trained
through the fragscope shim (bench/gpu/run.sh ranks starts one process per
rank, with RANK, WORLD_SIZE and LOCAL_RANK set as torchrun sets them).

Stage r is --layers GPT-2 blocks (transformers GPT2Model fed with random
input embeddings) that keeps WORLD_SIZE - r microbatches of activations
alive before their backward passes, as the warm-up of a 1F1B pipeline
schedule does: stage 0 holds the most activations, the last stage the
fewest. Every stage has the same weights and the same optimizer state.

  --calibrate       no trace, no cap: only the peaks, from which run.sh
                    derives the caps of the recorded run
  --cap-bytes N     the bytes this process may reserve: the shim's capacity
                    (fragscope_torch.install(capacity=N)); the same figure is
                    also handed to torch.cuda.set_per_process_memory_fraction,
                    which a pluggable allocator does not apply itself
  --trace T         the trace (T may hold %r, the rank)
  --external        after training, and after every other rank has written
                    its DIR/NAME.done.rK, empty this process's cache, take all
                    but --leave-mib of the device's free memory with a raw
                    cudaMalloc (ctypes, libcudart) behind the allocator's back,
                    and train one more step: its next segment allocation fails
                    for want of device memory
Ranks without --external, once done, wait (doing nothing on the GPU, their
memory still held) until every rank is done, so that the external figure of
the failing rank is not disturbed by them.

Writes DIR/NAME.r<rank>.json: the rank's stage, cap, peaks of the
allocator's statistics (fragscope_torch.memory_stats(), with the keys of
torch.cuda.memory_stats(), which PyTorch does not provide for a pluggable
allocator), and for --external the raw allocation and the device's free
memory (torch.cuda.mem_get_info()) before and after it and after the OOM.
--dry-run checks the arguments and writes the JSON with zeros, without torch.
"""
import argparse
import ctypes
import glob
import json
import os
import socket
import sys
import time

MiB = 1 << 20
GRANULE = 2 * MiB  # the driver's and the allocator's large-segment granularity

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True, help="directory of the JSON files (and done markers)")
ap.add_argument("--name", default="pipe")
ap.add_argument("--layers", type=int, default=8)
ap.add_argument("--width", type=int, default=1024)
ap.add_argument("--mb", type=int, default=4, help="microbatch size")
ap.add_argument("--seq", type=int, default=1024)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--calibrate", action="store_true")
ap.add_argument("--cap-bytes", type=int, default=0)
ap.add_argument("--trace", default="")
ap.add_argument("--external", action="store_true")
ap.add_argument("--leave-mib", type=int, default=64)
ap.add_argument("--wait-s", type=float, default=240.0,
                help="longest wait for the other ranks' done markers")
ap.add_argument("--dry-run", action="store_true")
args = ap.parse_args()


def bad(msg):
    print("ranks.py: " + msg, file=sys.stderr)
    sys.exit(2)


def env_int(name, default=None):
    v = os.environ.get(name)
    if v is None or v == "":
        if default is None:
            bad("%s is not set (run.sh sets RANK, WORLD_SIZE, LOCAL_RANK)" % name)
        return default
    try:
        return int(v)
    except ValueError:
        bad("%s=%r is not an integer" % (name, v))


rank = env_int("RANK")
world = env_int("WORLD_SIZE")
local_rank = env_int("LOCAL_RANK", rank)
if not 0 <= rank < world:
    bad("RANK=%d outside WORLD_SIZE=%d" % (rank, world))
if args.calibrate and (args.trace or args.cap_bytes or args.external):
    bad("--calibrate takes neither --trace, --cap-bytes nor --external")
if args.steps < 1 or args.layers < 1 or args.mb < 1 or args.seq < 1 or args.seq > 1024:
    bad("--steps, --layers, --mb must be >= 1 and --seq in 1..1024")
os.makedirs(args.out, exist_ok=True)
inflight = world - rank
kind = "calib" if args.calibrate else "run"
out_json = os.path.join(args.out, "%s.%s.r%d.json" % (args.name, kind, rank))
done_fmt = os.path.join(args.out, "%s.%s.done.r%%d" % (args.name, kind))

out = {"rank": rank, "world_size": world, "local_rank": local_rank, "pid": os.getpid(),
       "host": socket.gethostname(), "calibrate": args.calibrate,
       "stage": {"layers": args.layers, "width": args.width, "microbatch": args.mb,
                 "seq": args.seq, "inflight_microbatches": inflight, "steps": args.steps},
       "cap_bytes": args.cap_bytes or None, "trace": args.trace or None,
       "device_samples": os.environ.get("FRAGSCOPE_DEVICE_SAMPLES", "segments (default)")}
PEAK_KEYS = ["allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
             "requested_bytes.all.peak", "allocated_bytes.all.current",
             "reserved_bytes.all.current", "num_ooms", "num_alloc_retries",
             "num_device_alloc", "num_device_free"]


def write_json():
    tmp = out_json + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out_json)


def mark_done():
    with open(done_fmt % rank, "w") as f:
        f.write("%d\n" % os.getpid())


def wait_others():
    """Until every other rank's done marker exists (or --wait-s passes)."""
    t0 = time.monotonic()
    missing = [r for r in range(world) if r != rank]
    while missing and time.monotonic() - t0 < args.wait_s:
        missing = [r for r in missing if not os.path.exists(done_fmt % r)]
        if missing:
            time.sleep(0.2)
    return missing


if args.dry_run:
    out["outcome"] = "dry-run"
    out["memory_stats"] = {k: 0 for k in PEAK_KEYS}
    if args.external:
        out["raw_cudamalloc"] = {"bytes": 0, "rc": 0}
    write_json()
    mark_done()
    print(json.dumps({"rank": rank, "json": out_json, "waited_for": wait_others()}))
    sys.exit(0)

import torch  # noqa: E402

import fragscope_torch as fst  # noqa: E402  (the calibration runs through the shim too)

fst.install(trace=args.trace or None, capacity=args.cap_bytes or None)

from transformers import GPT2Config, GPT2Model  # noqa: E402

torch.manual_seed(args.seed + rank)
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
total = torch.cuda.get_device_properties(0).total_memory
out["device_total"] = total
if args.cap_bytes:
    try:
        torch.cuda.set_per_process_memory_fraction(args.cap_bytes / total, 0)
        out["set_per_process_memory_fraction"] = args.cap_bytes / total
    except Exception as e:  # noqa: BLE001 — recorded, the shim's capacity is the cap
        out["set_per_process_memory_fraction"] = "refused: %s" % str(e)[:200]

cfg = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=max(1, args.width // 64),
                 n_positions=1024)
model = GPT2Model(cfg).to(dev)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
if args.trace:
    fst.watch(model)
    fst.watch_optimizer(opt)


def step():
    xs = [torch.randn(args.mb, args.seq, args.width, device=dev) for _ in range(inflight)]
    losses = []
    for x in xs:  # warm-up: every microbatch's activations stay alive
        h = model(inputs_embeds=x, use_cache=False).last_hidden_state
        losses.append(h.float().pow(2).mean())
    del xs
    while losses:  # cool-down: backward, latest microbatch first
        losses.pop().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def stats():
    st = fst.memory_stats()
    return {k: st.get(k) for k in PEAK_KEYS}


times = []
out["outcome"] = "ok"
try:
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
except (torch.OutOfMemoryError, RuntimeError) as e:
    out["outcome"] = "oom"
    out["message"] = str(e).split("\n")[0][:600]
out["step_s"] = times
out["memory_stats"] = stats()
out["mem_get_info_done"] = list(torch.cuda.mem_get_info())

raw = None
if args.external and out["outcome"] == "ok":
    out["waited_for_missing"] = wait_others()
    torch.cuda.synchronize()
    fst.empty_cache()
    before = stats()
    free0, total0 = torch.cuda.mem_get_info()
    want = max(0, (free0 - args.leave_mib * MiB) // GRANULE * GRANULE)
    cands = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libcudart*.so*"))
    cands += glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libcudart.so*")
    cands += sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia",
                                           "cu*", "lib", "libcudart.so*")))
    cands += glob.glob("/usr/local/cuda/lib64/libcudart.so*") + ["libcudart.so"]
    cudart = None
    for c in cands:
        try:
            cudart = ctypes.CDLL(c)
            break
        except OSError:
            continue
    raw = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(raw), ctypes.c_size_t(want)) if cudart else -1
    free1, _ = torch.cuda.mem_get_info()
    info = {"bytes": want, "rc": rc, "libcudart": c if cudart else None,
            "leave_mib": args.leave_mib,
            "mem_get_info_before": [free0, total0], "mem_get_info_after": [free1, total0],
            "reserved_before": before["reserved_bytes.all.current"],
            # memory of the device outside this allocator before the raw allocation: the
            # CUDA contexts of every rank's process, the other ranks' reserved memory, libraries
            "outside_before": total0 - free0 - before["reserved_bytes.all.current"]}
    # what the analyzer should find at the OOM: the raw allocation plus what was outside
    # before it (want + outside_before), or, counting whatever the driver took with it,
    # everything outside the allocator once it was made
    info["expected_external"] = want + info["outside_before"]
    info["outside_after_raw"] = total0 - free1 - before["reserved_bytes.all.current"]
    t0 = time.perf_counter()
    try:
        step()
        out["external_outcome"] = "ok"
    except (torch.OutOfMemoryError, RuntimeError) as e:
        out["external_outcome"] = "oom"
        out["external_message"] = str(e).split("\n")[0][:600]
    info["step_s"] = time.perf_counter() - t0
    free2, _ = torch.cuda.mem_get_info()
    end = stats()
    info["mem_get_info_end"] = [free2, total0]
    info["reserved_end"] = end["reserved_bytes.all.current"]
    info["external_at_end"] = total0 - free2 - end["reserved_bytes.all.current"]
    out["raw_cudamalloc"] = info
    out["memory_stats"] = end

fst.flush()
write_json()
mark_done()
if not args.external:
    out["waited_for_missing"] = wait_others()
    write_json()
print(json.dumps({"rank": rank, "outcome": out["outcome"],
                  "external_outcome": out.get("external_outcome"),
                  "peak_allocated": out["memory_stats"]["allocated_bytes.all.peak"],
                  "peak_reserved": out["memory_stats"]["reserved_bytes.all.peak"],
                  "cap": args.cap_bytes or None}), flush=True)
sys.exit(0)
