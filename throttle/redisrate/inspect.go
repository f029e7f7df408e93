package redisrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
)

// This file reads and forgets a quota without keeping rules of its own,
// for pace quota show and pace quota reset.

// ErrInUse is wrapped by the error of Reset while a process holds one of
// the quota's fleet-wide slots.
var ErrInUse = errors.New("quota in use")

// Quota is what Inspect found of a quota in Redis: its rules and how full
// they are, and the leases of its fleet-wide slots.
type Quota struct {
	Key string
	// Spec is the rule spec the quota is kept with, empty when Redis keeps
	// none (no call in the longest window). Rules and GlobalJobs are read
	// from it.
	Spec       string
	Rules      []throttle.RuleStats // in Redis order: sorted by window; Used and Usage at Now, without margin
	GlobalJobs int
	// Now is Redis's instant when it was read (TIME).
	Now time.Time
	// Next is when a call of cost 1 could go, by the rules alone and
	// without margin: Now if at once.
	Next time.Time
	// Expired reports that Redis keeps no rule spec for the quota: every
	// call has left its window, and a process with other rules may take
	// the quota over.
	Expired bool
	// Leases lists the fleet-wide slots held now, soonest to expire first.
	Leases []Lease
}

// Lease is one fleet-wide slot held. Redis knows its holders only by the
// random id each process draws: Holder is the same for the slots one
// process holds.
type Lease struct {
	ID      string
	Holder  string
	Expires time.Time // renewed every Lease/3 while its holder lives
}

// Inspect reads the quota key through client without keeping rules of
// its own and without changing it, in one script call (atomic). A quota
// Redis keeps nothing of is no error: it comes back Expired, with no
// rules. A rule kept by a bounded counter reports the weight its buckets
// held at the last admission, and a Next that does not account for the
// buckets' exact width. Errors wrap throttle.ErrBackend (Redis refused or
// did not answer before ctx's deadline) or say the stored spec cannot be
// read. Inspect returns ctx's error as soon as ctx is cancelled, even
// while Redis does not answer; its call to Redis, left behind, ends at
// the client's read timeout or when the client is closed.
func Inspect(ctx context.Context, client Client, key string) (*Quota, error) {
	return await(ctx, nil, func() (*Quota, error) { return inspect(ctx, client, key) }, nil)
}

// inspect is Inspect, on the caller's goroutine.
func inspect(ctx context.Context, client Client, key string) (*Quota, error) {
	for range 3 { // the spec may change between the GET and the script
		q, again, err := inspectOnce(ctx, client, key)
		if err != nil || !again {
			return q, err
		}
	}
	return nil, fmt.Errorf("redisrate: inspect quota %q: its rules keep changing: %w", key, throttle.ErrBackend)
}

// inspectOnce reads the spec, then everything else with the keys the spec
// names; again reports that the spec changed in between.
func inspectOnce(ctx context.Context, client Client, key string) (q *Quota, again bool, err error) {
	l, spec, err := storedLayout(ctx, client, key)
	if err != nil {
		return nil, false, err
	}
	keys := l.Keys()
	args := []any{time.Now().UnixMicro()}
	for _, i := range l.order {
		r := l.rules[i]
		args = append(args, r.N, r.Window.Microseconds(), l.mode(r))
	}
	reply, err := inspectScript().Run(ctx, client, keys, args...).Result()
	if err != nil {
		return nil, false, backendError(client, key, "inspect", err)
	}
	a, ok := reply.([]any)
	k := len(l.order)
	if !ok || len(a) < 2+2*k || (len(a)-2-2*k)%2 != 0 {
		return nil, false, fmt.Errorf("redisrate: inspect quota %q: unexpected reply %v: %w", key, reply, throttle.ErrBackend)
	}
	got, _ := a[1].(string) // false (Redis nil) when no spec is kept
	if got != spec {
		return nil, true, nil
	}
	now, _ := a[0].(int64)
	q = &Quota{Key: l.name, Spec: spec, GlobalJobs: l.cf.GlobalJobs, Now: time.UnixMicro(now), Expired: spec == ""}
	var wait int64
	for j, i := range l.order {
		r := l.rules[i]
		used, _ := a[2+2*j].(int64)
		w, _ := a[3+2*j].(int64)
		wait = max(wait, w)
		q.Rules = append(q.Rules, throttle.RuleStats{Rule: r, Counter: l.mode(r) == modeCounter, Used: int(used), Usage: float64(used) / float64(r.N)})
	}
	q.Next = q.Now.Add(time.Duration(wait) * time.Microsecond)
	for x := 2 + 2*k; x+1 < len(a); x += 2 {
		id, _ := a[x].(string)
		exp, _ := a[x+1].(string)
		us, err := strconv.ParseFloat(exp, 64)
		if err != nil {
			return nil, false, fmt.Errorf("redisrate: inspect quota %q: lease %q expires at %q: %w", key, id, exp, throttle.ErrBackend)
		}
		holder, _, _ := strings.Cut(id, ".")
		q.Leases = append(q.Leases, Lease{ID: id, Holder: holder, Expires: time.UnixMicro(int64(us))})
	}
	return q, false, nil
}

