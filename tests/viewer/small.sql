-- small.sql — a hand-built run for the viewer tests (loaded into the tables of fsc_rundb_schema()).
--
-- Three segments: A = 0x7f0000000000 (20 MiB, large pool), B = A + 20 MiB
-- (2 MiB, small pool), C = B + 2 MiB (20 MiB, large pool). At the allocated
-- peak (event 20, 1.25 s):
--   A: [0, 8 MiB) allocated (requested 8 MiB - 1000, tag 2), [8, 12 MiB) free,
--      [12, 18 MiB) allocated (6 MiB, tag 3), [18, 20 MiB) free
--   B: four 512 B blocks allocated (requested 500 each, tag 2), the rest
--      (2 MiB - 2048) free
--   C: one 20 MiB block allocated (tag 1)
-- so allocated = 8 + 6 + 20 MiB + 2048 = 35653632 B ("34.00 MiB"), reserved =
-- 42 MiB = 44040192 B, utilization = 35653632 / 44040192 = 0.8096 ("81.0 %"),
-- internal = 1000 + 4 * 12 = 1048 B ("1.02 KiB"), free = 4 + 2 MiB +
-- (2 MiB - 2048) = 8386560 B, largest free = 4 MiB, external = 1 -
-- 4194304 / 8386560 = 0.4999 ("50.0 %").
-- One OOM (event 38, 2.4 s): 30 MiB - 5 requested under a 66 MiB capacity:
-- 66 MiB - allocated >= 30 MiB, so fragmentation. Tag and marker strings are
-- hostile markup that must stay text.
INSERT INTO meta VALUES
 ('schema_version', 1), ('fragscope_version', '0.1.0'), ('producer', 'fragscope test'),
 ('config', 'max_split_size_mb:128,</script><img src=x onerror=alert(1)>'),
 ('backend', 'sim'), ('capacity', 66 * 1048576), ('capacity_inferred', 0),
 ('device_total', 80 * 1073741824), ('clock_origin_ns', 0), ('pid', 1), ('rank', -1),
 ('trace_flags', 0), ('trace_version', '1.0'), ('source_path', 'fixture.fstrace'),
 ('source_kind', 'trace'), ('lenient', 0), ('warnings', 0), ('events_total', 40),
 ('timeline_bucket_events', 4), ('integrity.clean_close', 1), ('integrity.events_lost', 0);

INSERT INTO summary VALUES
 ('events', 40, 'count'), ('duration_ns', 2450000000, 'ns'),
 ('peak_allocated_bytes', 35653632, 'bytes'), ('peak_allocated_seq', 20, 'seq'),
 ('peak_allocated_time_ns', 1250000000, 'ns'),
 ('peak_reserved_bytes', 44040192, 'bytes'), ('peak_reserved_seq', 19, 'seq'),
 ('peak_reserved_time_ns', 1200000000, 'ns'),
 ('peak_active_bytes', 35653632, 'bytes'), ('peak_requested_bytes', 35652584, 'bytes'),
 ('utilization', 35653632.0 / 44040192.0, 'ratio'),
 ('internal_frag_bytes_at_peak', 1048, 'bytes'),
 ('internal_frag_ratio_at_peak', 1048.0 / 35653632.0, 'ratio'),
 ('peak_internal_frag_bytes', 1048, 'bytes'),
 ('free_in_reserved_at_peak', 8386560, 'bytes'), ('largest_free_at_peak', 4194304, 'bytes'),
 ('external_frag_at_peak', 1.0 - 4194304.0 / 8386560.0, 'ratio'),
 ('reserved_unallocated_at_peak', 8386560, 'bytes'),
 ('peak_reserved_unallocated_bytes', 10485760, 'bytes'),
 ('num_ooms', 1, 'count'), ('markers', 3, 'count'),
 ('leaked_blocks', 4, 'count'), ('leaked_bytes', 2048, 'bytes');

INSERT INTO tags VALUES
 (0, NULL, ''), (1, 0, 'step'),
 (2, 1, '<img src=x onerror=alert(1)>'),
 (3, 1, '</script>');

