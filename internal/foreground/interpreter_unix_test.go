//go:build unix

package foreground

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A script whose #! line names an interpreter that does not exist cannot
// run, and says so; one whose interpreter exists, a program, and a FIFO
// (which an open would block on) are not CheckInterpreter's to refuse.
func TestCheckInterpreter(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := write("missing.py", "#!/nonexistent/python9 -u\nprint(1)\n")
	if err := CheckInterpreter("./missing.py", missing); err == nil || !strings.Contains(err.Error(), `command "./missing.py" cannot run: its interpreter /nonexistent/python9 (its #! line) was not found`) {
		t.Errorf("CheckInterpreter(missing interpreter) = %v", err)
	}
	for _, body := range []string{"#!/bin/sh\necho\n", "#!\n", "\x7fELF...", ""} {
		if err := CheckInterpreter("x", write("ok", body)); err != nil {
			t.Errorf("CheckInterpreter(%q) = %v, want nil", body, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan error, 1)
	go func() { done <- CheckInterpreter("fifo", fifo) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("CheckInterpreter(FIFO) = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("CheckInterpreter blocked on a FIFO")
	}
}
