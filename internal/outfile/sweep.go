package outfile

import (
	"os"
	"path/filepath"
)

// Sweep removes from dir the temporary files that Create's writers left
// there when they were killed before they could remove them (SIGKILL, a
// crash, a power cut), and returns how many it removed. It removes a file
// only when its writer is provably gone: a writer holds a lock on its
// temporary file for as long as the file has a name, and the kernel drops
// the lock when the writer dies, so a temporary file that Sweep can lock
// has no writer left. One that another process is writing, on this host
// or (NFS) another, is never touched; nor is anything but a regular file
// whose name Create gives (".NAME.pace-XXXXXXXX.part"). Errors (a
// directory that cannot be read, a file that cannot be opened) leave
// things as they are.
//
// On Linux a writer's temporary file has no name while it is written, so
// there is rarely anything to sweep. Where files cannot be locked
// (Windows, a file system without locks), Sweep removes nothing.
func Sweep(dir string) int {
	d, err := os.Open(dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		for _, name := range names {
			if isTempName(name) && removeLeftover(filepath.Join(dir, name)) {
				n++
			}
		}
		if err != nil { // io.EOF at the end
			return n
		}
	}
}

// removeLeftover removes the temporary file at path if its writer is
// gone: if its lock can be taken, and reports whether it did.
func removeLeftover(path string) bool {
	f, err := openLeftover(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if locked, err := tryLock(f); !locked || err != nil {
		return false // its writer is alive, or it cannot be known
	}
	// Locked, it is gone: but the file locked must still be the one at
	// path (a writer can remove its file and make another of that name
	// only with a new random name, so this holds unless someone else
	// renamed files here).
	if !isAt(f, path) {
		return false
	}
	return os.Remove(path) == nil
}
