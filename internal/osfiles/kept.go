package osfiles

import "io"

// KeptErr is a writer that keeps the first error of writing to W, and
// writes nothing after it: for text that a library prints and whose write
// errors it ignores (cobra's help: pace --help > /dev/full exited 0 with
// nothing written).
type KeptErr struct {
	W   io.Writer
	Err error
}

func (k *KeptErr) Write(b []byte) (int, error) {
	if k.Err != nil {
		return 0, k.Err
	}
	n, err := k.W.Write(b)
	if err != nil {
		k.Err = err
	}
	return n, err
}
