-- large.sql — a run far larger than a report may embed (loaded into the
-- tables of fsc_rundb_schema()): 50 000 timeline buckets, 30 000 markers
-- with long texts, 50 000 tags with 400-character paths, a peak layout of 200 segments x 1000
-- blocks, and 40 OOMs each with its own 2000-block layout. The report must
-- still stay under its size bound.
INSERT INTO meta VALUES ('schema_version', 1), ('producer', 'fragscope large test'),
 ('config', ''), ('backend', 'sim'), ('capacity', 0), ('capacity_inferred', 1),
 ('timeline_bucket_events', 50);
INSERT INTO summary VALUES ('events', 1000000, 'count'), ('duration_ns', 20000000000, 'ns'),
 ('peak_allocated_bytes', 60000000000, 'bytes'), ('peak_reserved_bytes', 70000000000, 'bytes'),
 ('utilization', 0.857, 'ratio'), ('num_ooms', 40, 'count');

WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 49999)
INSERT INTO timeline(id, seq_first, seq_last, time_first_ns, time_last_ns, allocated, requested,
  active, reserved, internal_frag, internal_frag_ratio, free_in_reserved, largest_free,
  external_frag, reserved_unallocated, allocated_max, reserved_max, reserved_unallocated_max)
SELECT i, i * 50, i * 50 + 49, i * 1000000, i * 1000000 + 900000,
  30000000000 + (i % 997) * 30000000, 29000000000 + (i % 997) * 30000000,
  30000000000 + (i % 997) * 30000000, 70000000000, 1000000000 + (i % 13) * 1000, 0.03,
  5000000000, 100000000, 0.98, 40000000000 - (i % 997) * 30000000,
  30000000000 + (i % 997) * 30000000 + 5, 70000000000, 40000000000 FROM k;

WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 29999)
INSERT INTO markers SELECT i * 33, i * 666666, 'step ' || i || ' <b>' || printf('%.280c', 'x') FROM k;

WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 50000)
INSERT INTO tags SELECT i, 50001, 'leaf' || i FROM k;
INSERT INTO tags VALUES (0, NULL, ''), (50001, 0, printf('%.390c', 'm'));

INSERT INTO layout_snapshots VALUES (0, 'peak_allocated', 500000, 10000000000, NULL, 60000000000, 70000000000);
WITH RECURSIVE o(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM o WHERE i < 39)
INSERT INTO layout_snapshots SELECT i + 1, 'oom', 600000 + i, 12000000000 + i, i, 60000000000, 70000000000 FROM o;

-- Peak: 200 segments of 1000 blocks of 1 MiB; states cycle allocated, free,
-- allocated, pending; tags spread over all 50 000 tags.
WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 199999)
INSERT INTO layout SELECT 0, 0x7f0000000000 + (i / 1000) * 1048576000,
  0x7f0000000000 + i * 1048576, 1048576, 1000000,
  CASE i % 4 WHEN 1 THEN 'free' WHEN 3 THEN 'pending' ELSE 'allocated' END, 0, 1,
  CASE i % 4 WHEN 1 THEN NULL ELSE (i * 7919) % 50000 + 1 END, i, 1000 + i, 1000000 + i FROM k;

-- Each OOM: 20 segments of 100 blocks.
WITH RECURSIVE o(s) AS (SELECT 1 UNION ALL SELECT s + 1 FROM o WHERE s < 40),
 k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 1999)
INSERT INTO layout SELECT s, 0x7f0000000000 + (i / 100) * 104857600, 0x7f0000000000 + i * 1048576,
  1048576, 1000000, CASE i % 2 WHEN 1 THEN 'free' ELSE 'allocated' END, 0, 1,
  CASE i % 2 WHEN 1 THEN NULL ELSE (i * 31 + s) % 50000 + 1 END, i, 10, 20 FROM o, k;

WITH RECURSIVE o(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM o WHERE i < 39)
INSERT INTO ooms(id, seq, time_ns, requested, rounded, pool, tag, allocated, reserved, capacity,
  capacity_inferred, capacity_lower, capacity_upper, free_in_reserved, largest_free, cause,
  explanation, layout_snapshot)
SELECT i, 600000 + i, 12000000000 + i, 1073741824, 1073741824, 1, i + 1, 60000000000, 70000000000,
  70000000000, 1, 70000000000, 71000000000, 10000000000, 1048576, 'fragmentation',
  'explanation ' || printf('%.3000c', 'e'), i + 1 FROM o;

WITH RECURSIVE o(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM o WHERE i < 39),
 r(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM r WHERE k < 9)
INSERT INTO oom_segments SELECT i, k, 0x7f0000000000 + k * 104857600, 104857600, 1, 0,
  52428800, 1048576, 50, 50, 52428800 FROM o, r;

WITH RECURSIVE o(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM o WHERE i < 39),
 r(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM r WHERE k < 9),
 p(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM p WHERE j < 19)
INSERT INTO oom_pinning_blocks SELECT i, 0x7f0000000000 + k * 104857600,
  0x7f0000000000 + k * 104857600 + j * 2097152, 1048576, 1000000, 'allocated', j, 100 + j,
  1000000 + j, (i * 200 + k * 20 + j) % 50000 + 1 FROM o, r, p;

WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 50000)
INSERT INTO tag_stats SELECT i, 10, 10485760, 1, 1048576 + i, 1, 4096 + i FROM k;
