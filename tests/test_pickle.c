/*
 * test_pickle.c — the pickle reader and writer of recorder/pytorch/pickle.h: values
 * of every supported opcode, memo sharing, the memory bound, rejection of
 * hostile input (truncation, corruption, bombs, cycles), and the writer
 * read back by the reader and by Python.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsc_test.h"
#include "pickle.h"
#include "pickle_scan.h"

static fsc__pdoc_t *parse_bytes(const void *b, size_t n, int *rc, fsc_err_t *err)
{
    fsc__pdoc_t *d = NULL;
    *rc = fsc__pickle_parse(b, n, "mem", &d, err);
    return d;
}

static fsc__pdoc_t *parse_file(const char *rel, size_t *len_out)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data(rel), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    int rc = fsc__pickle_parse(data, len, rel, &d, &err);
    free(data);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    if (len_out)
        *len_out = len;
    return d;
}

static void test_scalars(void)
{
    /* (-2, 255, 65535, -2^31, 2^40, -2^63, 1.5, True, False, None, 'hé', b'\x00\x01') */
    static const unsigned char p[] =
        "\x80\x04" "("
        "J\xfe\xff\xff\xff"              /* BININT -2 */
        "K\xff"                          /* BININT1 255 */
        "M\xff\xff"                      /* BININT2 65535 */
        "J\x00\x00\x00\x80"              /* BININT -2^31 */
        "\x8a\x06\x00\x00\x00\x00\x00\x01" /* LONG1 2^40 */
        "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80" /* LONG1 -2^63 */
        "G\x3f\xf8\x00\x00\x00\x00\x00\x00" /* BINFLOAT 1.5 */
        "\x88\x89N"
        "\x8c\x03h\xc3\xa9"              /* SHORT_BINUNICODE 'hé' */
        "C\x02\x00\x01"                  /* SHORT_BINBYTES */
        "t.";
    int rc;
    fsc_err_t err = {0};
    fsc__pdoc_t *d = parse_bytes(p, sizeof p - 1, &rc, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const fsc__pv_t *t = fsc__pdoc_root(d);
    fsc__pv_t *const *it;
    CU_ASSERT_EQUAL_FATAL(t->kind, FSC__PV_TUPLE);
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(t, &it), 12);
    int64_t v;
    CU_ASSERT(fsc__pv_int(it[0], &v) && v == -2);
    CU_ASSERT(fsc__pv_int(it[1], &v) && v == 255);
    CU_ASSERT(fsc__pv_int(it[2], &v) && v == 65535);
    CU_ASSERT(fsc__pv_int(it[3], &v) && v == INT32_MIN);
    CU_ASSERT(fsc__pv_int(it[4], &v) && v == (1ll << 40));
    CU_ASSERT(fsc__pv_int(it[5], &v) && v == INT64_MIN);
    CU_ASSERT_EQUAL(it[6]->kind, FSC__PV_FLOAT);
    CU_ASSERT_DOUBLE_EQUAL(it[6]->u.f, 1.5, 0.0);
    CU_ASSERT(fsc__pv_int(it[7], &v) && v == 1 && it[7]->kind == FSC__PV_BOOL);
    CU_ASSERT(fsc__pv_int(it[8], &v) && v == 0);
    CU_ASSERT_EQUAL(it[9]->kind, FSC__PV_NONE);
    CU_ASSERT(fsc__pv_is_str(it[10], "h\xc3\xa9"));
    CU_ASSERT_EQUAL(it[11]->kind, FSC__PV_BYTES);
    CU_ASSERT_EQUAL(it[11]->len, 2);
    CU_ASSERT_EQUAL(memcmp(it[11]->u.s, "\x00\x01", 2), 0);
    CU_ASSERT_EQUAL(t->depth, 2);
    fsc__pdoc_free(d);
}

static void test_snapshot_structure(void)
{
    static const char *files[] = {"pytorch/tiny.p2.pickle", "pytorch/tiny.p4.pickle",
                                  "pytorch/tiny.p5.pickle"};
    for (size_t f = 0; f < 3; f++) {
        fsc__pdoc_t *d = parse_file(files[f], NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        const fsc__pv_t *root = fsc__pdoc_root(d);
        CU_ASSERT_EQUAL(root->kind, FSC__PV_DICT);
        fsc__pv_t *const *tr, *const *e;
        CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(fsc__pv_get(root, "device_traces"), &tr), 1);
        CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(tr[0], &e), 14);
        CU_ASSERT(fsc__pv_is_str(fsc__pv_get(e[1], "action"), "alloc"));
        int64_t v;
        CU_ASSERT(fsc__pv_int(fsc__pv_get(e[1], "addr"), &v) && v == 0x10000000);
        CU_ASSERT(fsc__pv_int(fsc__pv_get(e[1], "size"), &v) && v == 1000);
        CU_ASSERT(fsc__pv_int(fsc__pv_get(e[11], "device_free"), &v) && v == 123456);
        fsc__pv_t *const *fr;
        CU_ASSERT_EQUAL(fsc__pv_seq(fsc__pv_get(e[1], "frames"), &fr), 2);
        CU_ASSERT(fsc__pv_is_str(fsc__pv_get(fr[1], "name"), "main"));
        const fsc__pv_t *pool = fsc__pv_get(
            ((fsc__pv_t *const *)fsc__pv_get(root, "segments")->u.items)[0], "segment_pool_id");
        CU_ASSERT_EQUAL(pool->kind, FSC__PV_TUPLE);
        CU_ASSERT_PTR_NULL(fsc__pv_get(root, "nope"));
        CU_ASSERT_PTR_NULL(fsc__pv_get(e[1], "compile_contex"));
        fsc__pdoc_free(d);
    }
}

