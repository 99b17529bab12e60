local already = redis.call('HGET', KEYS[1], 'final')
if already then
  extend(ARGV[2])
  return 'A' .. already
end
local now = now_ms()
local seen = {}
for i = 4, #ARGV do
  seen[ARGV[i]] = true
end
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  if field ~= 'final' and not seen[field] then
    if string.sub(value, 1, 1) ~= '?' or lease_end(value) > now then
      return 'C'
    end
  end
end
if not room(KEYS[2], ARGV[3]) then
  return 'F'
end
redis.call('HSET', KEYS[1], 'final', ARGV[1])
extend(ARGV[2])
return 'R'
