-- Acknowledge records for a group; return those that were pending (with their contents, so
-- the caller can measure how long they took), nothing for ids already acknowledged.
-- KEYS: 1 stream
-- ARGV: 1 group, 2.. stream ids
-- Reply: flat triples (stream id, settlement id, record); '' '' for an entry gone from the log
local reply = {}
for i = 2, #ARGV do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    local settlement, record = '', ''
    local entry = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])[1]
    if entry then
      local fields = entry[2]
      for k = 1, #fields, 2 do
        if fields[k] == 'id' then settlement = fields[k + 1] end
        if fields[k] == 'd' then record = fields[k + 1] end
      end
    end
    reply[#reply + 1] = ARGV[i]
    reply[#reply + 1] = settlement
    reply[#reply + 1] = record
  end
end
return reply
