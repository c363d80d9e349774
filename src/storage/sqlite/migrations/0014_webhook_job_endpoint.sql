-- A webhook delivery job names its endpoint in its payload (`endpointId`) instead of leaving the
-- worker to read it back out of the queue key (`webhook:<endpoint id>`): jobs queued before this
-- version get it from their key.
UPDATE jobs SET payload = json_set(payload, '$.endpointId', substr(queue_key, 9))
WHERE kind = 'webhook.deliver' AND queue_key LIKE 'webhook:%' AND json_extract(payload, '$.endpointId') IS NULL;
