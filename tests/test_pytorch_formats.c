/*
 * test_pytorch_formats.c — PyTorch snapshots as PyTorch 2.11 writes them on
 * an H200 (tests/data/gpu/, from bench/gpu/results/2026-12-01) and
 * snapshots derived from them (tests/data/make_format_fixtures.py): every
 * key is kept and written back (import -> export gives the file back, field
 * by field, checked by tests/compare_snapshots.py), unknown actions and keys
 * are kept and counted instead of failing, devices are chosen with
 * --device, frames are stored structured and named by their user frames,
 * and the report shows an OOM's call site and the device's free bytes.
 *
 * What PyTorch's torch/cuda/_memory_viz.py does with the same files is said
 * at each test; fragscope must do at least as much.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/frames.h"
#include "fsc_test.h"

#define H200 "gpu/"

static char g_out[65536];

/* snapshot -> import -> export -> compare_snapshots.py: "0 differences". */
static void roundtrip(const char *rel, int device)
{
    const char *snap = rel[0] == '/' ? rel : fsc_test_data(rel); /* or a file of ours */
    char trace[512], out[600], dev[32] = "";
    const char *base = strrchr(rel, '/') + 1;
    snprintf(trace, sizeof trace, "%s.fstrace", fsc_test_path(base));
    snprintf(out, sizeof out, "%s.out.pickle", trace);
    if (device >= 0)
        snprintf(dev, sizeof dev, " --device %d", device);
    int rc = fsc_test_sh(g_out, sizeof g_out, "%s import %s -o %s%s", fsc_test_fragscope(),
                         snap, trace, dev);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", g_out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = fsc_test_sh(g_out, sizeof g_out, "%s export %s --pytorch-snapshot %s",
                     fsc_test_fragscope(), trace, out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = fsc_test_sh(g_out, sizeof g_out, "python3 %s/tests/compare_snapshots.py %s %s%s",
                     FSC_SOURCE_DIR, snap, out, dev);
    if (rc == 127) {
        fprintf(stderr, "\n(python3 not found: comparison skipped)\n");
        return;
    }
    if (rc != 0)
        fprintf(stderr, "\n%s: %s\n", rel, g_out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "0 differences"));
}

/* memory_viz draws segments and blocks with their frames (segments(),
 * memory(), segsum()) and replays the history (trace()); its input is the
 * file itself. fragscope's export of an import is that file again, every key
 * of every entry, segment, block and frame (C++ frames of stacks='all'
 * included, whose names hold ':'), allocator_settings with the keys the
 * rules do not use, annotations and user_metadata. */
static void test_roundtrip_stacks_all(void) { roundtrip(H200 "stacks_all.pickle", -1); }
static void test_roundtrip_annotations(void) { roundtrip(H200 "annotations.pickle", -1); }
static void test_roundtrip_pinned(void) { roundtrip(H200 "pinned.pickle", -1); }
static void test_roundtrip_unknown(void) { roundtrip(H200 "unknown_keys.pickle", -1); }
static void test_roundtrip_device1(void) { roundtrip(H200 "two_devices.pickle", 1); }
/* torch.compile(mode="reduce-overhead"): frames of generated code with
 * line 2^64 - 1, compile_context on every entry, CUDA-graph pools */
static void test_roundtrip_compile(void) { roundtrip("pytorch/compile_ro.pickle", -1); }

/* torch.cuda.memory._snapshot(augment_with_fx_traces=True) adds fx_node_op,
 * fx_node_name, fx_node_target and fx_original_trace to the frames of
 * generated code, which memory_viz shows beside the frame ("node=addmm,
 * op=call_function, target=...") with the original source line. No H200
 * recording has them, so tests/make_fx_snapshot.py adds them to compile_ro
 * as PyTorch would (15 frame dicts, 20 tag nodes, a None op among them).
 * They are kept per tag node (pytorch_meta kind 'frame') and exported again. */
