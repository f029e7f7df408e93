package redisrate

import (
	"sync"

	"github.com/redis/go-redis/v9"
)

// Scripts, with their digests computed once, when first used: a pace
// process that never talks to Redis (pace exec with the local store)
// does not hash them at start-up. Script.Run sends EVALSHA and falls back
// on EVAL when Redis does not have the script.
var (
	admitScript   = lazyScript(admitLua)
	slotsScript   = lazyScript(slotsLua)
	correctScript = lazyScript(correctLua)
	marginScript  = lazyScript(marginLua)
	repairScript  = lazyScript(repairLua)
)

// lazyScript returns the script of src, made on the first call.
func lazyScript(src string) func() *redis.Script {
	return sync.OnceValue(func() *redis.Script { return redis.NewScript(src) })
}

// timeHead and timeTail make the opening every script shares, around
// the argument that holds the caller's clock (such as "ARGV[3]"): it sets
// now from the server's TIME, in integer microseconds, so clients with
// skewed clocks agree. TIME is only allowed before writes under effects
// replication (the default since Redis 5, the only mode since 7); older
// servers are switched to it by redis.replicate_commands. A server that
// still refuses TIME (some proxies and managed services rename or forbid
// it) makes the script fall back on the caller's clock: then the
// clients' clocks must be kept in sync, and clock is 0 for the reply to
// say so. (Constants, so that the scripts cost nothing at start-up.)
const (
	timeHead = `
if redis.replicate_commands then pcall(redis.replicate_commands) end
local now, clock
local ok, t = pcall(redis.call, 'TIME')
if ok then
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  clock = 1
else
  now = tonumber(`
	timeTail = `)
  clock = 0
end
`
	// numLua defines num(x), a number as Redis reads it: every digit,
	// where Lua's own conversion keeps 14 (and a microsecond instant
	// has 16).
	numLua = `
local function num(x)
  return string.format('%.0f', x)
end
`
)

