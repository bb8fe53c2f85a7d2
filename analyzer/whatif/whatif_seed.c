/*
 * whatif_seed.c — the blocks of a rebuilt starting state whose size the
 * importer had to guess, settled by the window's own choices.
 *
 * A block live when a ring snapshot's window begins is known by its
 * address and request; where PyTorch may have left it a remainder it did
 * not split off and nothing in the window says so, the importer guesses
 * (docs/pytorch.md, "Rebuilding the starting state") and says which
 * blocks it guessed in its "pytorch.rebuild" record, with the ends the
 * rules allow. The guess decides the size of the free block after it, and
 * best fit compares free blocks by size: a replay with the recording's own
 * settings that hands a request that free block, where PyTorch chose
 * another, proves the free block smaller than the request. Each such proof
 * moves the block's end up just enough, and the replay runs again, until
 * it reproduces the window or the first difference is not one of these
 * blocks. What is moved is counted (settled); the rest stay guessed and
 * are reported as such.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fragscope/pytorch.h"
#include "whatif_internal.h"

typedef struct fsc__wguess {
    uint64_t addr, end, split_end, max_end, limit;
    size_t seed; /* its BLOCK seed; SIZE_MAX when the stream has none */
    int settled;
} fsc__wguess_t;

/* Largest rebuild record kept (a few bytes per guessed block). */
#define REBUILD_MAX (64u << 20)

static uint64_t num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

static int parse_rebuild(fsc_request_stream_t *rs)
{
    cJSON *o = cJSON_ParseWithLength(rs->rebuild_text, rs->rebuild_len);
    free(rs->rebuild_text);
    rs->rebuild_text = NULL;
    rs->rebuild_len = 0;
    if (o == NULL)
        return 0; /* not ours to judge: the figures stay unknown */
    rs->have_rebuild = 1;
    rs->window_entries = num(o, "entries");
    rs->window_first_time_us = num(o, "first_time_us");
    rs->guessed_total = num(o, "guessed");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "guessed_blocks");
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
    free(rs->guesses);
    rs->guesses = n > 0 ? calloc((size_t)n, sizeof *rs->guesses) : NULL;
    rs->nguesses = 0;
    if (n > 0 && rs->guesses == NULL) {
        cJSON_Delete(o);
        return FSC_ENOMEM;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        /* [addr, end, split_end, max_end, limit]: addresses fit a double
         * exactly (below 2^53) on every device */
        double v[5];
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 5)
            continue;
        for (int k = 0; k < 5; k++) {
            const cJSON *x = cJSON_GetArrayItem(it, k);
            v[k] = cJSON_IsNumber(x) ? x->valuedouble : -1;
        }
        if (v[0] < 0 || v[1] < v[0] || v[2] < v[0] || v[3] < v[2] || v[4] < v[3])
            continue;
        fsc__wguess_t *g = &rs->guesses[rs->nguesses++];
        g->addr = (uint64_t)v[0];
        g->end = (uint64_t)v[1];
        g->split_end = (uint64_t)v[2];
        g->max_end = (uint64_t)v[3];
        g->limit = (uint64_t)v[4];
        g->seed = SIZE_MAX;
    }
    cJSON_Delete(o);
    return 0;
}

int fsc__wseed_record(fsc_request_stream_t *rs, const char *text, size_t len)
{
    static const char whole[] = FSC_PYTORCH_META_PREFIX "rebuild ";
    static const char part[] = FSC_PYTORCH_META_PREFIX "rebuild+ ";
    int more = len >= sizeof part - 1 && memcmp(text, part, sizeof part - 1) == 0;
    size_t skip = more ? sizeof part - 1 : sizeof whole - 1;
    if (!more && (len < skip || memcmp(text, whole, skip) != 0))
        return 0;
    size_t n = len - skip;
    if (rs->rebuild_len + n > REBUILD_MAX)
        return 0;
    char *p = realloc(rs->rebuild_text, rs->rebuild_len + n + 1);
    if (p == NULL)
        return FSC_ENOMEM;
    memcpy(p + rs->rebuild_len, text + skip, n);
    rs->rebuild_len += n;
    p[rs->rebuild_len] = '\0';
    rs->rebuild_text = p;
    return more ? 0 : parse_rebuild(rs);
}

