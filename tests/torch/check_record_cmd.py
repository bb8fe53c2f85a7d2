"""Checks `fragscope record -- python PROGRAM` without torch or a GPU: a
stand-in torch (tests/torch/fake/torch) logs every call fragscope makes into
it, so the checks see when the recorder attaches, what it touches, and what
the program's children inherit.
Usage: python3 check_record_cmd.py FRAGSCOPE SCRATCH_DIR
Prints "record cmd ok" when every check passed, else what differed."""
import os
import subprocess
import sys
import textwrap

FS, TMP = sys.argv[1], sys.argv[2]
FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake")
os.makedirs(TMP, exist_ok=True)
failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what + ("\n    " + detail.replace("\n", "\n    ") if detail else ""))


def write(name, text):
    p = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(textwrap.dedent(text))
    return p


def run(args, env_extra=None, log="log.txt"):
    logp = os.path.join(TMP, log)
    if os.path.exists(logp):
        os.remove(logp)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FRAGSCOPE_", "FAKE_TORCH_")) and k != "PYTHONPATH"}
    env["FAKE_TORCH_LOG"] = logp
    env["PYTHONPATH"] = FAKE
    env.update(env_extra or {})
    p = subprocess.run([FS, "record"] + args, cwd=TMP, env=env, capture_output=True,
                       text=True, timeout=120)
    lines = open(logp).read().splitlines() if os.path.exists(logp) else []
    return p, lines


# ---- an existing sitecustomize, the program, a child, a fork ---------------------------
user_site = os.path.dirname(write("usersite/sitecustomize.py", """
    import os
    MARK = "user"
    with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
        f.write("%d user sitecustomize ran\\n" % os.getpid())
    """))
child = write("child.py", """
    import os, sys
    import torch
    torch._log("child env AUTORECORD=%s first=%s" % (
        os.environ.get("FRAGSCOPE_AUTORECORD"), sys.path[1].rsplit("/", 1)[-1]))
    """)
prog = write("prog.py", """
    import os, subprocess, sys
    import sitecustomize
    import torch
    torch._log("program: sitecustomize is %s" % getattr(sitecustomize, "MARK", "fragscope's"))
    torch._log("program: after import, cuda initialized=%s" % torch.cuda.is_initialized())
    torch.cuda.set_per_process_memory_fraction(0.5)
    torch.cuda._fake_first_allocation()

    def asks_for_memory():
        # the OOM observer, called inside the failing allocation
        torch._C.observers[0](0, 1 << 30, 2 << 30, 0)

    def train_step():
        asks_for_memory()

    train_step()
    import fragscope_torch
    with fragscope_torch.tag("eval"):
        pass
    subprocess.run([sys.executable, "CHILD"], check=True)
    pid = os.fork()
    if pid == 0:
        torch._log("forked child")
        os._exit(0)
    os.waitpid(pid, 0)
    """.replace("CHILD", child))
p, log = run(["-o", "run.fstrace", "--", sys.executable, prog],
             {"PYTHONPATH": FAKE + os.pathsep + user_site})
text = "\n".join(log)
check(p.returncode == 0, "the program exits 0 under fragscope record", p.stderr)
# the program's own lines (its pid: the first to import torch)
pid = next((l.split(" ", 1)[0] for l in log if l.endswith(" torch: import done")), "-")
me = [l.split(" ", 1)[1] for l in log if l.split(" ", 1)[0] == pid]
check("user sitecustomize ran" in text, "the environment's sitecustomize runs", text)
check("program: sitecustomize is user" in text,
      "the module sitecustomize is the environment's own", text)
# attach after torch finished importing, and nothing of CUDA before the program
i_done = next((i for i, l in enumerate(me) if l == "torch: import done"), -1)
i_load = next((i for i, l in enumerate(me) if l.startswith("load ")), -1)
i_prog = next((i for i, l in enumerate(me) if l.startswith("program: after import")), -1)
check(0 <= i_done < i_load < i_prog, "the recorder attaches after `import torch` finished, "
      "before the program's next line", "\n".join(me))
