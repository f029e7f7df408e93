package items

import (
	"io"
	"os"
)

// IsStdin reports whether the file called name is stdin (/dev/stdin,
// /dev/fd/0), given as stdin: a file that the items may be read from.
func IsStdin(name string, stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	in, err1 := f.Stat()
	fi, err2 := os.Stat(name)
	return err1 == nil && err2 == nil && os.SameFile(in, fi)
}
