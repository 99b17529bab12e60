local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then
  return {}
end
extend(ARGV[1])
local kept = {}
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  if field == 'final' then
    table.insert(kept, field)
    table.insert(kept, value)
  elseif field ~= 'owner' and string.sub(value, 1, 1) == '=' then
    table.insert(kept, field)
    table.insert(kept, string.sub(value, 2))
  end
end
return kept