// helpersLua holds the functions every script uses to read and trim a
// rule's state. A rule keeps its state in two keys, in one of three modes:
//
//   - count log (mode 0): a sorted set of the admissions in the last
//     window, one member per call (an id unique to the call, never the
//     time, so two calls in one microsecond both count) scored by its
//     time. Exact; memory grows with N. The second key is unused.
//   - cost log (mode 2): the same sorted set with members "id:cost", and
//     the sum of the costs it holds in the second key. Exact.
//   - counter (mode 1): a hash of buckets of width g = ceil(window/1024),
//     field = bucket index, value = weight in it, plus the fields lo and
//     hi (oldest and newest bucket held) and total (sum of the buckets).
//     The window's weight is the sum of every bucket that overlaps
//     (t-W, t]; the oldest, partly outside, counts whole, so the sum can
//     only overstate and no window ever holds more than N. Buckets that no
//     longer overlap are deleted here, so a key never holds more than
//     about 1027 fields. It may refuse a call up to g early. The second
//     key holds the costs of the calls corrected (see correctLua).
//
// trim drops what has left the window w at now and returns the weight
// held and, for counters, the state {lo, hi, total, g}. A counter's
// bucket width g comes from the rule's own window, base: the margin
// (w - base) changes while a quota lives, and the buckets must not.
//
// fleet_margin returns the widest margin a process sharing the quota has
// in force: own and every unexpired entry of the hash key (field = a
// process's id, or "~" .. the margin for processes whose margin is fixed
// (Options.FixedMargin), value = "margin:expiry", microseconds), dropping
// expired entries. With ttl > 0 it first records own for id until now +
// ttl (a shared "~" entry: or until its expiry, if later). A
// call admitted a window after another must arrive a window later, so the
// margin that protects the pair is the wider of the two processes'; the
// fleet's widest covers every pair.
const helpersLua = `
local function field(j)
  return string.format('%.0f', j)
end

local function member_cost(m)
  local c = string.match(m, ':(%d+)$')
  return tonumber(c) or 1
end

local function fleet_margin(key, id, own, ttl, now)
  local m, last, upto = own, now + ttl, now + ttl
  local all = redis.call('HGETALL', key)
  for j = 1, #all, 2 do
    local v, e = string.match(all[j + 1], '^(%d+):(%d+)$')
    v, e = tonumber(v), tonumber(e)
    if all[j] ~= id then
      if not e or e <= now then
        redis.call('HDEL', key, all[j])
      else
        if v > m then m = v end
        if e > last then last = e end
      end
    elseif e and e > upto and string.sub(id, 1, 1) == '~' then
      -- A fixed margin's entry, shared (id "~" .. margin): it never ends
      -- sooner, even if TIME stepped back.
      upto = e
    end
  end
  if ttl > 0 then
    redis.call('HSET', key, id, string.format('%.0f:%.0f', own, upto))
    redis.call('PEXPIRE', key, math.ceil((math.max(last, upto) - now) / 1000) + 1)
  end
  return m
end

local function trim(key, aux, mode, base, w, now)
  if mode == '0' then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - w)
    return redis.call('ZCARD', key), nil
  elseif mode == '2' then
    local gone = redis.call('ZRANGEBYSCORE', key, '-inf', now - w)
    local raw = redis.call('GET', aux)
    local sum = tonumber(raw) or 0
    -- The sum gone and its log not (a Redis evicting keys one by one):
    -- added up again from the log's members, which carry their costs.
    local lost = not raw and redis.call('EXISTS', key) == 1
    if lost then
      for _, m in ipairs(redis.call('ZRANGE', key, 0, -1)) do sum = sum + member_cost(m) end
    end
    if #gone > 0 or lost then
      for _, m in ipairs(gone) do sum = sum - member_cost(m) end
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - w)
      if sum < 0 or redis.call('ZCARD', key) == 0 then sum = 0 end
      redis.call('SET', aux, sum, 'PX', math.ceil(w / 1000) + 1)
    elseif sum ~= 0 and redis.call('EXISTS', key) == 0 then
      -- The sum outlived its log (rewritten above after the log's expiry
      -- was last set): no log, nothing held.
      redis.call('DEL', aux)
      sum = 0
    end
    return sum, nil
  end
  local g = math.ceil(base / 1024)
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
  return total, {lo, hi, total, g}
end
`

