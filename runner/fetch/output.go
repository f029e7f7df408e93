package fetch

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/runner"
)

// localError marks err as a failure to write a body here (a full disk):
// not the server's, so sending the request again cannot help, and every
// later body would fail alike (runner.ErrOutput).
func localError(err error) error {
	return runner.Permanent(fmt.Errorf("%w: %w", runner.ErrOutput, err))
}

// writeFile writes body to path as package outfile writes: a regular file
// or a new path atomically (into a new temporary file in the same
// directory, renamed over path once the body is complete; on any error
// the temporary file is removed and path is left as it was), a character
// device or a FIFO straight; a link is followed. Errors writing here wrap
// runner.ErrOutput. The first write into a directory removes from it the
// temporary files of writers killed before they could (outfile.Sweep).
func (e *Executor) writeFile(ctx context.Context, path string, body io.Reader) (int64, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, localError(err)
	}
	if _, seen := e.swept.LoadOrStore(dir, struct{}{}); !seen {
		outfile.Sweep(dir)
	}
	f, err := outfile.Create(ctx, path)
	if err != nil {
		return 0, localError(err)
	}
	defer f.Abort()
	n, err := e.copy(&localWriter{f}, body)
	if err != nil {
		return n, err
	}
	if err := f.Commit(); err != nil {
		return n, localError(err)
	}
	return n, nil
}

// localWriter marks its write errors as local.
type localWriter struct{ w io.Writer }

func (w *localWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		err = localError(err)
	}
	return n, err
}
