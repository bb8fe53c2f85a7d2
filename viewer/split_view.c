/*
 * split_view.c — the page's section on where reserved − allocated sits
 * (docs/metrics.md): for the allocated peak, peak reserved and each OOM,
 * the soft, hard, stream, private-pool and pending bytes as a table with a
 * stacked bar, and the tags pinning the most hard bytes. Loaded from the
 * run database's frag_classes and frag_hard_tags tables and written as
 * static HTML, so it reads without JavaScript; one file so the section can
 * move as a whole.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "model_load.h"
#include "split_view.h"

#define SPLIT_MAX (2 + FSC__V_MAX_OOM_DETAIL)

typedef struct split_ld {
    fsc__loader_t *L;
    fsc__model_t *m;
} split_ld_t;

static int class_row(void *ud, const fsc_rundb_frag_class_t *c)
{
    split_ld_t *S = ud;
    fsc__model_t *m = S->m;
    if (c->pool == NULL || strcmp(c->pool, "all") != 0 || c->point == NULL)
        return 0;
    if (m->nsplit >= SPLIT_MAX)
        return 0;
    fsc__vsplit_t *x = &m->split[m->nsplit++];
    memset(x, 0, sizeof *x);
    snprintf(x->point, sizeof x->point, "%s", c->point);
    x->oom_id = fsc__ld_i(c->oom_id, -1);
    x->seq = fsc__ld_i(c->seq, 0);
    x->reserved = fsc__ld_i(c->reserved, 0);
    x->gap = fsc__ld_i(c->reserved_unallocated, 0);
    x->cls[0] = fsc__ld_i(c->soft, 0);
    x->cls[1] = fsc__ld_i(c->hard, 0);
    x->cls[2] = fsc__ld_i(c->stream, 0);
    x->cls[3] = fsc__ld_i(c->private_pool, 0);
    x->cls[4] = fsc__ld_i(c->pending, 0);
    return 0;
}

typedef struct tag_ld {
    fsc__loader_t *L;
    fsc__vsplit_t *x;
} tag_ld_t;

static int tag_row(void *ud, const fsc_rundb_frag_hard_tag_t *t)
{
    tag_ld_t *T = ud;
    if (T->x->ntags >= FSC__VSPLIT_TAGS)
        return FSC_RUNDB_STOP;
    T->x->tag[T->x->ntags] = fsc__ld_i(t->tag, 0);
    T->x->tag_hard[T->x->ntags++] = fsc__ld_i(t->hard_bytes, 0);
    return fsc__ld_note_tag(T->L, t->tag);
}

int fsc__model_load_split(fsc__loader_t *L, fsc__model_t *m)
{
    m->split = calloc(SPLIT_MAX, sizeof *m->split);
    if (m->split == NULL)
        return fsc__ld_nomem(L);
    split_ld_t S = {L, m};
    int rc = fsc__ld_read(L, fsc_rundb_frag_classes(L->db, class_row, &S));
    for (size_t i = 0; rc == 0 && i < m->nsplit; i++) {
        fsc__vsplit_t *x = &m->split[i];
        int peak = strcmp(x->point, "peak_allocated") == 0;
        if (!peak && strcmp(x->point, "oom") != 0)
            continue;
        tag_ld_t T = {L, x};
        rc = fsc__ld_read(L, fsc_rundb_frag_hard_tags(L->db, peak ? FSC_RUNDB_NULL : x->oom_id,
                                                      tag_row, &T));
    }
    return rc;
}

void fsc__model_free_split(fsc__model_t *m)
{
    free(m->split);
    m->split = NULL;
    m->nsplit = 0;
}

static const char *const k_name[5] = {"soft", "hard", "stream", "private pools", "pending"};
static const char *const k_colour[5] = {"#94a3b8", "#dc2626", "#7c3aed", "#0891b2",
                                        "#f59e0b"};
static const char *const k_what[5] = {
    "free segments: empty_cache() returns them",
    "free bytes in segments pinned by live blocks, on the asking stream",
    "pinned free bytes on other streams than the asking one",
    "free bytes of CUDA-graph or MemPool pools",
    "freed blocks waiting on other streams' work (record_stream)"};

static void moment_name(fsc__sb_t *sb, const fsc__vsplit_t *x)
{
    if (strcmp(x->point, "oom") == 0)
        fsc__sb_printf(sb, "<a href=\"#oom-%" PRId64 "\">OOM %" PRId64 "</a>", x->oom_id,
                       x->oom_id);
    else
        fsc__sb_puts(sb, strcmp(x->point, "peak_reserved") == 0 ? "peak reserved"
                                                                 : "allocated peak");
    fsc__sb_printf(sb, " <span class=\"muted\">event %" PRId64 "</span>", x->seq);
}

/* A bar of the five classes, widths in per mille of reserved − allocated. */
static void bar(fsc__sb_t *sb, const fsc__vsplit_t *x)
{
    fsc__sb_puts(sb, "<div style=\"display:flex;height:12px;min-width:160px;"
                     "background:var(--free);border-radius:3px;overflow:hidden\">");
    for (int k = 0; k < 5 && x->gap > 0; k++) {
        long pm = (long)((double)x->cls[k] * 1000.0 / (double)x->gap);
        if (pm > 0)
            fsc__sb_printf(sb, "<span title=\"%s\" style=\"width:%ld.%ld%%;background:%s\">"
                               "</span>", k_name[k], pm / 10, pm % 10, k_colour[k]);
    }
    fsc__sb_puts(sb, "</div>");
}