static void test_fx_frame_keys(void)
{
    const char *fx = fsc_test_path("compile_ro_fx.pickle");
    int rc = fsc_test_sh(g_out, sizeof g_out, "python3 %s/tests/make_fx_snapshot.py %s %s",
                         FSC_SOURCE_DIR, fsc_test_data("pytorch/compile_ro.pickle"), fx);
    if (rc == 127) {
        fprintf(stderr, "\n(python3 not found: skipped)\n");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_STRING_EQUAL(g_out, "15 frames augmented\n");
    roundtrip(fx, -1);
    const char *db = fsc_test_path("fx.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), fx, db), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT count(*) FROM pytorch_meta WHERE kind ="
                                " 'frame'; SELECT count(*) FROM pytorch_meta WHERE kind = 'frame'"
                                " AND json_type(json, '$.fx_node_op') = 'null'; SELECT"
                                " f.line || ' ' || f.function || ' ' || m.json FROM pytorch_meta m"
                                " JOIN tag_frames f ON f.tag = json_extract(m.json, '$.tag')"
                                " WHERE m.kind = 'frame' AND f.line = 139 LIMIT 1\"", db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "20\n2\n139 call {\"tag\":223,\"fx_node_op\":\"call_module\","
                                  "\"fx_node_name\":\"addmm_4\",\"fx_node_target\":"
                                  "\"aten.addmm.default\",\"fx_original_trace\":\"  File "
                                  "\\\"model.py\\\", line 139, in forward\\n    a = "
                                  "self.net1(x)\\n\"}\n");
}

/* memory_viz shows each entry's compile_context in its timeline. fragscope
 * keeps it per entry (pytorch_meta) for the report to name the compiled
 * region of a block (as it does for the blocks pinning an OOM). */
static void test_compile_context(void)
{
    const char *snap = fsc_test_data("pytorch/compile_ro.pickle");
    const char *db = fsc_test_path("compile.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), snap, db), 0);
    /* 662 entries ran in region 0/1 and 341 in 0/0 (the first entry's
     * 'N/A' is the default); one frame of generated code has no line */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT count(*) FROM pytorch_meta WHERE kind ="
                                " 'entry' AND json LIKE '%%Region: 0/1%%'; SELECT count(*) FROM"
                                " pytorch_meta WHERE kind = 'entry' AND json LIKE"
                                " '%%Region: 0/0%%'; SELECT count(*) FROM tag_frames WHERE line"
                                " IS NULL AND file LIKE '%%fake_tensor.py'\"", db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "662\n341\n1\n");
}

/* memory_viz's trace() prints an entry of an action it does not know as the
 * raw dict and goes on; its other views ignore unknown keys. fragscope goes
 * on too, keeps both (pytorch_meta, and the export writes them back) and
 * says what it did not understand, in import, report and report JSON. */
static void test_unknown_actions_and_keys(void)
{
    const char *snap = fsc_test_data(H200 "unknown_keys.pickle");
    const char *db = fsc_test_path("unknown.db");
    int rc = fsc_test_sh(g_out, sizeof g_out, "%s import %s -o %s", fsc_test_fragscope(), snap,
                         fsc_test_path("unknown.fstrace"));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(
        g_out, "  not understood, kept: 2 entries with an unknown action, 7 unknown keys "
               "(top-level key 'vendor_info' x1; allocator_settings key 'vendor_setting' x1; "
               "segment key 'vendor_segment' x1; block key 'vendor_block' x1; entry key "
               "'vendor_tag' x3; action 'workspace_snapshot' x1; action 'vendor_op' x1)\n"));
    /* the two unknown actions and annotate have no event */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "43 history entries -> 60 events"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), snap, db), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s report %s", fsc_test_fragscope(),
                                      db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "  not understood  2 entries with an unknown action, "
                                         "7 unknown keys (kept in table pytorch_meta): "));
    /* the same peak as without the unknown entries (pinned.stats.json) */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "peak allocated             24.00 MiB"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out,
                                      "%s report %s --format json | python3 -c 'import json,sys;"
                                      " w = json.load(sys.stdin)[\"warnings\"]; print("
                                      "w[\"unknown_actions\"], w[\"unknown_keys\"], "
                                      "w[\"import_skipped_entries\"], "
                                      "w[\"replay_skipped_events\"])'",
                                      fsc_test_fragscope(), db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "2 7 0 0\n");
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT kind, json FROM pytorch_meta WHERE kind ="
                                " 'action' ORDER BY id\"", db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "action|{\"action\":\"workspace_snapshot\","));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"detail\":[1,{\"__tuple__\":[2,3]}]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "action|{\"action\":\"annotate\","));
    /* keys PyTorch documents are kept without being counted */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT count(*) FROM pytorch_meta WHERE (kind ="
                                " 'entry' AND json LIKE '%%forward_frames%%') OR (kind ="
                                " 'snapshot' AND json LIKE '%%host_segments%%host_traces%%')\"",
                                db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "2\n");
}

/* memory_viz plots every device of a snapshot (its device argument is
 * deprecated). fragscope's analyze writes every device with history into
 * one database, one run each (runs.device); --device picks one. */
