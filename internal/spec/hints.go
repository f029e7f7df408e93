package spec

// flagHints says what users of xargs, GNU parallel and curl meant by
// flags pace does not have.
var flagHints = map[string]string{
	"P":             "-P is xargs's and GNU parallel's; pace's is -j N (jobs at once)",
	"max-procs":     "--max-procs is xargs's; pace's is -j N (jobs at once)",
	"I":             "-I is xargs's; pace puts the item wherever {} stands in the command",
	"replace":       "--replace is xargs's; pace puts the item wherever {} stands in the command",
	"n":             "-n is xargs's; pace runs one item per job",
	"max-args":      "--max-args is xargs's; pace runs one item per job",
	"L":             "-L is xargs's; pace runs one item (line) per job",
	"d":             "-d is xargs's; pace reads lines, or NUL-separated items with -0",
	"arg-file":      "--arg-file is xargs's and GNU parallel's; pace's is -a FILE",
	"Z":             "-Z is curl's; pace fetch's -j N sets the requests in flight",
	"parallel-max":  "--parallel-max is curl's; pace fetch's -j N sets the requests in flight",
	"rate-limit":    "pace's rate flag is -r N/PERIOD",
	"limit-rate":    "--limit-rate is curl's bandwidth cap; pace's rate flag is -r N/PERIOD",
	"delay":         "pace spaces calls with rules: -r 1/2s for one call every two seconds",
	"output":        "pace fetch writes bodies to stdout, or one file per item with -o DIR/",
	"H":             "",
	"retry":         "pace's flag is --retries N",
	"halt-on-error": "pace's flag is --halt now,fail=1",
	"bar":           "--bar is GNU parallel's; pace draws a progress bar on stderr when it is a terminal (--progress always draws it anyway)",
	"eta":           "--eta is GNU parallel's; pace's progress shows the ETA once the number of items is known (--progress always, or --progress lines for logs)",
	"line-buffer":   "--line-buffer is GNU parallel's; pace prints each job's output whole when the job ends, never mixed with another's (as parallel's default --group)",
}

// fetchHints are curl's flags, as pace fetch's users mean them; they
// take precedence over flagHints in pace fetch (-L is curl's there).
var fetchHints = map[string]string{
	"s":           "-s is curl's; pace fetch writes only bodies to stdout, and -q quiets stderr (no progress, a summary only if something failed)",
	"silent":      "--silent is curl's; pace fetch writes only bodies to stdout, and -q quiets stderr (no progress, a summary only if something failed)",
	"S":           "-S is curl's; pace fetch always shows each failure on stderr",
	"show-error":  "--show-error is curl's; pace fetch always shows each failure on stderr",
	"f":           "-f is curl's; pace fetch already fails an item on any status but 2xx, and then exits 1",
	"fail":        "--fail is curl's; pace fetch already fails an item on any status but 2xx, and then exits 1",
	"w":           "-w is curl's; pace fetch's --joblog FILE records each request's start, duration, size and HTTP status (Exitval, 0 for a 2xx)",
	"write-out":   "--write-out is curl's; pace fetch's --joblog FILE records each request's start, duration, size and HTTP status (Exitval, 0 for a 2xx)",
	"O":           "-O is curl's; pace fetch's is -o DIR/ --output-name '{/}' (one file per item, named after its last path part)",
	"remote-name": "--remote-name is curl's; pace fetch's is -o DIR/ --output-name '{/}' (one file per item, named after its last path part)",
	"i":           "-i is curl's; pace fetch writes bodies only, never headers",
	"include":     "--include is curl's; pace fetch writes bodies only, never headers",
	"L":           "-L is curl's; pace fetch already follows redirects (at most 10)",
	"location":    "--location is curl's; pace fetch already follows redirects (at most 10)",
}

// FlagHint returns what a user most likely meant by name, a flag pace
// does not have (without its dashes), or "": the flag of xargs, GNU
// parallel or curl (for pace fetch, curl's first) that pace spells
// otherwise. For GNU parallel's --delay it reads the value in args, pace's
// arguments, and gives the rule that does the same (DelayHint).
func FlagHint(name string, fetch bool, args []string) string {
	hint := flagHints[name]
	if h, ok := fetchHints[name]; ok && fetch {
		hint = h
	}
	if name == "delay" {
		if h := DelayHint(args); h != "" {
			hint = h
		}
	}
	return hint
}
