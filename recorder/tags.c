/*
 * tags.c — per-thread tag stacks (fsc_tag_push/fsc_tag_pop) over one
 * process-wide tree of interned (parent, name) nodes.
 *
 * Push is meant to be cheap enough to call around every layer of a model:
 * a small per-thread cache answers repeated pushes of the same name under
 * the same parent without taking the table's lock. Nodes live in pages
 * that never move, and the node count is published with release/acquire,
 * so readers (the cache check, recorders mapping nodes into a trace) look
 * nodes up without a lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "fragscope/recorder.h"
#include "tags.h"

#define PAGE_SHIFT 10
#define PAGE_NODES (1u << PAGE_SHIFT)
#define MAX_PAGES 4096u /* 4 Mi nodes */
#define MAX_DEPTH 256
#define CACHE_SLOTS 512 /* a model's distinct (parent, name) pairs per thread, mostly */

typedef struct gnode {
    uint32_t parent;
    uint32_t len;
    char *name;
} gnode_t;

typedef struct gkey {
    UT_hash_handle hh;
    uint32_t id;
    size_t klen;
    char key[]; /* parent (4 bytes, native order) then the name */
} gkey_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static gnode_t *g_pages[MAX_PAGES];
static uint32_t g_count; /* published with release: ids 1..g_count are valid */
static gkey_t *g_index;
static uint32_t g_next_thread;

__thread uint32_t fsc__t_tag;
static __thread uint32_t t_stack[MAX_DEPTH];
static __thread uint32_t t_depth;
static __thread uint32_t t_overflow; /* pushes beyond MAX_DEPTH, popped first */
__thread uint32_t fsc__t_thread;

typedef struct cache_slot {
    const char *ptr;
    uint32_t parent, id;
} cache_slot_t;
static __thread cache_slot_t t_cache[CACHE_SLOTS];

uint32_t fsc__thread_number_assign(void)
{
    if (fsc__t_thread == 0)
        fsc__t_thread = __atomic_add_fetch(&g_next_thread, 1, __ATOMIC_RELAXED);
    return fsc__t_thread;
}

static gnode_t *node_at(uint32_t id)
{
    uint32_t i = id - 1;
    return &g_pages[i >> PAGE_SHIFT][i & (PAGE_NODES - 1)];
}

int fsc__tag_get(uint32_t id, uint32_t *parent, const char **name, size_t *len)
{
    if (id == 0 || id > __atomic_load_n(&g_count, __ATOMIC_ACQUIRE))
        return -1;
    const gnode_t *n = node_at(id);
    *parent = n->parent;
    *name = n->name;
    *len = n->len;
    return 0;
}

uint32_t fsc__tag_intern(uint32_t parent, const char *name, size_t len)
{
    if (len > FSC_TAG_NAME_MAX)
        len = FSC_TAG_NAME_MAX;
    size_t klen = sizeof parent + len;
    char stackkey[sizeof parent + 256];
    char *key = klen <= sizeof stackkey ? stackkey : malloc(klen);
    if (key == NULL)
        return 0;
    memcpy(key, &parent, sizeof parent);
    memcpy(key + sizeof parent, name, len);
    uint32_t id = 0;
    pthread_mutex_lock(&g_mu);
    gkey_t *k = NULL;
    HASH_FIND(hh, g_index, key, klen, k);
    if (k != NULL) {
        id = k->id;
        goto out;
    }
    uint32_t n = g_count;
    if (n >= MAX_PAGES * PAGE_NODES)
        goto out;
    uint32_t page = n >> PAGE_SHIFT;
    if (g_pages[page] == NULL && (g_pages[page] = calloc(PAGE_NODES, sizeof(gnode_t))) == NULL)
        goto out;
    k = malloc(sizeof *k + klen);
    char *copy = malloc(len + 1);
    if (k == NULL || copy == NULL) {
        free(k);
        free(copy);
        goto out;
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    gnode_t *g = &g_pages[page][n & (PAGE_NODES - 1)];
    g->parent = parent;
    g->len = (uint32_t)len;
    g->name = copy;
    k->id = n + 1;
    k->klen = klen;
    memcpy(k->key, key, klen);
    HASH_ADD_KEYPTR(hh, g_index, k->key, klen, k);
    __atomic_store_n(&g_count, n + 1, __ATOMIC_RELEASE);
    id = n + 1;
out:
    pthread_mutex_unlock(&g_mu);
    if (key != stackkey)
        free(key);
    return id;
}

static uint32_t cached_intern(uint32_t parent, const char *name)
{
    size_t len = strlen(name);
    uint64_t h = ((uint64_t)(uintptr_t)name ^ ((uint64_t)parent << 40)) * 0x9E3779B97F4A7C15ull;
    cache_slot_t *s = &t_cache[h >> 55]; /* top 9 bits: CACHE_SLOTS = 512 */
    /* The pointer only selects a candidate; the name itself is compared,
     * since callers may reuse one buffer for different names. */
    if (s->ptr == name && s->parent == parent && s->id != 0) {
        const gnode_t *n = node_at(s->id);
        size_t l = len > FSC_TAG_NAME_MAX ? FSC_TAG_NAME_MAX : len;
        if (n->len == l && memcmp(n->name, name, l) == 0)
            return s->id;
    }
    uint32_t id = fsc__tag_intern(parent, name, len);
    if (id != 0) {
        s->ptr = name;
        s->parent = parent;
        s->id = id;
    }
    return id;
}

void fsc_tag_push(const char *name)
{
    if (name == NULL)
        name = "";
    if (t_depth >= MAX_DEPTH) {
        t_overflow++;
        return;
    }
    uint32_t id = cached_intern(fsc__t_tag, name);
    if (id == 0)
        id = fsc__t_tag; /* table full: stay on the parent, keep push/pop balanced */
    t_stack[t_depth++] = id;
    fsc__t_tag = id;
}

void fsc_tag_pop(void)
{
    if (t_overflow > 0) {
        t_overflow--;
        return;
    }
    if (t_depth == 0)
        return;
    t_depth--;
    fsc__t_tag = t_depth > 0 ? t_stack[t_depth - 1] : 0;
}

uint32_t fsc_tag_current(void)
{
    return fsc__t_tag;
}
