//go:build !unix

package outfile

import (
	"context"
	"os"
)

// openStream opens a character device for writing.
func openStream(ctx context.Context, name string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.OpenFile(name, os.O_WRONLY, 0)
}
