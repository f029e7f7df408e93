package runner

import (
	"os"
)

// TempFile returns a new temporary file in dir (os.TempDir() if dir is
// ""), open for reading and writing, and whether it still has a name: an
// executor's spool, whose space the kernel frees when it is closed or its
// process dies, however it dies. Where the system can (Linux's O_TMPFILE)
// the file never has a name, so that not even a SIGKILL between its
// creation and its removal leaves it behind; elsewhere it is made as
// os.CreateTemp makes it, with pattern, and removed at once where an open
// file can be (Windows removes none: then named is true, and the caller
// removes it once closed).
func TempFile(dir, pattern string) (f *os.File, named bool, err error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if f := openUnnamed(dir); f != nil {
		return f, false, nil
	}
	if f, err = os.CreateTemp(dir, pattern); err != nil {
		return nil, false, err
	}
	return f, os.Remove(f.Name()) != nil, nil
}
