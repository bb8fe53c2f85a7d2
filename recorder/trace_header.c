/*
 * trace_header.c — the header frame of a .fstrace file (a zstd skippable
 * frame that identifies the file and describes the run) and the CRC-32 that
 * protects the header, the chunk descriptors and the end record.
 *
 * Payload layout: "FSCTRACE", u16 major, u16 minor, then varints flags,
 * capacity, device_total, clock_origin_ns, pid, zigzag(rank), then the
 * strings producer, config, backend (varint length + bytes), from 2.3 the
 * string host (empty = unknown), then fields a newer minor may append, then
 * a u32 CRC-32 of everything before it. The host is appended where older
 * readers already skip unknown bytes, so a 2.3 file reads with any 2.x.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"

/* Built once, by whichever thread needs it first (pthread_once orders the
 * table's writes before every reader). */
static uint32_t g_crc_table[256];
static pthread_once_t g_crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        g_crc_table[i] = c;
    }
}

uint32_t fsc__crc32(const uint8_t *p, size_t n)
{
    pthread_once(&g_crc_once, crc_init);
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = g_crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static size_t str_len(const char *s)
{
    return s == NULL ? 0 : strlen(s);
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
    size_t n = str_len(s);
    p = fsc__put_varint(p, n);
    if (n > 0)
        memcpy(p, s, n);
    return p + n;
}

int fsc__host_ok(const char *s, size_t n)
{
    if (s == NULL || n == 0 || n > FSC__MAX_HOST_BYTES)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

int fsc__header_encode(const fsc_trace_header_t *h, uint8_t **out, size_t *len)
{
    size_t np = str_len(h->producer), nc = str_len(h->config), nb = str_len(h->backend);
    if (np > FSC__MAX_STRING_BYTES || nc > FSC__MAX_STRING_BYTES || nb > FSC__MAX_STRING_BYTES)
        return FSC_EINVAL;
    size_t nh = str_len(h->host);
    if (nh > 0 && !fsc__host_ok(h->host, nh))
        return FSC_EINVAL;
    size_t cap = 8 + FSC__TRACE_MAGIC_LEN + 4 + 6 * 10 + 4 * 10 + np + nc + nb + nh + 4;
    uint8_t *buf = malloc(cap);
    if (buf == NULL)
        return FSC_ENOMEM;
    uint8_t *pay = buf + 8, *p = pay;
    memcpy(p, FSC__TRACE_MAGIC, FSC__TRACE_MAGIC_LEN);
    p += FSC__TRACE_MAGIC_LEN;
    p[0] = (uint8_t)FSC__TRACE_MAJOR;
    p[1] = (uint8_t)(FSC__TRACE_MAJOR >> 8);
    p[2] = (uint8_t)FSC__TRACE_MINOR;
    p[3] = (uint8_t)(FSC__TRACE_MINOR >> 8);
    p += 4;
    p = fsc__put_varint(p, h->flags);
    p = fsc__put_varint(p, h->capacity);
    p = fsc__put_varint(p, h->device_total);
    p = fsc__put_varint(p, h->clock_origin_ns);
    p = fsc__put_varint(p, h->pid);
    p = fsc__put_varint(p, fsc__zigzag((uint64_t)(int64_t)h->rank, 0));
    p = put_str(p, h->producer);
    p = put_str(p, h->config);
    p = put_str(p, h->backend);
    p = put_str(p, h->host);
    fsc__put_le32(p, fsc__crc32(pay, (size_t)(p - pay)));
    p += 4;
    fsc__put_le32(buf, FSC__SKIP_HEADER);
    fsc__put_le32(buf + 4, (uint32_t)(p - pay));
    *out = buf;
    *len = (size_t)(p - buf);
    return 0;
}

static int get_str(const uint8_t **pp, const uint8_t *end, char **out)
{
    uint64_t n;
    if (fsc__get_varint(pp, end, &n) != 0 || n > FSC__MAX_STRING_BYTES || n > (uint64_t)(end - *pp))
        return -1;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return -1;
    memcpy(s, *pp, (size_t)n);
    s[n] = '\0';
    *pp += n;
    *out = s;
    return 0;
}

int fsc__header_parse(const uint8_t *p, size_t n, fsc__header_store_t *st, const char **why)
{
    memset(st, 0, sizeof *st);
    if (n < FSC__TRACE_MAGIC_LEN + 4 || memcmp(p, FSC__TRACE_MAGIC, FSC__TRACE_MAGIC_LEN) != 0) {
        *why = "not a fragscope trace";
        return FSC_EFORMAT;
    }
    st->h.version_major = (uint32_t)p[8] | (uint32_t)p[9] << 8;
    st->h.version_minor = (uint32_t)p[10] | (uint32_t)p[11] << 8;
    /* The version is read before the checksum: a newer major may lay the
     * rest out differently, and deserves a version error, not a CRC one. */
    if (st->h.version_major > FSC__TRACE_MAJOR) {
        *why = "newer major version";
        return FSC_EVERSION;
    }
    if (st->h.version_major < 1 || n < FSC__TRACE_MAGIC_LEN + 4 + 4 ||
        fsc__crc32(p, n - 4) != fsc__get_le32(p + n - 4)) {
        *why = "header checksum mismatch";
        return FSC_EFORMAT;
    }
    const uint8_t *q = p + FSC__TRACE_MAGIC_LEN + 4, *end = p + n - 4;
    uint64_t v[6];
    for (int i = 0; i < 6; i++)
        if (fsc__get_varint(&q, end, &v[i]) != 0)
            goto bad;
    if (v[0] > UINT32_MAX || v[4] > UINT32_MAX)
        goto bad;
    st->h.flags = (uint32_t)v[0];
    st->h.capacity = v[1];
    st->h.device_total = v[2];
    st->h.clock_origin_ns = v[3];
    st->h.pid = (uint32_t)v[4];
    int64_t rank = (int64_t)fsc__unzigzag(0, v[5]);
    if (rank < INT32_MIN || rank > INT32_MAX)
        goto bad;
    st->h.rank = (int32_t)rank;
    if (get_str(&q, end, &st->producer) != 0 || get_str(&q, end, &st->config) != 0 ||
        get_str(&q, end, &st->backend) != 0)
        goto bad;
    /* 2.3: the host; an over-long name or one with control bytes makes the
     * header malformed, like any string over its bound. */
    if (st->h.version_major == 2 && st->h.version_minor >= 3 && q < end) {
        uint64_t nh;
        if (fsc__get_varint(&q, end, &nh) != 0 || nh > FSC__MAX_HOST_BYTES ||
            nh > (uint64_t)(end - q) || (nh > 0 && !fsc__host_ok((const char *)q, (size_t)nh)))
            goto bad;
        if (nh > 0) {
            if ((st->host = malloc((size_t)nh + 1)) == NULL)
                goto bad;
            memcpy(st->host, q, (size_t)nh);
            st->host[nh] = '\0';
        }
        q += nh;
    }
    /* Bytes left before the CRC are fields of a newer minor: ignored. */
    st->h.producer = st->producer;
    st->h.config = st->config;
    st->h.backend = st->backend;
    st->h.host = st->host;
    return 0;
bad:
    fsc__header_store_free(st);
    *why = "malformed header";
    return FSC_EFORMAT;
}

void fsc__header_store_free(fsc__header_store_t *st)
{
    if (st == NULL)
        return;
    free(st->producer);
    free(st->config);
    free(st->backend);
    free(st->host);
    st->producer = st->config = st->backend = st->host = NULL;
}
