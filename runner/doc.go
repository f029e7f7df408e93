// Package runner runs jobs, one per input item, through a pool that keeps
// at most a given number in flight and admits each start through a
// limiter.
//
// The pool (Pool) knows nothing of what a job does: an Executor prepares
// and runs it. CommandExecutor runs a command per item as a child process
// in its own process group, with stdin from the null device and output
// captured whole (Capture), so that the caller can print each job's output
// in one piece. Template and ParseLine turn items into argv without ever
// passing an item through a shell unquoted.
//
// The pool reports what happens through one callback (Options.OnEvent);
// drawing progress bars, printing output and writing summaries is the
// caller's business. runner knows nothing of flags or terminals.
package runner
