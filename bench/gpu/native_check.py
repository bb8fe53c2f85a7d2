"""The native recorder on a GPU (docs/native.md, "Testing on the GPU"): every
habit recorded at once by fragscope_torch.record and by PyTorch's own
history (a snapshot of the same run, with memory_stats()), compiled models
run with and without fragscope, an OOM under a cap (its verdict), and the
entry cost and step time measured against their baselines in the same call.

  python3 bench/gpu/native_check.py OUTDIR [runs] [bench] [steps] [bench2] [compile3]
                                           [stacks] [bench_stacks]
    bench2    the entry cost, with the recorder's thread idle as a variant
    stacks    runs with _record_memory_history's stacks (python, all) and the native
              recorder: its tags are the stacks' frames, as the snapshot's
    bench_stacks  the entry cost with history's Python stacks, without and with the recorder
    compile3  compiled GPT-2 (default, reduce-overhead) off/on alternated, inductor caches warm

Needs the native recorder's files: FRAGSCOPE_NATIVE_SRC, _INCLUDE, _LIB and
PYTHONPATH with fragscope_torch.py (bench/gpu/run.sh native sets them).
Prints one JSON line per run; OUTDIR/summary.json holds them all."""
import json
import os
import subprocess
import sys
import time

out = sys.argv[1]
what = sys.argv[2:] or ["runs", "bench", "steps"]
here = os.path.dirname(os.path.abspath(__file__))
rec = os.path.join(here, "record.py")
os.makedirs(out, exist_ok=True)
T0 = time.time()
results = []
GPT2 = ["--layers", "6", "--width", "768", "--batch", "8", "--min-len", "128", "--max-len", "1024"]


def log(r):
    r["t"] = round(time.time() - T0, 1)
    print(json.dumps(r), flush=True)
    results.append(r)


def run(name, argv, conf="", native=True, timeout=300, env=None):
    e = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    e.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        e["PYTORCH_CUDA_ALLOC_CONF"] = conf
    e.update(env or {})
    cmd = [sys.executable, rec] + argv + [out, "--name", name]
    if native:
        cmd += ["--native", os.path.join(out, name + ".fstrace")]
    t = time.time()
    try:
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
        with open(os.path.join(out, name + ".stderr.txt"), "w") as f:
            f.write(p.stderr)
        line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        try:
            r = json.loads(line)
        except ValueError:
            r = {"name": name, "outcome": "crash", "stderr": p.stderr[-2000:]}
    except subprocess.TimeoutExpired:
        r = {"name": name, "outcome": "timeout"}
    r["wall_s"] = round(time.time() - t, 1)
    log(r)
    return r


if "runs" in what:
    import concurrent.futures as cf
    t = time.time()
    import fragscope_torch  # noqa: E402
    fragscope_torch._build_native(verbose=False)
    log({"name": "build_extension", "seconds": round(time.time() - t, 1)})
    jobs = [
        ("n_plain", ["gpt2"] + GPT2 + ["--steps", "6"], "", True),
        ("n_late", ["gpt2"] + GPT2 + ["--steps", "6", "--native-late"], "", True),
        ("n_expandable", ["gpt2"] + GPT2 + ["--steps", "6"], "expandable_segments:True", True),
        ("n_compile", ["gpt2"] + GPT2 + ["--steps", "6", "--compile", "default"], "", True),
        ("n_compile_off", ["gpt2"] + GPT2 + ["--steps", "6", "--compile", "default"], "", False),
        ("n_compile_ro", ["gpt2"] + GPT2 + ["--steps", "6", "--compile", "reduce-overhead"], "",
         True),
        ("n_compile_ro_off", ["gpt2"] + GPT2 + ["--steps", "6", "--compile", "reduce-overhead"],
         "", False),
        ("n_mempool_live", ["mempool_live"], "", True),
        ("n_graphed", ["graphed"], "", True),
        ("n_side_stream", ["side_stream"], "", True),
        ("n_fsdp2", ["fsdp2", "--layers", "6", "--width", "768", "--batch", "4", "--min-len",
                     "128", "--max-len", "1024", "--steps", "6"], "", True),
        ("n_oom_cap", ["gpt2"] + GPT2 + ["--steps", "6", "--cap-gib", "6"], "", True),
    ]
    with cf.ThreadPoolExecutor(int(os.environ.get("NATIVE_PARALLEL", "6"))) as ex:
        list(ex.map(lambda j: run(j[0], j[1], conf=j[2], native=j[3], timeout=420), jobs))

