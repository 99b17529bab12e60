local already = redis.call('HGET', KEYS[1], 'final')
if already then
  extend(ARGV[2])
  return 'A' .. already
end
local now = now_ms()
local seen = {}
for i = 5, #ARGV do
  seen[ARGV[i]] = true
end
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  if field ~= 'final' and field ~= 'owner' and not seen[field] then
    if string.sub(value, 1, 1) ~= '?' or lease_end(value) > now then
      return 'C'
    end
  end
end
local new = new_flow(ARGV[3], ARGV[4])
if new == 'F' or new == 'Q' then
  return new
end
if new then
  redis.call('HSET', KEYS[1], 'owner', '?' .. KEYS[3])
end
redis.call('HSET', KEYS[1], 'final', ARGV[1])
extend(ARGV[2])
return 'R'
