if redis.call('EXISTS', KEYS[1]) == 1 then
  return '+'
end
if not room(KEYS[2], ARGV[3]) then
  return 'F'
end
if ARGV[4] ~= '' and not quota(KEYS[3], ARGV[4]) then
  return 'Q'
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
track(KEYS[2])
if ARGV[4] ~= '' then
  track(KEYS[3])
end
return '+'
