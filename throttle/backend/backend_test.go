package backend_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pace-cli/pace/throttle/backend"
)

// owner records what its admissions ask.
type owner struct{ released map[uint64]bool }

func (o *owner) Release(h uint64) {
	if !o.released[h] {
		o.released[h] = true
		fmt.Println("release", h)
	}
}

func (o *owner) Correct(_ context.Context, id uint64, at time.Time, from, to int) error {
	fmt.Println("correct", id, from, "->", to)
	return nil
}

// A backend hands out admissions that call it back.
func ExampleNewAdmission() {
	o := &owner{released: map[uint64]bool{}}
	a := backend.NewAdmission(o, 7, 42, time.Now(), 3, 0, 0)
	_ = a.Correct(context.Background(), 5)
	a.Release()
	a.Release()
	fmt.Println(a.Cost)
	// Output:
	// correct 42 3 -> 5
	// release 7
	// 5
}
