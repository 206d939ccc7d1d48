-- What heal found of a cache equal to its rebuild (the digests of the inputs
-- and of the text, as signed 64-bit integers), and the generation it found it
-- at: it stands only while the cache's generation is that one.
ALTER TABLE info_caches ADD COLUMN right_inputs BIGINT;
ALTER TABLE info_caches ADD COLUMN right_text BIGINT;
ALTER TABLE info_caches ADD COLUMN right_generation BIGINT;
