package throttle

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandles takes and releases handles over several blocks of the
// table, in random order: every handle taken is released once, a second
// release (or a stale handle whose index was reused, or one never handed
// out) is refused, and freed indexes are reused before the table grows.
func TestHandles(t *testing.T) {
	var hs handles
	rng := rand.New(rand.NewPCG(1, 2))
	if hs.release(0) {
		t.Fatal("release(0) on an empty table = true, want false")
	}
	var held, released []uint64
	for range 20_000 {
		if len(held) == 0 || rng.IntN(5) < 3 && len(held) < 3*handleChunk {
			held = append(held, hs.take())
			continue
		}
		i := rng.IntN(len(held))
		h := held[i]
		held[i] = held[len(held)-1]
		held = held[:len(held)-1]
		if !hs.release(h) {
			t.Fatalf("release(%#x) = false for a handle held", h)
		}
		if hs.release(h) {
			t.Fatalf("release(%#x) = true the second time", h)
		}
		released = append(released, h)
	}
	for _, h := range held {
		if !hs.release(h) {
			t.Fatalf("release(%#x) = false for a handle held", h)
		}
	}
	for _, h := range released {
		if hs.release(h) {
			t.Fatalf("release(%#x) = true for a stale handle", h)
		}
	}
	if max := uint32(3 * handleChunk); hs.n.Load() > max {
		t.Errorf("%d indexes handed out for at most %d held at once", hs.n.Load(), max)
	}
	if hs.release(uint64(hs.n.Load()+5*handleChunk) << 32) {
		t.Error("release of an index never handed out = true")
	}
}

// TestReleaseConcurrent: goroutines admit and release at once, each
// releasing its admission twice and a copy once, uncapped (releases take
// no lock) and capped (a release hands its slot over). Run with -race:
// every admission is released exactly once, and nothing is left in
// flight.
func TestReleaseConcurrent(t *testing.T) {
	for _, capped := range []int{0, 3} {
		l, err := New(Options{Rules: []Rule{{N: 1_000_000, Window: time.Millisecond}}, MaxInFlight: capped})
		if err != nil {
			t.Fatal(err)
		}
		const workers, calls = 8, 500
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range calls {
					a, err := l.Admit(context.Background(), 1)
					if err != nil {
						t.Error(err)
						return
					}
					c := a
					a.Release()
					c.Release()
					a.Release()
				}
			})
		}
		wg.Wait()
		peak := workers
		if capped > 0 {
			peak = capped
		}
		if s := l.Stats(); s.InFlight != 0 || s.Admitted != workers*calls || s.PeakInFlight > peak {
			t.Errorf("MaxInFlight %d: in flight %d, admitted %d, peak %d; want 0, %d, at most %d",
				capped, s.InFlight, s.Admitted, s.PeakInFlight, workers*calls, peak)
		}
	}
}

// TestHandlesConcurrent takes and releases handles from several
// goroutines at once, as admissions without a cap do: no index is ever
// held by two of them at the same time, and every release is accepted
// once.
func TestHandlesConcurrent(t *testing.T) {
	const workers, rounds = 8, 5000
	var hs handles
	var owned [workers * 4]atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var held []uint64
			for i := range rounds {
				h := hs.take()
				if idx := h >> 32; idx >= uint64(len(owned)) || !owned[idx].CompareAndSwap(false, true) {
					t.Errorf("index %d handed out while held (or beyond %d held at once)", idx, len(owned))
					return
				}
				held = append(held, h)
				if i%3 != 0 {
					for _, h := range held {
						owned[h>>32].Store(false)
						if !hs.release(h) {
							t.Errorf("release(%#x) = false for a handle held", h)
						}
					}
					held = held[:0]
				}
			}
			for _, h := range held {
				owned[h>>32].Store(false)
				hs.release(h)
			}
		})
	}
	wg.Wait()
}
