"""Record the set of real PyTorch runs that fragscope's tests and
benchmarks use (bench/gpu/record.py does one run), several at a time on the
one GPU, into OUTDIR:

  habits   one snapshot per habit: empty_cache (default and expandable
           segments), CUDA graphs, MemPool, side stream, torch.compile,
           stacks="all", annotations, pinned host memory, three pipeline
           "ranks"
  caps     an uncapped GPT-2 and an uncapped gradient-checkpointing GPT-2,
           then each under caps (fractions of its own peak reserved) with
           several PYTORCH_CUDA_ALLOC_CONF settings, every run with its
           snapshot and memory_stats()
  external raw cudaMalloc outside the allocator leaves too little of the
           device for GPT-2 (run alone: it takes the whole device)
  mempool_opts  MemPool's own settings: use_on_oom under a 0.5 GiB cap (to an
           OOM), no_split (where this PyTorch has it), and mempool_live under
           expandable_segments:True; under a minute
  ring     snapshots whose history ring wrapped, as most users' do: GPT-2 for 80
           steps under PyTorch's default max_entries (100000), and small rings
           under expandable_segments:True, with empty_cache(), with CUDA graphs
           (make_graphed_callables and torch.compile reduce-overhead), a live
           MemPool, a side stream and FSDP2; a few minutes

  settings GPT-2 and a Mixtral-style MoE, each recorded uncapped under the
           defaults (JOB_uncapped) and under each setting of SETTINGS2
           (JOB_nocap_SETTING), then capped at 0.85 of the uncapped peak reserved
           under CAPPED2 (JOB_cap0.85_SETTING): bench/cross_verify.py checks each
           against the defaults run; about three minutes
  graphs   many private pools: a graph per batch size (40, in its own pool,
           half released) and torch.compile reduce-overhead over 6 shapes

  python3 bench/gpu/record_all.py OUTDIR [habits] [caps] [external] [mempool_opts]
Prints one JSON line per run and writes OUTDIR/summary.json.
"""
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

out = sys.argv[1]
what = sys.argv[2:] or ["habits", "caps", "external"]
only = [w[5:] for w in what if w.startswith("only=")]  # only=NAME,NAME: just these runs
here = os.path.dirname(os.path.abspath(__file__))
rec = os.path.join(here, "record.py")
os.makedirs(out, exist_ok=True)
T0 = time.time()
results = []

GPT2 = ["--layers", "6", "--width", "768", "--batch", "8", "--min-len", "128", "--max-len", "1024"]
CKPT = ["--layers", "12", "--width", "768", "--batch", "8", "--min-len", "128", "--max-len", "1024"]
SETTINGS = ["", "expandable_segments:True", "max_split_size_mb:64",
            "garbage_collection_threshold:0.6", "roundup_power2_divisions:4",
            "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"]

SETTINGS2 = ["roundup_power2_divisions:4", "roundup_power2_divisions:8",
             "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "max_split_size_mb:128",
             "max_non_split_rounding_mb:64,max_split_size_mb:128", "expandable_segments:True",
             "roundup_power2_divisions:4,max_split_size_mb:128",
             "roundup_power2_divisions:8,expandable_segments:True"]
CAPPED2 = ["", "garbage_collection_threshold:0.6", "roundup_power2_divisions:4",
           "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "expandable_segments:True",
           "max_split_size_mb:128", "garbage_collection_threshold:0.6,max_split_size_mb:128"]
MOE = ["--layers", "4", "--width", "768", "--batch", "8", "--min-len", "128", "--max-len", "1024",
       "--steps", "10"]


def tagof(conf):
    return (conf or "default").replace(":", "_").replace(",", "_").replace("[", "").replace(
        "]", "").replace(">", "gt").replace(".", "_")


def run(job):
    name, argv, conf, env_extra, timeout = job
    env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    env.update(env_extra)
    t = time.time()
    try:
        p = subprocess.run([sys.executable, rec] + argv + [out, "--name", name], env=env,
                           capture_output=True, text=True, timeout=timeout)
        line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        try:
            r = json.loads(line)
        except ValueError:
            r = {"name": name, "outcome": "crash", "stderr": p.stderr[-1500:]}
    except subprocess.TimeoutExpired:
        r = {"name": name, "outcome": "timeout"}
    r["wall_s"] = round(time.time() - t, 1)
    print(f"[{time.time() - T0:6.1f}s] " + json.dumps(r), flush=True)
    return r


def pool(jobs, n):
    if only:
        keep = set(",".join(only).split(","))
        jobs = [j for j in jobs if j[0] in keep or any(j[0].startswith(k + "_cap") for k in keep)]
    with cf.ThreadPoolExecutor(n) as ex:
        return list(ex.map(run, jobs))


def job(name, scen, extra=(), conf="", env=None, timeout=300):
    return (name, [scen] + list(extra), conf, env or {}, timeout)


