package throttle

import (
	"crypto/sha1"
	"encoding/hex"
)

// redisScript is a Lua script with its SHA1 digest, for EVALSHA.
type redisScript struct {
	src string
	sha string
}

func newRedisScript(src string) *redisScript {
	sum := sha1.Sum([]byte(src))
	return &redisScript{src: src, sha: hex.EncodeToString(sum[:])}
}

// redisAdmitLua decides one admission against every rule of a quota, and
// records it in all of them at one instant only if all of them allow it.
// Redis runs a script atomically, so no other admission can slip in between
// the checks and the records, whatever the number of clients.
//
// Time comes from the server's TIME, in integer microseconds, so clients
// with skewed clocks agree. TIME is only allowed before writes under effects
// replication (the default since Redis 5, the only mode since 7); older
// servers are switched to it by redis.replicate_commands. A server that
// still refuses TIME (some proxies and managed services rename or forbid
// it) makes the script fall back on ARGV[3], the caller's clock: then the
// clients' clocks must be kept in sync, and the reply says so (clock = 0).
//
// Each rule i keeps its state in KEYS[1+i], in one of two forms:
//
//   - log (mode 0): a sorted set of the admissions in the last window, one
//     member per call (a caller-made unique id, never the time, so two calls
//     in one microsecond both count) scored by its time. Exact; memory grows
//     with N.
//   - counter (mode 1): a hash of buckets of width g = ceil(window/1024), field =
//     bucket index, value = calls in it, plus the fields lo and hi (oldest
//     and newest bucket held) and total (sum of the buckets). The window
//     count is the sum of every bucket that overlaps (t-W, t]; the oldest,
//     partly outside, counts whole, so the count can only overstate and no
//     window ever holds more than N calls. Buckets that no longer overlap are
//     deleted here, so a key never holds more than about 1027 fields. It may
//     refuse a call up to g early.
//
// Every key expires (PEXPIRE) once its window has passed with no admission,
// and the rules key lives as long as the longest of them.
//
// KEYS[1]    pace:{NAME}:rules, the quota's rule spec
// KEYS[1+i]  the state of rule i (i = 1..k)
// ARGV[1]    the caller's rule spec
// ARGV[2]    a member unique to this call
// ARGV[3]    the caller's clock in microseconds, used only when TIME fails
// ARGV[4]    the time to live of the rules key in milliseconds
// ARGV[2+3i], ARGV[3+3i], ARGV[4+3i]
//
//	rule i: N, window in microseconds (margin included), mode
//
// Replies, with times in microseconds:
//
//	{1, now, clock, used_1, ..., used_k}              admitted; used_i counts this call
//	{0, now, clock, wait, i, used_1, ..., used_k}     refused; nothing recorded; rule i
//	                                                  needs the longest wait
//	{-1, spec}                                        the quota holds another rule spec
const redisAdmitLua = `
if redis.replicate_commands then pcall(redis.replicate_commands) end
local now, clock
local ok, t = pcall(redis.call, 'TIME')
if ok then
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  clock = 1
else
  now = tonumber(ARGV[3])
  clock = 0
end

local spec = redis.call('GET', KEYS[1])
if spec and spec ~= ARGV[1] then
  return {-1, spec}
end

-- field formats a bucket index the same way for every Redis version.
local function field(j)
  return string.format('%.0f', j)
end

local k = #KEYS - 1
local used, state = {}, {}
local wait, binding = 0, 0

for i = 1, k do
  local key = KEYS[1 + i]
  local a = 2 + 3 * i
  local n, w, mode = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2]
  local c, need
  if mode == '0' then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - w)
    c = redis.call('ZCARD', key)
    if c >= n then
      -- The call at index c-n must leave the window before one more fits.
      local e = redis.call('ZRANGE', key, c - n, c - n, 'WITHSCORES')
      need = tonumber(e[2]) + w - now
    end
  else
    local g = math.ceil(w / 1024)
    if g < 1 then g = 1 end
    -- Bucket j holds the instants [j*g, (j+1)*g - 1]; the oldest that
    -- overlaps (now-w, now] is the one holding now-w+1.
    local k0 = math.floor((now - w + 1) / g)
    local m = redis.call('HMGET', key, 'lo', 'hi', 'total')
    local lo, hi, total = tonumber(m[1]), tonumber(m[2]), tonumber(m[3]) or 0
    if lo and hi then
      if k0 > hi then
        redis.call('DEL', key)
        lo, hi, total = nil, nil, 0
      elseif k0 > lo then
        if k0 - lo > 2048 then
          -- Only a caller clock far ahead (TIME fallback) spreads buckets this far.
          local all = redis.call('HKEYS', key)
          for _, f in ipairs(all) do
            local j = tonumber(f)
            if j and j < k0 then
              total = total - tonumber(redis.call('HGET', key, f))
              redis.call('HDEL', key, f)
            end
          end
        else
          for j = lo, k0 - 1 do
            local v = redis.call('HGET', key, field(j))
            if v then
              total = total - tonumber(v)
              redis.call('HDEL', key, field(j))
            end
          end
        end
        lo = k0
        redis.call('HSET', key, 'lo', field(lo), 'total', total)
      end
    else
      lo, hi, total = nil, nil, 0
    end
    c = total
    if c >= n and lo then
      -- Drop buckets oldest first until one more call fits; bucket j stops
      -- overlapping the window at (j+1)*g + w - 1.
      local gone, last = 0, math.min(hi, lo + 2100)
      need = (hi + 1) * g + w - 1 - now
      for j = lo, last do
        local v = redis.call('HGET', key, field(j))
        if v then gone = gone + tonumber(v) end
        if c - gone < n then
          need = (j + 1) * g + w - 1 - now
          break
        end
      end
    end
    state[i] = {lo, hi, total, g}
  end
  used[i] = c
  if need then
    if need < 1 then need = 1 end
    if need > wait then
      wait, binding = need, i
    end
  end
end

if binding > 0 then
  if not spec then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
  end
  local r = {0, now, clock, wait, binding}
  for i = 1, k do r[5 + i] = used[i] end
  return r
end

for i = 1, k do
  local key = KEYS[1 + i]
  local a = 2 + 3 * i
  local w, mode = tonumber(ARGV[a + 1]), ARGV[a + 2]
  if mode == '0' then
    redis.call('ZADD', key, now, ARGV[2])
    redis.call('PEXPIRE', key, math.ceil(w / 1000) + 1)
  else
    local s = state[i]
    local lo, hi, total, g = s[1], s[2], s[3], s[4]
    local kn = math.floor(now / g)
    if not lo or kn < lo then lo = kn end
    if not hi or kn > hi then hi = kn end
    redis.call('HINCRBY', key, field(kn), 1)
    redis.call('HSET', key, 'lo', field(lo), 'hi', field(hi), 'total', total + 1)
    redis.call('PEXPIRE', key, math.ceil((w + g) / 1000) + 1)
  end
  used[i] = used[i] + 1
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
local r = {1, now, clock}
for i = 1, k do r[3 + i] = used[i] end
return r
`

