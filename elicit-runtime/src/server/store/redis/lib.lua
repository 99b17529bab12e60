local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function room(set, cap)
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return true
  end
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now_ms())
  redis.call('ZREM', set, KEYS[1])
  return redis.call('ZCARD', set) < tonumber(cap)
end
local function quota(set, cap)
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now_ms())
  if redis.call('ZCARD', set) < tonumber(cap) then
    return true
  end
  for _, member in ipairs(redis.call('ZRANGE', set, 0, -1)) do
    if redis.call('EXISTS', member) == 0 then
      redis.call('ZREM', set, member)
    end
  end
  return redis.call('ZCARD', set) < tonumber(cap)
end
local function track(set)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('ZADD', set, now_ms() + ttl, KEYS[1])
    if redis.call('PTTL', set) < ttl then
      redis.call('PEXPIRE', set, ttl)
    end
  end
end
local function owner_set(hash)
  local owner = redis.call('HGET', hash, 'owner')
  if owner then
    return string.sub(owner, 2)
  end
  return nil
end
local function extend(ttl)
  if redis.call('PTTL', KEYS[1]) < tonumber(ttl) then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  track(KEYS[2])
  local owner = owner_set(KEYS[1])
  if owner then
    track(owner)
  end
end
local function new_flow(cap, quota_cap)
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return false
  end
  if not room(KEYS[2], cap) then
    return 'F'
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now_ms())
  if redis.call('ZCARD', KEYS[3]) >= tonumber(quota_cap) then
    return 'Q'
  end
  return true
end
local function holder(value)
  local sep = string.find(value, ':', 2, true)
  if not sep then
    return ''
  end
  return string.sub(value, 2, sep - 1)
end
local function lease_end(value)
  local sep = string.find(value, ':', 2, true)
  if not sep then
    return 0
  end
  return tonumber(string.sub(value, sep + 1)) or 0
end
