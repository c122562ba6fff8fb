-- One page of a table's numbered extra blobs, read atomically.
-- KEYS: 1 extra hash, 2 extra index (zset of '<prefix>:<16-digit number>', all score 0)
-- ARGV: 1 prefix, 2 first number (16 digits), 3 page size
-- Reply: {total, number, value, number, value, ...} with up to size + 1 numbers; the last
--        value is omitted when there is one more number than the page holds.
local prefix, size = ARGV[1], tonumber(ARGV[3])
local high = '[' .. prefix .. ':9999999999999999'
local total = redis.call('ZLEXCOUNT', KEYS[2], '[' .. prefix .. ':0000000000000000', high)
local members = redis.call('ZRANGEBYLEX', KEYS[2], '[' .. prefix .. ':' .. ARGV[2], high,
  'LIMIT', 0, size + 1)
local reply = {total}
for i, member in ipairs(members) do
  local number = string.match(string.sub(member, #prefix + 2), '^0*(%d+)$')
  reply[#reply + 1] = number
  if i <= size then
    reply[#reply + 1] = redis.call('HGET', KEYS[1], prefix .. ':' .. number) or ''
  end
end
return reply
