if redis.call('EXISTS', KEYS[1]) == 1 then
  extend(ARGV[1])
end
return 1