static void test_memo_is_shared(void)
{
    size_t len = 0;
    fsc__pdoc_t *d = parse_file("pytorch/frames_bomb.pickle", &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    fsc__pv_t *const *tr, *const *e;
    fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(d), "device_traces"), &tr);
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(tr[0], &e), 20001);
    /* one list object, referenced by every entry */
    const fsc__pv_t *f0 = fsc__pv_get(e[0], "frames");
    CU_ASSERT_EQUAL(f0->len, 2000);
    CU_ASSERT_PTR_EQUAL(fsc__pv_get(e[1], "frames"), f0);
    CU_ASSERT_PTR_EQUAL(fsc__pv_get(e[20000], "frames"), f0);
    CU_ASSERT(fsc__pdoc_mem(d) <= len * FSC__PICKLE_MEM_FACTOR + (1u << 20));
    fsc__pdoc_free(d);

    /* 2^60 leaves in under 1 KiB: parsed with a few KiB of nodes */
    d = parse_file("pytorch/hostile/memo_bomb.pickle", &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    const fsc__pv_t *r = fsc__pdoc_root(d);
    CU_ASSERT_EQUAL(r->kind, FSC__PV_LIST);
    CU_ASSERT_EQUAL(r->depth, 62);
    CU_ASSERT_PTR_EQUAL(r->u.items[0], r->u.items[1]);
    CU_ASSERT(fsc__pdoc_mem(d) <= 256 * 1024);
    fsc__pdoc_free(d);
}

/* Integers beyond int64 are kept (BIGINT), redundant sign bytes dropped;
 * protocol 0 text opcodes decode like Python. */
static void test_bigints_and_text(void)
{
    static const unsigned char p[] =
        "\x80\x02" "("
        "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00" /* 2^64-1 */
        "\x8a\x09\x05\x00\x00\x00\x00\x00\x00\x00\x00" /* 5 in 9 bytes */
        "\x8a\x09\xfe\xff\xff\xff\xff\xff\xff\xff\xff" /* -2 in 9 bytes */
        "\x8b\x10\x00\x00\x00" "0123456789abcdef"       /* LONG4, 16 bytes */
        "I-7\n" "I01\n" "L18446744073709551615L\n" "L-12L\n" "F-0.5\n"
        "Vh\xe9\\u005c\\U0001f600\n" /* 'hé\\😀' */
        "S'a\\'b\\x41'\n"
        "t.";
    int rc;
    fsc_err_t err = {0};
    fsc__pdoc_t *d = parse_bytes(p, sizeof p - 1, &rc, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    fsc__pv_t *const *it;
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(fsc__pdoc_root(d), &it), 11);
    int64_t v = 0;
    CU_ASSERT_EQUAL(it[0]->kind, FSC__PV_BIGINT);
    CU_ASSERT_EQUAL(it[0]->len, 9);
    CU_ASSERT(!fsc__pv_int(it[0], &v));
    CU_ASSERT(fsc__pv_int(it[1], &v) && v == 5);
    CU_ASSERT(fsc__pv_int(it[2], &v) && v == -2);
    CU_ASSERT_EQUAL(it[3]->kind, FSC__PV_BIGINT);
    CU_ASSERT(fsc__pv_int(it[4], &v) && v == -7);
    CU_ASSERT_EQUAL(it[5]->kind, FSC__PV_BOOL);
    CU_ASSERT(fsc__pv_int(it[5], &v) && v == 1);
    CU_ASSERT_EQUAL(it[6]->kind, FSC__PV_BIGINT);
    CU_ASSERT(fsc__pv_int(it[7], &v) && v == -12);
    double x = 0;
    CU_ASSERT(fsc__pv_num(it[8], &x) && x == -0.5);
    CU_ASSERT(fsc__pv_is_str(it[9], "h\xc3\xa9\\\xf0\x9f\x98\x80"));
    CU_ASSERT(fsc__pv_is_str(it[10], "a'bA"));
    fsc__pdoc_free(d);

    /* a 16-byte LONG1 (the old reader's limit was 8) */
    size_t len = 0;
    d = parse_file("pytorch/hostile/long_too_wide.pickle", &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL(fsc__pdoc_root(d)->kind, FSC__PV_BIGINT);
    CU_ASSERT_EQUAL(fsc__pdoc_root(d)->len, 16);
    fsc__pdoc_free(d);
}

static void test_hostile(void)
{
    static const struct {
        const char *file;
        int code;
        const char *msg;
    } cases[] = {
        {"deep.pickle", FSC_ELIMIT, "offset 66: nesting deeper than 64 levels"},
        {"many_marks.pickle", FSC_EFORMAT, "STOP with 0 values and 100000 marks"},
        {"huge_len.pickle", FSC_EFORMAT, "offset 2: BINUNICODE length 2147483647 goes past"},
        {"huge_len8.pickle", FSC_EFORMAT, "BINUNICODE8 length 18446744073709551615 goes past"},
        {"memo_oob.pickle", FSC_EFORMAT, "memo reference 5 out of range (0 stored)"},
        {"binput_huge.pickle", FSC_EFORMAT, "LONG_BINPUT index 4294967295 out of range"},
        {"self_ref.pickle", FSC_EFORMAT, "offset 6: APPEND puts a container inside itself"},
        {"sealed_mutation.pickle", FSC_EFORMAT, "offset 11: APPEND modifies a container"},
        {"global.pickle", FSC_EFORMAT, "offset 2: opcode 0x63 not supported"},
        {"no_stop.pickle", FSC_EFORMAT, "ends without a STOP opcode"},
        {"setitems_odd.pickle", FSC_EFORMAT, "SETITEMS with an odd number of items"},
        {"append_to_int.pickle", FSC_EFORMAT, "APPEND on a value that is not a list"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "pytorch/hostile/%s", cases[i].file);
        size_t len = 0;
        char *data = fsc_test_slurp(fsc_test_data(rel), &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        fsc__pdoc_t *d = NULL;
        fsc_err_t err = {0};
        int rc = fsc__pickle_parse(data, len, cases[i].file, &d, &err);
        if (rc != cases[i].code || strstr(err.msg, cases[i].msg) == NULL)
            fprintf(stderr, "\n%s: %d '%s'\n", cases[i].file, rc, err.msg);
        CU_ASSERT_EQUAL(rc, cases[i].code);
        CU_ASSERT_PTR_NULL(d);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, cases[i].msg));
        /* "FILE: offset N: what" */
        CU_ASSERT_EQUAL(strncmp(err.msg, cases[i].file, strlen(cases[i].file)), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, ": offset "));
        free(data);
    }
}