-- Ten buckets of four events; allocated_max/reserved_max peak in bucket 5.
INSERT INTO timeline(id, seq_first, seq_last, time_first_ns, time_last_ns, allocated, requested,
  active, reserved, internal_frag, internal_frag_ratio, free_in_reserved, largest_free,
  external_frag, reserved_unallocated, inactive_split_bytes, segments, live_blocks,
  allocated_min, allocated_max, allocated_max_seq, reserved_min, reserved_max,
  reserved_max_seq, reserved_unallocated_max) VALUES
 (0, 0, 3, 0, 200000000, 8388608, 8387608, 8388608, 20971520, 1000, 0.0001, 12582912, 12582912, 0.0, 12582912, 12582912, 1, 1, 0, 8388608, 1, 0, 20971520, 0, 20971520),
 (1, 4, 7, 250000000, 450000000, 14680064, 14679064, 14680064, 20971520, 1000, 0.0001, 6291456, 6291456, 0.0, 6291456, 6291456, 1, 2, 8388608, 14680064, 5, 20971520, 20971520, 4, 12582912),
 (2, 8, 11, 500000000, 700000000, 10485760, 10484760, 10485760, 20971520, 1000, 0.0001, 10485760, 6291456, 0.4, 10485760, 10485760, 1, 2, 10485760, 14680064, 8, 20971520, 20971520, 8, 10485760),
 (3, 12, 15, 750000000, 950000000, 14682112, 14679112, 14682112, 23068672, 1048, 0.0001, 8386560, 4194304, 0.4999, 8386560, 8386560, 2, 6, 10485760, 14682112, 15, 20971520, 23068672, 12, 10485760),
 (4, 16, 19, 1000000000, 1200000000, 14682112, 14679112, 14682112, 44040192, 1048, 0.0001, 29358080, 20971520, 0.2857, 29358080, 8386560, 3, 6, 14682112, 14682112, 16, 23068672, 44040192, 19, 29358080),
 (5, 20, 23, 1250000000, 1450000000, 35653632, 35652584, 35653632, 44040192, 1048, 0.00003, 8386560, 4194304, 0.4999, 8386560, 8386560, 3, 7, 35653632, 35653632, 20, 44040192, 44040192, 20, 8386560),
 (6, 24, 27, 1500000000, 1700000000, 27265024, 27264024, 27265024, 44040192, 1000, 0.00004, 16775168, 12582912, 0.25, 16775168, 8386560, 3, 6, 27265024, 35653632, 24, 44040192, 44040192, 24, 16775168),
 (7, 28, 31, 1750000000, 1950000000, 35653632, 35652584, 35653632, 44040192, 1048, 0.00003, 8386560, 4194304, 0.4999, 8386560, 8386560, 3, 7, 27265024, 35653632, 28, 44040192, 44040192, 28, 16775168),
 (8, 32, 35, 2000000000, 2200000000, 35653632, 35652584, 35653632, 44040192, 1048, 0.00003, 8386560, 4194304, 0.4999, 8386560, 8386560, 3, 7, 35653632, 35653632, 32, 44040192, 44040192, 32, 8386560),
 (9, 36, 39, 2250000000, 2450000000, 35653632, 35652584, 35653632, 44040192, 1048, 0.00003, 8386560, 4194304, 0.4999, 8386560, 8386560, 3, 7, 35653632, 35653632, 36, 44040192, 44040192, 36, 8386560);

INSERT INTO markers VALUES
 (0, 0, 'step 1'), (24, 1500000000, 'step 2'),
 (30, 1800000000, '</script><img src=x onerror=alert(1)>');

INSERT INTO ooms VALUES
 (0, 38, 2400000000, 31457275, 31457280, 0, 1, 2, 35653632, 44040192, 69206016, 0,
  69206016, 69206016, 31457280, NULL, 85899345920, 8386560, 4194304, 4194304, 0.4999,
  'fragmentation',
  'Enough memory was free inside reserved segments, but no block was large enough: <img src=x onerror=alert(1)> pinned it.',
  1, NULL);

INSERT INTO oom_segments VALUES
 (0, 0, 0x7f0000000000, 20971520, 1, 0, 6291456, 4194304, 2, 2, 14680064),
 (0, 1, 0x7f0001400000, 2097152, 0, 0, 2095104, 2095104, 1, 4, 2048);

INSERT INTO oom_pinning_blocks VALUES
 (0, 0x7f0000000000, 0x7f0000000000, 8388608, 8387608, 'allocated', 2, 36, 2300000000, 2),
 (0, 0x7f0000000000, 0x7f0000c00000, 6291456, 6291456, 'allocated', 6, 32, 2000000000, 3),
 (0, 0x7f0001400000, 0x7f0001400000, 512, 500, 'allocated', 12, 26, 1600000000, 2),
 (0, 0x7f0001400000, 0x7f0001400200, 512, 500, 'allocated', 13, 25, 1550000000, 2),
 (0, 0x7f0001400000, 0x7f0001400400, 512, 500, 'allocated', 14, 24, 1500000000, 2),
 (0, 0x7f0001400000, 0x7f0001400600, 512, 500, 'allocated', 15, 23, 1450000000, 2);

INSERT INTO oom_tags VALUES
 (0, 0, 1, 20971520, 1), (0, 1, 2, 8390656, 5), (0, 2, 3, 6291456, 1);

