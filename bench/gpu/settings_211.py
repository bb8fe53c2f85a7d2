#!/usr/bin/env python3
"""settings_211.py — what the installed PyTorch (2.11 on the GPU machine)
does with each key of fragscope's settings table and with the environment
variables, one child process per case (the settings are read once, at the
first CUDA allocation). Writes $OUT/settings_211.json and prints one line per
case. Run: OUT=/tmp/x python3 bench/gpu/settings_211.py (about a minute).

What to check against docs/allocator.md (the "PyTorch" column and the
"Which variable" and ">" notes):
  keys      every key marked "≤ 2.11" is accepted; every key marked "after 2.11"
            is refused ("Unrecognized key");
  env       which of PYTORCH_CUDA_ALLOC_CONF / PYTORCH_HIP_ALLOC_CONF /
            PYTORCH_ALLOC_CONF 2.11 reads when several are set, and whether a
            set but empty one wins;
  gt        the roundup_power2_divisions dict of "[256:1,512:2,>:4]" (2.11's
            rule: 512 -> 2, 1024 -> 4);
  lss       a 5 MiB tensor's segment under the defaults (20 MiB).
"""
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, torch
out = {"torch": torch.__version__}
try:
    x = torch.empty(5 << 20, dtype=torch.uint8, device="cuda")
    s = torch.cuda.memory._snapshot()
    out["ok"] = True
    out["settings"] = {k: v for k, v in s["allocator_settings"].items()}
    out["segments"] = sorted(seg["total_size"] for seg in s["segments"])
except Exception as e:
    out["ok"] = False
    out["error"] = str(e).splitlines()[0][:300]
print(json.dumps(out))
"""

KEYS = {
    "max_split_size_mb": "64", "max_non_split_rounding_mb": "64",
    "roundup_power2_divisions": "[256:1,512:2,>:4]", "garbage_collection_threshold": "0.6",
    "expandable_segments": "True", "large_segment_size_mb": "12",
    "per_process_memory_fraction": "0.5", "throw_on_cudamalloc_oom": "True",
    "expandable_segments_reserve": "0.5", "expandable_segments_reserve_by_class": "[a:0.5]",
    "graph_capture_record_stream_reuse": "True", "release_lock_on_cudamalloc": "True",
    "pinned_use_cuda_host_register": "True", "pinned_num_register_threads": "8",
    "pinned_use_background_threads": "True", "pinned_reserve_segment_size_mb": "64",
    "pinned_free_catch_all": "True", "backend": "native",
}
VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def child(env_over):
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    env.update(env_over)
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=120)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except Exception:
        return {"ok": False, "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:300]}


def main():
    res = {"keys": {}, "env": {}}
    for k, v in KEYS.items():
        r = child({"PYTORCH_CUDA_ALLOC_CONF": "%s:%s" % (k, v)})
        res["keys"][k] = {"accepted": r.get("ok"), "error": r.get("error")}
        print("key %-40s %s" % (k, "accepted" if r.get("ok") else "refused: %s" % r.get("error")))
    cases = {
        "cuda+generic": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64",
                         "PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6"},
        "hip+generic": {"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:64",
                        "PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6"},
        "cuda+hip": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64",
                     "PYTORCH_HIP_ALLOC_CONF": "garbage_collection_threshold:0.6"},
        "empty cuda+generic": {"PYTORCH_CUDA_ALLOC_CONF": "",
                               "PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6"},
    }
    for name, env in cases.items():
        r = child(env)
        st = r.get("settings", {})
        res["env"][name] = {"conf_string": st.get("PYTORCH_CUDA_ALLOC_CONF"),
                            "max_split_size": st.get("max_split_size"),
                            "garbage_collection_threshold": st.get("garbage_collection_threshold"),
                            "error": r.get("error")}
        print("env %-20s %s" % (name, json.dumps(res["env"][name])))
    r = child({"PYTORCH_CUDA_ALLOC_CONF": "roundup_power2_divisions:[256:1,512:2,>:4]"})
    res["gt"] = r.get("settings", {}).get("roundup_power2_divisions")
    print("gt  %s" % json.dumps(res["gt"]))
    r = child({})
    res["lss"] = {"segments": r.get("segments"), "torch": r.get("torch")}
    print("lss %s" % json.dumps(res["lss"]))
    out = os.environ.get("OUT", ".")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "settings_211.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