// admitLua decides admissions against every rule of a quota: for one
// call, or for a batch of calls in order. A call is recorded in every rule
// at one instant only if all of them allow it, counting the calls of the
// batch admitted before it; the first call refused stops the batch, and
// nothing is recorded for it or the calls after it. Redis runs a script
// atomically, so no other admission can slip in between the checks and
// the records, whatever the number of clients. Every key expires
// (PEXPIRE) once its window has passed with no admission, and the rules
// key lives as long as the longest of them.
//
// Run again for the same calls (its answer lost, and the call sent again
// by the limiter or by go-redis), it decides with the first run's records
// in place: a log (mode 0 or 2) moves a call it holds to the new instant
// and counts it, and its cost, once; a counter counts it again. Either
// errs on the safe side: a quota spent, never one exceeded.
//
// Before it admits anything, it checks that Redis still holds the
// caller's latest admission (ARGV[8], ARGV[9]) wherever a rule's window,
// margin excluded, still holds that instant: a count log its member, a
// cost log a member "id:cost" at that instant, a counter its key begun no
// later than that admission (the field born of its hash), and the quota
// its rule spec (kept as long as the longest window). If one is
// gone, Redis lost records of the quota (flushed, restarted without
// persistence, evicted keys, failed over to a replica that lagged), and
// the script admits nothing and answers lost: the caller records its
// admissions again (repairLua) and asks again. Unless the quota was reset
// (resetLua) since that admission: then the records are meant to be gone,
// and the script admits as usual.
//
// KEYS[1]          pace:{NAME}:rules, the quota's rule spec
// KEYS[2i], KEYS[2i+1]  the state of rule i (i = 1..k): see helpersLua
// KEYS[#KEYS-1]    pace:{NAME}:margins, the margins in force (fleet_margin)
// KEYS[#KEYS]      pace:{NAME}:reset, when the quota was last reset (resetLua)
// ARGV[1]    the caller's rule spec
// ARGV[2]    an id unique to the first call
// ARGV[3]    the caller's clock in microseconds, used only when TIME fails
// ARGV[4]    the time to live of the rules key in milliseconds, margin excluded
// ARGV[5]    the caller's margin in microseconds
// ARGV[6]    how long the caller's margin stays in force, microseconds
// ARGV[7]    the caller's process id (the field of its margin)
// ARGV[8]    the instant of the caller's latest admission (µs, Redis's), or 0
// ARGV[9]    that admission's id (of the last call of its batch)
// ARGV[6+4i] .. ARGV[9+4i]
//
//	rule i: N, window in microseconds (margin excluded), mode, the
//	first call's weight in it (its cost for a cost rule, else 1)
//
// then, for each call j after the first (j = 2..m), k+1 arguments: an id
// unique to the call, and its weight in rules 1..k.
//
// Every window is widened by the fleet's widest margin.
//
// Replies, with times in microseconds, and flags = clock (1 when now
// came from TIME) + 2 when Redis kept no rule spec for the quota before
// this call (none in use, or its records lost) + 4 when the quota was
// reset since the caller's latest admission:
//
//	{1, now, flags, margin, used_1, ..., used_k}              every call admitted; used_i counts them
//	{0, now, flags, margin, wait, i, used_1, ..., used_k, a}  the first a calls admitted (used_i
//	                                                          counts them), call a+1 refused: it
//	                                                          needs wait, rule i the longest
//	{2, now, flags}                                           lost: nothing admitted
//	{-1, spec}                                                the quota holds another rule spec
const admitLua = timeHead + "ARGV[3]" + timeTail + helpersLua + `
local spec = redis.call('GET', KEYS[1])
if spec and spec ~= ARGV[1] then
  return {-1, spec}
end

local k = (#KEYS - 3) / 2
local more = 10 + 4 * k
local m = 1 + (#ARGV - more + 1) / (k + 1)
local flags = clock

local last, lastid = tonumber(ARGV[8]), ARGV[9]
if last > 0 then
  local gone, longest = false, 0
  for i = 1, k do
    local a = 6 + 4 * i
    local base, mode, key = tonumber(ARGV[a + 1]), ARGV[a + 2], KEYS[2 * i]
    if base > longest then longest = base end
    if not gone and now - last < base then
      if mode == '0' then
        gone = not redis.call('ZSCORE', key, lastid)
      elseif mode == '2' then
        -- A correction changes the member's cost, never its instant.
        gone = true
        for _, e in ipairs(redis.call('ZRANGEBYSCORE', key, ARGV[8], ARGV[8])) do
          if string.sub(e, 1, #lastid + 1) == lastid .. ':' then gone = false end
        end
      else
        -- A counter holds no member of the caller's, but it was begun
        -- anew after the caller's call if it was lost since.
        local born = redis.call('HGET', key, 'born')
        if born then
          gone = tonumber(born) > last
        else
          gone = redis.call('EXISTS', key) == 0
        end
      end
    end
  end
  if not spec and now - last < longest then gone = true end
  if gone then
    local reset = tonumber(redis.call('GET', KEYS[#KEYS]))
    if reset and last <= reset then
      flags = flags + 4
    else
      return {2, now, flags}
    end
  end
end

local margin = fleet_margin(KEYS[#KEYS - 1], ARGV[7], tonumber(ARGV[5]), tonumber(ARGV[6]), now)
local ttl = tonumber(ARGV[4]) + math.ceil(margin / 1000)
local used, state = {}, {}
local wait, binding, admitted = 0, 0, 0

for i = 1, k do
  local a = 6 + 4 * i
  local base = tonumber(ARGV[a + 1])
  used[i], state[i] = trim(KEYS[2 * i], KEYS[2 * i + 1], ARGV[a + 2], base, base + margin, now)
end

for j = 1, m do
  local id, at = ARGV[2], more + (j - 2) * (k + 1)
  if j > 1 then id = ARGV[at] end
  local function weight(i)
    if j == 1 then return tonumber(ARGV[9 + 4 * i]) end
    return tonumber(ARGV[at + i])
  end

  for i = 1, k do
    local key = KEYS[2 * i]
    local a = 6 + 4 * i
    local n, mode, c = tonumber(ARGV[a]), ARGV[a + 2], weight(i)
    local w = tonumber(ARGV[a + 1]) + margin
    local held, st = used[i], state[i]
    local need
    if held + c > n then
      local excess = held + c - n
      if mode == '0' then
        -- The call at index held-n must leave the window before one more fits.
        local e = redis.call('ZRANGE', key, held - n, held - n, 'WITHSCORES')
        need = tonumber(e[2]) + w - now
      elseif mode == '2' then
        -- The oldest calls whose costs add up to excess must leave.
        local gone, from = 0, 0
        while not need do
          local es = redis.call('ZRANGE', key, from, from + 63, 'WITHSCORES')
          if #es == 0 then break end
          for x = 1, #es, 2 do
            gone = gone + member_cost(es[x])
            if gone >= excess then
              need = tonumber(es[x + 1]) + w - now
              break
            end
          end
          from = from + 64
        end
        if not need then need = 1 end
      else
        -- Drop buckets oldest first until the call fits; bucket x stops
        -- overlapping the window at (x+1)*g + w - 1.
        local lo, hi, g = st[1], st[2], st[4]
        need = 1
        if lo then
          local gone, last = 0, math.min(hi, lo + 2100)
          need = (hi + 1) * g + w - 1 - now
          for x = lo, last do
            local v = redis.call('HGET', key, field(x))
            if v then gone = gone + tonumber(v) end
            if gone >= excess then
              need = (x + 1) * g + w - 1 - now
              break
            end
          end
        end
      end
    end
    if need then
      if need < 1 then need = 1 end
      if need > wait then
        wait, binding = need, i
      end
    end
  end
  if binding > 0 then break end

  for i = 1, k do
    local key, aux = KEYS[2 * i], KEYS[2 * i + 1]
    local a = 6 + 4 * i
    local w, mode, c = tonumber(ARGV[a + 1]) + margin, ARGV[a + 2], weight(i)
    if mode == '0' then
      redis.call('ZADD', key, now, id)
      redis.call('PEXPIRE', key, math.ceil(w / 1000) + 1)
    elseif mode == '2' then
      -- A call already there was recorded by this script run before, its
      -- answer lost: its cost is in the sum.
      if redis.call('ZADD', key, now, id .. ':' .. c) == 1 then
        redis.call('INCRBY', aux, c)
      end
      redis.call('PEXPIRE', key, math.ceil(w / 1000) + 1)
      redis.call('PEXPIRE', aux, math.ceil(w / 1000) + 1)
    else
      local s = state[i]
      local lo, hi, total, g = s[1], s[2], s[3], s[4]
      local kn = math.floor(now / g)
      -- A counter begun anew: when, so that a process whose call it
      -- should hold can tell that it was lost (see above).
      if not lo then redis.call('HSET', key, 'born', field(now)) end
      if not lo or kn < lo then lo = kn end
      if not hi or kn > hi then hi = kn end
      redis.call('HINCRBY', key, field(kn), c)
      redis.call('HSET', key, 'lo', field(lo), 'hi', field(hi), 'total', total + c)
      redis.call('PEXPIRE', key, math.ceil((w + g) / 1000) + 1)
      state[i] = {lo, hi, total + c, g}
    end
    used[i] = used[i] + c
  end
  admitted = j
end

if not spec then flags = flags + 2 end
if admitted > 0 or not spec then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
end
if binding > 0 then
  local r = {0, now, flags, margin, wait, binding}
  for i = 1, k do r[6 + i] = used[i] end
  r[7 + k] = admitted
  return r
end
local r = {1, now, flags, margin}
for i = 1, k do r[4 + i] = used[i] end
return r
`

