local value = redis.call('GET', KEYS[1])
if value == ARGV[4] or value == ARGV[5] then
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