static void test_truncation_and_corruption(void)
{
    size_t len = 0;
    char *data = fsc_test_slurp(fsc_test_data("pytorch/tiny.p4.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    /* every proper prefix fails, none crashes */
    int failures = 0;
    for (size_t n = 0; n < len; n++) {
        fsc__pdoc_t *d = NULL;
        fsc_err_t err = {0};
        if (fsc__pickle_parse(data, n, "cut", &d, &err) == FSC_EFORMAT && d == NULL)
            failures++;
        fsc__pdoc_free(d);
    }
    CU_ASSERT_EQUAL(failures, (int)len);
    /* every byte replaced by a few values: either parses within the memory
     * bound or fails with a message; never crashes (checked under ASan) */
    static const unsigned char subst[] = {0x00, 0xff, 0x80, '(', 'h', 'j', 0x94, '.'};
    char *mut = malloc(len);
    int parsed = 0, errors = 0;
    for (size_t i = 0; i < len; i++) {
        for (size_t k = 0; k < sizeof subst; k++) {
            memcpy(mut, data, len);
            mut[i] = (char)subst[k];
            fsc__pdoc_t *d = NULL;
            fsc_err_t err = {0};
            int rc = fsc__pickle_parse(mut, len, "mut", &d, &err);
            if (rc == 0) {
                parsed++;
                CU_ASSERT(fsc__pdoc_mem(d) <= len * FSC__PICKLE_MEM_FACTOR + (1u << 20));
            } else {
                errors++;
                CU_ASSERT(err.msg[0] != '\0');
            }
            fsc__pdoc_free(d);
        }
    }
    CU_ASSERT_EQUAL((size_t)(parsed + errors), len * sizeof subst);
    CU_ASSERT(errors > 0);
    free(mut);
    free(data);
}

static void test_writer_roundtrip(void)
{
    const char *path = fsc_test_path("w.pickle");
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fsc__pw_t *w = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pw_open(f, &w), 0);
    static const int64_t ints[] = {0, 1, 255, 256, 65535, 65536, -1, -129, INT32_MIN,
                                   (int64_t)INT32_MAX + 1, INT64_MIN, INT64_MAX,
                                   140258935046144ll};
    fsc__pw_dict_open(w);
    fsc__pw_cstr(w, "ints");
    fsc__pw_list_open(w);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        fsc__pw_int(w, ints[i]);
    fsc__pw_list_batch(w);
    fsc__pw_uint(w, 1ull << 63 >> 1);
    fsc__pw_list_close(w);

    fsc__pw_cstr(w, "f");
    fsc__pw_float(w, -0.25);
    fsc__pw_cstr(w, "t");
    fsc__pw_tuple_open(w);
    fsc__pw_bool(w, 1);
    fsc__pw_none(w);
    fsc__pw_tuple_close(w);
    fsc__pw_cstr(w, "shared");
    fsc__pw_list_open(w);
    fsc__pw_cstr(w, "ints"); /* a memo reference to the key written above */
    fsc__pw_list_close(w);
    uint32_t m = fsc__pw_memoize(w);
    fsc__pw_cstr(w, "again");
    fsc__pw_get(w, m);
    fsc__pw_dict_close(w);
    CU_ASSERT_EQUAL(fsc__pw_finish(w), 0);
    fclose(f);

    size_t len = 0;
    char *data = fsc_test_slurp(path, &len);
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_parse(data, len, path, &d, &err), 0);
    const fsc__pv_t *root = fsc__pdoc_root(d);
    fsc__pv_t *const *it;
    size_t n = sizeof ints / sizeof ints[0];
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(fsc__pv_get(root, "ints"), &it), n + 1);
    for (size_t i = 0; i < n; i++) {
        int64_t v = 0;
        CU_ASSERT(fsc__pv_int(it[i], &v) && v == ints[i]);
    }
    int64_t v = 0;
    CU_ASSERT(fsc__pv_int(it[n], &v) && v == (1ll << 62));

    double x = 0;
    CU_ASSERT(fsc__pv_num(fsc__pv_get(root, "f"), &x) && x == -0.25);
    CU_ASSERT_EQUAL(fsc__pv_get(root, "t")->kind, FSC__PV_TUPLE);
    CU_ASSERT_PTR_EQUAL(fsc__pv_get(root, "again"), fsc__pv_get(root, "shared"));
    CU_ASSERT(fsc__pv_is_str(fsc__pv_get(root, "shared")->u.items[0], "ints"));
    fsc__pdoc_free(d);
    free(data);

    /* Python reads the same values */
    char out[512] = "";
    int st = fsc_test_sh(out, sizeof out,
                         "python3 -c 'import pickle,sys; d=pickle.load(open(sys.argv[1],\"rb\"));"
                         " print(d[\"ints\"][-1], d[\"ints\"][10], d[\"f\"], d[\"t\"],"
                         " d[\"again\"] is d[\"shared\"])' %s",
                         path);
    if (st == 127) {
        fprintf(stderr, "\n(python3 not found: Python check skipped)\n");
        return;
    }
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_STRING_EQUAL(out,
                           "4611686018427387904 -9223372036854775808 -0.25 (True, None) True\n");

    /* beyond int64 (the reader's range): a 9-byte LONG1 that Python reads */
    f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL_FATAL(fsc__pw_open(f, &w), 0);
    fsc__pw_uint(w, UINT64_MAX);
    CU_ASSERT_EQUAL(fsc__pw_finish(w), 0);
    fclose(f);
    st = fsc_test_sh(out, sizeof out,
                     "python3 -c 'import pickle,sys;"
                     " print(pickle.load(open(sys.argv[1],\"rb\")))' %s",
                     path);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_STRING_EQUAL(out, "18446744073709551615\n");
}

