-- A create request's claim: the table id its first call chose, and that request's digest.
-- KEYS: 1 the claimed table id, 2 the request digest (one slot: the claim's own hash tag)
-- ARGV: 1 a fresh table id, 2 this request's digest ('' = none), 3 the claim's ttl s
-- Reply: {table id claimed first, its digest ('' for none)}; the fresh id if unclaimed.
local first = redis.call('GET', KEYS[1])
if first then
  return {first, redis.call('GET', KEYS[2]) or ''}
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3]) end
return {ARGV[1], ARGV[2]}
