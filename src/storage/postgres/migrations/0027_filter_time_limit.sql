-- The end of a filtered statement that ran past its time limit (storage/filter-time-limit.ts).
-- Each row a filtered statement tests first compares the clock with the statement's start plus
-- engram.filter_time_limit_ms (set on every connection by the driver); only past it is this
-- called, to raise SQLSTATE ENG01, which the driver answers with FilterTimeLimitError. The row
-- key argument ties the test to the filtered table, so that the planner checks it on every row
-- scanned rather than once per statement. COST 1 keeps the test ahead of the filter's own
-- conditions, which the planner orders cheapest first.
CREATE OR REPLACE FUNCTION engram_filter_time_exceeded(row_key bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL SAFE COST 1 AS $$
BEGIN
  RAISE EXCEPTION 'filter time limit exceeded (row %)', row_key USING ERRCODE = 'ENG01';
END $$;
