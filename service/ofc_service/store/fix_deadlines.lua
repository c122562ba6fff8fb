-- Compare-and-set on a global hint index (deadlines or outboxes; see redis.py): for each triple,
-- if the table's entry still has the score the caller saw, move it to the new score, or
-- remove it when the new score is ''. An entry changed meanwhile by a commit is left alone.
-- KEYS: 1 deadline index (zset: member table id, score deadline ms)
-- ARGV: triples (table id, score seen, new score or '')
-- Reply: how many entries changed
local changed = 0
for i = 1, #ARGV, 3 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    if ARGV[i + 2] == '' then
      redis.call('ZREM', KEYS[1], ARGV[i])
    else
      redis.call('ZADD', KEYS[1], ARGV[i + 2], ARGV[i])
    end
    changed = changed + 1
  end
end
return changed
