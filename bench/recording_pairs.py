"""recording_pairs.py — which recording a cross-setting check replays each
real run from, by the names bench/gpu/boundary.sh and record_all.py give
them: b_NAME from b_defaults (the boundary job), JOB_nocap_SETTING and
JOB_capF_SETTING from JOB_uncapped. Shared by cross_verify.py and
placement_check.py."""
import os


def job_and_base(d, name):
    """(job, path of the base recording) for the run `name` in folder d, or
    None when the name follows neither pattern."""
    if name.startswith("b_"):
        return "boundary", os.path.join(d, "b_defaults.pickle")
    if "_nocap_" in name or "_cap" in name:
        job = name.split("_nocap_")[0] if "_nocap_" in name else name.split("_cap")[0]
        return job, os.path.join(d, job + "_uncapped.pickle")
    return None
