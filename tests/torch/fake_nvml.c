/*
 * fake_nvml.c — a stand-in libnvidia-ml.so.1 for tests/torch/check_record_cmd.py:
 * one device ("GPU-fake-uuid") whose compute processes come from
 * FAKE_NVML_PROCS ("pid:bytes,..."; "self" is the calling process), written
 * at the stride FAKE_NVML_STRIDE (24: nvmlProcessInfo_v2_t; 32: the longer
 * struct newer drivers write), as the real _v3 call does either.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nvmlInit_v2(void)
{
    return 0;
}

int nvmlShutdown(void)
{
    return 0;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **handle)
{
    if (strcmp(uuid, "GPU-fake-uuid") != 0)
        return 13; /* NVML_ERROR_NOT_FOUND */
    *handle = (void *)1;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *handle, unsigned *count, void *infos)
{
    (void)handle;
    const char *env = getenv("FAKE_NVML_PROCS");
    const char *st = getenv("FAKE_NVML_STRIDE");
    size_t stride = st != NULL && atoi(st) == 32 ? 32 : 24;
    unsigned pids[16];
    unsigned long long used[16];
    unsigned n = 0;
    char buf[512];
    strncpy(buf, env != NULL ? env : "", sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL && n < 16;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (colon == NULL)
            continue;
        *colon = '\0';
        pids[n] = strcmp(tok, "self") == 0 ? (unsigned)getpid() : (unsigned)strtoul(tok, NULL, 10);
        used[n++] = strtoull(colon + 1, NULL, 10);
    }
    if (infos == NULL || *count < n) {
        *count = n;
        return n == 0 ? 0 : 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    unsigned char *out = infos;
    memset(out, 0, stride * n);
    for (unsigned i = 0; i < n; i++) {
        unsigned char *e = out + i * stride;
        uint32_t none = 0xffffffffu;
        memcpy(e, &pids[i], 4);
        memcpy(e + 8, &used[i], 8);
        memcpy(e + 16, &none, 4);
        memcpy(e + 20, &none, 4);
    }
    *count = n;
    return 0;
}
