package quota

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// lookTimeout bounds Look's wait for a Redis.
const lookTimeout = 5 * time.Second

// Look reads the quota key of the Redis at url (redisrate.DefaultKey when
// key is empty) or, with url empty, of the local store in dir
// (localstore.DefaultDir() when dir is empty), without changing it.
func Look(ctx context.Context, url, dir, key string) (View, error) {
	if url != "" {
		ro, err := redisrate.ParseURL(url)
		if err != nil {
			return View{}, err
		}
		c := redis.NewUniversalClient(ro)
		defer c.Close()
		ctx, cancel := context.WithTimeout(ctx, lookTimeout)
		defer cancel()
		if key == "" {
			key = redisrate.DefaultKey
		}
		q, err := redisrate.Inspect(ctx, c, key)
		if err != nil {
			return View{}, err
		}
		return FromRedis(q, redisrate.RedactURL(url)), nil
	}
	if dir == "" {
		var err error
		if dir, err = localstore.DefaultDir(); err != nil {
			return View{}, err
		}
	}
	q, err := localstore.Inspect(dir, key)
	if err != nil {
		return View{}, err
	}
	return FromLocal(q), nil
}

// WaitText says what a call to the quota waits on: every fleet-wide slot
// held, or the fullest rule and when the next call may go; "" when it
// would go at once.
func (v *View) WaitText() string {
	where := fmt.Sprintf("quota %q (local %s)", v.Key, v.Path)
	if v.Store == "redis" {
		where = fmt.Sprintf("quota %q (redis %s)", v.Key, v.URL)
	}
	held := 0
	for _, s := range v.Slots {
		if s.Alive {
			held++
		}
	}
	if v.GlobalJobs > 0 && held >= v.GlobalJobs {
		return fmt.Sprintf("waiting for %s: all %d slots of --global-jobs are held; the call goes when one comes back", where, v.GlobalJobs)
	}
	d := v.Next.Sub(v.Now)
	if d <= 0 {
		return ""
	}
	full := ""
	for _, r := range v.Rules {
		if r.Usage >= 1 {
			full = fmt.Sprintf("%s is full (%d/%d used); ", r.Rule, r.Used, r.N)
			break
		}
	}
	at := v.Next.Local().Format("15:04:05")
	if d >= 12*time.Hour {
		at = v.Next.Local().Format("2006-01-02 15:04:05")
	}
	return fmt.Sprintf("waiting for %s: %sthe next call may go at %s (in %s)", where, full, at, human.Duration(d))
}