/* ---- streaming ------------------------------------------------------------ */

typedef struct stream_check {
    const fsc__pv_t *const *want; /* the tree reader's entries */
    uint64_t n, seen, bad;
    uint64_t skipped; /* entries whose frames were stepped over */
} stream_check_t;

static int same_value(const fsc__pv_t *a, const fsc__pv_t *b)
{
    if (a->kind != b->kind || a->len != b->len)
        return 0;
    switch (a->kind) {
    case FSC__PV_INT:
    case FSC__PV_BOOL: return a->u.i == b->u.i;
    case FSC__PV_FLOAT: return a->u.f == b->u.f;
    case FSC__PV_STR:
    case FSC__PV_BYTES:
    case FSC__PV_BIGINT: return memcmp(a->u.s, b->u.s, a->len) == 0;
    case FSC__PV_LIST:
    case FSC__PV_TUPLE:
        for (uint32_t i = 0; i < a->len; i++)
            if (!same_value(a->u.items[i], b->u.items[i]))
                return 0;
        return 1;
    case FSC__PV_DICT:
        for (uint32_t i = 0; i < 2 * a->len; i++)
            if (!same_value(a->u.items[i], b->u.items[i]))
                return 0;
        return 1;
    default: return 1;
    }
}

static int on_stream_entry(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    stream_check_t *c = ud;
    if (dev != 0 || idx != c->seen || idx >= c->n || !same_value(v, c->want[idx]))
        c->bad++;
    c->seen++;
    return 0;
}

/* The streaming reader hands over every history entry, in order, with the
 * values the tree reader gives (whichever of its paths read it), and keeps
 * a fraction of the tree's memory. */
static void test_stream_matches_tree(void)
{
    static const char *files[] = {"pytorch/gpt2_varlen.pickle", "pytorch/compile_ro.pickle",
                                  "pytorch/tiny.p0.pickle",     "pytorch/tiny.p1.pickle",
                                  "pytorch/tiny.p2.pickle",     "pytorch/tiny.p5.pickle",
                                  "pytorch/frames_bomb.pickle"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len = 0;
        char *data = fsc_test_slurp(fsc_test_data(files[f]), &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        fsc__pdoc_t *tree = NULL, *d = NULL;
        fsc_err_t err = {0};
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_parse(data, len, files[f], &tree, &err), 0);
        fsc__pv_t *const *tr;
        fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(tree), "device_traces"), &tr);
        stream_check_t c = {NULL, 0, 0, 0, 0};
        c.n = fsc__pv_seq(tr[0], (fsc__pv_t *const **)&c.want);
        fsc__pscan_t *sc = NULL;
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(data, len, NULL, &sc), 0);
        fsc__pstream_t cb = {&c, on_stream_entry, NULL, NULL, 0, 0, 0, NULL};
        int rc = fsc__pickle_stream(data, len, files[f], sc, &cb, &d, &err);
        if (rc != 0)
            fprintf(stderr, "\n%s\n", err.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(c.seen, c.n);
        CU_ASSERT_EQUAL(c.bad, 0);
        fsc__pv_t *const *st;
        fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(d), "device_traces"), &st);
        CU_ASSERT_EQUAL(fsc__pv_count(st[0]), c.n);
        CU_ASSERT_EQUAL(st[0]->len, 0); /* none stored */
        /* the rest of the tree is there */
        CU_ASSERT(same_value(fsc__pv_get(fsc__pdoc_root(d), "segments"),
                             fsc__pv_get(fsc__pdoc_root(tree), "segments")));
        if (len > 1000000)
            CU_ASSERT(fsc__pdoc_mem(d) * 4 < fsc__pdoc_mem(tree));
        fsc__pdoc_free(d);
        fsc__pdoc_free(tree);
        fsc__pscan_free(sc);
        free(data);
    }
}

