-- Trim the feed to what some group still needs: drop entries older than ARGV[1] that every
-- group has acknowledged (below its first pending entry and at or before its last delivered
-- one). With no group at all nothing is dropped.
-- KEYS: 1 stream
-- ARGV: 1 age bound, a stream id '<ms>-0' (entries before it are old enough)
-- Reply: how many entries were dropped
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then return 0 end

local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function before(a_ms, a_seq, b_ms, b_seq)
  return a_ms < b_ms or (a_ms == b_ms and a_seq < b_seq)
end

local bound_ms, bound_seq = parse(ARGV[1])
for _, info in ipairs(groups) do
  local name, last
  for k = 1, #info, 2 do
    if info[k] == 'name' then name = info[k + 1] end
    if info[k] == 'last-delivered-id' then last = info[k + 1] end
  end
  local ms, seq = parse(last)
  seq = seq + 1
  local summary = redis.call('XPENDING', KEYS[1], name)
  if summary[1] > 0 then
    local p_ms, p_seq = parse(summary[2])
    if before(p_ms, p_seq, ms, seq) then ms, seq = p_ms, p_seq end
  end
  if before(ms, seq, bound_ms, bound_seq) then bound_ms, bound_seq = ms, seq end
end
return redis.call('XTRIM', KEYS[1], 'MINID',
  string.format('%.0f-%.0f', bound_ms, bound_seq))
