"""setup.py — builds what the Python package ships with CMake: the fragscope
command and, where the CUDA toolkit is found, libfragscope_torch.so; then puts
them into the package fragscope_torch beside the shim (its __init__.py is the
shim's one source, tools/torch/fragscope_torch.py).

pyproject.toml holds the metadata; this file only adds the CMake step, which
needs the same Debian packages as the rest of fragscope (scripts/setup.sh).
Environment:
  FRAGSCOPE_SOURCE_DIR  the fragscope source tree (default: this folder's parent)
  FRAGSCOPE_BUILD_DIR   an existing CMake build folder to reuse (default: the
                        source tree's build/ when configured, as scripts/setup.sh
                        leaves it, else a fresh one in build/cmake next to this file)
  FRAGSCOPE_CUDA        AUTO (default), ON (fail without the CUDA toolkit), OFF
"""
import os
import re
import shutil
import stat
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("FRAGSCOPE_SOURCE_DIR") or os.path.dirname(HERE))
SKIP_DIRS = {"python", "tests", "bench", "fuzz", "docs", "sample_traces"}


def project_version():
    if not os.path.isfile(os.path.join(ROOT, "CMakeLists.txt")):
        sys.exit("fragscope: %s is not the fragscope source tree; set FRAGSCOPE_SOURCE_DIR" % ROOT)
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*fragscope\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        sys.exit("fragscope: no project(fragscope VERSION ...) in %s/CMakeLists.txt" % ROOT)
    return m.group(1)


def shim_source():
    """The shim's one source (tools/torch/fragscope_torch.py today), found
    wherever it lives in the tree, build folders and this package aside."""
    found = []
    for top, dirs, files in os.walk(ROOT):
        depth = os.path.relpath(top, ROOT).count(os.sep)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")) and
                         not (top == ROOT and d in SKIP_DIRS) and depth < 3)
        if "fragscope_torch.py" in files:
            found.append(os.path.join(top, "fragscope_torch.py"))
    if len(found) != 1:
        sys.exit("fragscope: expected one fragscope_torch.py under %s, found %s" % (ROOT, found or "none"))
    return found[0]


def run(cmd):
    print("fragscope: " + " ".join(cmd), flush=True)
    subprocess.check_call(cmd)


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        cuda = os.environ.get("FRAGSCOPE_CUDA", "AUTO").upper()
        build = os.environ.get("FRAGSCOPE_BUILD_DIR")
        if not build:
            # The build scripts/setup.sh made, else one of our own.
            build = os.path.join(ROOT, "build")
            if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
                build = os.path.join(HERE, "build", "cmake")
        build = os.path.abspath(build)
        cache = os.path.join(build, "CMakeCache.txt")
        if not os.path.isfile(cache):
            run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                 "-DFSC_TESTS=OFF", "-DFSC_BENCH=OFF", "-DFSC_CUDA=" + cuda])
        jobs = str(min(os.cpu_count() or 1, 8))
        run(["cmake", "--build", build, "-j", jobs, "--target", "fragscope", "fragscope_shared"])
        with open(cache) as f:
            have_cuda = "FSC_HAVE_CUDA_FOUND:INTERNAL=ON" in f.read()
        if cuda == "ON" and not have_cuda:
            sys.exit("fragscope: FRAGSCOPE_CUDA=ON but %s was configured without the CUDA toolkit" % build)
        with_torch = have_cuda and cuda != "OFF"
        if with_torch:
            run(["cmake", "--build", build, "-j", jobs, "--target", "fragscope_torch"])

        pkg = os.path.join(self.build_lib, "fragscope_torch")
        os.makedirs(os.path.join(pkg, "_bin"), exist_ok=True)
        shutil.copyfile(shim_source(), os.path.join(pkg, "__init__.py"))
        # `fragscope record -- python ...`: the bootstrap it puts on PYTHONPATH
        os.makedirs(os.path.join(pkg, "_boot"), exist_ok=True)
        shutil.copyfile(os.path.join(os.path.dirname(shim_source()), "boot", "sitecustomize.py"),
                        os.path.join(pkg, "_boot", "sitecustomize.py"))
        exe = os.path.join(pkg, "_bin", "fragscope")
        shutil.copyfile(os.path.join(build, "fragscope"), exe)
        os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        # The native recorder (fragscope_torch.record): its C++ source, built
        # against the user's torch on first use, the headers it includes and
        # the library it links (no CUDA toolkit needed here).
        native = os.path.join(pkg, "_native")
        shutil.rmtree(native, ignore_errors=True)
        os.makedirs(os.path.join(native, "include", "fragscope"))
        os.makedirs(os.path.join(native, "lib"))
        shutil.copyfile(os.path.join(os.path.dirname(shim_source()), "fragscope_native.cpp"),
                        os.path.join(pkg, "fragscope_native.cpp"))
        inc = os.path.join(ROOT, "include", "fragscope")
        for h in sorted(os.listdir(inc)):
            if h.endswith(".h"):
                shutil.copyfile(os.path.join(inc, h), os.path.join(native, "include", "fragscope", h))
        # fragscope/version.h is generated into the build folder
        shutil.copyfile(os.path.join(build, "include", "fragscope", "version.h"),
                        os.path.join(native, "include", "fragscope", "version.h"))
        real = os.path.realpath(os.path.join(build, "libfragscope.so"))
        for name in ("libfragscope.so", "libfragscope.so.0"):
            shutil.copyfile(real, os.path.join(native, "lib", name))
        lib = os.path.join(pkg, "libfragscope_torch.so")
        if with_torch:
            shutil.copyfile(os.path.join(build, "libfragscope_torch.so"), lib)
        else:
            if os.path.exists(lib):
                os.remove(lib)
            print("fragscope: WARNING: no CUDA toolkit (nvcc) found: installing the fragscope "
                  "command only. Recording a PyTorch run needs libfragscope_torch.so, which "
                  "needs the CUDA toolkit at install time; install it and install again.",
                  flush=True)


class BinaryDistribution(Distribution):
    """The wheel holds programs for this machine: not a pure-Python wheel."""

    def has_ext_modules(self):
        return True


setup(version=project_version(), cmdclass={"build_py": BuildWithCMake},
      distclass=BinaryDistribution)