static void test_devices(void)
{
    const char *snap = fsc_test_data(H200 "two_devices.pickle");
    const char *db = fsc_test_path("dev.db");
    int rc = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s", fsc_test_fragscope(),
                         snap, db);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "2 runs from 1 input"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT r.device, s.value FROM runs r JOIN summary s"
                                " USING (run) WHERE s.key = 'peak_allocated_bytes' ORDER BY run\"",
                                db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "0|6061770240\n1|25165824\n");
    /* device 1 is pinned.pickle: its peaks (pinned.stats.json) */
    rc = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s --device 1", fsc_test_fragscope(),
                     snap, db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "peak allocated 24.00 MiB, peak reserved 42.00 MiB"));
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT value FROM meta WHERE key = 'import.device'"
                                " UNION ALL SELECT value FROM summary WHERE key ="
                                " 'peak_allocated_bytes'\"", db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "1\n25165824\n");
    /* device 0 is rank2.pickle: allocated_bytes.all.peak of its stats */
    rc = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s --device 0 --no-suggest",
                     fsc_test_fragscope(), snap, db);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT value FROM summary WHERE key ="
                                " 'peak_allocated_bytes'\"", db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "6061770240\n");
    rc = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s --device 7", fsc_test_fragscope(),
                     snap, db);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "no device 7 in the snapshot (devices with history: "
                                         "0, 1)"));
    rc = fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s --device x", fsc_test_fragscope(),
                     snap, db);
    CU_ASSERT_EQUAL(rc, 2);
    /* what-if takes --device and --lenient like import */
    rc = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --device 1 --lenient --config ''",
                     fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(rc, 0);
    rc = fsc_test_sh(g_out, sizeof g_out, "%s whatif %s --config ''", fsc_test_fragscope(), snap);
    CU_ASSERT_EQUAL(rc, 2);
}

/* memory_viz names a frame "file:line:function" with the file's last
 * component and drops unwinder, interpreter and dispatcher frames
 * (_frame_filter). fragscope keeps every frame (file, line and function
 * apart in tag_frames) and names a tag by its innermost user frame and
 * callers, leaving out the same families and the allocator's own frames. */
static void test_frames_stacks_all(void)
{
    const char *snap = fsc_test_data(H200 "stacks_all.pickle");
    const char *db = fsc_test_path("stacks.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), snap, db), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s report %s", fsc_test_fragscope(),
                                      db), 0);
    const char *tags = strstr(g_out, "live at the peak, by tag\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tags);
    CU_ASSERT_PTR_NOT_NULL(strstr(tags, "     57.03 MiB      28 blocks  adam.py:178 "
                                        "_init_group ← adam.py:238 step\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tags, "     32.00 MiB       1 blocks  pytorch_utils.py:119 "
                                        "forward ← modeling_gpt2.py:185 forward\n"));
    CU_ASSERT_PTR_NULL(strstr(tags, "_call_impl")); /* nn.Module's call machinery */
    CU_ASSERT_PTR_NULL(strstr(tags, "??"));
    CU_ASSERT_PTR_NULL(strstr(tags, "unwind"));
    CU_ASSERT_PTR_NULL(strstr(tags, "CUDACachingAllocator"));
    CU_ASSERT_PTR_NULL(strstr(tags, "_PyEval"));
    /* two rows that read alike are told apart by where their paths part */
    CU_ASSERT_PTR_NOT_NULL(strstr(tags, "      6.02 MiB      16 blocks  module.py:1370 convert ← "
                                        "module.py:965 _apply … ← module.py:934 _apply\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tags, "     51.00 MiB       4 blocks  module.py:1370 convert ← "
                                        "module.py:965 _apply … ← module.py:965 _apply\n"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s report %s --all-frames",
                                      fsc_test_fragscope(), db), 0);
    tags = strstr(g_out, "live at the peak, by tag\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tags);
    CU_ASSERT_PTR_NOT_NULL(strstr(tags, "torch::unwind::unwind ← torch::CapturedTraceback::gather"));
    /* frames stored structured: a C++ frame and a Python frame */
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT file, line, function, class FROM tag_frames"
                                " WHERE function = 'torch::unwind::unwind()' OR (function ="
                                " '_init_group' AND line = 178) GROUP BY function\"", db), 0);
    CU_ASSERT_STRING_EQUAL(g_out,
                           "/opt/torch/.venv/lib/python3.12/site-packages/torch/optim/adam.py|178|"
                           "_init_group|2\n??|0|torch::unwind::unwind()|0\n");
}

