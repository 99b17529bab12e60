local now = now_ms()
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value and string.sub(value, 1, 1) == '=' then
  extend(ARGV[2])
  return value
end
-- A finished flow runs nothing more, a slot left claimed (a stale lease, a retried claim) included.
if redis.call('HEXISTS', KEYS[1], 'final') == 1 then
  extend(ARGV[2])
  return '!'
end
if value then
  if holder(value) ~= ARGV[4] and lease_end(value) > now then
    extend(ARGV[2])
    return '?'
  end
elseif not room(KEYS[2], ARGV[3]) then
  return 'F'
end
redis.call('HSET', KEYS[1], ARGV[1], '?' .. ARGV[4] .. ':' .. (now + tonumber(ARGV[5])))
extend(ARGV[2])
return '+'
