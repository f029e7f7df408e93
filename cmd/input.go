package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pace-cli/pace/internal/regfile"
)

// openFileArg opens the file a command reads whole (pace audit's and pace
// plot's argument): stdin for "" or "-". It returns the reader, the name
// to show in messages, and what closes it. A named file must be a regular
// file: a FIFO is refused at once rather than waited on in open(2), where
// no signal reaches pace (a pipe goes on stdin instead).
func openFileArg(name string, stdin io.Reader) (io.Reader, string, func() error, error) {
	if name == "" || name == "-" {
		return stdin, "stdin", func() error { return nil }, nil
	}
	f, err := regfile.Open(name, os.O_RDONLY, 0)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, name, nil, fmt.Errorf("%w: give a regular file, or the input on stdin (-)", err)
	}
	if err != nil {
		return nil, name, nil, err
	}
	return f, name, f.Close, nil
}