INSERT INTO suggestions VALUES
 (0, 'max_split_size_mb:64', 69206016, 69206016, 1, 44040192, 35653632, 'no OOM with this setting'),
 (0, 'expandable_segments:True', 69206016, NULL, 1, 35653632, 35653632, 'segments grow in place');

-- Bins 0..15; rows with requests or free blocks at the peak: 0, 11, 12, 13, 14, 15.
WITH RECURSIVE k(b) AS (SELECT 0 UNION ALL SELECT b + 1 FROM k WHERE b < 15)
INSERT INTO bins SELECT b, 512 << b, 512 << (b + 1), 0, 0, 0, 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0 FROM k;
UPDATE bins SET requests = 4, requested_bytes = 2000, allocated_bytes = 2048, internal_waste = 48,
  cache_hits = 3, cache_misses = 1, hit_rate = 0.75, splits = 1, peak_live_blocks = 4,
  peak_live_bytes = 2048, live_blocks_at_peak = 4, live_bytes_at_peak = 2048 WHERE bin = 0;
UPDATE bins SET free_blocks_at_peak = 1, free_bytes_at_peak = 2095104 WHERE bin = 11;
UPDATE bins SET free_blocks_at_peak = 1, free_bytes_at_peak = 2097152 WHERE bin = 12;
UPDATE bins SET requests = 1, requested_bytes = 6291456, allocated_bytes = 6291456,
  cache_misses = 1, splits = 1, peak_live_blocks = 1, peak_live_bytes = 6291456,
  live_blocks_at_peak = 1, live_bytes_at_peak = 6291456, free_blocks_at_peak = 1,
  free_bytes_at_peak = 4194304 WHERE bin = 13;
UPDATE bins SET requests = 1, requested_bytes = 8387608, allocated_bytes = 8388608,
  internal_waste = 1000, cache_misses = 1, splits = 1, peak_live_blocks = 1,
  peak_live_bytes = 8388608, live_blocks_at_peak = 1, live_bytes_at_peak = 8388608 WHERE bin = 14;
UPDATE bins SET requests = 2, requested_bytes = 41943040, allocated_bytes = 41943040,
  cache_hits = 1, cache_misses = 1, hit_rate = 0.5, merges = 1, peak_live_blocks = 1,
  peak_live_bytes = 20971520, live_blocks_at_peak = 1, live_bytes_at_peak = 20971520 WHERE bin = 15;

INSERT INTO tag_stats VALUES
 (1, 2, 41943040, 1, 20971520, 0, 0),
 (2, 5, 8390656, 5, 8390656, 4, 2048),
 (3, 1, 6291456, 1, 6291456, 0, 0);

INSERT INTO layout_snapshots VALUES
 (0, 'peak_allocated', 20, 1250000000, NULL, 35653632, 44040192),
 (1, 'oom', 38, 2400000000, 0, 35653632, 44040192);

-- The same layout at the peak (snapshot 0) and at the OOM (snapshot 1).
WITH s(id) AS (VALUES (0), (1))
INSERT INTO layout SELECT id, seg, addr, size, req, state, 0, pool, tag, aseq, age, agens FROM s,
 (SELECT 0x7f0000000000 AS seg, 0x7f0000000000 AS addr, 8388608 AS size, 8387608 AS req,
         'allocated' AS state, 1 AS pool, 2 AS tag, 2 AS aseq, 18 AS age, 1150000000 AS agens
  UNION ALL SELECT 0x7f0000000000, 0x7f0000800000, 4194304, NULL, 'free', 1, NULL, NULL, NULL, NULL
  UNION ALL SELECT 0x7f0000000000, 0x7f0000c00000, 6291456, 6291456, 'allocated', 1, 3, 6, 14, 900000000
  UNION ALL SELECT 0x7f0000000000, 0x7f0001200000, 2097152, NULL, 'free', 1, NULL, NULL, NULL, NULL
  UNION ALL SELECT 0x7f0001400000, 0x7f0001400000, 512, 500, 'allocated', 0, 2, 12, 8, 400000000
  UNION ALL SELECT 0x7f0001400000, 0x7f0001400200, 512, 500, 'allocated', 0, 2, 13, 7, 350000000
  UNION ALL SELECT 0x7f0001400000, 0x7f0001400400, 512, 500, 'allocated', 0, 2, 14, 6, 300000000
  UNION ALL SELECT 0x7f0001400000, 0x7f0001400600, 512, 500, 'allocated', 0, 2, 15, 5, 250000000
  UNION ALL SELECT 0x7f0001400000, 0x7f0001400800, 2095104, NULL, 'free', 0, NULL, NULL, NULL, NULL
  UNION ALL SELECT 0x7f0001600000, 0x7f0001600000, 20971520, 20971520, 'allocated', 1, 1, 20, 0, 0);