/* An entry as the tree reader gives it but for the value of 'frames',
 * which a pass that skips the frames does not build (None), or builds in
 * part (an entry the generic parser read). 2 when it is None. */
static int same_but_frames(const fsc__pv_t *skipped_entry, const fsc__pv_t *tree)
{
    const fsc__pv_t *skipped = skipped_entry;
    int ok = 1;
    if (skipped->kind != FSC__PV_DICT || tree->kind != FSC__PV_DICT || skipped->len != tree->len)
        return 0;
    for (uint32_t i = 0; i < tree->len; i++) {
        const fsc__pv_t *k = tree->u.items[2 * i], *v = skipped->u.items[2 * i + 1];
        if (!same_value(skipped->u.items[2 * i], k))
            return 0;
        if (fsc__pv_is_str(k, "frames")) { /* not to be read */
            if (v->kind == FSC__PV_NONE && tree->u.items[2 * i + 1]->kind != FSC__PV_NONE)
                ok = 2; /* stepped over */
        } else if (!same_value(v, tree->u.items[2 * i + 1]))
            return 0;
    }
    return ok;
}

static int on_skipped_entry(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    stream_check_t *c = ud;
    int same = dev == 0 && idx == c->seen && idx < c->n ? same_but_frames(v, c->want[idx]) : 0;
    if (same == 0)
        c->bad++;
    c->skipped += same == 2;
    c->seen++;
    return 0;
}

/* With skip_frames every entry comes with the tree reader's fields; the
 * frames of those the fast path reads (most) are None, not built; the rest
 * of the tree is the same, and kept in less memory. */
static void test_stream_skips_frames(void)
{
    static const char *files[] = {"pytorch/gpt2_varlen.pickle", "pytorch/compile_ro.pickle",
                                  "pytorch/tiny.p2.pickle",     "pytorch/tiny.p4.pickle",
                                  "pytorch/tiny.p5.pickle",     "pytorch/frames_bomb.pickle",
                                  "pytorch/midrun.pickle",      "pytorch/resnet50_varbatch.pickle"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len = 0;
        char *data = fsc_test_slurp(fsc_test_data(files[f]), &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        fsc__pdoc_t *tree = NULL, *d = NULL, *full = NULL;
        fsc_err_t err = {0};
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_parse(data, len, files[f], &tree, &err), 0);
        fsc__pv_t *const *tr;
        fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(tree), "device_traces"), &tr);
        stream_check_t c = {NULL, 0, 0, 0, 0};
        c.n = fsc__pv_seq(tr[0], (fsc__pv_t *const **)&c.want);
        CU_ASSERT(c.n > 0);
        fsc__pscan_t *sc = NULL;
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(data, len, NULL, &sc), 0);
        fsc__pstream_t cb = {&c, on_skipped_entry, NULL, NULL, 1, 0, 0, NULL};
        int rc = fsc__pickle_stream(data, len, files[f], sc, &cb, &d, &err);
        if (rc != 0)
            fprintf(stderr, "\n%s: %d %s\n", files[f], rc, err.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(c.seen, c.n);
        CU_ASSERT_EQUAL(c.bad, 0);
        if (c.n > 2000)
            CU_ASSERT(c.skipped > c.n / 2);
        CU_ASSERT(same_value(fsc__pv_get(fsc__pdoc_root(d), "segments"),
                             fsc__pv_get(fsc__pdoc_root(tree), "segments")));
        /* the frames are not built: less memory kept than when read */
        stream_check_t c2 = {NULL, 0, 0, 0, 0};
        c2.n = c.n;
        c2.want = c.want;
        fsc__pstream_t cb2 = {&c2, on_stream_entry, NULL, NULL, 0, 0, 0, NULL};
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_stream(data, len, files[f], sc, &cb2, &full, &err), 0);
        CU_ASSERT_EQUAL(c2.bad, 0);
        CU_ASSERT(fsc__pdoc_mem(d) <= fsc__pdoc_mem(full));
        if (strstr(files[f], "gpt2_varlen") != NULL) /* its frame dicts are not built */
            CU_ASSERT(fsc__pdoc_mem(d) < fsc__pdoc_mem(full));
        fsc__pdoc_free(full);
        fsc__pdoc_free(d);
        fsc__pdoc_free(tree);
        fsc__pscan_free(sc);
        free(data);
    }
}

/* A frame dict first met inside an entry's frames (one the fast path
 * reads: the second batch's) and read again as a later entry's
 * user_metadata: a pass that skips the frames cannot give
 * that value, and says so (the import then reads the file with them). */