/* Where a guessed block may end so that the free block after it, which
 * runs to `right`, is smaller than `rounded`; 0 when the rules allow no
 * such end. */
static uint64_t end_below(const fsc__wguess_t *g, uint64_t right, uint64_t rounded)
{
    uint64_t e = right - rounded + 512; /* sizes are multiples of 512 */
    if (right < rounded || e <= g->end)
        return 0;
    /* a free block of the large pool holds more than 1 MiB, or is none */
    if (e < g->limit && g->limit - e <= FSC_MiB)
        e = g->limit;
    return e <= g->max_end ? e : 0;
}

int fsc__wseed_refine(fsc_request_stream_t *rs, fsc_err_t *err)
{
    if (rs->nguesses == 0)
        return 0;
    fsc__u64map_t at;
    fsc__u64map_init(&at);
    int rc = 0;
    for (size_t i = 0; i < rs->nseeds && rc == 0; i++)
        if (rs->seeds[i].kind == FSC__WSEED_BLOCK)
            rc = fsc__u64map_put(&at, rs->seeds[i].addr, i + 1);
    for (size_t k = 0; k < rs->nguesses && rc == 0; k++) {
        uint64_t v;
        fsc__wguess_t *g = &rs->guesses[k];
        if (fsc__u64map_get(&at, g->addr, &v) && rs->seeds[v - 1].addr + rs->seeds[v - 1].size == g->end)
            g->seed = v - 1;
    }
    fsc__u64map_free(&at);
    if (rc != 0)
        return fsc_err_set(err, FSC_ENOMEM, "what-if: out of host memory");
    fsc_alloc_config_t cfg;
    if (fsc_alloc_config_parse(rs->config, &cfg, NULL) != 0)
        return 0; /* the replay reports the bad config */
    /* Each round moves one block's end up; a block moves at most once per
     * request that proves it, so this bound is never met on real input. */
    size_t rounds = 4 * rs->nguesses + 16;
    for (size_t r = 0; r < rounds; r++) {
        fsc__wprobe_t pr;
        if ((rc = fsc__whatif_probe(rs, &pr, err)) != 0)
            return rc;
        if (!pr.hit || pr.got == 0)
            break;
        fsc__wguess_t *g = NULL;
        for (size_t k = 0; k < rs->nguesses && g == NULL; k++)
            if (rs->guesses[k].seed != SIZE_MAX && rs->guesses[k].end == pr.got)
                g = &rs->guesses[k];
        if (g == NULL)
            break; /* not a guessed block's free neighbour */
        uint64_t e = end_below(g, pr.got + pr.free_size, fsc_alloc_round_size(&cfg, pr.request));
        if (e == 0)
            break;
        rs->seeds[g->seed].size = e - g->addr;
        g->end = e;
        g->settled = 1;
    }
    rs->settled = 0;
    for (size_t k = 0; k < rs->nguesses; k++)
        rs->settled += rs->guesses[k].settled;
    return 0;
}

int fsc__wseed_is_settled(const fsc_request_stream_t *rs, size_t k)
{
    return rs->guesses[k].settled;
}

uint64_t fsc__wseed_guess_addr(const fsc_request_stream_t *rs, size_t k)
{
    return rs->guesses[k].addr;
}

uint64_t fsc__wseed_uncertain(const fsc_request_stream_t *rs)
{
    uint64_t n = 0;
    for (size_t k = 0; k < rs->nguesses; k++)
        if (!rs->guesses[k].settled)
            n += rs->guesses[k].max_end - rs->guesses[k].split_end;
    return n;
}

size_t fsc__wseed_settled_sizes(const fsc_request_stream_t *rs, fsc_import_size_t *out)
{
    size_t n = 0;
    for (size_t k = 0; k < rs->nguesses; k++)
        if (rs->guesses[k].settled)
            out[n++] = (fsc_import_size_t){rs->guesses[k].addr,
                                           rs->guesses[k].end - rs->guesses[k].addr};
    return n;
}