/* The split behind tag_frames and the export (fragscope/frames.h). */
static void test_frame_parse(void)
{
    fsc_frame_t f;
    const char *cxx = "??:0:at::native::empty(c10::ArrayRef<long>, at::(anonymous namespace)::X)";
    CU_ASSERT_EQUAL(fsc_frame_parse(cxx, strlen(cxx), &f), 1);
    CU_ASSERT_EQUAL(f.file_len, 2);
    CU_ASSERT_EQUAL(f.line, 0);
    CU_ASSERT_EQUAL(strncmp(f.function, "at::native::empty(", 18), 0);
    CU_ASSERT_EQUAL(fsc_frame_class(&f, 1), FSC_FRAME_NATIVE);
    char buf[128];
    fsc_frame_short(&f, 1, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "at::native::empty");
    const char *anon = "x.cpp:0:void at::(anonymous namespace)::k<float>(int) const";
    CU_ASSERT_EQUAL(fsc_frame_parse(anon, strlen(anon), &f), 1);
    fsc_frame_short(&f, 1, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "x.cpp void at::(anonymous namespace)::k<float>");
    const char *py = "/srv/a:b/model.py:12:forward";
    CU_ASSERT_EQUAL(fsc_frame_parse(py, strlen(py), &f), 1);
    CU_ASSERT_EQUAL(f.file_len, strlen("/srv/a:b/model.py"));
    CU_ASSERT_EQUAL(f.line, 12);
    CU_ASSERT_EQUAL(fsc_frame_class(&f, 1), FSC_FRAME_USER);
    fsc_frame_short(&f, 1, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "model.py:12 forward");
    CU_ASSERT_EQUAL(fsc_frame_parse("g.py:?:f", 8, &f), 1);
    CU_ASSERT_EQUAL(f.line, UINT64_MAX);
    CU_ASSERT_EQUAL(f.file_len, 4);
    const char *big = "<eval_with_key>.3:18446744073709551615:forward";
    CU_ASSERT_EQUAL(fsc_frame_parse(big, strlen(big), &f), 1);
    CU_ASSERT_EQUAL(f.line, UINT64_MAX);
    CU_ASSERT_EQUAL(fsc_frame_parse("forward", 7, &f), 0);
    CU_ASSERT_EQUAL(fsc_frame_class(&f, 0), FSC_FRAME_USER);
    CU_ASSERT_EQUAL(fsc_frame_parse("a:12", 4, &f), 0);
    CU_ASSERT_EQUAL(fsc_frame_parse("c10::cuda::X", 12, &f), 0);
    const char *noise[] = {"??:0:_PyEval_EvalFrameDefault", "??:0:PyObject_Call",
                           "??:0:torch::unwind::unwind()", "ceval.c:100:f",
                           "CUDACachingAllocator.cpp:0:c10::cuda::CUDACachingAllocator::"
                           "Native::DeviceCachingAllocator::malloc(unsigned long)",
                           "RegisterCUDA_0.cpp:0:at::wrapper_CUDA__empty(int)", "??:0:t",
                           "/venv/torch/nn/modules/module.py:1784:_call_impl",
                           "/venv/torch/nn/modules/module.py:1773:_wrapped_call_impl",
                           /* _call_impl's inner(), when the module has hooks */
                           "/venv/torch/nn/modules/module.py:1833:inner"};
    for (size_t i = 0; i < sizeof noise / sizeof *noise; i++) {
        int fr = fsc_frame_parse(noise[i], strlen(noise[i]), &f);
        CU_ASSERT_EQUAL(fsc_frame_class(&f, fr), FSC_FRAME_NOISE);
    }
    /* an inner() of the program's own is the program's */
    const char *own = "/srv/model.py:40:inner";
    CU_ASSERT_EQUAL(fsc_frame_parse(own, strlen(own), &f), 1);
    CU_ASSERT_EQUAL(fsc_frame_class(&f, 1), FSC_FRAME_USER);
}

/* memory_viz's trace() prints an OOM as "raise OutOfMemoryError() # N
 * requested, M free in CUDA". fragscope's report says where it was raised
 * and what the free bytes mean. */
static void test_oom_site_and_device_free(void)
{
    const char *snap = fsc_test_data("pytorch/gpt2m_oom_12g.pickle");
    const char *db = fsc_test_path("oom.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s --no-suggest",
                                      fsc_test_fragscope(), snap, db), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s report %s", fsc_test_fragscope(),
                                      db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "    call site: activations.py:66 forward ← "
                                         "modeling_gpt2.py:240 forward ← modeling_gpt2.py:305 "
                                         "forward\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "    device free at the OOM: 127.16 GiB, enough for "
                                         "the 96.00 MiB the allocator asked for: a cap "
                                         "(set_per_process_memory_fraction) stopped it, not the "
                                         "device\n"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out,
                                      "%s report %s --format json | python3 -c 'import json,sys;"
                                      " o = json.load(sys.stdin)[\"ooms\"][0]; print("
                                      "o[\"device_free_bytes\"], o[\"call_site\"][:25])'",
                                      fsc_test_fragscope(), db), 0);
    CU_ASSERT_STRING_EQUAL(g_out, "136538357760 activations.py:66 forward\n");
}

