/*
 * text_codec.h — the two text helpers the snapshot readers share (not
 * API): a code point written as UTF-8, and hex digits read. The pickle
 * reader needs them for protocol 0's escaped strings, the JSON readers
 * (pytorch_json.c, pytorch_json_stream.c) for \uXXXX.
 */
#ifndef FSC_RECORDER_TEXT_CODEC_H
#define FSC_RECORDER_TEXT_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* cp (at most 0x10ffff) as UTF-8 into o, which has room for 4 bytes;
 * returns the bytes written. */
static inline size_t fsc__utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A hex digit's value, or -1. */
static inline int fsc__hex_digit(uint8_t c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* k hex digits at s into *out; 0 when one is not a hex digit. */
static inline int fsc__hex_read(const uint8_t *s, size_t k, uint32_t *out)
{
    uint32_t v = 0;
    for (size_t i = 0; i < k; i++) {
        int h = fsc__hex_digit(s[i]);
        if (h < 0)
            return 0;
        v = v * 16 + (uint32_t)h;
    }
    *out = v;
    return 1;
}

#endif