void fsc__emit_split(fsc__sb_t *sb, const fsc__model_t *m, const fsc__vcaps_t *caps)
{
    fsc__sb_puts(sb, "<section id=\"split\" class=\"panel\">\n"
                     "<h2>Where reserved &minus; allocated sits</h2>\n");
    if (m->nsplit == 0) {
        fsc__sb_puts(sb, "<p class=\"note\">Not recorded: this database was written before "
                         "fragscope split reserved &minus; allocated; analyze the run again."
                         "</p>\n</section>\n");
        return;
    }
    fsc__sb_puts(sb, "<p class=\"hint\">Every byte reserved but not allocated is in one class, "
                     "the first that applies: ");
    for (int k = 4; k >= 0; k--)
        fsc__sb_printf(sb, "<span style=\"color:%s\">&#9632;</span> <b>%s</b> (%s)%s",
                       k_colour[k], k_name[k], k_what[k], k ? ", " : ".");
    fsc__sb_puts(sb, " The classes add up to reserved &minus; allocated exactly.</p>\n"
                     "<div class=\"table-wrap\"><table class=\"data\" id=\"split-table\"><thead><tr><th>moment</th>"
                     "<th>reserved &minus; allocated</th><th>of reserved</th>");
    for (int k = 0; k < 5; k++)
        fsc__sb_printf(sb, "<th>%s</th>", k_name[k]);
    fsc__sb_puts(sb, "<th>the classes</th><th>hard pinned most by</th></tr></thead><tbody>\n");
    size_t shown_ooms = 0;
    /* the peaks first, then the OOMs (written first, during the replay) */
    for (size_t j = 0; j < 2 * m->nsplit; j++) {
        const fsc__vsplit_t *x = &m->split[j % m->nsplit];
        int oom = strcmp(x->point, "oom") == 0;
        if (oom != (j >= m->nsplit) || (oom && shown_ooms++ >= caps->oom_detail))
            continue;
        fsc__sb_puts(sb, "<tr><td>");
        moment_name(sb, x);
        fsc__sb_puts(sb, "</td><td>");
        fsc__sb_html_size(sb, (uint64_t)x->gap);
        fsc__sb_puts(sb, "</td><td>");
        fsc__sb_html_size(sb, (uint64_t)x->reserved);
        for (int k = 0; k < 5; k++) {
            fsc__sb_puts(sb, "</td><td>");
            fsc__sb_html_size(sb, (uint64_t)x->cls[k]);
        }
        fsc__sb_puts(sb, "</td><td>");
        bar(sb, x);
        fsc__sb_puts(sb, "</td><td class=\"tag\">");
        for (int t = 0; t < x->ntags; t++) {
            /* named as report names it (innermost frames, "file.py:12 fn ← ..."),
             * with the whole path on hover */
            const char *label = fsc__model_tag_label(m, x->tag[t]);
            const char *path = fsc__model_tag_path(m, x->tag[t]);
            fsc__sb_puts(sb, t ? "<br>" : "");
            fsc__sb_html_size(sb, (uint64_t)x->tag_hard[t]);
            fsc__sb_puts(sb, " <span title=\"");
            fsc__sb_html(sb, path ? path : "", 0);
            fsc__sb_puts(sb, "\">");
            fsc__sb_html(sb, label && label[0] ? label : "(untagged)", 160);
            fsc__sb_puts(sb, "</span>");
        }
        fsc__sb_puts(sb, "</td></tr>\n");
    }
    fsc__sb_puts(sb, "</tbody></table></div>\n</section>\n");
}
