-- One change to one table, atomically: the whole of TableStore.commit (and create_table,
-- which is a commit expecting version 0). Every key shares the table's hash tag.
--
-- KEYS: 1 state hash, 2 event stream, 3 extra hash, 4 extra index (zset), 5 request record,
--       6 outbox hash (no TTL: it outlives the table until the relay empties it)
-- ARGV: 1 expected version (0: create), 2 state, 3 response, 4 deadline ms ('' = none),
--       5 table ttl s, 6 request ttl s, 7 event cap, 8 event count n, 9 extra count m,
--       10 .. 9+n events, then m triples (extra key, value, index member or ''),
--       then the outbox count k and k pairs (record id, record), then keep_segments s
--       (s > 0: these events begin a segment (a hand); the log keeps the newest s segments),
--       then the expected SHA-1 of the stored state ('' = not checked), then the request's
--       digest ('' = none)
-- Reply: {'ok', version, '', '', id...} | {'replay', version, deadline, response, id...}
--        (from an old hash record; 'replayed' from a string record, response as stored)
--        | {'stale' | 'exists' | 'reused', current version, deadline} | {'missing'}
local state_key, events_key, extra_key, index_key, request_key, outbox_key =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local expected = tonumber(ARGV[1])
local n_events, n_extra = tonumber(ARGV[8]), tonumber(ARGV[9])
local keep, expected_sha1, digest = tonumber(ARGV[#ARGV - 2]), ARGV[#ARGV - 1], ARGV[#ARGV]
-- The table's request log (see step 3): a key of the table's own slot, named after the state's.
local requests_key = string.sub(state_key, 1, -#'state' - 1) .. 'requests'

local REQUEST_LOG_CAP = 1000
local function id_pair(id)  -- a stream id as two numbers ('0' is 0-0)
  local ms, seq = string.match(id, '^(%d+)-?(%d*)$')
  return {tonumber(ms), tonumber(seq) or 0}
end
local function before(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end

-- 1. A recorded request id answers with its first result, whatever the version says, if it
--    recorded this very request (the same digest); another request under it is refused.
local current = redis.call('HMGET', state_key, 'version', 'deadline')
local deadline = current[2] or ''
-- A request record is one string, "<version> <event id>... [#<digest>]\n<response>";
-- records written before that layout are hashes (version, events, response) until they
-- expire. Either without a digest records ''.
local record = redis.pcall('GET', request_key)
if type(record) == 'table' and record.err then
  record = redis.call('HMGET', request_key, 'version', 'events', 'response')
  if digest ~= '' then return {'reused', current[1] or '', deadline} end
  local reply = {'replay', record[1], deadline, record[3]}
  for id in string.gmatch(record[2], '%S+') do reply[#reply + 1] = id end
  return reply
elseif record then
  local split = string.find(record, '\n', 1, true)
  local reply = {'replayed', '', deadline, string.sub(record, split + 1)}
  local recorded = ''
  for id in string.gmatch(string.sub(record, 1, split - 1), '%S+') do
    if string.sub(id, 1, 1) == '#' then
      recorded = string.sub(id, 2)
    elseif reply[2] == '' then
      reply[2] = id
    else
      reply[#reply + 1] = id
    end
  end
  if recorded ~= digest then return {'reused', current[1] or '', deadline} end
  return reply
end

-- 2. The table must be at the expected version (a create expects no table at all).
if expected == 0 then
  if current[1] then return {'exists', current[1], deadline} end
  redis.call('DEL', events_key, extra_key, index_key, requests_key)
elseif not current[1] then
  return {'missing'}
elseif tonumber(current[1]) ~= expected then
  return {'stale', current[1], deadline}
elseif expected_sha1 ~= '' and redis.sha1hex(redis.call('HGET', state_key, 'state')) ~= expected_sha1 then
  return {'stale', current[1], deadline}  -- same version, another state: the store lost writes
end

-- 3. Write the new version, state, deadline, events, extra blobs and request record.
local version = tostring(expected + 1)
local fields = {'version', version, 'state', ARGV[2]}
if expected == 0 then
  fields[#fields + 1] = 'layout'
  fields[#fields + 1] = '1'
  fields[#fields + 1] = 'last_event'
  fields[#fields + 1] = '0'
end
if ARGV[4] == '' then
  redis.call('HDEL', state_key, 'deadline')
else
  fields[#fields + 1] = 'deadline'
  fields[#fields + 1] = ARGV[4]
end

local ids = {}
if n_events > 0 then
  local length = redis.call('XLEN', events_key)
  for i = 1, n_events do
    ids[i] = redis.call('XADD', events_key, 'MAXLEN', '~', ARGV[7], '*', 'd', ARGV[9 + i])
  end
  fields[#fields + 1] = 'last_event'
  fields[#fields + 1] = ids[n_events]
  if keep > 0 then
    local starts = {'0'}  -- what came before the first segment counts as one
    local kept = redis.call('HGET', state_key, 'segments')
    if kept then starts = {} end
    for id in string.gmatch(kept or '', '%S+') do
      starts[#starts + 1] = id
    end
    starts[#starts + 1] = ids[1]
    while #starts > keep do table.remove(starts, 1) end
    redis.call('XTRIM', events_key, 'MINID', starts[1])
    fields[#fields + 1] = 'segments'
    fields[#fields + 1] = table.concat(starts, ' ')
    -- Request records live as long as their segment: drop those made before the oldest
    -- segment kept (the request log holds "<last event id> <record key>" in commit order).
    local oldest = id_pair(starts[1])
    while true do
      local head = redis.call('LINDEX', requests_key, 0)
      if not head then break end
      local at, key = string.match(head, '^(%S+) (%S+)$')
      if not before(id_pair(at), oldest) then break end
      redis.call('LPOP', requests_key)
      redis.call('DEL', key)
    end
  end
  if redis.call('XLEN', events_key) < length + n_events then
    -- Whole stream nodes were trimmed: remember where the retained log now starts.
    fields[#fields + 1] = 'events_from'
    fields[#fields + 1] = redis.call('XRANGE', events_key, '-', '+', 'COUNT', 1)[1][1]
  end
end
redis.call('HSET', state_key, unpack(fields))

local at = 10 + n_events
for i = 0, n_extra - 1 do
  local k = at + 3 * i
  redis.call('HSET', extra_key, ARGV[k], ARGV[k + 1])
  if ARGV[k + 2] ~= '' then redis.call('ZADD', index_key, 0, ARGV[k + 2]) end
end

local ob = at + 3 * n_extra
for i = 1, tonumber(ARGV[ob]) do
  redis.call('HSET', outbox_key, ARGV[ob + 2 * i - 1], ARGV[ob + 2 * i])
end

do  -- list this record for the trim of its segment; a log without segments stays short
  local last = ids[#ids] or redis.call('HGET', state_key, 'last_event') or '0'
  if redis.call('RPUSH', requests_key, last .. ' ' .. request_key) > REQUEST_LOG_CAP then
    redis.call('LPOP', requests_key)  -- its record still expires with the retry window
  end
  redis.call('EXPIRE', requests_key, ARGV[5])
end

local head = version
if #ids > 0 then head = head .. ' ' .. table.concat(ids, ' ') end
if digest ~= '' then head = head .. ' #' .. digest end
redis.call('SET', request_key, head .. '\n' .. ARGV[3], 'EX', ARGV[6])
for _, key in ipairs({state_key, events_key, extra_key, index_key}) do
  redis.call('EXPIRE', key, ARGV[5])
end

local reply = {'ok', version, '', ''}
for i = 1, n_events do reply[4 + i] = ids[i] end
return reply