# The entry cost: a C++ raw_alloc/raw_delete loop, 3 entries a pair, best of
# 5 runs, one process per tracker mode; "recorder_idle" is the recorder with
# its thread idle during the loop (its blocks then come from malloc).
ENTRY_CODE = r"""
import json, sys, torch, fragscope_torch as f
mode = sys.argv[1]; out = sys.argv[2]
ext = f._build_native()
torch.cuda.init(); torch.empty(1, device="cuda")
if mode == "counter": ext.attach_counter()
elif mode.startswith("recorder"): f.record(out + "/bench_%s.fstrace" % mode, verdict=False)
elif mode == "history": torch.cuda.memory._record_memory_history(max_entries=1_000_000, context=None)
if mode.endswith("_py"): torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
pairs = [ext.bench_pairs(200_000) for _ in range(5)]
print(json.dumps({"mode": mode, "ns_per_pair": pairs, "best": min(pairs)}))
"""
ENTRY_ENV = {"recorder_idle": {"FRAGSCOPE_NATIVE_INTERVAL_MS": "600000"}}


def entry_cost(name, modes, rounds):
    for rnd in range(rounds):
        for mode in modes:
            p = subprocess.run([sys.executable, "-c", ENTRY_CODE, mode, out], capture_output=True,
                               text=True, timeout=200,
                               env=dict(os.environ, **ENTRY_ENV.get(mode, {})))
            try:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                r = {"mode": mode, "error": p.stderr[-1500:]}
            r["name"] = name
            r["round"] = rnd
            log(r)


if "bench" in what:
    entry_cost("bench_entry", ("none", "counter", "recorder", "history"), 2)
    tr = os.path.join(out, "bench_recorder.fstrace")
    if os.path.exists(tr):
        log({"name": "bench_trace_bytes", "bytes": os.path.getsize(tr)})

