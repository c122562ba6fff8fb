-- Up to COUNT records pending for one consumer of a group, after a stream id. A pending
-- record whose entry is gone from the stream cannot be delivered: it is acknowledged and
-- skipped, and reading goes on so a page is never cut short by such entries.
-- KEYS: 1 stream
-- ARGV: 1 group, 2 consumer, 3 after (stream id or 0), 4 count
-- Reply: flat triples (stream id, settlement id, record)
local count = tonumber(ARGV[4])
local after = ARGV[3]
local reply = {}
while #reply < 3 * count do
  local want = count - #reply / 3
  local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', want,
    'STREAMS', KEYS[1], after)
  local entries = read and read[1] and read[1][2] or {}
  for _, entry in ipairs(entries) do
    after = entry[1]
    local fields = entry[2]
    if fields and #fields > 0 then
      local settlement, record = '', ''
      for k = 1, #fields, 2 do
        if fields[k] == 'id' then settlement = fields[k + 1] end
        if fields[k] == 'd' then record = fields[k + 1] end
      end
      reply[#reply + 1] = entry[1]
      reply[#reply + 1] = settlement
      reply[#reply + 1] = record
    else
      redis.call('XACK', KEYS[1], ARGV[1], entry[1])
    end
  end
  if #entries < want then break end
end
return reply
