-- Append one settlement record to the feed unless the same record was published before under
-- its settlement id. Both keys share the hash tag {settlements}, so this is one script on one
-- slot.
-- KEYS: 1 stream, 2 the settlement id's dedupe key (value: its stream id)
-- ARGV: 1 settlement id, 2 record, 3 dedupe ttl s
-- Reply: {1, stream id} appended | {0, stream id} a duplicate, nothing appended
local seen = redis.call('GET', KEYS[2])
if seen then
  -- The same record again (a relay's retry, two relays at once): nothing to do. Another
  -- record under the id is its hand settled again after the table's store lost the first
  -- settlement (a failover of the table's node that the feed's node did not share): it is
  -- appended, so that a ledger upserting by settlement id books the hand as it stands. An
  -- entry already trimmed cannot be compared: a duplicate.
  local entry = redis.call('XRANGE', KEYS[1], seen, seen)[1]
  local same = true
  if entry then
    local fields = entry[2]
    for k = 1, #fields, 2 do
      if fields[k] == 'd' then same = fields[k + 1] == ARGV[2] end
    end
  end
  if same then return {0, seen} end
end
local id = redis.call('XADD', KEYS[1], '*', 'id', ARGV[1], 'd', ARGV[2])
redis.call('SET', KEYS[2], id, 'EX', ARGV[3])
return {1, id}
