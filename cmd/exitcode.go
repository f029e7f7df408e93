package cmd

// Exit codes of pace. The README and `pace run --help` document them.
const (
	// ExitOK: every job succeeded.
	ExitOK = 0
	// ExitFailed: one or more jobs failed (after their retries).
	ExitFailed = 1
	// ExitUsage: a usage, rule or input error found before anything ran,
	// such as a bad -r, an unknown flag or an unreadable input file.
	ExitUsage = 2
	// ExitBackend: the limiter's backend failed (throttle.ErrBackend).
	ExitBackend = 3
	// ExitUnproven: pace audit only: no call was seen to break a rule, but
	// the job log's last row was cut short (a pace killed as it wrote it)
	// before what a rule needs, and its call may have broken it.
	ExitUnproven = 4
	// ExitHangup: stopped by SIGHUP, its terminal closed (128 + 1).
	ExitHangup = 129
	// ExitInterrupted: stopped by SIGINT (128 + 2). pace mostly dies of
	// SIGINT instead (ExitError.Signal, foreground.Die), which a shell
	// reports as 130 too.
	ExitInterrupted = 130
	// ExitQuit: stopped by SIGQUIT (Ctrl-\, 128 + 3): its jobs killed at
	// once.
	ExitQuit = 131
	// ExitTerminated: stopped by SIGTERM (128 + 15).
	ExitTerminated = 143
	// ExitBrokenPipe: stdout was closed by its reader (128 + SIGPIPE's 13),
	// as a shell reports a process killed by SIGPIPE; pace killed the
	// running jobs and started no more.
	ExitBrokenPipe = 141
)

// exitCodesHelp is the exit code table shown in --help.
const exitCodesHelp = `Exit codes:
  0    every job succeeded
  1    one or more jobs failed (after retries)
  2    usage, rule or input error found before anything ran
       (bad -r, unknown flag, unreadable input file, command not found),
       or a shared quota's rules that another process changed mid-run
  3    the limiter's backend failed
  129  stopped by SIGHUP (its terminal closed)
  130  interrupted by SIGINT (Ctrl-C): pace dies of SIGINT, so that a
       shell loop around it stops too (exit 130 as a PID namespace's
       first process)
  131  stopped by SIGQUIT (Ctrl-\): running jobs killed
  141  stdout closed by its reader (| head): running jobs killed
  143  terminated by SIGTERM`
