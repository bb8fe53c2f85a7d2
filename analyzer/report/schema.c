/*
 * schema.c — the run database's tables, defined once: the analyzer creates
 * them from this text and tests build their fixture databases from it.
 * docs/schema.md documents every column (tests/test_rundb.c checks that the
 * two agree).
 *
 * Schema 2 holds one or more runs (one input stream of one device of one
 * process): every table and view has a `run` column first, keys are unique
 * per run, and the table `runs` describes each. The views' per-run bodies
 * (events, tag_paths) are kept here once: schema 1 used them as they are,
 * and the reader re-creates them over its per-run views (rundb_select.c).
 * Schema 1 (one run per file, no run column) is kept for the tests that
 * build schema-1 files, which every reader still reads.
 *
 * The statements are kept as one C string, not a .sql file embedded at
 * build time, because SQLite stores each CREATE statement's text verbatim
 * in sqlite_master: a database's dump changes with the text's layout, so the
 * layout here is part of what the analyzer writes.
 */
#include <string.h>

#include "fragscope/rundb.h"
#include "rundb_internal.h"

/* The per-run views, over tables without a run column. */
#define FSC__TAG_PATHS_BODY \
    "(id, path) AS WITH RECURSIVE p(id, path) AS" \
        " (SELECT id, '' FROM tags WHERE parent IS NULL" \
        "  UNION ALL SELECT t.id, CASE WHEN p.path = '' THEN t.name ELSE p.path || '/' || t.name END" \
        "  FROM tags t JOIN p ON t.parent = p.id WHERE t.id != p.id)" \
        " SELECT id, path FROM p"

#define FSC__EVENTS_BODY \
    " SELECT alloc_seq AS seq, alloc_time_ns AS time_ns, 5 AS type, addr, size, requested," \
    "  stream, pool, segment, tag, NULL AS other FROM blocks" \
    " UNION ALL SELECT alloc_seq - 1, split_time_ns, 8, addr, split_size, size, stream, pool," \
    "  segment, tag, NULL FROM blocks WHERE split_size IS NOT NULL" \
    " UNION ALL SELECT free_requested_seq, free_requested_time_ns, 6, addr, size, requested," \
    "  stream, pool, segment, free_tag, NULL FROM blocks WHERE free_requested_seq IS NOT NULL" \
    " UNION ALL SELECT free_completed_seq, free_completed_time_ns, 7, addr, size, requested," \
    "  stream, pool, segment, free_tag, NULL FROM blocks WHERE free_completed_seq IS NOT NULL" \
    " UNION ALL SELECT free_completed_seq + 1, merge1_time_ns, 9, merge1_addr, merge1_size," \
    "  NULL, stream, pool, segment, free_tag, merge1_other FROM blocks" \
    "  WHERE merge1_addr IS NOT NULL" \
    " UNION ALL SELECT free_completed_seq + 2, merge2_time_ns, 9, merge2_addr, merge2_size," \
    "  NULL, stream, pool, segment, free_tag, merge2_other FROM blocks" \
    "  WHERE merge2_addr IS NOT NULL" \
    " UNION ALL SELECT seq, time_ns, type, addr, size, requested, stream, pool, segment, tag," \
    "  other FROM events_other"