check(not any(l.startswith("CUDA") for l in me[:i_prog]),
      "nothing initializes CUDA before the program does", "\n".join(me[:i_prog]))
check("program: after import, cuda initialized=False" in me,
      "CUDA is not initialized when import torch returns", "\n".join(me))
check("load arch=9.0 sources=1 headers=1" in me,
      "the extension is built with an architecture list given (no device query) and the "
      "recorder's headers", "\n".join(me))
want = ["ext.open %s/run.fstrace ring=0" % os.path.realpath(TMP), "ext.late",
        "ext.oom_sites True", "ext.start "]
got = [l for l in me if l.split(" ")[0] in ("ext.open", "ext.late", "ext.oom_sites",
                                            "ext.start")]
check([g.replace(TMP, os.path.realpath(TMP)) for g in got] == want,
      "the recorder opens, begins devices late, flags OOM call sites and starts",
      "got %s\nwant %s" % (got, want))
check("ext.set_fraction 0 0.5" in me, "the program's memory fraction reaches the recorder",
      "\n".join(me))
check("ext.begin_late 0" in me, "the device begins at its first allocation", "\n".join(me))
site = [l for l in me if l.startswith("ext.oom_site ")]
check(site == ["ext.oom_site 0 prog.py:12:asks_for_memory | prog.py:15:train_step | "
               "prog.py:17:<module>"],
      "the OOM observer names the failing request's Python stack, innermost first, "
      "fragscope's own frames left out", "%s" % site)
check("ext.tag_push 'eval'" in me and "ext.tag_pop " in me,
      "the program's own fragscope_torch.tag() names events (one recorder)", "\n".join(me))
check(any(l.endswith("ext.forked ") for l in log), "a forked child stops recording", text)
kids = [l for l in log if "child env AUTORECORD=" in l]
check(len(kids) == 1 and kids[0].endswith("AUTORECORD=%s/run.fstrace first=fragscope_boot"
                                          % TMP),
      "a subprocess inherits the recording and the bootstrap", "%s" % kids)
check(sum(1 for l in log if l.endswith("ext.late")) == 2,
      "the subprocess attaches the recorder too", text)
trace = os.path.join(TMP, "run.fstrace")
check("fragscope record: run.fstrace: 4496 events in " in p.stderr,
      "the summary names the trace the program began, with its events", p.stderr)
check("fragscope record: next: fragscope analyze run.fstrace -o run.db && fragscope report "
      "run.db" in p.stderr, "the summary says which command comes next", p.stderr)
check(os.path.isfile(trace), "the trace is there", p.stderr)

# ---- --ring passes through; the path gets the rank in a distributed job ------------
simple = write("simple.py", "import torch\n")
p, log = run(["-o", "r.fstrace", "--ring", "100", "--", sys.executable, simple],
             {"RANK": "1", "WORLD_SIZE": "2"})
check(any(l.endswith("ext.open %s/r.rank1.fstrace ring=100" % TMP) for l in log),
      "--ring and the rank reach the recorder", "\n".join(log))
p, log = run(["-o", "o%r.fstrace", "--", sys.executable, simple],
             {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"})
check(any(l.endswith("ext.open %s/o3.fstrace ring=0" % TMP) for l in log),
      "%r is mpirun's rank", "\n".join(log))
check(p.returncode == 0 and "recorded nothing" in p.stderr,
      "a program that allocates nothing: said, exit 0", p.stderr)

# ---- python -m fragscope_torch record: the same, for pip users ------------------------
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("FRAGSCOPE_", "FAKE_TORCH_")) and k != "PYTHONPATH"}
env.update(FAKE_TORCH_LOG=os.path.join(TMP, "m.txt"), FRAGSCOPE_BIN=FS,
           PYTHONPATH=os.path.dirname(FS) + os.pathsep + FAKE)
p = subprocess.run([sys.executable, "-m", "fragscope_torch", "record", "-o", "m.fstrace", "--",
                    sys.executable, prog], cwd=TMP, env=env, capture_output=True, text=True,
                   timeout=120)
