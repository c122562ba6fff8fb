-- Append one settlement record to the feed unless its settlement id was published before.
-- Both keys share the hash tag {settlements}, so this is one script on one slot.
-- KEYS: 1 stream, 2 the settlement id's dedupe key (value: its stream id)
-- ARGV: 1 settlement id, 2 record, 3 dedupe ttl s
-- Reply: {1, stream id} appended | {0, stream id} a duplicate, nothing appended
local seen = redis.call('GET', KEYS[2])
if seen then return {0, seen} end
local id = redis.call('XADD', KEYS[1], '*', 'id', ARGV[1], 'd', ARGV[2])
redis.call('SET', KEYS[2], id, 'EX', ARGV[3])
return {1, id}
