#!/usr/bin/env python3
"""A snapshot in small frames for the parallel scan's tests (tests/test_pickle_scan.c):

- scan/small_frames.pickle: tests/data/gpu/stacks_all.pickle written again with
  protocol 4 by Python's own pickler, its frames about 48 bytes instead of
  64 KiB. So a small file has thousands of frame boundaries to cut at, and
  every string of 48 bytes or more sits outside any frame, between two, as
  Python writes large strings.

Run from the repository root: python3 tests/data/make_scan_fixtures.py
"""
import io
import pickle

with open("tests/data/gpu/stacks_all.pickle", "rb") as f:
    snap = pickle.load(f)
pickle._Framer._FRAME_SIZE_TARGET = 48
buf = io.BytesIO()
pickle._Pickler(buf, protocol=4).dump(snap)
with open("tests/data/pytorch/scan/small_frames.pickle", "wb") as f:
    f.write(buf.getvalue())
