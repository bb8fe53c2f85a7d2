-- odd.sql — values a damaged or foreign-written database might hold (loaded
-- into the tables of fsc_rundb_schema()): NULL in every column, text where
-- numbers belong, negative and huge numbers, invalid UTF-8, empty segments, blocks outside
-- their segment, an OOM without a layout, a layout without an OOM. The
-- report must still render, with every string escaped.
INSERT INTO meta VALUES ('schema_version', 1), ('producer', NULL), ('config', X'3cff3e'),
 ('capacity', 'lots'), ('capacity_inferred', NULL), ('device_total', -5);
INSERT INTO summary VALUES ('peak_allocated_bytes', 'many', 'bytes'), ('peak_reserved_bytes', NULL, 'bytes'),
 ('utilization', 1e308, 'ratio'), ('num_ooms', 2, 'count'), ('duration_ns', -1, 'ns'),
 ('external_frag_at_peak', 'x', 'ratio');
INSERT INTO tags VALUES (0, NULL, NULL), (7, 0, X'66c0af2f3c623e');
INSERT INTO timeline(id, seq_first, seq_last, time_first_ns, time_last_ns, allocated_max, requested,
  reserved_max, internal_frag, reserved_unallocated_max, external_frag) VALUES
 (0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (1, 5, 9, 100, 50, -10, 'x', 9223372036854775807, 3, 4, 'y'),
 (2, 3, 4, 20, 30, 5, 5, 5, 0, 0, 2.5);
INSERT INTO markers VALUES (1, NULL, NULL), (2, 5, X'e2'), (3, 9, '');
INSERT INTO ooms(id, seq, time_ns, requested, rounded, cause, explanation, tag, layout_snapshot) VALUES
 (0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (1, 9, 50, 'big', -1, '"><svg onload=alert(1)>', X'3c2f7363726970743eff', 7, 42);
INSERT INTO oom_segments VALUES (1, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO oom_pinning_blocks VALUES (1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 99);
INSERT INTO oom_tags VALUES (1, 0, 7, NULL, NULL);
INSERT INTO suggestions VALUES (1, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (NULL, '<i>', 1, 2, 1, 3, 4, '<b>');
INSERT INTO bins VALUES (0, NULL, NULL, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO tag_stats VALUES (7, 1, 1, 1, 10, 1, 10), (8, NULL, NULL, NULL, 5, NULL, 5);
INSERT INTO layout_snapshots VALUES (0, 'peak_allocated', NULL, NULL, NULL, NULL, NULL),
 (5, NULL, 3, 4, 77, 1, 1);
INSERT INTO layout VALUES
 (0, 4096, 4096, 0, NULL, 'allocated', 0, 0, 7, 1, 1, 1),
 (0, 8192, 4096, 512, 600, 'weird', NULL, NULL, NULL, NULL, NULL, NULL),
 (0, 8192, 9000, 512, 500, 'pending', 0, 1, 99, 0, -4, -4),
 (0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (5, 0, 0, 1048576, NULL, 'free', 0, 1, NULL, NULL, NULL, NULL);
