/*
 * size.c — sizes with units, parsed from the command line and formatted for
 * reports, and the monotonic clock.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fragscope/common.h"

typedef struct unit {
    const char *name;
    double mult;
} unit_t;

static const unit_t k_units[] = {
    {"", 1.0},
    {"b", 1.0},
    {"k", 1024.0},
    {"kib", 1024.0},
    {"kb", 1e3},
    {"m", 1048576.0},
    {"mib", 1048576.0},
    {"mb", 1e6},
    {"g", 1073741824.0},
    {"gib", 1073741824.0},
    {"gb", 1e9},
    {"t", 1099511627776.0},
    {"tib", 1099511627776.0},
    {"tb", 1e12},
};

int fsc_size_parse(const char *s, uint64_t *out)
{
    if (s == NULL || out == NULL)
        return FSC_EINVAL;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s) && *s != '.')
        return FSC_EINVAL;
    /* Parse the number by hand: strtod would accept "inf", "nan", hex. */
    double v = 0.0;
    int digits = 0;
    /* The integer part is also kept exactly: a double loses bytes above
     * 2^53, and "18446744073709551615" must mean exactly that. */
    uint64_t whole = 0;
    int whole_exact = 1, fraction = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10.0 + (*s - '0');
        if (whole > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            whole_exact = 0;
        else
            whole = whole * 10 + (uint64_t)(*s - '0');
        s++;
        digits++;
    }
    if (*s == '.') {
        fraction = 1;
        s++;
        double scale = 0.1;
        while (isdigit((unsigned char)*s)) {
            v += (*s - '0') * scale;
            scale /= 10.0;
            s++;
            digits++;
        }
    }
    if (digits == 0)
        return FSC_EINVAL;
    while (isspace((unsigned char)*s))
        s++;
    char unit[8];
    size_t n = 0;
    while (isalpha((unsigned char)*s)) {
        if (n + 1 >= sizeof unit)
            return FSC_EINVAL;
        unit[n++] = (char)tolower((unsigned char)*s);
        s++;
    }
    unit[n] = '\0';
    while (isspace((unsigned char)*s))
        s++;
    if (*s != '\0')
        return FSC_EINVAL;
    for (size_t i = 0; i < sizeof k_units / sizeof k_units[0]; i++) {
        if (strcmp(unit, k_units[i].name) == 0) {
            uint64_t mult = (uint64_t)k_units[i].mult;
            if (!fraction && whole_exact) {
                if (whole != 0 && mult > UINT64_MAX / whole)
                    return FSC_EINVAL;
                *out = whole * mult;
                return 0;
            }
            double bytes = nearbyint(v * k_units[i].mult);
            if (!(bytes < 18446744073709551616.0))
                return FSC_EINVAL;
            *out = (uint64_t)bytes;
            return 0;
        }
    }
    return FSC_EINVAL;
}

char *fsc_size_format(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (buf == NULL || cap == 0)
        return buf;
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.2f %s", v, names[u]);
    return buf;
}

uint64_t fsc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