check(p.returncode == 0 and "fragscope record: m.fstrace: 4496 events in " in p.stderr,
      "python -m fragscope_torch record records as fragscope record does", p.stderr)

# ---- cannot record: one line, exit 2 ---------------------------------------------------
p, log = run(["-o", "f.fstrace", "--", sys.executable, simple], {"FAKE_TORCH_BUILD_FAIL": "1"})
err = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode == 2, "an extension that does not build: exit 2", p.stderr)
check(len(err) == 1 and err[0].startswith("fragscope record: cannot record this program: "
                                          "fragscope_torch.record: cannot build the native "
                                          "recorder's extension"),
      "an extension that does not build: one line", p.stderr)
p, log = run(["-o", "f.fstrace", "--", sys.executable, simple], {"FAKE_TORCH_CPU": "1"})
err = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode == 2 and len(err) == 1 and "built without CUDA" in err[0],
      "a torch without CUDA: one line, exit 2", p.stderr)
p, log = run(["-o", "f.fstrace", "--", sys.executable, simple], {"PYTHONPATH": TMP})
err = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode == 2 and len(err) == 1 and "has no torch to import" in err[0] and not log,
      "no torch: one line, exit 2, the program not run", p.stderr)
p, log = run(["-o", "f.fstrace", "--", sys.executable, simple],
             {"FRAGSCOPE_NATIVE_SRC": "/no/such/fragscope_native.cpp"})
err = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode == 2 and len(err) == 1 and "/no/such/fragscope_native.cpp is missing"
      in err[0] and not log, "the recorder's files missing: one line, exit 2", p.stderr)

# ---- the whole process at an OOM: NVML per process (a stand-in libnvidia-ml) --------
cc = next((c for c in ("cc", "gcc", "clang") if subprocess.run(
    ["sh", "-c", "command -v " + c], capture_output=True).returncode == 0), None)
nvml = os.path.join(TMP, "libfake_nvml.so")
if cc is not None:
    subprocess.run([cc, "-shared", "-fPIC", "-o", nvml, os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "fake_nvml.c")], check=True)
    line = ("import sys; sys.path.insert(0, %r); import fragscope_torch as f; "
            "print(f._process_memory_line(0))" % os.path.dirname(FS))

    def nvml_line(procs, stride, lib=nvml):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRAGSCOPE_")}
        env.update(PYTHONPATH=FAKE, FRAGSCOPE_NVML_LIB=lib, FAKE_NVML_PROCS=procs,
                   FAKE_NVML_STRIDE=str(stride), FAKE_TORCH_RESERVED=str(3 << 30))
        p = subprocess.run([sys.executable, "-c", line], env=env, capture_output=True,
                           text=True, timeout=60)
        return (p.stdout + p.stderr).strip()

    want = ("device memory by process (NVML): this process 3.50 GiB, of which the allocator "
            "reserved 3.00 GiB and 0.50 GiB is outside it (CUDA context, library workspaces, "
            "NCCL buffers); 2 other processes 3.00 GiB")
    for stride in (24, 32):
        got = nvml_line("777:%d,self:%d,778:%d" % (1 << 30, 7 << 29, 2 << 30), stride)
        check(got == want, "NVML's processes read at a stride of %d bytes" % stride,
              "got  %s\nwant %s" % (got, want))
    got = nvml_line("777:%d" % (1 << 30), 32)
    check(got.startswith("device memory by process (NVML): 1 process hold 1.00 GiB; this "
                         "process (pid ") and got.endswith(") is not among them (a container's "
                         "own pid namespace?), so its memory outside the allocator is not "
                         "known; the allocator reserved 3.00 GiB"),
          "this process not among NVML's: said", got)
    got = nvml_line("", 24, lib=os.path.join(TMP, "no-such-nvml.so"))
    check(got.startswith("device memory by process: not known (NVML (") and
          "no-such-nvml.so) cannot be loaded" in got, "no NVML: said", got)

if failures:
    print("FAILED:\n- " + "\n- ".join(failures))
    sys.exit(1)
print("record cmd ok")
