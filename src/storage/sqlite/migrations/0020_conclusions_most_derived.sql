-- A representation with a search query adds an observer's most reinforced conclusions about a
-- peer (times_derived, then newest first): this index hands them out in that order, where the
-- pair's index made every such read sort the whole collection (3.6 ms at 10,000 conclusions).
CREATE INDEX conclusions_pair_derived ON conclusions (workspace_id, observer_id, observed_id, times_derived, created_at, pk) WHERE deleted_at IS NULL;
