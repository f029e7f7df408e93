package joblog

import "github.com/pace-cli/pace/runner"

// EntryOf returns the row of r, an attempt of the pool: admitted at Start,
// its runtime, its output's size (for a fetch, the body's bytes), its
// Exitval and Signal (ExitOf) and command, its Command column. With cost
// (the run keeps cost rules), Send holds the call's cost: the one the call
// told, else the job's estimate, at least 1.
func EntryOf(r *runner.Result, command string, cost bool) Entry {
	exit, signal := ExitOf(r)
	e := Entry{
		Seq: int(r.Job.Seq), Host: ":", Start: r.Start, Runtime: r.Runtime,
		Receive: r.Stdout.Len(), Exit: exit, Signal: signal, Command: command,
	}
	if cost {
		e.Send = int64(max(r.Job.Cost, r.Cost, 1))
		if r.Cost > 0 {
			e.Send = int64(r.Cost)
		}
	}
	if r.HTTP != nil {
		e.Receive = r.HTTP.Bytes
	}
	return e
}

// ExitOf returns the Exitval and Signal columns of r's row.
//
// Commands: the exit status; -1 and the signal for a job killed by a
// signal (pace's --timeout or second Ctrl-C, or any other); 127 for a
// program that could not be started, as a shell reports it; 1 for a job
// that exited 0 but whose output could not be kept or written.
//
// Fetches: 0 for a 2xx, the status for any other response, -1 when no
// whole response came (network error, timeout, interrupt), and 1 for a
// 2xx whose body could not be kept or written.
func ExitOf(r *runner.Result) (exit, signal int) {
	if h := r.HTTP; h != nil {
		switch {
		case r.OK():
			return 0, 0
		case h.StatusCode != 0 && (h.StatusCode < 200 || h.StatusCode > 299):
			return h.StatusCode, 0
		case h.StatusCode != 0 && r.ExitCode == 0:
			return 1, 0
		}
		return -1, 0
	}
	switch {
	case r.Signal != 0:
		return -1, r.Signal
	case r.TimedOut:
		return -1, 0
	case r.ExitCode > 0:
		return r.ExitCode, 0
	case r.ExitCode == 0 && r.Err != nil:
		return 1, 0
	case r.ExitCode == 0:
		return 0, 0
	}
	return 127, 0
}
