package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

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
		return 0, e.writeError(err)
	}
	if _, seen := e.swept.LoadOrStore(dir, struct{}{}); !seen {
		outfile.Sweep(dir)
	}
	f, err := outfile.Create(ctx, path)
	if err != nil {
		return 0, e.writeError(err)
	}
	defer f.Abort()
	n, err := e.copy(&localWriter{f}, body)
	if err != nil {
		return n, err
	}
	if err := f.Commit(); err != nil {
		return n, e.writeError(err)
	}
	return n, nil
}

// writeError marks err, a failure to make the path of a body's file, as
// local (localError), unless it is this item's name only that cannot be
// made while the output directory is there: a part of the name is another
// item's file (b, then b/x), or the name another item's directory (b/x,
// then b). Then the item fails, for good, and the run goes on: other
// names are not at fault.
func (e *Executor) writeError(err error) error {
	if e.opts.OutputDir != "" &&
		(errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR)) {
		if fi, serr := os.Stat(e.opts.OutputDir); serr == nil && fi.IsDir() {
			return runner.Permanent(fmt.Errorf("output file: %w", err))
		}
	}
	return localError(err)
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