static void test_stream_skip_conflict(void)
{
    char path[512], out[256];
    snprintf(path, sizeof path, "%s/skip_conflict.pickle", fsc_test_tmpdir());
    int st = fsc_test_sh(
        out, sizeof out,
        "python3 -c 'import pickle,sys\n"
        "f = {\"filename\": \"a.py\", \"line\": 1, \"name\": \"g\"}\n"
        "S = 2097152\n"
        "e = [{\"action\": \"segment_alloc\", \"addr\": S, \"size\": S, \"stream\": 0,"
        " \"time_us\": 0, \"frames\": []}]\n"
        "e += [{\"action\": \"alloc\", \"addr\": S + 512 * i, \"size\": 512, \"stream\": 0,"
        " \"time_us\": 1, \"frames\": []} for i in range(999)]\n"
        "e += [{\"action\": \"alloc\", \"addr\": S + 512 * 999, \"size\": 512, \"stream\": 0,"
        " \"time_us\": 2, \"frames\": [f]},"
        " {\"action\": \"free_requested\", \"addr\": S + 512 * 999, \"size\": 512,"
        " \"stream\": 0, \"time_us\": 3, \"frames\": [], \"user_metadata\": f}]\n"
        "pickle.dump({\"segments\": [], \"device_traces\": [e]}, open(sys.argv[1], \"wb\"), 4)' %s",
        path);
    CU_ASSERT_EQUAL_FATAL(st, 0);
    size_t len = 0;
    char *data = fsc_test_slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    fsc__pscan_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(data, len, NULL, &sc), 0);
    stream_check_t c = {NULL, 0, 0, 0, 0};
    fsc__pstream_t cb = {&c, NULL, NULL, NULL, 1, 0, 0, NULL};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(fsc__pickle_stream(data, len, path, sc, &cb, &d, &err), FSC__PICKLE_ESKIPPED);
    CU_ASSERT_PTR_NULL(d);
    cb.skip_frames = 0;
    CU_ASSERT_EQUAL(fsc__pickle_stream(data, len, path, sc, &cb, &d, &err), 0);
    fsc__pdoc_free(d);
    fsc__pscan_free(sc);
    free(data);
    /* the import reads it again with the frames: both entries, their
     * metadata and the frame's tag */
    st = fsc_test_sh(out, sizeof out, "%s import %s -o %s.fstrace 2>&1 | head -2 | tail -1",
                     fsc_test_fragscope(), path, path);
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1002 history entries"));
}

/* A list after a 'device_traces' string that is not the dict's value:
 * streamed on the layout's evidence, then refused at STOP. */
static void test_stream_checks_layout(void)
{
    static const unsigned char p[] =
        "\x80\x04\x95\x2f\x00\x00\x00\x00\x00\x00\x00]\x94(\x8c\x0d" "device_traces"
        "\x94]\x94]\x94}\x94\x8c\x06" "action\x94\x8c\x05" "alloc\x94saae.";
    fsc__pscan_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(p, sizeof p - 1, NULL, &sc), 0);
    stream_check_t c = {NULL, 0, 0, 0, 0};
    fsc__pstream_t cb = {&c, NULL, NULL, NULL, 0, 0, 0, NULL};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    CU_ASSERT_EQUAL(fsc__pickle_stream(p, sizeof p - 1, "mem", sc, &cb, &d, &err), FSC_EFORMAT);
    CU_ASSERT_PTR_NULL(d);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not where a memory snapshot keeps them"));
    fsc__pscan_free(sc);
}

/* ---- kept lists freed at their last read --------------------------------- */

typedef struct {
    uint8_t *b;
    size_t n, cap;
    uint32_t memo;
} pbuf_t;

static void pb(pbuf_t *p, const void *s, size_t n)
{
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2;
        p->b = realloc(p->b, p->cap);
    }
    memcpy(p->b + p->n, s, n);
    p->n += n;
}
static uint32_t pb_memo(pbuf_t *p) { pb(p, "\x94", 1); return p->memo++; }
static void pb_str(pbuf_t *p, const char *s)
{
    uint8_t h[2] = {0x8c, (uint8_t)strlen(s)};
    pb(p, h, 2);
    pb(p, s, strlen(s));
}
static void pb_get(pbuf_t *p, uint32_t idx)
{
    uint8_t h[5] = {'j', (uint8_t)idx, (uint8_t)(idx >> 8), (uint8_t)(idx >> 16), (uint8_t)(idx >> 24)};
    pb(p, h, 5);
}

typedef struct {
    uint64_t entries, frames_ok, dropped;
    uint32_t want_frames;
} free_check_t;

static int on_free_entry(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    free_check_t *c = ud;
    (void)dev, (void)idx;
    c->entries++;
    fsc__pv_t *const *it;
    if (fsc__pv_seq(fsc__pv_get(v, "frames"), &it) == c->want_frames &&
        fsc__pv_is_str(fsc__pv_get(it[0], "name"), "f"))
        c->frames_ok++;
    return 0;
}

static void on_free_dropped(void *ud, const fsc__pv_t *v)
{
    free_check_t *c = ud;
    if (v->kind == FSC__PV_LIST)
        c->dropped++;
}

/* A long recording: every allocation's frame list is a new memo entry that
 * its free reads again. Each list is freed after that last read, so the
 * document ends holding little more than a node per list, not the lists;
 * every entry still sees its whole list, and a list the snapshot's other
 * parts hold (the segment's) is kept. */
