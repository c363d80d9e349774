-- Where a conclusion came from: the ids of the messages an explicit conclusion was drawn from, or
-- of the conclusions a derived one rests on (JSON array of strings; NULL when not recorded, as for
-- conclusions stored through the API). Filterable as `source_ids` with `contains`.
ALTER TABLE conclusions ADD COLUMN source_ids TEXT;

-- Facts about the store itself, one row each; `vector_dimensions` is the size of every stored
-- vector, fixed when the first vector is stored (see storage/sqlite/sqlite-vector-index.ts).
CREATE TABLE store_settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- The vector tables (sqlite-vec `vec0`) are created with the first vector, since a vec0 column
-- has a fixed size: `conclusion_vectors` (partition key: the collection) and `message_vectors`
-- (partition keys: workspace and session), with triggers that drop the vectors of deleted rows.
