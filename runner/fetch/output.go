package fetch

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pace-cli/pace/runner"
)

// errLocal marks a failure to write a body here (a full disk): not the
// server's, so sending the request again cannot help.
var errLocal = errors.New("local write failed")

// localError marks err as a local, permanent failure.
func localError(err error) error {
	return runner.Permanent(fmt.Errorf("%w: %w", errLocal, err))
}

// writeFile writes body to path atomically: into a new temporary file in
// the same directory, renamed over path once the body is complete. On any
// error the temporary file is removed and path is left as it was. Errors
// writing here wrap errLocal.
func (e *Executor) writeFile(path string, body io.Reader) (int64, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, localError(fmt.Errorf("output: %w", err))
	}
	f, err := createTemp(dir, filepath.Base(path))
	if err != nil {
		return 0, localError(fmt.Errorf("output: %w", err))
	}
	n, err := e.copy(&localWriter{f}, body)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = localError(fmt.Errorf("output: %w", cerr))
	}
	if err == nil {
		if rerr := os.Rename(f.Name(), path); rerr != nil {
			err = localError(fmt.Errorf("output: %w", rerr))
		}
	}
	if err != nil {
		os.Remove(f.Name())
		return n, err
	}
	return n, nil
}

// localWriter marks its write errors as local.
type localWriter struct{ f *os.File }

func (w *localWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = localError(fmt.Errorf("output: %w", err))
	}
	return n, err
}

// createTemp creates a new hidden file next to where base will go. Unlike
// os.CreateTemp it asks for mode 0666, so the final file gets the usual
// permissions under the umask.
func createTemp(dir, base string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, "."+base+".pace-"+strconv.FormatUint(rand.Uint64()&0xffffffffff, 36)+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create temporary file in %s: too many collisions", dir)
}
