//go:build unix

package command

import (
	"os"
	"syscall"
)

// start starts the reaper, the program path with argv, once for the
// executor's life, and tells it the executor's token: in a process
// group of its own (so that the terminal's signals do not reach it, and a
// kill of pace's group spares it), with the read end of a pipe as its
// stdin and the null device as its stdout and stderr, and nothing else of
// pace's: it must outlive pace, so it has no Pdeathsig, and it holds no
// descriptor of pace's (a pipe a job's output or pace's own stdout goes
// to would stay open), nor the JobEnv entry of a pace that pace is a job
// of (that pace's reaper would kill it before it has done its work). A
// reaper that cannot start is no failure: the jobs run as they would
// without one.
func (r *reaper) start(path string, argv []string, token string) {
	r.once.Do(func() {
		if len(argv) == 0 {
			return
		}
		if path == "" {
			path = argv[0]
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return
		}
		defer pr.Close()
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			pw.Close()
			return
		}
		defer null.Close()
		p, err := os.StartProcess(path, argv, &os.ProcAttr{
			Env:   withoutJobEnv(os.Environ()),
			Files: []*os.File{pr, null, null},
			Sys:   &syscall.SysProcAttr{Setpgid: true},
		})
		if err != nil {
			pw.Close()
			return
		}
		// The pipe is empty: the first line fits.
		if _, err := pw.WriteString("@" + token + "\n"); err != nil {
			pw.Close()
			p.Kill()
			p.Wait()
			return
		}
		r.mu.Lock()
		r.w, r.p = pw, p
		r.mu.Unlock()
	})
}

// killPgid sends SIGKILL to the process group pgid; one already gone is
// no error.
func killPgid(pgid int) { signalPgid(pgid, syscall.SIGKILL) }

// writeNow writes what of b the pipe w takes now, in one write, without
// waiting for room: a full pipe takes nothing (0, no error).
func writeNow(w *os.File, b []byte) (n int, err error) {
	rc, err := w.SyscallConn()
	if err != nil {
		return 0, err
	}
	if cerr := rc.Write(func(fd uintptr) bool {
		n, err = syscall.Write(int(fd), b)
		return true
	}); cerr != nil {
		return 0, cerr
	}
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return 0, nil
	}
	return max(n, 0), err
}