static void test_stream_frees_lists(void)
{
    enum { N = 20000, K = 16 };
    pbuf_t p = {0};
    pb(&p, "\x80\x04}", 3);
    pb_memo(&p);
    pb(&p, "(", 1);
    pb_str(&p, "segments");
    pb_memo(&p);
    pb(&p, "]", 1);
    pb_memo(&p);
    pb(&p, "}", 1);
    pb_memo(&p);
    pb(&p, "(", 1);
    pb_str(&p, "frames");
    uint32_t k_frames = pb_memo(&p);
    pb(&p, "]", 1);
    uint32_t seg_list = pb_memo(&p);
    pb(&p, "}", 1);
    uint32_t frame = pb_memo(&p);
    pb(&p, "(", 1);
    pb_str(&p, "name");
    uint32_t k_name = pb_memo(&p);
    pb_str(&p, "f");
    pb_memo(&p);
    pb(&p, "ua", 2); /* the frame into the segment's list */
    pb(&p, "ua", 2); /* 'frames' into the segment, the segment into segments */
    pb_str(&p, "device_traces");
    pb_memo(&p);
    pb(&p, "]", 1);
    pb_memo(&p);
    pb(&p, "]", 1);
    pb_memo(&p);
    for (int i = 0; i < N; i++) {
        if (i % 500 == 0)
            pb(&p, "(", 1);
        uint32_t list = 0;
        for (int e = 0; e < 2; e++) {
            pb(&p, "}", 1);
            pb_memo(&p);
            pb(&p, "(", 1);
            pb_get(&p, k_frames);
            if (e == 0) {
                pb(&p, "]", 1);
                list = pb_memo(&p);
                pb(&p, "(", 1);
                for (int f = 0; f < K; f++)
                    pb_get(&p, frame);
                pb(&p, "e", 1);
            } else {
                pb_get(&p, list);
            }
            pb(&p, "u", 1);
        }
        if (i == N / 2) { /* one entry reads the segment's list too */
            pb(&p, "}", 1);
            pb_memo(&p);
            pb(&p, "(", 1);
            pb_get(&p, k_frames);
            pb_get(&p, seg_list);
            pb(&p, "u", 1);
        }
        if (i % 500 == 499)
            pb(&p, "e", 1);
    }
    pb(&p, "a", 1); /* the device's list into device_traces */
    pb(&p, "u.", 2); /* the root's items */
    (void)k_name;
    fsc__pscan_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan(p.b, p.n, NULL, &sc), 0);
    free_check_t c = {0, 0, 0, K};
    fsc__pstream_t cb = {&c, on_free_entry, NULL, on_free_dropped, 0, 0, 0, NULL};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    int rc = fsc__pickle_stream(p.b, p.n, "mem", sc, &cb, &d, &err);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(c.entries, 2 * N + 1);
    CU_ASSERT_EQUAL(c.frames_ok, 2 * N); /* the segment's list has 1 frame */
    CU_ASSERT_EQUAL(c.dropped, N);
    /* the lists' items alone would take N * K pointers */
    CU_ASSERT(fsc__pdoc_mem(d) < (size_t)N * K * sizeof(void *) / 2);
    fsc__pv_t *const *segs;
    CU_ASSERT_EQUAL_FATAL(fsc__pv_seq(fsc__pv_get(fsc__pdoc_root(d), "segments"), &segs), 1);
    fsc__pv_t *const *fr;
    CU_ASSERT_EQUAL(fsc__pv_seq(fsc__pv_get(segs[0], "frames"), &fr), 1);
    fsc__pdoc_free(d);
    fsc__pscan_free(sc);
    free(p.b);
}


/* ---- the history on several threads -------------------------------------- */

/* A value's content (no addresses), hashed. */
static uint64_t pv_hash(const fsc__pv_t *v, uint64_t h)
{
    const uint64_t m = 0x100000001b3ull;
    h = (h ^ v->kind) * m;
    h = (h ^ v->len) * m;
    switch (v->kind) {
    case FSC__PV_BOOL:
    case FSC__PV_INT: h = (h ^ (uint64_t)v->u.i) * m; break;
    case FSC__PV_FLOAT: {
        uint64_t b;
        memcpy(&b, &v->u.f, 8);
        h = (h ^ b) * m;
        break;
    }
    case FSC__PV_STR:
    case FSC__PV_BYTES:
    case FSC__PV_BIGINT:
        for (uint32_t i = 0; i < v->len; i++)
            h = (h ^ (uint8_t)v->u.s[i]) * m;
        break;
    case FSC__PV_LIST:
    case FSC__PV_TUPLE:
        for (uint32_t i = 0; i < v->len; i++)
            h = pv_hash(v->u.items[i], h);
        break;
    case FSC__PV_DICT:
        for (uint32_t i = 0; i < 2 * v->len; i++)
            h = pv_hash(v->u.items[i], h);
        break;
    default: break;
    }
    return h;
}

typedef struct par_run {
    int rc;
    char msg[512];
    uint64_t n, hash, dropped;
    size_t taken;
} par_run_t;

static int on_par_entry(void *ud, uint32_t dev, uint64_t idx, const fsc__pv_t *v)
{
    par_run_t *r = ud;
    r->hash = pv_hash(v, (r->hash ^ dev ^ (idx << 8)) * 0x100000001b3ull);
    r->n++;
    return 0;
}

static void on_par_dropped(void *ud, const fsc__pv_t *v)
{
    (void)v;
    ((par_run_t *)ud)->dropped++;
}

/* One streamed read: result, message, the entries and the rest of the
 * tree (hashed), lists freed, ranges taken from the threads. */
static void par_read(const char *data, size_t len, const fsc__pscan_t *sc, int skip,
                     unsigned threads, unsigned warmup, par_run_t *out)
{
    memset(out, 0, sizeof *out);
    fsc__pstream_t cb = {out, on_par_entry, NULL, on_par_dropped, skip, threads, warmup,
                         &out->taken};
    fsc__pdoc_t *d = NULL;
    fsc_err_t err = {0};
    out->rc = fsc__pickle_stream(data, len, "in", sc, &cb, &d, &err);
    snprintf(out->msg, sizeof out->msg, "%s", err.msg);
    if (d != NULL && fsc__pdoc_root(d) != NULL)
        out->hash = pv_hash(fsc__pdoc_root(d), out->hash);
    fsc__pdoc_free(d);
}

