package command

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// pathCache remembers where exec.LookPath found each program, so that a
// run of thousands of jobs of one program walks PATH once, not once per
// job. It keeps a shell's rules for its table of hashed commands (bash's
// hash): the whole table is dropped when PATH changes, and an entry is
// forgotten when starting its program fails (the file was removed or
// replaced by something that does not run), after which the caller looks
// again. A program that appears during a run in a PATH directory before
// the one the cache found is not noticed, as in a shell.
//
// Only absolute results are kept: a relative one depends on the directory
// the child starts in. Errors are not kept. The zero value is an empty
// cache; it is safe for concurrent use.
type pathCache struct {
	mu      sync.Mutex
	pathEnv string            // the PATH the entries were found under
	found   map[string]string // program name -> absolute path
}

// look returns the path to run for name and whether it came from the
// cache. A name with a path separator is returned as it is, as
// exec.Command does.
func (c *pathCache) look(name string) (path string, cached bool, err error) {
	if filepath.Base(name) != name {
		return name, false, nil
	}
	pathEnv := os.Getenv("PATH")
	c.mu.Lock()
	if pathEnv != c.pathEnv {
		c.pathEnv, c.found = pathEnv, nil
	}
	path, cached = c.found[name]
	c.mu.Unlock()
	if cached {
		return path, true, nil
	}
	path, err = exec.LookPath(name)
	if err != nil || !filepath.IsAbs(path) {
		return path, false, err
	}
	c.mu.Lock()
	if pathEnv == c.pathEnv {
		if c.found == nil {
			c.found = make(map[string]string)
		}
		c.found[name] = path
	}
	c.mu.Unlock()
	return path, false, nil
}

// forget drops name's entry if it still says path.
func (c *pathCache) forget(name, path string) {
	c.mu.Lock()
	if c.found[name] == path {
		delete(c.found, name)
	}
	c.mu.Unlock()
}
