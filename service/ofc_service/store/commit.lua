-- One change to one table, atomically: the whole of TableStore.commit (and create_table,
-- which is a commit expecting version 0). Every key shares the table's hash tag.
--
-- KEYS: 1 state hash, 2 event stream, 3 extra hash, 4 extra index (zset), 5 request record
--       (the layout before hand records; its name ends with the request id), 6 outbox hash
--       (no TTL: it outlives the table until the relay empties it)
-- ARGV[1] holds the arguments below, each as "<byte length>:<bytes>", one after the other
-- (one argument for the client to send, rather than some thirty to pack one by one):
-- 1 expected version (0: create), 2 state, 3 response, 4 deadline ms ('' = none),
--       5 table ttl s, 6 request ttl s, 7 event cap, 8 event count n, 9 extra count m,
--       10 .. 9+n events (packed: stream field 'z'), then m triples (extra key, value, index member or ''),
--       then the outbox count k and k pairs (record id, record), then keep_segments s
--       (s > 0: these events begin a segment (a hand); the log keeps the newest s segments,
--       the request records the newest two),
--       then '1' if the response may shrink to a marker once its hand is not the current
--       one ('' = keep it whole), then the numbered extra blobs' ttl s (0 = the table's),
--       then the expected SHA-1 of the stored state ('' = not
--       checked), then the request's digest ('' = none), then the caller's lane ('' = none:
--       a record that may shrink supersedes the lane's earlier one in the current hand, which
--       shrinks to its marker now), then '1' if the log keeps only the newest s segments,
--       '0' if it keeps them all (up to the event cap; the request records keep two either way)
-- Reply: {'ok', version, '', '', id...} | {'replay', version, deadline, response, id...}
--        (from an old hash record; 'replayed' from a string record, response as stored)
--        | {'applied', version, deadline} (a marker: the request made that version, its
--        response is no longer kept) | {'stale' | 'exists' | 'reused', current version,
--        deadline} | {'missing'}
local state_key, events_key, extra_key, index_key, request_key, outbox_key =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local function unpacked(packed)  -- the arguments packed in ARGV[1]
  local out, at = {}, 1
  while at <= #packed do
    local colon = string.find(packed, ':', at, true)
    local size = tonumber(string.sub(packed, at, colon - 1))
    out[#out + 1] = string.sub(packed, colon + 1, colon + size)
    at = colon + size + 1
  end
  return out
end
local ARGV = unpacked(ARGV[1])
local expected = tonumber(ARGV[1])
local n_events, n_extra = tonumber(ARGV[8]), tonumber(ARGV[9])
local last = #ARGV - 1  -- the arguments after the events, blobs and outbox, from the end
local keep, compact = tonumber(ARGV[last - 5]), ARGV[last - 4] == '1'
local extra_ttl = tonumber(ARGV[last - 3])
local expected_sha1, digest, lane = ARGV[last - 2], ARGV[last - 1], ARGV[last]
local log_by_segments = ARGV[#ARGV] ~= '0'
-- The table's other keys, in its own slot, named after the state's: the request log of
-- string records (step 3) and one hash of request records per kept segment (hand),
-- '<base>replies:<first event id of the segment>', field = the request id, with the hash of
-- its markers beside it, '<base>markers:<first event id>'.
local base = string.sub(state_key, 1, -#'state' - 1)
local requests_key = base .. 'requests'
-- When numbered extra blobs (hand histories) expire: member = their index member, score = ms.
local expiry_key = base .. 'extra_expiry'
local field = string.sub(request_key, #base + #'req:' + 1)

local REQUEST_LOG_CAP = 1000
-- Request records live in the current and the previous segment (hand), however many
-- segments the log keeps (a client retries only its latest requests).
local RECORD_SEGMENTS = 2
local function id_pair(id)  -- a stream id as two numbers ('0' is 0-0)
  local ms, seq = string.match(id, '^(%d+)-?(%d*)$')
  return {tonumber(ms), tonumber(seq) or 0}
end
local function before(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end
local function hand_key(start) return base .. 'replies:' .. start end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- A request record's first line: "<version> <event id>... [#<digest>] [@<expires ms>] [~]"
-- ('~': may shrink to a marker); a marker is that line alone, a whole record adds
-- "\n<response>".
local function parse(head)
  local r = {version = '', ids = {}, digest = '', expires = nil, compact = false}
  for token in string.gmatch(head, '%S+') do
    local mark = string.sub(token, 1, 1)
    if mark == '#' then r.digest = string.sub(token, 2)
    elseif mark == '@' then r.expires = tonumber(string.sub(token, 2))
    elseif mark == '~' then r.compact = true
    elseif r.version == '' then r.version = token
    else r.ids[#r.ids + 1] = token end
  end
  return r
end

-- Markers: a hand's records that shrank, in a hash of their own beside the hand's records
-- (small enough for Redis's compact encoding, a listpack, however large its answers are):
-- field = the first 24 hex digits of the SHA-1 of the request id, value = the first 16 of
-- its digest's, then the version (4 bytes) and the end of its retry window in ms (6 bytes),
-- big-endian. (Hex: turning it into bytes in Lua would cost more than the script's lookups.)
local NEVER = 2 ^ 48 - 1
local function markers_key(start) return base .. 'markers:' .. start end
local ID_HEX, DIGEST_HEX = 24, 16
local function sha1_hex(value, n) return string.sub(redis.sha1hex(value), 1, n) end
local function packed_marker(r)  -- r: a marker's parse
  return sha1_hex(r.digest, DIGEST_HEX) .. struct.pack('>I4I6', tonumber(r.version), r.expires or NEVER)
end

-- A whole record that may shrink, as its marker (its first line without ids and '~'); else nil.
local function marker_of(value)
  local split = string.find(value, '\n', 1, true)
  if not split then return nil end
  local r = parse(string.sub(value, 1, split - 1))
  if not r.compact then return nil end
  local marker = r.version
  if r.digest ~= '' then marker = marker .. ' #' .. r.digest end
  if r.expires then marker = marker .. ' @' .. r.expires end
  return marker
end

-- 1. A recorded request id answers with its first result, whatever the version says, if it
--    recorded this very request (the same digest); another request under it is refused.
local current = redis.call('HMGET', state_key, 'version', 'deadline', 'segments')
local deadline = current[2] or ''
local kept_starts = {}
for id in string.gmatch(current[3] or '', '%S+') do kept_starts[#kept_starts + 1] = id end
local record, packed = nil, nil
local field_id = #kept_starts > 0 and sha1_hex(field, ID_HEX)
for i = #kept_starts, math.max(1, #kept_starts - RECORD_SEGMENTS + 1), -1 do
  record = redis.call('HGET', hand_key(kept_starts[i]), field)
  if record then break end
  packed = redis.call('HGET', markers_key(kept_starts[i]), field_id)
  if packed then break end
end
if packed then
  local version, expires = struct.unpack('>I4I6', packed, DIGEST_HEX + 1)
  if expires > now_ms then
    if string.sub(packed, 1, DIGEST_HEX) ~= sha1_hex(digest, DIGEST_HEX) then
      return {'reused', current[1] or '', deadline}
    end
    return {'applied', tostring(version), deadline}
  end
elseif not record then
  -- The layout before hand records: one string (or, older still, one hash) per request.
  record = redis.pcall('GET', request_key)
  if type(record) == 'table' and record.err then
    record = redis.call('HMGET', request_key, 'version', 'events', 'response')
    if digest ~= '' then return {'reused', current[1] or '', deadline} end
    local reply = {'replay', record[1], deadline, record[3]}
    for id in string.gmatch(record[2], '%S+') do reply[#reply + 1] = id end
    return reply
  end
end
if record then
  local split = string.find(record, '\n', 1, true)
  local r = parse(string.sub(record, 1, (split or #record + 1) - 1))
  if r.expires == nil or r.expires > now_ms then
    if r.digest ~= digest then return {'reused', current[1] or '', deadline} end
    if not split then return {'applied', r.version, deadline} end
    local reply = {'replayed', r.version, deadline, string.sub(record, split + 1)}
    for _, id in ipairs(r.ids) do reply[#reply + 1] = id end
    return reply
  end
end

-- 2. The table must be at the expected version (a create expects no table at all).
if expected == 0 then
  if current[1] then return {'exists', current[1], deadline} end
  redis.call('DEL', events_key, extra_key, index_key, requests_key, expiry_key)
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
local dropped_last  -- the id of the newest event a hand's trim drops
if n_events > 0 then
  local length = redis.call('XLEN', events_key)
  for i = 1, n_events do
    ids[i] = redis.call('XADD', events_key, 'MAXLEN', '~', ARGV[7], '*', 'z', ARGV[9 + i])
  end
  fields[#fields + 1] = 'last_event'
  fields[#fields + 1] = ids[n_events]
  if keep > 0 then
    local starts = {'0'}  -- what came before the first segment counts as one
    if current[3] then starts = {unpack(kept_starts)} end
    local newest = starts[#starts]
    starts[#starts + 1] = ids[1]
    while #starts > math.max(keep, RECORD_SEGMENTS) do
      local dropped = table.remove(starts, 1)
      redis.call('DEL', hand_key(dropped), markers_key(dropped))  -- its records go with it
    end
    if #starts > RECORD_SEGMENTS then  -- the segment that left the records' window
      local gone = starts[#starts - RECORD_SEGMENTS]
      redis.call('DEL', hand_key(gone), markers_key(gone))
    end
    -- The hand that was the current one is now the previous one: its records that may shrink
    -- keep only that they were applied (the table answers the rest), as markers (those of
    -- the release before, fields of their own, too). The hash is written afresh; its lanes
    -- ('>' fields) point at nothing current any more.
    if #starts > 1 and starts[#starts - 1] == newest then
      local all, previous, markers = redis.call('HGETALL', hand_key(newest)), {}, {}
      for i = 2, #all, 2 do
        local name, value = all[i - 1], all[i]
        local marker = marker_of(value)
        if not marker and not string.find(value, '\n', 1, true) then marker = value end
        if string.sub(name, 1, 1) ~= '>' and marker then
          markers[#markers + 1] = sha1_hex(name, ID_HEX)
          markers[#markers + 1] = packed_marker(parse(marker))
        elseif string.sub(name, 1, 1) ~= '>' then
          previous[#previous + 1] = name
          previous[#previous + 1] = value
        end
      end
      if #all > 0 then
        local ttl_left = redis.call('PTTL', hand_key(newest))
        redis.call('DEL', hand_key(newest))
        if #previous > 0 then
          redis.call('HSET', hand_key(newest), unpack(previous))
          if ttl_left > 0 then redis.call('PEXPIRE', hand_key(newest), ttl_left) end
        end
        if #markers > 0 then
          redis.call('HSET', markers_key(newest), unpack(markers))
          if ttl_left > 0 then redis.call('PEXPIRE', markers_key(newest), ttl_left) end
        end
      end
    end
    if log_by_segments then
      local first_kept = starts[math.max(1, #starts - keep + 1)]
      local before = first_kept ~= '0'
        and redis.call('XREVRANGE', events_key, '(' .. first_kept, '-', 'COUNT', 1)[1]
      if before then dropped_last = before[1] end
      redis.call('XTRIM', events_key, 'MINID', first_kept)
    end
    fields[#fields + 1] = 'segments'
    fields[#fields + 1] = table.concat(starts, ' ')
    kept_starts = starts
    -- String records (written before any segment, or by the release before) live as long
    -- as their segment: drop those made before the records' oldest segment (the request log
    -- holds "<last event id> <record key>" in commit order).
    local oldest = id_pair(starts[math.max(1, #starts - RECORD_SEGMENTS + 1)])
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
    -- Events were trimmed: remember where the retained log now starts and, when known (a
    -- hand's trim drops all before an id: the newest one dropped), the newest id dropped,
    -- beside the first one kept: a reader that has seen it has missed nothing. A trim of
    -- whole stream nodes (the cap) leaves it unknown. Readers take the pair only while its
    -- first id is 'events_from' (the release before writes 'events_from' alone).
    local first = redis.call('XRANGE', events_key, '-', '+', 'COUNT', 1)[1][1]
    fields[#fields + 1] = 'events_from'
    fields[#fields + 1] = first
    if dropped_last then
      fields[#fields + 1] = 'trimmed'
      fields[#fields + 1] = dropped_last .. ' ' .. first
    else
      redis.call('HDEL', state_key, 'trimmed')
    end
  end
end
redis.call('HSET', state_key, unpack(fields))

-- Numbered extra blobs past their time go first (blob, listing, expiry), a page a commit.
for _, member in ipairs(redis.call('ZRANGEBYSCORE', expiry_key, '-inf', now_ms, 'LIMIT', 0, 100)) do
  local prefix, number = string.match(member, '^(.*):(%d+)$')
  redis.call('HDEL', extra_key, prefix .. ':' .. tostring(tonumber(number)))
  redis.call('ZREM', index_key, member)
  redis.call('ZREM', expiry_key, member)
end
local at = 10 + n_events
for i = 0, n_extra - 1 do
  local k = at + 3 * i
  redis.call('HSET', extra_key, ARGV[k], ARGV[k + 1])
  if ARGV[k + 2] ~= '' then
    redis.call('ZADD', index_key, 0, ARGV[k + 2])
    if extra_ttl > 0 then redis.call('ZADD', expiry_key, now_ms + extra_ttl * 1000, ARGV[k + 2]) end
  end
end

local ob = at + 3 * n_extra
for i = 1, tonumber(ARGV[ob]) do
  redis.call('HSET', outbox_key, ARGV[ob + 2 * i - 1], ARGV[ob + 2 * i])
end

local head = version
if #ids > 0 then head = head .. ' ' .. table.concat(ids, ' ') end
if digest ~= '' then head = head .. ' #' .. digest end
local ttl, request_ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
if #kept_starts > 0 then
  -- A table playing hands: the record goes to its current hand's hash (which lives as long
  -- as the table, or the retry window if longer); the record's own window is in its line.
  local hand = hand_key(kept_starts[#kept_starts])
  head = head .. ' @' .. (now_ms + request_ttl * 1000)
  if compact then
    head = head .. ' ~'
    if lane ~= '' then
      -- A caller retries only its latest request: its earlier move of this hand shrinks to
      -- its marker now ('>' .. lane: the field of the lane's latest record that may shrink).
      local prior = redis.call('HGET', hand, '>' .. lane)
      if prior and prior ~= field then
        local marker = marker_of(redis.call('HGET', hand, prior) or '')
        if marker then
          local markers = markers_key(kept_starts[#kept_starts])
          redis.call('HDEL', hand, prior)
          redis.call('HSET', markers, sha1_hex(prior, ID_HEX), packed_marker(parse(marker)))
          redis.call('EXPIRE', markers, math.max(ttl, request_ttl))
        end
      end
      redis.call('HSET', hand, '>' .. lane, field)
    end
  end
  redis.call('HSET', hand, field, head .. '\n' .. ARGV[3])
  redis.call('EXPIRE', hand, math.max(ttl, request_ttl))
else
  -- No segment yet (or a log that keeps them all): one string per record, listed for the
  -- trim of its segment; a log without segments stays short
  local last = ids[#ids] or redis.call('HGET', state_key, 'last_event') or '0'
  if redis.call('RPUSH', requests_key, last .. ' ' .. request_key) > REQUEST_LOG_CAP then
    redis.call('LPOP', requests_key)  -- its record still expires with the retry window
  end
  redis.call('EXPIRE', requests_key, ttl)
  redis.call('SET', request_key, head .. '\n' .. ARGV[3], 'EX', request_ttl)
end
for _, key in ipairs({state_key, events_key, extra_key, index_key, expiry_key}) do
  redis.call('EXPIRE', key, ttl)
end

local reply = {'ok', version, '', ''}
for i = 1, n_events do reply[4 + i] = ids[i] end
return reply