// correctLua changes the cost recorded for one admission in the cost
// rules that still hold it, at the instant it was admitted. Keys as in
// admitLua, for the cost rules only, then the margins key; windows are
// widened by the fleet's widest margin, as in admitLua.
//
// It changes a cost only where the cost recorded is ARGV[3], so that the
// script run again (its answer lost, and the call sent again by the
// limiter or by go-redis) changes nothing more, and neither does a try
// left behind that Redis runs after a later correction. A cost log finds
// the cost in the member "id:cost". A counter's bucket only adds costs
// up, so the counter keeps the cost of each call corrected in its second
// key: a sorted set of members "id:cost" scored by the call's instant,
// from which a correction drops the calls whose bucket has gone, and which
// expires with the window. It grows with the calls corrected in a window,
// not with N.
//
// ARGV[1]  the admission's id
// ARGV[2]  its time, microseconds (server time, as admitLua replied)
// ARGV[3]  the cost recorded
// ARGV[4]  the true cost
// ARGV[5]  the caller's clock in microseconds, used only when TIME fails
// ARGV[6]  the caller's margin in microseconds
// ARGV[7]  the caller's process id
// ARGV[4+4i] .. ARGV[7+4i]   rule i: N, window in microseconds (margin excluded), mode, unused
//
// Reply: {now, used_1, ..., used_k}
const correctLua = timeHead + "ARGV[5]" + timeTail + `
` + helpersLua + `
local id, at, from, to = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local k = (#KEYS - 1) / 2
local margin = fleet_margin(KEYS[#KEYS], ARGV[7], tonumber(ARGV[6]), 0, now)
local r = {now}
for i = 1, k do
  local key, aux = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 4 + 4 * i
  local base, mode = tonumber(ARGV[a + 1]), ARGV[a + 2]
  local w = base + margin
  local held, st = trim(key, aux, mode, base, w, now)
  if mode == '2' then
    local old = id .. ':' .. from
    local score = redis.call('ZSCORE', key, old)
    if score then
      redis.call('ZREM', key, old)
      redis.call('ZADD', key, score, id .. ':' .. to)
      -- ZREM of the last member deleted the log and its expiry.
      redis.call('PEXPIRE', key, math.ceil(w / 1000) + 1)
      held = held - from + to
      if held < 0 then held = 0 end
      redis.call('SET', aux, held, 'PX', math.ceil(w / 1000) + 1)
    end
  elseif mode == '1' and st[1] then
    local lo, hi, g = st[1], st[2], st[4]
    local kn = math.floor(at / g)
    if kn >= lo and kn <= hi then
      -- The cost the bucket holds for the call: from unless corrected
      -- before (the script run again finds to, and changes nothing).
      redis.call('ZREMRANGEBYSCORE', aux, '-inf', '(' .. field(lo * g))
      local old, cur = nil, from
      for _, m in ipairs(redis.call('ZRANGEBYSCORE', aux, field(at), field(at))) do
        if string.sub(m, 1, #id + 1) == id .. ':' then
          old, cur = m, member_cost(m)
        end
      end
      if cur == from then
        local v = tonumber(redis.call('HGET', key, field(kn))) or 0
        local d = to - from
        if v + d < 0 then d = -v end
        redis.call('HINCRBY', key, field(kn), d)
        held = held + d
        redis.call('HSET', key, 'total', held)
        if old then redis.call('ZREM', aux, old) end
        redis.call('ZADD', aux, field(at), id .. ':' .. to)
        redis.call('PEXPIRE', aux, math.ceil((w + g) / 1000) + 1)
      end
    end
  end
  r[1 + i] = held
end
return r
`

