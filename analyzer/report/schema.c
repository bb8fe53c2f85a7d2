/*
 * schema.c — the run database's tables, defined once: the analyzer creates
 * them from this text and tests build their fixture databases from it.
 * docs/schema.md documents every column (tests/test_rundb.c checks that the
 * two agree).
 *
 * The statements are kept as one C string, not a .sql file embedded at
 * build time, because SQLite stores each CREATE statement's text verbatim
 * in sqlite_master: a database's dump changes with the text's layout, so the
 * layout here is part of what the analyzer writes.
 */
#include "fragscope/rundb.h"

static const char k_schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
    "CREATE TABLE summary(key TEXT PRIMARY KEY, value, unit TEXT);"
    "CREATE TABLE tags(id INTEGER PRIMARY KEY, parent INTEGER, name TEXT, path TEXT);"
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
    "CREATE VIEW events AS"
    " SELECT alloc_seq AS seq, alloc_time_ns AS time_ns, 5 AS type, addr, size, requested,"
    "  stream, pool, segment, tag, NULL AS other FROM blocks"
    " UNION ALL SELECT alloc_seq - 1, split_time_ns, 8, addr, split_size, size, stream, pool,"
    "  segment, tag, NULL FROM blocks WHERE split_size IS NOT NULL"
    " UNION ALL SELECT free_requested_seq, free_requested_time_ns, 6, addr, size, requested,"
    "  stream, pool, segment, free_tag, NULL FROM blocks WHERE free_requested_seq IS NOT NULL"
    " UNION ALL SELECT free_completed_seq, free_completed_time_ns, 7, addr, size, requested,"
    "  stream, pool, segment, free_tag, NULL FROM blocks WHERE free_completed_seq IS NOT NULL"
    " UNION ALL SELECT free_completed_seq + 1, merge1_time_ns, 9, merge1_addr, merge1_size,"
    "  NULL, stream, pool, segment, free_tag, merge1_other FROM blocks"
    "  WHERE merge1_addr IS NOT NULL"
    " UNION ALL SELECT free_completed_seq + 2, merge2_time_ns, 9, merge2_addr, merge2_size,"
    "  NULL, stream, pool, segment, free_tag, merge2_other FROM blocks"
    "  WHERE merge2_addr IS NOT NULL"
    " UNION ALL SELECT seq, time_ns, type, addr, size, requested, stream, pool, segment, tag,"
    "  other FROM events_other;"
    "CREATE TABLE segments(id INTEGER PRIMARY KEY, addr INTEGER, size INTEGER, pool INTEGER,"
    " stream INTEGER, expandable INTEGER, created_seq INTEGER, created_time_ns INTEGER,"
    " freed_seq INTEGER, freed_time_ns INTEGER, tag INTEGER);"
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
    " explanation TEXT, layout_snapshot INTEGER);"
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
    " alloc_seq INTEGER, age_events INTEGER, age_ns INTEGER);";

const char *fsc_rundb_schema(void)
{
    return k_schema;
}