// redisSlotsLua manages the leases of a fleet-wide cap on calls in flight.
// KEYS[1] (pace:{NAME}:slots) is a sorted set: member = lease id, score =
// the lease's expiry in server time (microseconds). Every operation first
// drops expired leases, so a holder that died frees its slot when its lease
// runs out. Time comes from TIME as in redisAdmitLua, with the same
// fallback on ARGV[5].
//
// ARGV[1]  operation: take, renew or release
// ARGV[2]  lease id
// ARGV[3]  the cap
// ARGV[4]  lease length in microseconds
// ARGV[5]  the caller's clock in microseconds, used only when TIME fails
//
// Replies:
//
//	take:    {1, now, held} taken (or already held, then renewed), held counting it;
//	         {0, now, held, wait} full, wait = until the earliest lease expires
//	renew:   {1, now} renewed; {2, now} it had expired and was taken again;
//	         {0, now} it had expired and the slots are full: lost
//	release: {1, now} released; {0, now} it was not held (expired)
const redisSlotsLua = `
if redis.replicate_commands then pcall(redis.replicate_commands) end
local now
local ok, t = pcall(redis.call, 'TIME')
if ok then
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[5])
end
local key, op, id = KEYS[1], ARGV[1], ARGV[2]
local cap, lease = tonumber(ARGV[3]), tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', key, '-inf', now)

local function hold()
  redis.call('ZADD', key, now + lease, id)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', key, math.ceil((tonumber(last[2]) - now) / 1000) + 1)
end

if op == 'release' then
  return {redis.call('ZREM', key, id), now}
end

local held = redis.call('ZSCORE', key, id)
if op == 'renew' then
  if held then
    hold()
    return {1, now}
  end
  if redis.call('ZCARD', key) < cap then
    hold()
    return {2, now}
  end
  return {0, now}
end

-- take
local c = redis.call('ZCARD', key)
if held then
  hold()
  return {1, now, c}
end
if c < cap then
  hold()
  return {1, now, c + 1}
end
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local wait = tonumber(first[2]) - now
if wait < 1 then wait = 1 end
return {0, now, c, wait}
`