// marginLua records a process's margin and returns the fleet's widest
// (fleet_margin).
//
// KEYS[1]  pace:{NAME}:margins
// ARGV[1]  the caller's clock in microseconds, used only when TIME fails
// ARGV[2]  the caller's margin in microseconds
// ARGV[3]  the caller's process id
// ARGV[4]  how long the margin stays in force, microseconds
const marginLua = timeHead + "ARGV[1]" + timeTail + helpersLua + `
return fleet_margin(KEYS[1], ARGV[3], tonumber(ARGV[2]), tonumber(ARGV[4]), now)
`

// repairLua records again, in a quota Redis lost, admissions of the
// caller that a rule still counts (admitLua answered lost), at the
// instants they were admitted. It is idempotent, so that the script run
// again (its answer lost, and the call sent again by the limiter or by
// go-redis) adds nothing more: a log adds a member only if absent (ZADD
// NX, with the member ids and costs admitLua recorded, adding the cost to
// the sum only then); a counter's buckets are added only if the counter
// was begun after the caller's latest admission (ARGV[9]; begun before,
// it still holds the caller's calls), and only by the first run that
// marks the counter as repaired by this process (the field "fix:" and the
// process id, which lives as long as the counter's key: a loss that
// takes the counter takes the mark too). Admissions at or before the
// quota's last reset (pace:{NAME}:reset) are not recorded: pace quota
// reset meant to forget them. Windows are widened by the fleet's widest
// margin, as in admitLua. It admits nothing.
//
// KEYS as in admitLua.
// ARGV[1]  the caller's rule spec
// ARGV[2]  the caller's clock in microseconds, used only when TIME fails
// ARGV[3]  the time to live of the rules key in milliseconds, margin excluded
// ARGV[4]  the caller's margin in microseconds
// ARGV[5]  how long the caller's margin stays in force, microseconds
// ARGV[6]  the caller's process id (the field of its margin, and its mark)
// ARGV[7]  L, the number of calls to record again in the logs
// ARGV[8]  C, the number of counter buckets to record again
// ARGV[9]  the instant of the caller's latest admission, microseconds
// ARGV[8+2i], ARGV[9+2i]  rule i: window in microseconds (margin excluded), mode
//
// then L calls of three arguments (member id, instant in microseconds,
// cost), then C buckets of four (rule i, bucket index, weight, calls).
//
// Replies: {1, now, calls a log holds again, the most calls one counter
// holds again}, counting those recorded by an earlier run (or found
// there: only some keys were lost); {-1, spec}: the quota holds another
// rule spec (nothing recorded).
const repairLua = timeHead + "ARGV[2]" + timeTail + helpersLua + `
local spec = redis.call('GET', KEYS[1])
if spec and spec ~= ARGV[1] then
  return {-1, spec}
end
local k = (#KEYS - 3) / 2
local margin = fleet_margin(KEYS[#KEYS - 1], ARGV[6], tonumber(ARGV[4]), tonumber(ARGV[5]), now)
local since = tonumber(redis.call('GET', KEYS[#KEYS])) or -1
local nl, nc, last = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local base, mode, w, state = {}, {}, {}, {}
for i = 1, k do
  base[i], mode[i] = tonumber(ARGV[8 + 2 * i]), ARGV[9 + 2 * i]
  w[i] = base[i] + margin
  -- Drops what has left the window, and a cost log's sum that outlived
  -- its log, so that the sums below add up.
  local _, st = trim(KEYS[2 * i], KEYS[2 * i + 1], mode[i], base[i], w[i], now)
  state[i] = st
end

local calls, p = 0, 10 + 2 * k
for x = 1, nl do
  local id, t, c = ARGV[p], ARGV[p + 1], tonumber(ARGV[p + 2])
  local at = tonumber(t)
  p = p + 3
  local added = false
  if at > since then
    for i = 1, k do
      local key, aux = KEYS[2 * i], KEYS[2 * i + 1]
      if mode[i] ~= '1' and at > now - w[i] then
        if mode[i] == '0' then
          redis.call('ZADD', key, 'NX', t, id)
        elseif redis.call('ZADD', key, 'NX', t, id .. ':' .. c) == 1 then
          redis.call('INCRBY', aux, c)
          redis.call('PEXPIRE', aux, math.ceil(w[i] / 1000) + 1)
        end
        redis.call('PEXPIRE', key, math.ceil(w[i] / 1000) + 1)
        added = true
      end
    end
  end
  if added then calls = calls + 1 end
end

local marked, counted, most = {}, {}, 0
for x = 1, nc do
  local i, b, v, n = tonumber(ARGV[p]), tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3])
  p = p + 4
  local key, st = KEYS[2 * i], state[i]
  local g = st[4]
  local k0 = math.floor((now - w[i] + 1) / g)
  -- A bucket that ends after the reset may hold calls made after it: it
  -- is recorded whole (the safe side).
  if b >= k0 and (b + 1) * g - 1 > since then
    if marked[i] == nil then
      local born = redis.call('HGET', key, 'born')
      if born and tonumber(born) <= last then
        marked[i] = false -- it still holds the caller's calls
      else
        marked[i] = redis.call('HSETNX', key, 'fix:' .. ARGV[6], field(now)) == 1
        if marked[i] and not st[1] then redis.call('HSET', key, 'born', field(now)) end
      end
      counted[i] = 0
    end
    if marked[i] then
      redis.call('HINCRBY', key, field(b), v)
      if not st[1] or b < st[1] then st[1] = b end
      if not st[2] or b > st[2] then st[2] = b end
      st[3] = st[3] + v
    end
    counted[i] = counted[i] + n
  end
end
for i, ok in pairs(marked) do
  local st = state[i]
  if ok then
    redis.call('HSET', KEYS[2 * i], 'lo', field(st[1]), 'hi', field(st[2]), 'total', st[3])
  end
  if counted[i] > most then most = counted[i] end
  redis.call('PEXPIRE', KEYS[2 * i], math.ceil((w[i] + st[4]) / 1000) + 1)
end

if calls > 0 or most > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[3]) + math.ceil(margin / 1000))
end
return {1, now, calls, most}
`