// Reset forgets everything Redis keeps of the quota key: its rule spec,
// the state of its rules and its slots, in one script call, so that the
// next process starts afresh, with any rules. It refuses, with an error
// wrapping ErrInUse, while a process holds one of the quota's fleet-wide
// slots. Redis cannot tell a process sharing only rates (no --global-jobs)
// from none: such a process goes on, and its next admission keeps the
// quota again with its rules. A quota Redis keeps nothing of as Reset
// begins returns an error wrapping fs.ErrNotExist. Reset returns ctx's error as soon as ctx
// is cancelled, even while Redis does not answer: the reset may then
// still happen, once Redis runs the call left behind.
func Reset(ctx context.Context, client Client, key string) error {
	_, err := await(ctx, nil, func() (struct{}, error) { return struct{}{}, reset(ctx, client, key) }, nil)
	return err
}

// reset is Reset, on the caller's goroutine.
func reset(ctx context.Context, client Client, key string) error {
	// found reports that Redis kept the quota when a try began: if it
	// keeps nothing by the end, the quota was reset all the same (by a
	// try that ran, its answer lost and the call sent again by go-redis,
	// or by another reset), and that is no error.
	found := false
	for range 3 {
		l, spec, err := storedLayout(ctx, client, key)
		if err != nil {
			return err
		}
		found = found || spec != ""
		keys := append(l.Keys(), resetKey(l.name))
		reply, err := resetScript().Run(ctx, client, keys, time.Now().UnixMicro(), spec, l.longest).Result()
		if err != nil {
			return backendError(client, key, "reset", err)
		}
		a, ok := reply.([]any)
		if !ok || len(a) != 2 {
			return fmt.Errorf("redisrate: reset quota %q: unexpected reply %v: %w", key, reply, throttle.ErrBackend)
		}
		switch code, _ := a[0].(int64); code {
		case 0:
			n, _ := a[1].(int64)
			return fmt.Errorf("redisrate: quota %q: %d fleet-wide slots are held by running processes; stop them first: %w", key, n, ErrInUse)
		case 1:
			if n, _ := a[1].(int64); n == 0 && !found {
				return fmt.Errorf("redisrate: no quota %q in Redis: %w", key, fs.ErrNotExist)
			}
			return nil
		}
		// -1: the spec changed meanwhile; read it again.
	}
	return fmt.Errorf("redisrate: reset quota %q: its rules keep changing: %w", key, throttle.ErrBackend)
}

// storedLayout reads the spec Redis keeps for the quota key and returns a
// limiter (never opened: only its keys and modes are used) for it, and
// the spec ("" when none is kept).
func storedLayout(ctx context.Context, client Client, key string) (*Limiter, string, error) {
	if client == nil {
		return nil, "", errors.New("redisrate: nil client")
	}
	// The name as given, spaces and all, as Open takes it: trimmed, "  "
	// was the default quota, another fleet's.
	if key == "" {
		key = DefaultKey
	}
	if strings.ContainsAny(key, "{}") {
		return nil, "", fmt.Errorf("redisrate: key %q: want a name without '{' or '}'", key)
	}
	spec, err := client.Get(ctx, "pace:{"+key+"}:rules").Result()
	if errors.Is(err, redis.Nil) {
		spec, err = "", nil
	}
	if err != nil {
		return nil, "", backendError(client, key, "inspect", err)
	}
	opts, err := parseSpec(spec)
	if err != nil {
		return nil, "", fmt.Errorf("redisrate: quota %q: stored rules %q: %w", key, spec, err)
	}
	opts.Key, opts.anyName = key, true
	l, err := newLimiter(client, opts)
	if err != nil {
		return nil, "", fmt.Errorf("redisrate: quota %q: stored rules %q: %w", key, spec, err)
	}
	if l.spec != spec {
		return nil, "", fmt.Errorf("redisrate: quota %q: stored rules %q are not in the form this pace writes (%q)", key, spec, l.spec)
	}
	return l, spec, nil
}