if "compile2" in what or "fsdp" in what or "tags" in what:
    import concurrent.futures as cf
    import tempfile
    jobs = []
    if "compile2" in what:
        for mode, tag in (("default", "c"), ("reduce-overhead", "cro")):
            for nat in (True, False):
                jobs.append(("%s_%s" % (tag, "on" if nat else "off"),
                             ["gpt2"] + GPT2 + ["--steps", "6", "--compile", mode], "", nat,
                             {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
                              "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="ind")}))
    if "fsdp" in what:
        jobs.append(("n_fsdp2", ["fsdp2", "--layers", "6", "--width", "768", "--batch", "4",
                                 "--min-len", "128", "--max-len", "1024", "--steps", "6"], "",
                     True, {}))
        jobs.append(("ring_fsdp2", ["fsdp2", "--layers", "6", "--width", "768", "--batch", "4",
                                    "--min-len", "128", "--max-len", "1024", "--steps", "12",
                                    "--max-entries", "8000"], "", False, {"MASTER_PORT": "29611"}))
    if "tags" in what:
        jobs.append(("n_tags", ["gpt2"] + GPT2 + ["--steps", "3"], "", True, {}))
    with cf.ThreadPoolExecutor(6) as ex:
        list(ex.map(lambda j: run(j[0], j[1], conf=j[2], native=j[3], timeout=300, env=j[4]),
                    jobs))

if "compile3" in what:
    # compiled models with and without fragscope, with inductor's caches warm
    # (a first, unmeasured run fills a cache folder the others share), so
    # that no run benchmarks kernels at compile time: inductor's autotuning
    # and pad_mm benchmarks allocate as many buffers as their timings ask
    # for, which differs from run to run with or without fragscope.
    import concurrent.futures as cf
    import tempfile

    def series(mode, tag):
        env = {"TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="ind3")}
        argv = ["gpt2"] + GPT2 + ["--steps", "6", "--compile", mode]
        run("%s_warm" % tag, argv, native=False, env=env)
        for rnd in range(2):
            run("%s_off%d" % (tag, rnd), argv, native=False, env=env)
            run("%s_on%d" % (tag, rnd), argv, native=True, env=env)

    with cf.ThreadPoolExecutor(2) as ex:
        list(ex.map(lambda a: series(*a), (("default", "w"), ("reduce-overhead", "wro"))))

if "bench2" in what:
    entry_cost("bench_entry2", ("none", "counter", "recorder", "recorder_idle", "history"),
               int(os.environ.get("BENCH_ROUNDS", "2")))

if "stacks" in what:
    import concurrent.futures as cf
    t = time.time()
    import fragscope_torch  # noqa: E402
    fragscope_torch._build_native(verbose=False)
    log({"name": "build_extension", "seconds": round(time.time() - t, 1)})
    jobs = [
        ("s_python", ["gpt2", "--steps", "3", "--no-watch"]),
        ("s_all", ["gpt2", "--steps", "2", "--no-watch", "--stacks", "all"]),
        ("s_watch", ["gpt2", "--steps", "3"]),
        ("s_late", ["gpt2", "--steps", "3", "--no-watch", "--native-late"]),
        ("s_oom", ["gpt2"] + GPT2 + ["--steps", "6", "--cap-gib", "6", "--no-watch"]),
    ]
    with cf.ThreadPoolExecutor(5) as ex:
        list(ex.map(lambda j: run(j[0], j[1], timeout=400), jobs))

if "bench_stacks" in what:
    entry_cost("bench_stacks", ("history_py", "recorder_py"),
               int(os.environ.get("BENCH_ROUNDS", "2")))

if "steps" in what:
    # step time of GPT-2 training, recorder on and off, alternated; with
    # STEP_MODES="off on hpy hpy_on", also with history's Python stacks
    # (hpy) and with those and the recorder (hpy_on)
    code = r"""
import json, sys, time, torch
native = sys.argv[1] in ("on", "hpy_on")
if sys.argv[1].startswith("hpy"):
    torch.cuda.memory._record_memory_history(max_entries=100_000, stacks="python")
if native:
    import fragscope_torch as f
    f.record(sys.argv[2] + "/steps.fstrace", verdict=False)
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
m = GPT2LMHeadModel(GPT2Config(n_layer=12, n_embd=768, n_head=12)).cuda()
if native: f.watch(m)
opt = torch.optim.AdamW(m.parameters())
ts = []
for i in range(20):
    ids = torch.randint(0, 50257, (8, 512), device="cuda")
    torch.cuda.synchronize(); t = time.perf_counter()
    m(ids, labels=ids).loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
ts = sorted(ts[5:])
print(json.dumps({"mode": sys.argv[1], "native": native, "median_ms": 1e3 * ts[len(ts) // 2],
                  "min_ms": 1e3 * ts[0]}))
"""
    for rnd in range(int(os.environ.get("STEP_ROUNDS", "2"))):
        for mode in os.environ.get("STEP_MODES", "off on").split():
            p = subprocess.run([sys.executable, "-c", code, mode, out], capture_output=True,
                               text=True, timeout=300)
            try:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                r = {"error": p.stderr[-1500:]}
            r["name"] = "step_time"
            r["round"] = rnd
            log(r)

with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(results, f, indent=1)
print("done in %.0fs" % (time.time() - T0), flush=True)