// slotsLua manages the leases of a fleet-wide cap on calls in flight.
// KEYS[1] (pace:{NAME}:slots) is a sorted set: member = lease id, score =
// the lease's expiry in server time (microseconds). Every operation first
// drops expired leases, so a holder that died frees its slot when its lease
// runs out. Time comes from TIME as in admitLua, with the same fallback on
// ARGV[5].
//
// A released lease stays as a mark, scored minus the expiry it had, until
// that expiry: a renewal sent before the release and run after it (its
// caller gave up waiting for the answer, and Close then released the
// slot) finds the mark and does not take the slot again for a process
// that no longer holds it. Marks are never counted as slots held. An
// older pace's sweep (-inf to now) drops them, which only loses the mark.
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
//	         {0, now} it had expired and the slots are full: lost;
//	         {3, now} it was released: not taken again
//	release: {1, now} released; {0, now} it was not held (expired)
const slotsLua = timeHead + "ARGV[5]" + timeTail + numLua + `
local key, op, id = KEYS[1], ARGV[1], ARGV[2]
local cap, lease = tonumber(ARGV[3]), tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', key, num(-now), num(now))

local function count()
  return redis.call('ZCOUNT', key, '(' .. num(now), '+inf')
end

-- The key lives until its latest lease (the highest score) and its
-- latest mark (the lowest) have run out.
local function keep()
  local t = now
  local hi = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local lo = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if hi[2] and tonumber(hi[2]) > t then t = tonumber(hi[2]) end
  if lo[2] and -tonumber(lo[2]) > t then t = -tonumber(lo[2]) end
  redis.call('PEXPIRE', key, math.ceil((t - now) / 1000) + 1)
end

local function hold()
  redis.call('ZADD', key, num(now + lease), id)
  keep()
end

local held = redis.call('ZSCORE', key, id)
if held then held = tonumber(held) end
local released = held and held < 0
if released then held = nil end

if op == 'release' then
  if not held then return {0, now} end
  redis.call('ZADD', key, num(-held), id)
  keep()
  return {1, now}
end

if op == 'renew' then
  if held then
    hold()
    return {1, now}
  end
  if released then return {3, now} end
  if count() < cap then
    hold()
    return {2, now}
  end
  return {0, now}
end

-- take
local c = count()
if held then
  hold()
  return {1, now, c}
end
if c < cap then
  hold()
  return {1, now, c + 1}
end
local first = redis.call('ZRANGEBYSCORE', key, '(' .. num(now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local wait = tonumber(first[2]) - now
if wait < 1 then wait = 1 end
return {0, now, c, wait}
`
