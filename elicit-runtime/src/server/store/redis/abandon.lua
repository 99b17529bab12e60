local value = redis.call('HGET', KEYS[1], ARGV[1])
if value and string.sub(value, 1, 1) == '?' and holder(value) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  local owner = owner_set(KEYS[1])
  if owner and redis.call('HLEN', KEYS[1]) == 1 then
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', owner, KEYS[1])
  end
  if redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('ZREM', KEYS[2], KEYS[1])
  end
end
return 1
