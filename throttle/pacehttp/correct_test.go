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

// The bodies a Transport keeps to read their costs from (CostFrom json)
// are bounded all together, not only each (16 MiB): 64 responses of
// 4 MiB read at once kept 256 MiB. Past the bound a body is not kept, and its cost not
// read (CostErr says why); what was kept is given back as each ends.
func TestTransportCostBodiesBoundedTogether(t *testing.T) {
	defer func(v int64) { maxCostBodies = v }(maxCostBodies)
	maxCostBodies = 1 << 20
	src, _ := ParseCostSource("json:usage.total")
	lim := newLimiter(t, []throttle.Rule{{N: 1 << 30, Window: time.Second, Cost: true}}, 0)
	body := `{"usage":{"total":5},"pad":"` + strings.Repeat("x", int(maxCostBodies/3)) + `"}`
	c, tr := client(lim, Options{CostFrom: src, Hint: func(string) {}}, func(req *http.Request) *http.Response {
		resp := response(req, 200)
		resp.Body = io.NopCloser(strings.NewReader(body))
		return resp
	})
	var infos [4]Info
	var resps []*http.Response
	for i := range infos {
		req, _ := http.NewRequestWithContext(WithInfo(context.Background(), &infos[i]), "GET", "http://api.example/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, resp)
	}
	for _, resp := range resps { // each read most of the way before any ends
		io.CopyN(io.Discard, resp.Body, int64(len(body)-10))
	}
	if held := tr.costKept.Load(); held > maxCostBodies {
		t.Errorf("bodies kept for their costs: %d bytes, past the bound of %d", held, maxCostBodies)
	}
	for _, resp := range resps {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	read := 0
	for i, info := range infos {
		switch {
		case info.Cost == 5:
			read++
		case info.CostErr == nil || !strings.Contains(info.CostErr.Error(), "MiB"):
			t.Errorf("response %d: cost %d, CostErr %v; want 5, or an error saying the bodies held are too large", i, info.Cost, info.CostErr)
		}
	}
	if read < 2 || read == len(infos) {
		t.Errorf("%d of %d costs read, want those that fit: 2 or 3", read, len(infos))
	}
	if held := tr.costKept.Load(); held != 0 {
		t.Errorf("%d bytes still counted as kept once every body ended, want 0", held)
	}
}

// heldBody is a response body whose first Read waits, once it has
// started (entered), until release is closed, then returns data; Close
// does not wake it (a connection whose bytes were already on their way).
type heldBody struct {
	entered, release chan struct{}
	data             []byte
	read             bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.read {
		return 0, io.EOF
	}
	b.read = true
	close(b.entered)
	<-b.release
	return copy(p, b.data), nil
}

func (b *heldBody) Close() error { return nil }

// A body closed on one goroutine while a Read on another is still under
// way (net/http allows it: a caller that gives up on a slow answer) kept
// what that Read returned after the body had ended: counted against the
// bound of the bodies kept together for good, so that, once such closes
// had added up to it, no later response's cost was read. Nothing is kept
// once a body has ended.
func TestTransportCostBodyClosedDuringReadKeepsNothing(t *testing.T) {
	defer func(v int64) { maxCostBodies = v }(maxCostBodies)
	maxCostBodies = 64
	src, _ := ParseCostSource("json:usage")
	lim := newLimiter(t, []throttle.Rule{{N: 1000, Window: time.Second, Cost: true}}, 0)
	var held *heldBody
	c, tr := client(lim, Options{CostFrom: src, Hint: func(string) {}}, func(req *http.Request) *http.Response {
		resp := response(req, 200)
		if held != nil {
			resp.Body, held = held, nil
		} else {
			resp.Body = io.NopCloser(strings.NewReader(`{"usage":5}`))
		}
		return resp
	})
	held = &heldBody{entered: make(chan struct{}), release: make(chan struct{}), data: []byte(strings.Repeat(" ", int(maxCostBodies)))}
	hb := held
	resp, err := c.Get("http://api.example/")
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		resp.Body.Read(make([]byte, maxCostBodies))
		close(read)
	}()
	<-hb.entered
	resp.Body.Close()
	close(hb.release)
	<-read
	if kept := tr.costKept.Load(); kept != 0 {
		t.Errorf("%d bytes counted as kept after the body was closed, want 0", kept)
	}

	info := &Info{}
	req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/", nil)
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if info.Cost != 5 {
		t.Errorf("the next response's cost: %d (CostErr %v), want 5", info.Cost, info.CostErr)
	}
}