/* Schema 1: one run per file. */
static const char k_schema_v1[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
    "CREATE TABLE summary(key TEXT PRIMARY KEY, value, unit TEXT);"
    "CREATE TABLE tags(id INTEGER PRIMARY KEY, parent INTEGER, name TEXT);"
    "CREATE INDEX tags_parent ON tags(parent);"
    "CREATE VIEW tag_paths" FSC__TAG_PATHS_BODY ";"
    "CREATE TABLE tag_frames(tag INTEGER PRIMARY KEY, file TEXT, line INTEGER, function TEXT,"
    " class INTEGER);"
    "CREATE TABLE pytorch_meta(id INTEGER PRIMARY KEY, seq INTEGER, kind TEXT, json TEXT);"
    "CREATE TABLE event_types(id INTEGER PRIMARY KEY, name TEXT);"
    "CREATE TABLE events_other(seq INTEGER PRIMARY KEY, time_ns INTEGER, type INTEGER,"
    " addr INTEGER, size INTEGER, requested INTEGER, stream INTEGER, pool INTEGER,"
    " segment INTEGER, tag INTEGER, other INTEGER);"
    "CREATE TABLE blocks(alloc_seq INTEGER PRIMARY KEY, alloc_time_ns INTEGER, addr INTEGER,"
    " size INTEGER, requested INTEGER, stream INTEGER, pool INTEGER, segment INTEGER,"
    " tag INTEGER, bin INTEGER, cache_hit INTEGER, free_requested_seq INTEGER,"
    " free_requested_time_ns INTEGER, free_tag INTEGER, free_completed_seq INTEGER,"
    " free_completed_time_ns INTEGER, split_size INTEGER, split_time_ns INTEGER,"
    " merge1_addr INTEGER, merge1_size INTEGER, merge1_other INTEGER, merge1_time_ns INTEGER,"
    " merge2_addr INTEGER, merge2_size INTEGER, merge2_other INTEGER, merge2_time_ns INTEGER);"
    "CREATE VIEW events AS" FSC__EVENTS_BODY ";"
    "CREATE TABLE segments(id INTEGER PRIMARY KEY, addr INTEGER, size INTEGER, pool INTEGER,"
    " stream INTEGER, expandable INTEGER, created_seq INTEGER, created_time_ns INTEGER,"
    " freed_seq INTEGER, freed_time_ns INTEGER, tag INTEGER, pool_id INTEGER);"
    "CREATE TABLE timeline(id INTEGER PRIMARY KEY, seq_first INTEGER, seq_last INTEGER,"
    " time_first_ns INTEGER, time_last_ns INTEGER, allocated INTEGER, requested INTEGER,"
    " active INTEGER, reserved INTEGER, internal_frag INTEGER, internal_frag_ratio REAL,"
    " free_in_reserved INTEGER, largest_free INTEGER, external_frag REAL,"
    " reserved_unallocated INTEGER, inactive_split_bytes INTEGER, segments INTEGER,"
    " live_blocks INTEGER, allocated_min INTEGER, allocated_max INTEGER,"
    " allocated_max_seq INTEGER, reserved_min INTEGER, reserved_max INTEGER,"
    " reserved_max_seq INTEGER, reserved_unallocated_max INTEGER);"
    "CREATE TABLE markers(seq INTEGER PRIMARY KEY, time_ns INTEGER, text TEXT);"
    "CREATE TABLE warnings(seq INTEGER, message TEXT);"
    "CREATE TABLE ooms(id INTEGER PRIMARY KEY, seq INTEGER, time_ns INTEGER,"
    " requested INTEGER, rounded INTEGER, stream INTEGER, pool INTEGER, tag INTEGER,"
    " allocated INTEGER, reserved INTEGER, capacity INTEGER, capacity_inferred INTEGER,"
    " capacity_lower INTEGER, capacity_upper INTEGER, segment_size INTEGER,"
    " device_free INTEGER, device_total INTEGER, free_in_reserved INTEGER,"
    " largest_free INTEGER, largest_free_usable INTEGER, external_frag REAL, cause TEXT,"
    " explanation TEXT, layout_snapshot INTEGER, external_bytes INTEGER);"
    "CREATE TABLE oom_segments(oom_id INTEGER, rank INTEGER, segment INTEGER, size INTEGER,"
    " pool INTEGER, stream INTEGER, free_bytes INTEGER, largest_free INTEGER,"
    " free_blocks INTEGER, live_blocks INTEGER, live_bytes INTEGER);"
    "CREATE TABLE oom_pinning_blocks(oom_id INTEGER, segment INTEGER, addr INTEGER,"
    " size INTEGER, requested INTEGER, state TEXT, alloc_seq INTEGER, age_events INTEGER,"
    " age_ns INTEGER, tag INTEGER);"
    "CREATE TABLE oom_tags(oom_id INTEGER, rank INTEGER, tag INTEGER, live_bytes INTEGER,"
    " live_blocks INTEGER);"
    "CREATE TABLE suggestions(oom_id INTEGER, config TEXT, capacity INTEGER,"
    " needed_capacity INTEGER, avoids_oom INTEGER, peak_reserved INTEGER,"
    " peak_allocated INTEGER, note TEXT);"
    "CREATE TABLE bins(bin INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER, requests INTEGER,"
    " requested_bytes INTEGER, allocated_bytes INTEGER, internal_waste INTEGER,"
    " cache_hits INTEGER, cache_misses INTEGER, hit_rate REAL, splits INTEGER,"
    " merges INTEGER, peak_live_blocks INTEGER, peak_live_bytes INTEGER,"
    " live_blocks_at_peak INTEGER, live_bytes_at_peak INTEGER, free_blocks_at_peak INTEGER,"
    " free_bytes_at_peak INTEGER);"
    "CREATE TABLE tag_stats(tag INTEGER PRIMARY KEY, allocs INTEGER, alloc_bytes INTEGER,"
    " live_blocks_at_peak INTEGER, live_bytes_at_peak INTEGER, live_blocks_end INTEGER,"
    " live_bytes_end INTEGER);"
    "CREATE TABLE layout_snapshots(id INTEGER PRIMARY KEY, kind TEXT, seq INTEGER,"
    " time_ns INTEGER, oom_id INTEGER, allocated INTEGER, reserved INTEGER);"
    "CREATE TABLE layout(snapshot INTEGER, segment INTEGER, addr INTEGER, size INTEGER,"
    " requested INTEGER, state TEXT, stream INTEGER, pool INTEGER, tag INTEGER,"
    " alloc_seq INTEGER, age_events INTEGER, age_ns INTEGER);"
    "CREATE TABLE frag_classes(point TEXT, oom_id INTEGER, pool TEXT, seq INTEGER,"
    " time_ns INTEGER, asking_stream INTEGER, reserved INTEGER, allocated INTEGER,"
    " reserved_unallocated INTEGER, soft INTEGER, hard INTEGER, stream INTEGER,"
    " private_pool INTEGER, pending INTEGER);"
    "CREATE TABLE frag_hard_blocks(point TEXT, oom_id INTEGER, rank INTEGER, segment INTEGER,"
    " addr INTEGER, size INTEGER, state TEXT, tag INTEGER, hard_bytes INTEGER,"
    " alloc_seq INTEGER, age_events INTEGER);"
    "CREATE TABLE frag_hard_tags(point TEXT, oom_id INTEGER, rank INTEGER, tag INTEGER,"
    " hard_bytes INTEGER, blocks INTEGER, live_bytes INTEGER);"
    "CREATE TABLE timeline_frag(id INTEGER, pool TEXT, asking_stream INTEGER, soft INTEGER,"
    " hard INTEGER, stream INTEGER, private_pool INTEGER, pending INTEGER);"
    "CREATE TABLE timeline_external(id INTEGER PRIMARY KEY, external_frag_max REAL,"
    " external_frag_max_seq INTEGER);"
    "CREATE TABLE device_memory(seq INTEGER PRIMARY KEY, time_ns INTEGER, device_free INTEGER,"
    " device_total INTEGER, reserved INTEGER, external_bytes INTEGER);";

/* Schema 2: the runs, and every table of schema 1 with a run column first.
 * The tables keyed by an INTEGER PRIMARY KEY in schema 1 (a rowid, so
 * clustered by that key) are WITHOUT ROWID tables keyed by (run, key):
 * still one b-tree, clustered the same way within a run. The others keep
 * their rowid (the readers order by it: the order rows were written); those
 * that grow with the run (layout, timeline_frag) get an index that starts
 * with run. The small ones (a few rows per OOM) have none: an index costs a
 * 64 KiB page in every database, and reading one run of them is a scan of
 * a few rows per run. */
#define RUN "run INTEGER NOT NULL DEFAULT 0, "
static const char k_schema[] =
    "CREATE TABLE runs(run INTEGER PRIMARY KEY, rank INTEGER, device INTEGER, host TEXT,"
    " pid INTEGER, source TEXT, kind TEXT);"
    "CREATE TABLE meta(" RUN "key TEXT, value, PRIMARY KEY(run, key));"
    "CREATE TABLE summary(" RUN "key TEXT, value, unit TEXT, PRIMARY KEY(run, key));"
    "CREATE TABLE tags(" RUN "id INTEGER, parent INTEGER, name TEXT, PRIMARY KEY(run, id))"
    " WITHOUT ROWID;"
    "CREATE INDEX tags_parent ON tags(run, parent);"
    "CREATE VIEW tag_paths(run, id, path) AS WITH RECURSIVE p(run, id, path) AS"
    " (SELECT run, id, '' FROM tags WHERE parent IS NULL"
    "  UNION ALL SELECT t.run, t.id,"
    "  CASE WHEN p.path = '' THEN t.name ELSE p.path || '/' || t.name END"
    "  FROM tags t JOIN p ON t.run = p.run AND t.parent = p.id WHERE t.id != p.id)"
    " SELECT run, id, path FROM p;"
    "CREATE TABLE tag_frames(" RUN "tag INTEGER, file TEXT, line INTEGER, function TEXT,"
    " class INTEGER, PRIMARY KEY(run, tag)) WITHOUT ROWID;"
    "CREATE TABLE pytorch_meta(" RUN "id INTEGER PRIMARY KEY, seq INTEGER, kind TEXT,"
    " json TEXT);"
    "CREATE INDEX pytorch_meta_seq ON pytorch_meta(run, seq);"
    "CREATE TABLE event_types(" RUN "id INTEGER, name TEXT, PRIMARY KEY(run, id))"
    " WITHOUT ROWID;"
    "CREATE TABLE events_other(" RUN "seq INTEGER, time_ns INTEGER, type INTEGER,"
    " addr INTEGER, size INTEGER, requested INTEGER, stream INTEGER, pool INTEGER,"
    " segment INTEGER, tag INTEGER, other INTEGER, PRIMARY KEY(run, seq)) WITHOUT ROWID;"
    "CREATE TABLE blocks(" RUN "alloc_seq INTEGER, alloc_time_ns INTEGER, addr INTEGER,"
    " size INTEGER, requested INTEGER, stream INTEGER, pool INTEGER, segment INTEGER,"
    " tag INTEGER, bin INTEGER, cache_hit INTEGER, free_requested_seq INTEGER,"
    " free_requested_time_ns INTEGER, free_tag INTEGER, free_completed_seq INTEGER,"
    " free_completed_time_ns INTEGER, split_size INTEGER, split_time_ns INTEGER,"
    " merge1_addr INTEGER, merge1_size INTEGER, merge1_other INTEGER, merge1_time_ns INTEGER,"
    " merge2_addr INTEGER, merge2_size INTEGER, merge2_other INTEGER, merge2_time_ns INTEGER,"
    " PRIMARY KEY(run, alloc_seq)) WITHOUT ROWID;"
    "CREATE VIEW events AS"
    " SELECT run, alloc_seq AS seq, alloc_time_ns AS time_ns, 5 AS type, addr, size, requested,"
    "  stream, pool, segment, tag, NULL AS other FROM blocks"
    " UNION ALL SELECT run, alloc_seq - 1, split_time_ns, 8, addr, split_size, size, stream,"
    "  pool, segment, tag, NULL FROM blocks WHERE split_size IS NOT NULL"
    " UNION ALL SELECT run, free_requested_seq, free_requested_time_ns, 6, addr, size,"
    "  requested, stream, pool, segment, free_tag, NULL FROM blocks"
    "  WHERE free_requested_seq IS NOT NULL"
    " UNION ALL SELECT run, free_completed_seq, free_completed_time_ns, 7, addr, size,"
    "  requested, stream, pool, segment, free_tag, NULL FROM blocks"
    "  WHERE free_completed_seq IS NOT NULL"
    " UNION ALL SELECT run, free_completed_seq + 1, merge1_time_ns, 9, merge1_addr,"
    "  merge1_size, NULL, stream, pool, segment, free_tag, merge1_other FROM blocks"
    "  WHERE merge1_addr IS NOT NULL"
    " UNION ALL SELECT run, free_completed_seq + 2, merge2_time_ns, 9, merge2_addr,"
    "  merge2_size, NULL, stream, pool, segment, free_tag, merge2_other FROM blocks"
    "  WHERE merge2_addr IS NOT NULL"
    " UNION ALL SELECT run, seq, time_ns, type, addr, size, requested, stream, pool, segment,"
    "  tag, other FROM events_other;"
    "CREATE TABLE segments(" RUN "id INTEGER, addr INTEGER, size INTEGER, pool INTEGER,"
    " stream INTEGER, expandable INTEGER, created_seq INTEGER, created_time_ns INTEGER,"
    " freed_seq INTEGER, freed_time_ns INTEGER, tag INTEGER, pool_id INTEGER,"
    " PRIMARY KEY(run, id)) WITHOUT ROWID;"
    "CREATE TABLE timeline(" RUN "id INTEGER, seq_first INTEGER, seq_last INTEGER,"
    " time_first_ns INTEGER, time_last_ns INTEGER, allocated INTEGER, requested INTEGER,"
    " active INTEGER, reserved INTEGER, internal_frag INTEGER, internal_frag_ratio REAL,"
    " free_in_reserved INTEGER, largest_free INTEGER, external_frag REAL,"
    " reserved_unallocated INTEGER, inactive_split_bytes INTEGER, segments INTEGER,"
    " live_blocks INTEGER, allocated_min INTEGER, allocated_max INTEGER,"
    " allocated_max_seq INTEGER, reserved_min INTEGER, reserved_max INTEGER,"
    " reserved_max_seq INTEGER, reserved_unallocated_max INTEGER, PRIMARY KEY(run, id))"
    " WITHOUT ROWID;"
    "CREATE TABLE markers(" RUN "seq INTEGER, time_ns INTEGER, text TEXT,"
    " PRIMARY KEY(run, seq)) WITHOUT ROWID;"
    "CREATE TABLE warnings(" RUN "seq INTEGER, message TEXT);"
    "CREATE TABLE ooms(" RUN "id INTEGER, seq INTEGER, time_ns INTEGER,"
    " requested INTEGER, rounded INTEGER, stream INTEGER, pool INTEGER, tag INTEGER,"
    " allocated INTEGER, reserved INTEGER, capacity INTEGER, capacity_inferred INTEGER,"
    " capacity_lower INTEGER, capacity_upper INTEGER, segment_size INTEGER,"
    " device_free INTEGER, device_total INTEGER, free_in_reserved INTEGER,"
    " largest_free INTEGER, largest_free_usable INTEGER, external_frag REAL, cause TEXT,"
    " explanation TEXT, layout_snapshot INTEGER, external_bytes INTEGER,"
    " PRIMARY KEY(run, id)) WITHOUT ROWID;"
    "CREATE TABLE oom_segments(" RUN "oom_id INTEGER, rank INTEGER, segment INTEGER,"
    " size INTEGER, pool INTEGER, stream INTEGER, free_bytes INTEGER, largest_free INTEGER,"
    " free_blocks INTEGER, live_blocks INTEGER, live_bytes INTEGER);"
    "CREATE TABLE oom_pinning_blocks(" RUN "oom_id INTEGER, segment INTEGER, addr INTEGER,"
    " size INTEGER, requested INTEGER, state TEXT, alloc_seq INTEGER, age_events INTEGER,"
    " age_ns INTEGER, tag INTEGER);"
    "CREATE TABLE oom_tags(" RUN "oom_id INTEGER, rank INTEGER, tag INTEGER,"
    " live_bytes INTEGER, live_blocks INTEGER);"
    "CREATE TABLE suggestions(" RUN "oom_id INTEGER, config TEXT, capacity INTEGER,"
    " needed_capacity INTEGER, avoids_oom INTEGER, peak_reserved INTEGER,"
    " peak_allocated INTEGER, note TEXT);"
    "CREATE TABLE bins(" RUN "bin INTEGER, lo INTEGER, hi INTEGER, requests INTEGER,"
    " requested_bytes INTEGER, allocated_bytes INTEGER, internal_waste INTEGER,"
    " cache_hits INTEGER, cache_misses INTEGER, hit_rate REAL, splits INTEGER,"
    " merges INTEGER, peak_live_blocks INTEGER, peak_live_bytes INTEGER,"
    " live_blocks_at_peak INTEGER, live_bytes_at_peak INTEGER, free_blocks_at_peak INTEGER,"
    " free_bytes_at_peak INTEGER, PRIMARY KEY(run, bin)) WITHOUT ROWID;"
    "CREATE TABLE tag_stats(" RUN "tag INTEGER, allocs INTEGER, alloc_bytes INTEGER,"
    " live_blocks_at_peak INTEGER, live_bytes_at_peak INTEGER, live_blocks_end INTEGER,"
    " live_bytes_end INTEGER, PRIMARY KEY(run, tag)) WITHOUT ROWID;"
    "CREATE TABLE layout_snapshots(" RUN "id INTEGER, kind TEXT, seq INTEGER,"
    " time_ns INTEGER, oom_id INTEGER, allocated INTEGER, reserved INTEGER,"
    " PRIMARY KEY(run, id)) WITHOUT ROWID;"
    "CREATE TABLE layout(" RUN "snapshot INTEGER, segment INTEGER, addr INTEGER,"
    " size INTEGER, requested INTEGER, state TEXT, stream INTEGER, pool INTEGER, tag INTEGER,"
    " alloc_seq INTEGER, age_events INTEGER, age_ns INTEGER);"
    "CREATE INDEX layout_run ON layout(run);"
    "CREATE TABLE frag_classes(" RUN "point TEXT, oom_id INTEGER, pool TEXT, seq INTEGER,"
    " time_ns INTEGER, asking_stream INTEGER, reserved INTEGER, allocated INTEGER,"
    " reserved_unallocated INTEGER, soft INTEGER, hard INTEGER, stream INTEGER,"
    " private_pool INTEGER, pending INTEGER);"
    "CREATE TABLE frag_hard_blocks(" RUN "point TEXT, oom_id INTEGER, rank INTEGER,"
    " segment INTEGER, addr INTEGER, size INTEGER, state TEXT, tag INTEGER,"
    " hard_bytes INTEGER, alloc_seq INTEGER, age_events INTEGER);"
    "CREATE TABLE frag_hard_tags(" RUN "point TEXT, oom_id INTEGER, rank INTEGER,"
    " tag INTEGER, hard_bytes INTEGER, blocks INTEGER, live_bytes INTEGER);"
    "CREATE TABLE timeline_frag(" RUN "id INTEGER, pool TEXT, asking_stream INTEGER,"
    " soft INTEGER, hard INTEGER, stream INTEGER, private_pool INTEGER, pending INTEGER);"
    "CREATE INDEX timeline_frag_run ON timeline_frag(run, id);"
    "CREATE TABLE timeline_external(" RUN "id INTEGER, external_frag_max REAL,"
    " external_frag_max_seq INTEGER, PRIMARY KEY(run, id)) WITHOUT ROWID;"
    "CREATE TABLE device_memory(" RUN "seq INTEGER, time_ns INTEGER, device_free INTEGER,"
    " device_total INTEGER, reserved INTEGER, external_bytes INTEGER,"
    " PRIMARY KEY(run, seq)) WITHOUT ROWID;";
#undef RUN

/* What the reader re-creates over its per-run views of the tables: the
 * views of schema 1, in the temp schema. */
static const char k_tag_paths_run[] = "CREATE TEMP VIEW tag_paths" FSC__TAG_PATHS_BODY;
static const char k_events_run[] = "CREATE TEMP VIEW events AS" FSC__EVENTS_BODY;

const char *fsc_rundb_schema(void)
{
    return k_schema;
}

const char *fsc_rundb_schema_v1(void)
{
    return k_schema_v1;
}

const char *fsc__rundb_run_view(const char *name)
{
    if (strcmp(name, "tag_paths") == 0)
        return k_tag_paths_run;
    if (strcmp(name, "events") == 0)
        return k_events_run;
    return NULL;
}
