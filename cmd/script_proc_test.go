//go:build unix

package cmd

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// waitproc open FILE | waitproc opendir DIR | waitproc blocked | waitproc
// writing waits (up to 20s) until the last background command has FILE
// open, or a file in DIR (one without a name too: O_TMPFILE), or has a
// thread blocked opening a file (a FIFO with no reader), or one in write(2)
// on its stdout (a pipe nobody reads: it is surely under way), as its /proc
// entry shows. A signal sent
// after a fixed sleep raced a loaded machine's start-up: the process
// could still be starting (and die of the signal) or still running jobs
// (and be stopped there, not where the script means). Elsewhere than
// Linux it sleeps a second, as the scripts did.
func cmdWaitproc(ts *testscript.TestScript, neg bool, args []string) {
	withFile := len(args) > 0 && (args[0] == "open" || args[0] == "opendir")
	if neg || len(args) == 0 || withFile != (len(args) == 2) || (!withFile && args[0] != "blocked" && args[0] != "writing") {
		ts.Fatalf("usage: waitproc open FILE | waitproc opendir DIR | waitproc blocked | waitproc writing")
	}
	bg := ts.BackgroundCmds()
	if len(bg) == 0 || bg[len(bg)-1].Process == nil {
		ts.Fatalf("waitproc: no background command")
	}
	if runtime.GOOS != "linux" {
		time.Sleep(time.Second)
		return
	}
	pid := strconv.Itoa(bg[len(bg)-1].Process.Pid)
	var want string
	if withFile {
		want = ts.MkAbs(args[1])
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if want != "" && hasOpen(pid, want, args[0] == "opendir") ||
			args[0] == "blocked" && inSyscall(pid, unix.SYS_OPENAT, "") ||
			args[0] == "writing" && inSyscall(pid, unix.SYS_WRITE, "0x1") {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitproc %s: process %s never got there", strings.Join(args, " "), pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hasOpen reports whether process pid has file open, or with inDir a
// file in the directory file: the link of a file without a name reads
// "DIR/#INODE (deleted)".
func hasOpen(pid, file string, inDir bool) bool {
	fds, _ := filepath.Glob("/proc/" + pid + "/fd/*")
	for _, fd := range fds {
		t, err := os.Readlink(fd)
		if err == nil && (t == file || inDir && filepath.Dir(t) == file) {
			return true
		}
	}
	return false
}

// inSyscall reports whether a thread of process pid is in system call
// nr (/proc/PID/task/TID/syscall starts with its number), with arg0 as its
// first argument if arg0 is not "".
func inSyscall(pid string, nr int, arg0 string) bool {
	tasks, _ := filepath.Glob("/proc/" + pid + "/task/*/syscall")
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 1 && f[0] == strconv.Itoa(nr) && (arg0 == "" || f[1] == arg0) {
			return true
		}
	}
	return false
}