if "habits" in what:
    jobs = [
        job("compile_ro", "compile_ro", timeout=400),
        job("gpt2_emptycache", "gpt2_emptycache"),
        job("gpt2_emptycache_exp", "gpt2_emptycache", conf="expandable_segments:True"),
        job("graphed", "graphed"),
        job("mempool", "mempool"),
        job("mempool_live", "mempool_live"),
        job("side_stream", "side_stream"),
        job("stacks_all", "stacks_all", ["--layers", "2", "--width", "256", "--batch", "2",
                                         "--min-len", "64", "--max-len", "128", "--steps", "2"]),
        job("annotations", "annotations", ["--layers", "2", "--width", "256", "--batch", "2",
                                           "--min-len", "64", "--max-len", "256"]),
        job("pinned", "pinned"),
    ]
    for r, layers in ((0, 8), (1, 4), (2, 2)):
        jobs.append(job(f"rank{r}", "rank", ["--layers", str(layers), "--width", "768", "--batch", "8",
                                             "--min-len", "256", "--max-len", "1024", "--seed", "1"],
                        env={"RANK": str(r), "WORLD_SIZE": "3"}))
    results += pool(jobs, 7)

if "caps" in what:
    base = pool([job("gpt2_uncapped", "gpt2", GPT2),
                 job("ckpt_uncapped", "ckpt", CKPT + ["--ckpt-mode", "reentrant"]),
                 job("ckpt_nonreentrant_uncapped", "ckpt", CKPT + ["--ckpt-mode", "nonreentrant"])], 3)
    results += base
    pr = {r["name"]: r.get("peak_reserved", 0) for r in base if r.get("outcome") == "ok"}
    jobs = []
    for model, argv, fracs, settings in (
            ("gpt2", GPT2, (0.80, 0.90), SETTINGS[:4]),
            ("ckpt", CKPT + ["--ckpt-mode", "reentrant"], (0.75, 0.85, 0.95), SETTINGS)):
        p = pr.get(model + "_uncapped", 0)
        if not p:
            continue
        for fr in fracs:
            cap = round(p * fr / 2**30, 3)
            for conf in settings:
                tag = tagof(conf)
                jobs.append(job(f"{model}_cap{fr:.2f}_{tag}", "ckpt" if model == "ckpt" else "gpt2",
                                argv + ["--cap-gib", str(cap)], conf=conf))
    results += pool(jobs, 8)

if "settings" in what:
    base = pool([job("gpt2_uncapped", "gpt2", GPT2), job("moe_uncapped", "moe", MOE)], 2)
    results += base
    pr = {r["name"]: r.get("peak_reserved", 0) for r in base if r.get("outcome") == "ok"}
    jobs = []
    for model, argv in (("gpt2", GPT2), ("moe", MOE)):
        for conf in SETTINGS2:
            jobs.append(job(f"{model}_nocap_{tagof(conf)}", model, argv, conf=conf))
        p = pr.get(model + "_uncapped", 0)
        if p:
            cap = round(p * 0.85 / 2**30, 3)
            for conf in CAPPED2:
                jobs.append(job(f"{model}_cap0.85_{tagof(conf)}", model, argv + ["--cap-gib", str(cap)],
                                conf=conf))
    results += pool(jobs, int(os.environ.get("SETTINGS_PARALLEL", "8")))

if "graphs" in what:
    results += pool([job("serve_graphs40", "serve_graphs", ["--shapes", "40"]),
                     job("compile_ro6", "compile_ro", ["--shapes", "6", "--steps", "24"],
                         timeout=400)], 2)

if "mempool_opts" in what:
    results += pool([job("mempool_oom", "mempool_oom", ["--cap-gib", "0.5"], timeout=120),
                     job("mempool_nosplit", "mempool_nosplit", timeout=120),
                     job("mempool_live_exp", "mempool_live", conf="expandable_segments:True",
                         timeout=120)], 3)

if "ring" in what:
    results += pool([
        job("ring_default_80steps", "gpt2", GPT2 + ["--steps", "80", "--max-entries", "100000"],
            timeout=500),
        job("ring_exp", "gpt2", GPT2 + ["--steps", "12", "--max-entries", "15000"],
            conf="expandable_segments:True"),
        job("ring_emptycache", "gpt2_emptycache", ["--steps", "12", "--max-entries", "9000"]),
        job("ring_emptycache_exp", "gpt2_emptycache", ["--steps", "12", "--max-entries", "9000"],
            conf="expandable_segments:True"),
        job("ring_graphed", "graphed", ["--steps", "40", "--max-entries", "400"]),
        job("ring_compile_ro", "compile_ro", ["--steps", "24", "--max-entries", "300"], timeout=400),
        job("ring_mempool_live", "mempool_live", ["--max-entries", "150"]),
        job("ring_side_stream", "side_stream", ["--steps", "24", "--max-entries", "500"]),
        job("ring_fsdp2", "fsdp2", ["--layers", "6", "--width", "768", "--batch", "4",
                                    "--min-len", "128", "--max-len", "1024", "--steps", "12",
                                    "--max-entries", "8000"]),
    ], 9)

if "external" in what:
    results += pool([job("external_oom", "external", GPT2 + ["--leave-gib", "5"])], 1)

with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(results, f, indent=1)
print(f"done in {time.time() - T0:.0f}s", flush=True)
