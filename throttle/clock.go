package throttle

import "time"

// Clock tells the time and makes timers. Limiters take all their time from
// a Clock so that tests can drive them with a fake one (see package
// throttletest) instead of sleeping.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a limiter needs.
type Timer interface {
	// C returns the channel on which the timer delivers its expiry.
	C() <-chan time.Time
	// Stop prevents the timer from firing; see time.Timer.Stop.
	Stop() bool
}

// SystemClock returns the real clock: time.Now and time.NewTimer.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }
