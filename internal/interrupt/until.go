package interrupt

import "os"

// Until runs work on a goroutine of its own and waits for its result or
// for a signal on sigs, whichever comes first. work may block where no
// signal reaches it: a read of an idle pipe or of a terminal nobody types
// on, the open(2) of a FIFO that has no writer.
//
// When work ends first, Until returns its result, with stopped false.
// When a signal comes first, Until returns it at once, with stopped true
// and the zero T: the caller stops with the signal's exit code, never with
// a verdict on part of its input. work is then left behind; late, if not
// nil, is called with what it returns after (an input that opened after
// the signal is closed). A work that never returns ends with the process.
//
// When the result and a signal are both there as Until looks, the result
// wins: Until returns it, stopped false, with the signal, which it has
// taken from sigs (sig not nil). The signal is the caller's, to stop on or
// to pass on (Unread); late is not called. A nil sigs waits for work
// alone.
func Until[T any](sigs <-chan os.Signal, work func() T, late func(T)) (v T, sig os.Signal, stopped bool) {
	done := make(chan T, 1)
	go func() { done <- work() }()
	return wait(done, sigs, late)
}

// wait is Until's choice between work's result, which comes on done (a
// channel with room for it, so that work's goroutine never blocks), and a
// signal on sigs.
func wait[T any](done chan T, sigs <-chan os.Signal, late func(T)) (v T, sig os.Signal, stopped bool) {
	select {
	case v = <-done:
		select { // a signal that came with the result
		case sig = <-sigs:
		default:
		}
		return v, sig, false
	case sig = <-sigs:
	}
	select {
	case v = <-done: // the result came with the signal
		return v, sig, false
	default:
	}
	if late != nil {
		go func() { late(<-done) }()
	}
	return v, sig, true
}

// Unread returns a channel that delivers sig first, then the signals that
// come on sigs, in order: a signal Until took with a result, given back to
// whoever handles signals next (a run's Handler). Read the channel it
// returns from then on, never sigs. A goroutine forwards sigs until it is
// closed (the channel returned is never closed: a closed one would deliver
// nil signals for ever); it has room for sig and as many signals as sigs.
func Unread(sigs <-chan os.Signal, sig os.Signal) <-chan os.Signal {
	ch := make(chan os.Signal, cap(sigs)+1)
	ch <- sig
	go func() {
		for s := range sigs {
			ch <- s
		}
	}()
	return ch
}
