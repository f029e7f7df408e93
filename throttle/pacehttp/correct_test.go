package pacehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
)

// silentStore is a backend whose admissions' corrections wait, as for a
// shared store that does not answer, until their context ends.
type silentStore struct{ throttle.Backend }

func (s silentStore) Admit(_ context.Context, cost int) (throttle.Admission, error) {
	return backend.NewAdmission(silentOwner{}, 1, 1, time.Now(), cost, 0, 0), nil
}

type silentOwner struct{}

func (silentOwner) Release(uint64) {}

func (silentOwner) Correct(ctx context.Context, _ uint64, _ time.Time, _, _ int) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestTransportCorrectionEndsWithRequest: the correction of a cost the
// response told waits on the store under the request's context, so a
// caller who gives up (pace proxy killed by its second Ctrl-C) is not held
// until the store's timeout.
func TestTransportCorrectionEndsWithRequest(t *testing.T) {
	for _, src := range []string{"header:X-Tokens", "json:usage"} {
		t.Run(src, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs, err := ParseCostSource(src)
				if err != nil {
					t.Fatal(err)
				}
				c, _ := client(silentStore{newLimiter(t, []throttle.Rule{{N: 100, Window: time.Second, Cost: true}}, 0)},
					Options{CostFrom: cs}, func(req *http.Request) *http.Response {
						resp := response(req, 200, "X-Tokens", "7")
						resp.Body = io.NopCloser(strings.NewReader(`{"usage":7}`))
						return resp
					})
				info := &Info{}
				ctx, cancel := context.WithCancel(WithInfo(context.Background(), info))
				time.AfterFunc(time.Second, cancel)
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.example/", nil)
				start := time.Now()
				if resp, err := c.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if d := time.Since(start); d != time.Second {
					t.Errorf("the request with its correction took %v, want to end with its context (1s)", d)
				}
				if !errors.Is(info.CostErr, context.Canceled) {
					t.Errorf("Info.CostErr = %v, want the correction's context.Canceled", info.CostErr)
				}
			})
		})
	}
}
