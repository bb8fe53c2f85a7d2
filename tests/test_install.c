/*
 * test_install.c — fragscope as its users install it (tests/install/run.sh
 * does each step): cmake --install into a scratch prefix, a C program built
 * with find_package(fragscope) and one with pkg-config, the man page, the
 * Debian package from cpack -G DEB, and the Python package installed with
 * pip into a fresh venv. The steps run in this order: the later ones use the
 * prefix of the first. A step whose tool is absent is skipped with a message
 * naming it (scripts/setup.sh installs them all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fragscope/version.h"
#include "fsc_test.h"

#define CONSUMER_LINE "fragscope " FSC_VERSION_STRING ": allocated 1024 reserved 2097152"

static char g_out[16384];

/* The prefix, package and venv are large: remove them when the suite ends. */
static void remove_scratch(void)
{
    fsc_test_sh(NULL, 0, "rm -rf '%s'", fsc_test_path("install"));
}

/* Runs one step; returns 1 when it ran and passed, 0 when skipped (a tool is
 * absent) and fails the test otherwise, printing its output. */
static int step(const char *name)
{
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(remove_scratch);
    }
    int rc = fsc_test_sh(g_out, sizeof g_out, "bash %s/tests/install/run.sh %s %s %s %s",
                         FSC_SOURCE_DIR, name, FSC_SOURCE_DIR, FSC_BINARY_DIR,
                         fsc_test_path("install"));
    if (rc == 77) {
        printf("\n    %s", g_out);
        return 0;
    }
    if (rc != 0)
        printf("\n--- run.sh %s (exit %d):\n%s\n", name, rc, g_out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return 1;
}

static void test_install_prefix(void)
{
    if (!step("prefix"))
        return;
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "fragscope " FSC_VERSION_STRING "\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "symbols, all fsc_* declared in include/fragscope/"));
    /* PyTorch looks up fsc_torch_malloc and fsc_torch_free; the shim's module
     * calls six more. Nothing else leaves the library. */
    if (fsc_test_file_exists(FSC_BINARY_DIR "/libfragscope_torch.so")) {
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "PyTorch shim installed, exporting 8 fsc_torch_* symbols"));
#ifndef __SANITIZE_ADDRESS__
        /* The installed module finds the library installed beside it. */
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "recording available (PREFIX/lib/fragscope/python/libfragscope_torch.so)"));
#endif
    }
}

static void test_find_package(void)
{
    if (!step("cmake"))
        return;
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "find_package shared: " CONSUMER_LINE "\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "find_package static: " CONSUMER_LINE "\n"));
}

static void test_pkg_config(void)
{
    if (!step("pkgconfig"))
        return;
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "pkg-config: " CONSUMER_LINE "\n"));
}

static void test_man_page(void)
{
    if (!step("man"))
        return;
    /* Every command has its section, and every help line reads as printed. */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "man page: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, " help lines\n"));
}

static void test_debian_package(void)
{
    if (!step("deb"))
        return;
    const char *dep = strstr(g_out, " Depends: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dep);
    const char *end = strchr(dep + 1, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", end ? (int)(end - dep) : (int)strlen(dep), dep);
    /* What the package's programs and libraries link, found by dpkg-shlibdeps. */
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "libzstd1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "libsqlite3-0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "libcjson1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "libc6"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, " Package: fragscope\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, " Version: " FSC_VERSION_STRING "\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "unpacked package: " CONSUMER_LINE "\n"));
#ifndef __SANITIZE_ADDRESS__
    if (fsc_test_file_exists(FSC_BINARY_DIR "/libfragscope_torch.so"))
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "recording available (ROOT/usr/lib/fragscope/python/libfragscope_torch.so)"));
#endif
}

static void test_python_package(void)
{
    if (!step("python"))
        return;
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "fragscope " FSC_VERSION_STRING "\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(
        g_out, "usage: python -m fragscope_torch [--help | --check | record -o TRACE -- COMMAND]\n"));
    /* `python -m fragscope_torch record` runs the package's fragscope, which
     * finds the bootstrap and the native recorder's files in the package:
     * what stops it here is that this python has no torch */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "record: exit 2: fragscope: record: cannot record "));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "it has no torch to import"));
    /* Without CUDA: install() and --check say that recording needs the toolkit. */
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "CUDA OFF: --check exit 1: fragscope_torch: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "built without the CUDA toolkit, and recording a PyTorch run needs it"));
    /* With the CUDA toolkit the library is in the package and loads. */
    if (fsc_test_file_exists(FSC_BINARY_DIR "/libfragscope_torch.so")) {
#ifdef __SANITIZE_ADDRESS__
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "CUDA AUTO: not loaded into python in a sanitizer build"));
#else
        CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "CUDA AUTO: --check exit 0: fragscope_torch: recording available"));
#endif
    }
}

static const fsc_test_case_t k_tests[] = {
    {"install_prefix", test_install_prefix},
    {"find_package", test_find_package},
    {"pkg_config", test_pkg_config},
    {"man_page", test_man_page},
    {"debian_package", test_debian_package},
    {"python_package", test_python_package},
    {NULL, NULL},
};

FSC_TEST_MAIN("install", k_tests)