/* memory_viz shows user_metadata per entry in its timeline. fragscope keeps
 * it per entry (table pytorch_meta, only where it differs from the first
 * entry's) and reads it back for any event. */
static void test_user_metadata(void)
{
    const char *snap = fsc_test_data(H200 "annotations.pickle");
    const char *db = fsc_test_path("ann.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), snap, db), 0);
    CU_ASSERT_EQUAL(fsc_test_sh(g_out, sizeof g_out,
                                "sqlite3 %s \"SELECT kind, count(*) FROM pytorch_meta GROUP BY"
                                " kind ORDER BY kind; SELECT json FROM pytorch_meta WHERE kind ="
                                " 'entry' ORDER BY id LIMIT 1; SELECT e.type FROM pytorch_meta m,"
                                " events e WHERE m.kind = 'entry' AND e.seq = m.seq GROUP BY"
                                " e.type ORDER BY e.type\"", db), 0);
    /* 1040 entries ran under _set_memory_metadata; every record sits on
     * its entry's own event (ALLOC 5, FREE_REQUESTED 6, FREE_COMPLETED 7,
     * SEGMENT_ALLOC 1), never on a SPLIT */
    CU_ASSERT_STRING_EQUAL(g_out, "action|1\nentry|1040\nsegment|4\nsnapshot|1\n"
                                  "{\"user_metadata\":\"{\\\"step\\\": 0, \\\"seq_len\\\": 162}\"}\n"
                                  "1\n5\n6\n7\n");
}

/* memory_viz reads PyTorch before 2.1's blocks through their 'history'
 * (_block_extra_legacy: frames and real_size of the first record). So does
 * fragscope's rebuild of a wrapped history's starting state; the legacy
 * 'free' action replays as a completed free. (The export writes today's
 * layout, so this file is not compared field by field.) */
static void test_legacy_layout(void)
{
    const char *snap = fsc_test_data(H200 "legacy.pickle");
    const char *db = fsc_test_path("legacy.db");
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s import %s -o %s",
                                      fsc_test_fragscope(), snap,
                                      fsc_test_path("legacy.fstrace")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "the final segments: 8 segments or mapped ranges "
                                         "(94.00 MiB reserved), 47 live blocks"));
    /* the peak of annotations.stats.json (allocated_bytes.all.peak 476357632) */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "peak allocated 454.29 MiB, peak reserved 632.00 MiB"));
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s analyze %s -o %s",
                                      fsc_test_fragscope(), snap, db), 0);
    CU_ASSERT_EQUAL_FATAL(fsc_test_sh(g_out, sizeof g_out, "%s report %s", fsc_test_fragscope(),
                                      db), 0);
    /* two of the blocks live at the end predate the history: named by the
     * frames of their 'history' */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "still allocated at the end, by tag\n     33.00 MiB"
                                         "       2 blocks  pytorch_utils.py:119 forward ← "
                                         "modeling_gpt2.py:185 forward\n"));
}

static const fsc_test_case_t k_tests[] = {
    {"round trip, field by field: stacks='all'", test_roundtrip_stacks_all},
    {"round trip, field by field: annotations and user_metadata", test_roundtrip_annotations},
    {"round trip, field by field: pinned", test_roundtrip_pinned},
    {"round trip, field by field: unknown actions and keys", test_roundtrip_unknown},
    {"round trip, field by field: device 1 of two", test_roundtrip_device1},
    {"round trip, field by field: torch.compile reduce-overhead", test_roundtrip_compile},
    {"compile_context kept per entry", test_compile_context},
    {"fx_* frame keys kept and exported again", test_fx_frame_keys},
    {"unknown actions and keys are kept and counted", test_unknown_actions_and_keys},
    {"--device on a two-device snapshot", test_devices},
    {"stacks='all': tags named by user frames", test_frames_stacks_all},
    {"frame names split and classed", test_frame_parse},
    {"OOM call site and device free bytes", test_oom_site_and_device_free},
    {"user_metadata kept per entry", test_user_metadata},
    {"PyTorch before 2.1: block history, free action", test_legacy_layout},
    {NULL, NULL},
};

FSC_TEST_MAIN("pytorch_formats", k_tests)