// parseSpec reads back a spec that newLimiter wrote: the rules, then
// counter-above=N and global-jobs=N when they matter.
func parseSpec(spec string) (Options, error) {
	var o Options
	for f := range strings.FieldsSeq(spec) {
		var err error
		switch name, v, ok := strings.Cut(f, "="); {
		case ok && name == "counter-above":
			o.CounterAbove, err = strconv.Atoi(v)
			if o.CounterAbove == 0 {
				o.CounterAbove = -1 // counters for every rule
			}
		case ok && name == "global-jobs":
			o.GlobalJobs, err = strconv.Atoi(v)
		case ok:
			err = fmt.Errorf("unknown setting %q", f)
		default:
			o.Rules, err = throttle.ParseRules(f)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// backendError is the error of a call to Redis that failed while doing
// what.
func backendError(c Client, key, what string, err error) error {
	return fmt.Errorf("redisrate: %s quota %q: %s%s: %w", what, key, hint(c, err), RedactURL(err.Error()), throttle.ErrBackend)
}

var (
	inspectScript = lazyScript(inspectLua)
	resetScript   = lazyScript(resetLua)
)

// clockLua sets now from the server's TIME in microseconds, or from the
// caller's clock in ARGV[1] where TIME is refused (see timeHead).
const clockLua = timeHead + "ARGV[1]" + timeTail + numLua

// inspectLua reads a quota's load without changing anything. Keys and
// modes as in admitLua; windows without margin.
//
// KEYS[1]               pace:{NAME}:rules
// KEYS[2i], KEYS[2i+1]  the state of rule i (i = 1..k)
// KEYS[#KEYS-1]         pace:{NAME}:margins (unused)
// KEYS[#KEYS]           pace:{NAME}:slots
// ARGV[1]               the caller's clock in microseconds, used only when TIME fails
// ARGV[3i-1] .. ARGV[3i+1]  rule i: N, window in microseconds, mode
//
// Reply: {now, spec or nil, used_1, wait_1, ..., used_k, wait_k,
// lease id, expiry (a string), ...}, waits in microseconds for a call of
// cost 1.
const inspectLua = clockLua + `
local function member_cost(m)
  local c = string.match(m, ':(%d+)$')
  return tonumber(c) or 1
end

local k = (#KEYS - 3) / 2
local r = {now, redis.call('GET', KEYS[1])}
for i = 1, k do
  local key = KEYS[2 * i]
  local n, w, mode = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), ARGV[3 * i + 1]
  local used, wait = 0, 0
  if mode == '1' then
    -- A counter: the weight its buckets held when last trimmed, and the
    -- oldest bucket's end as the wait, by this window's bucket width.
    local m = redis.call('HMGET', key, 'lo', 'total')
    used = tonumber(m[2]) or 0
    if used + 1 > n and m[1] then
      local g = math.ceil(w / 1024)
      wait = (tonumber(m[1]) + 1) * g + w - 1 - now
    end
  else
    local es = redis.call('ZRANGEBYSCORE', key, '(' .. num(now - w), '+inf', 'WITHSCORES')
    for j = 1, #es, 2 do
      if mode == '2' then used = used + member_cost(es[j]) else used = used + 1 end
    end
    if used + 1 > n then
      -- The oldest calls whose weights add up to the excess must leave.
      local excess, gone = used + 1 - n, 0
      for j = 1, #es, 2 do
        if mode == '2' then gone = gone + member_cost(es[j]) else gone = gone + 1 end
        if gone >= excess then
          wait = tonumber(es[j + 1]) + w - now
          break
        end
      end
    end
  end
  if wait < 0 then wait = 0 end
  r[#r + 1] = used
  r[#r + 1] = wait
end
local ls = redis.call('ZRANGEBYSCORE', KEYS[#KEYS], '(' .. num(now), '+inf', 'WITHSCORES')
for j = 1, #ls do r[#r + 1] = ls[j] end
return r
`

// resetLua deletes every key of a quota, unless a live lease holds one of
// its slots or its spec changed since the caller read it. It leaves the
// instant of the reset in pace:{NAME}:reset for as long as the longest
// window, so that processes still running do not record again the calls
// it forgot, as they do in a quota Redis lost (see admitLua).
//
// KEYS[1]        pace:{NAME}:rules
// KEYS[#KEYS-1]  pace:{NAME}:slots
// KEYS[#KEYS]    pace:{NAME}:reset
// ARGV[1]        the caller's clock in microseconds, used only when TIME fails
// ARGV[2]        the spec the caller read ("" for none)
// ARGV[3]        the longest window of that spec, microseconds
//
// Replies: {1, keys deleted}; {0, live leases}; {-1, spec now}.
const resetLua = clockLua + `
local live = redis.call('ZCOUNT', KEYS[#KEYS - 1], '(' .. num(now), '+inf')
if live > 0 then return {0, live} end
local spec = redis.call('GET', KEYS[1]) or ''
if spec ~= ARGV[2] then return {-1, spec} end
local n = redis.call('DEL', unpack(KEYS, 1, #KEYS - 1))
if spec ~= '' then
  redis.call('SET', KEYS[#KEYS], num(now), 'PX', math.ceil(tonumber(ARGV[3]) / 1000) + 1000)
end
return {1, n}
`
