"""The `fragscope` command of the Python package: runs the fragscope program
that the package carries (built with it by setup.py)."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "fragscope")
    if not os.path.isfile(exe):
        sys.exit("fragscope: %s is missing: reinstall the fragscope package" % exe)
    os.execv(exe, [exe] + sys.argv[1:])
