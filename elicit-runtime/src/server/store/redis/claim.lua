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
end
local new = new_flow(ARGV[3], ARGV[6])
if new == 'F' or new == 'Q' then
  return new
end
if new then
  redis.call('HSET', KEYS[1], 'owner', '?' .. KEYS[3])
end
redis.call('HSET', KEYS[1], ARGV[1], '?' .. ARGV[4] .. ':' .. (now + tonumber(ARGV[5])))
extend(ARGV[2])
return '+'
