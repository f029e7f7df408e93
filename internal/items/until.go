package items

import "os"

// OpenUntil runs open, which may block beyond the reach of signals
// (opening a FIFO waits for its writer; several sources are read whole),
// on a goroutine of its own, and returns what it returns, unless a signal
// comes from sigs first: then stopped is true, and the goroutine is left
// to end when open does, closing the input it opens. A signal that comes
// as open returns is returned with open's results (stopped false): it is
// the caller's to pass on.
func OpenUntil(sigs <-chan os.Signal, open func() (*Input, error)) (in *Input, sig os.Signal, stopped bool, err error) {
	type opened struct {
		in  *Input
		err error
	}
	done := make(chan opened, 1)
	go func() {
		in, err := open()
		done <- opened{in, err}
	}()
	select {
	case o := <-done:
		return o.in, nil, false, o.err
	case sig = <-sigs:
	}
	select {
	case o := <-done:
		return o.in, sig, false, o.err
	default:
	}
	go func() {
		if o := <-done; o.in != nil {
			o.in.Close()
		}
	}()
	return nil, sig, true, nil
}