static int par_same(const par_run_t *a, const par_run_t *b)
{
    return a->rc == b->rc && strcmp(a->msg, b->msg) == 0 && a->n == b->n && a->hash == b->hash &&
           a->dropped == b->dropped;
}

/* Real snapshots cut into many ranges: with threads decoding the history
 * ahead, the parse hands over the same entries with the same values (frames
 * stepped over or built), frees the same lists and keeps the same tree as
 * on one thread; and most ranges do come from the threads. */
static void test_stream_threads_same(void)
{
    static const char *files[] = {"pytorch/gpt2_varlen.pickle",   "pytorch/resnet50_varbatch.pickle",
                                  "gpu/gpt2_uncapped.pickle",     "gpu/two_devices.pickle",
                                  "gpu/stacks_all.pickle",        "pytorch/frames_bomb.pickle",
                                  "pytorch/compile_ro.pickle",    "gpu/gpt2_emptycache_exp.pickle",
                                  "gpu/mempool_live.pickle",      "pytorch/tiny.p2.pickle"};
    size_t taken = 0, ranges = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len = 0;
        char *data = fsc_test_slurp(fsc_test_data(files[f]), &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        fsc__pscan_t *sc = NULL;
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan_split(data, len, NULL, 512, 2, &sc), 0);
        size_t distinct = 0; /* ranges of the same start are one (small files) */
        for (size_t i = 0; i < sc->ncuts; i++)
            distinct += i == 0 || sc->cut[i] != sc->cut[i - 1];
        ranges += distinct;
        for (int skip = 0; skip < 2; skip++) {
            for (unsigned warmup = 1; warmup <= 64; warmup *= 64) {
                par_run_t one, many;
                par_read(data, len, sc, skip, 1, warmup, &one);
                par_read(data, len, sc, skip, 3, warmup, &many);
                CU_ASSERT_EQUAL(one.rc, 0);
                CU_ASSERT_EQUAL(one.taken, 0);
                if (!par_same(&one, &many))
                    fprintf(stderr, "\n%s skip %d warmup %u: rc %d/%d n %llu/%llu dropped %llu/%llu\n",
                            files[f], skip, warmup, one.rc, many.rc, (unsigned long long)one.n,
                            (unsigned long long)many.n, (unsigned long long)one.dropped,
                            (unsigned long long)many.dropped);
                CU_ASSERT(par_same(&one, &many));
                taken += many.taken;
                if (strstr(files[f], "gpt2_varlen") != NULL) /* 119 ranges of entries */
                    CU_ASSERT(many.taken * 10 > distinct * 9);
            }
        }
        fsc__pscan_free(sc);
        free(data);
    }
    CU_ASSERT(ranges > 200);
    CU_ASSERT(taken * 10 > ranges * 4 * 7); /* four reads of each file */
}

/* Damaged inputs read with threads end as on one thread: the same error
 * (message included) after the same entries. */
static void test_stream_threads_damaged(void)
{
    size_t len = 0;
    char *orig = fsc_test_slurp(fsc_test_data("gpu/gpt2_uncapped.pickle"), &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
    char *data = malloc(len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    uint64_t seed = 12345;
    int failed = 0, taken = 0;
    for (int t = 0; t < 60; t++) {
        memcpy(data, orig, len);
        size_t n = len;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t at = (size_t)(seed >> 33) % len;
        if (t % 6 == 5) {
            n = at; /* cut short */
        } else {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            data[at] = (char)(seed >> 56); /* one byte changed */
        }
        fsc__pscan_t *sc = NULL;
        CU_ASSERT_EQUAL_FATAL(fsc__pickle_scan_split(data, n, NULL, 512, 2, &sc), 0);
        for (int skip = 0; skip < 2; skip++) {
            par_run_t one, many;
            par_read(data, n, sc, skip, 1, 1, &one);
            par_read(data, n, sc, skip, 3, 1, &many);
            if (!par_same(&one, &many))
                fprintf(stderr, "\ndamage %d at %zu (len %zu): rc %d/%d '%s' / '%s'\n", t, at, n,
                        one.rc, many.rc, one.msg, many.msg);
            CU_ASSERT(par_same(&one, &many));
            failed += one.rc != 0;
            taken += many.taken > 0;
        }
        fsc__pscan_free(sc);
    }
    CU_ASSERT(failed > 10); /* most damage is found */
    CU_ASSERT(taken > 10);  /* and the threads took part */
    free(data);
    free(orig);
}

static const fsc_test_case_t k_tests[] = {
    {"streaming: a list is freed after its last read", test_stream_frees_lists},
    {"streaming: same entries as the tree, less memory", test_stream_matches_tree},
    {"streaming: the history's place is checked", test_stream_checks_layout},
    {"streaming: frames skipped, every other value kept", test_stream_skips_frames},
    {"streaming: a skipped value read elsewhere is refused", test_stream_skip_conflict},
    {"streaming: the history on threads, same entries", test_stream_threads_same},
    {"streaming: damaged input on threads, same errors", test_stream_threads_damaged},
    {"scalars of every opcode", test_scalars},
    {"snapshot structure, protocols 2/4/5", test_snapshot_structure},
    {"memo references are shared, memory bounded", test_memo_is_shared},
    {"integers of any size, protocol 0 text opcodes", test_bigints_and_text},
    {"hostile pickles are rejected", test_hostile},
    {"truncation and corruption", test_truncation_and_corruption},
    {"writer: read back by the reader and Python", test_writer_roundtrip},
    {NULL, NULL},
};

FSC_TEST_MAIN("pickle", k_tests)
