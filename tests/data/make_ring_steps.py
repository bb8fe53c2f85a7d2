"""Write tests/data/pytorch/gpt2_varlen.steps.json: the index of the first
history entry at or after each "END Optimizer.step" annotation of
gpt2_varlen.pickle, where tests/test_ring_cuts.c cuts the history (a ring
snapshot whose window begins at a step boundary).

  python3 tests/data/make_ring_steps.py
"""
import bisect
import json
import os
import pickle

here = os.path.dirname(os.path.abspath(__file__))
snap = os.path.join(here, "pytorch", "gpt2_varlen.pickle")
with open(snap, "rb") as f:
    s = pickle.load(f)
times = [e["time_us"] for e in s["device_traces"][0]]
ends = [a["time_us"] for a in s["external_annotations"]
        if a.get("stage") == "END" and a.get("name", "").startswith("Optimizer.step")]
out = {"snapshot": "gpt2_varlen.pickle", "entries": len(times),
       "step_end_entries": [bisect.bisect_left(times, t) for t in ends]}
with open(os.path.join(here, "pytorch", "gpt2_varlen.steps.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
