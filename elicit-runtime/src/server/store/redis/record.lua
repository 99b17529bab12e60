local value = redis.call('HGET', KEYS[1], ARGV[1])
if value == ARGV[3] then
  extend(ARGV[2])
  return '+'
end
if not value or string.sub(value, 1, 1) ~= '?' or holder(value) ~= ARGV[4] then
  return 'L'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
extend(ARGV[2])
return '+'
