#!/usr/bin/env bash
# Benchmarks pace against its targets and its peers on this machine and
# writes docs/benchmarks.md. Every figure that matters is a ratio between
# runs made here, in the same invocation: the machines are shared and noisy.
# Optima are computed by throttle's own oracle (throttle.ScheduleCosts,
# through internal/benchtools/benchtool), never typed in.
#
#   scripts/bench.sh            # everything (about 20 minutes on 2 cores)
#   QUICK=1 scripts/bench.sh    # fewer repetitions (about 8 minutes)
#   KEEP=DIR scripts/bench.sh   # also keep every run's summaries and logs in DIR
#   FLEETS=40 ONLY=slowlink KEEP=DIR scripts/bench.sh  # more fleet runs (10), all kept:
#                                   # a rare refusal's job logs and the server's record of every request
#   SLOWLINKS=40ms FLEETS=40 ONLY=slowlink KEEP=DIR scripts/bench.sh  # only the 40±15 ms
#                                   # link's runs (SLOWLINKS=20ms: only 20±5 ms), no variants
#   OUT=FILE scripts/bench.sh   # write FILE instead of docs/benchmarks.md
#   PACE_BIN=FILE scripts/bench.sh  # measure this pace binary instead of building one
#   ONLY=run,exec scripts/bench.sh  # only these scenarios (run: pace run vs xargs and
#                                   # GNU parallel; exec: pace exec vs /bin/true; proxy:
#                                   # pace proxy's clients, overhead and memory; fetch:
#                                   # pace fetch vs curl --parallel; store: the local store's
#                                   # and Redis's admission benchmarks; slowlink: a Redis
#                                   # fleet over slow links; throttle: the Go benchmarks
#                                   # against golang.org/x/time/rate), printed on stdout
#                                   # unless OUT is given
#
# Only loopback servers that this script starts receive traffic: the strict
# server (internal/strictserver/strictd) and, for the Redis scenarios, a
# redis-server started here on a free port on 127.0.0.1 (never 6379).
set -euo pipefail
cd "$(dirname "$0")/.."

reps=${REPS:-3}  # runs of each comparison
fleets=${FLEETS:-10} # runs of each fleet scenario (issues #10, #14 and #22's slow links)
accs=5           # runs of each 30-call accuracy scenario at the default margin
quick=""
if [ -n "${QUICK:-}" ]; then
	reps=1 fleets=${FLEETS:-2} accs=2 quick=" (QUICK=1)"
fi
out=${OUT:-docs/benchmarks.md}
[ -n "${ONLY:-}" ] && out=${OUT:-/dev/stdout}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ -n "${KEEP:-}" ]; then
		mkdir -p "$KEEP" && cp -R "$tmp/runs" "$tmp/errors.log" "$KEEP/" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/runs" "$tmp/state"
: >"$tmp/errors.log"
unset PACE_REDIS_URL PACE_STATE_DIR

log() { printf '==> %s\n' "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime | sed 's/.*average[s]*: //'; }

started=$(date +%s)
load_start=$(loadavg)
log "building"
# Built as released (.goreleaser.yaml): static, no cgo.
if [ -n "${PACE_BIN:-}" ]; then cp "$PACE_BIN" "$tmp/pace"; else CGO_ENABLED=0 go build -trimpath -o "$tmp/pace" .; fi
go build -o "$tmp/strictd" ./internal/strictserver/strictd
go build -o "$tmp/benchtool" ./internal/benchtools/benchtool
go build -o "$tmp/cookbook" ./internal/benchtools/cookbook
pace=$tmp/pace

# now_ns prints the time in nanoseconds.
now_ns() { date +%s%N; }

# median prints the median of its arguments (numbers).
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# ratio A B prints A/B with two decimals; ratio3 with three.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a/b }'; }
ratio3() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a/b }'; }

# fastest ARGS...: the makespan in seconds of the fastest legal FIFO
# schedule (benchtool fastest: throttle.ScheduleCosts).
fastest() { "$tmp/benchtool" fastest "$@" | cut -d' ' -f1; }

# start_strict RULES [ARGS...]: starts strictd, sets $port and $strict_pid.
start_strict() {
	local rules=$1
	shift
	rm -f "$tmp/port"
	"$tmp/strictd" -rules "$rules" -portfile "$tmp/port" -calls "$tmp/runs/calls-$run" -requests "$tmp/runs/requests-$run" "$@" >"$tmp/strictd.out" &
	strict_pid=$!
	pids+=("$strict_pid")
	for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
	port=$(cat "$tmp/port")
}

# stop_strict: stops strictd; its final JSON stats line is then in
# $tmp/strictd.out. (Not in a command substitution: wait works only in the
# shell that started strictd.)
stop_strict() {
	kill -TERM "$strict_pid"
	wait "$strict_pid" 2>/dev/null || true
}

# json_field JSON FIELD prints a numeric field of a flat JSON object.
json_field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\([-0-9.e]*\).*/\1/p"; }

# strict_result FAILED: stops strictd and prints "refused makespan accepted
# failed" for a series.
strict_result() {
	local stats
	stop_strict
	stats=$(cat "$tmp/strictd.out")
	echo "$(json_field "$stats" refused) $(json_field "$stats" makespan) $(json_field "$stats" accepted) $1"
}

# time_cmd CMD...: runs CMD and prints its wall time in seconds.
time_cmd() {
	local s e
	s=$(now_ns)
	"$@" >/dev/null 2>&1 </dev/null
	e=$(now_ns)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.4f", (e-s)/1e9 }'
}

report=()
add() { report+=("$*"); }
verdicts=()
commands=()
cmdline() { commands+=("$*"); }

# series N FUNC ARGS...: runs FUNC ARGS N times; FUNC prints "refused
# makespan accepted failed". The scenario's optimum is benchtool fastest
# "${optargs[@]}". Sets, one word per run: refs, ratios (makespan /
# optimum), margins (the largest margin, in ms, that a pace process of the
# run ended with, from its --summary-file; - without one), at_margin
# (makespan / the optimum with every window widened by that margin: how
# close the run came to the best its margin allows), accepted, failed.
# With served set, also served_ratios: makespan / the FIFO optimum of the
# calls in the order the server accepted them (strictd -calls). Each run
# gets a fresh $run, for keys and file names.
run=0
served=""
optargs=()
series() {
	local n=$1 opt r m a f mg
	shift
	opt=$(fastest "${optargs[@]}")
	refs=() ratios=() margins=() at_margin=() accepted=() failed=() served_ratios=()
	for _ in $(seq "$n"); do
		run=$((run + 1))
		r="" m="" a="" f=""
		"$@" >"$tmp/series" 2>>"$tmp/errors.log" || true
		read -r r m a f <"$tmp/series" || true
		refs+=("${r:-?}")
		ratios+=("$(ratio3 "${m:-0}" "$opt")")
		accepted+=("${a:-?}")
		failed+=("${f:-?}")
		mg=$({ cat "$tmp/runs/"*"-$run.json" "$tmp/runs/"*"-$run-"[0-9]".json" 2>/dev/null || true; } |
			awk '/"margin":/ { m = 1 } m && /"seconds":/ { gsub(/[^0-9.e-]/, "", $2); print $2; m = 0 }' |
			awk 'NR == 1 || $1 > mx { mx = $1 } END { if (NR) printf "%.0f", mx * 1000 }')
		if [ -n "$mg" ]; then
			margins+=("$mg")
			at_margin+=("$(ratio3 "${m:-0}" "$(fastest "${optargs[@]}" -margin "${mg}ms")")")
		else
			margins+=("-")
			at_margin+=("-")
		fi
		if [ -n "$served" ]; then
			served_ratios+=("$(ratio3 "${m:-0}" "$(fastest -rules "${served% *}" -jobs "${served#* }" \
				-items "$tmp/runs/calls-$run" 2>/dev/null || echo 0)")")
		fi
	done
}

# judge MAXREF MAXRATIO WANT: "met" if every run of the last series had at
# most MAXREF refusals, makespan/optimum at most MAXRATIO, WANT accepted
# calls and no failed process or item; else "missed: why".
judge() {
	awk -v maxref="$1" -v maxr="$2" -v want="$3" -v refs="${refs[*]}" -v rs="${ratios[*]}" \
		-v acc="${accepted[*]}" -v fl="${failed[*]}" 'BEGIN {
		n = split(refs, R, " "); split(rs, Q, " "); split(acc, A, " "); split(fl, F, " ")
		why = ""; bad = 0; worst = 0; short = 0; fails = 0
		for (i = 1; i <= n; i++) {
			if (R[i] == "?" || R[i] + 0 > maxref) bad++
			if (Q[i] + 0 > worst) worst = Q[i] + 0
			if (A[i] != want) short++
			if (F[i] != "0") fails++
		}
		if (bad) why = why sprintf("; %d of %d runs over %d refused", bad, n, maxref)
		if (worst > maxr) why = why sprintf("; makespan up to %.3f of optimum (target %.3f)", worst, maxr)
		if (short) why = why sprintf("; %d of %d runs without all %d calls accepted", short, n, want)
		if (fails) why = why sprintf("; %d of %d runs with failures", fails, n)
		if (why == "") print "met"; else print "**missed**: " substr(why, 3)
	}'
}

# summarize: refusals, makespan/optimum and margins of the last series.
summarize() {
	local total=0 r
	for r in "${refs[@]}"; do [ "$r" = "?" ] || total=$((total + r)); done
	printf 'refused %d in %d runs; makespan/optimum median %s, worst %s' "$total" "${#refs[@]}" \
		"$(median "${ratios[@]}")" "$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)"
	if [ "${margins[0]}" != "-" ]; then
		printf '; margin %s–%s ms' "$(printf '%s\n' "${margins[@]}" | sort -g | head -1)" \
			"$(printf '%s\n' "${margins[@]}" | sort -g | tail -1)"
	fi
}

# verdict SCENARIO TARGET VERDICT: one row of the verdict table.
verdict() { verdicts+=("| $1 | $2 | $(summarize) | $3 |"); }

# row LABEL: a table row of the last series, every run listed.
row() {
	local extra=""
	[ -n "$served" ] && extra=" ${served_ratios[*]} |"
	add "| $1 | ${refs[*]} | ${ratios[*]} | ${margins[*]} | ${at_margin[*]} |$extra ${accepted[*]} | ${failed[*]} |"
}
table_head() {
	if [ -n "$served" ]; then
		add "| $1 | refused | makespan / optimum | margin (ms) | makespan / optimum at that margin | makespan / FIFO optimum in arrival order | accepted | failed |"
		add "|---|---|---|---|---|---|---|---|"
	else
		add "| $1 | refused | makespan / optimum | margin (ms) | makespan / optimum at that margin | accepted | failed |"
		add "|---|---|---|---|---|---|---|"
	fi
}

# write_report writes the report to $out.
write_report() {
	local elapsed load_end
	elapsed=$(($(date +%s) - started))
	load_end=$(loadavg)
	{
		echo "# Benchmarks"
		echo
		echo "Written by \`scripts/bench.sh\`$quick on $(date -u +%Y-%m-%d), $(nproc) cores, $(go version | cut -d' ' -f3),"
		echo "in $((elapsed / 60)) min $((elapsed % 60)) s. Load average (1, 5, 15 min): $load_start at the start,"
		echo "$load_end at the end; other work shares this machine. Absolute times vary with the load;"
		echo "compare the ratios, which come from runs made side by side in the same invocation."
		echo
		echo "## Targets"
		echo
		echo "One line per scenario: the target from its issue, what was measured over every run, and the"
		echo "verdict. Nothing is tuned to pass: a miss is reported as measured."
		echo
		echo "| scenario | target | measured | verdict |"
		echo "|---|---|---|---|"
		printf '%s\n' "${verdicts[@]}"
		echo
		printf '%s\n' "${report[@]}"
		echo "## Commands"
		echo
		echo "PORT is the strict server's port (strictd -portfile), RPORT redis-server's (a free port found by"
		echo "\`benchtool freeport\`), items30 is \`seq 30\`, urls60 and fleetP are URLs on the strict server,"
		echo "items60 is \`benchtool items -n 60 -max 60 -seed 13\` (lines \"SEQ COST\"). Optima:"
		echo "\`benchtool fastest -rules RULES -n N [-jobs J]\` or \`-items items60\`."
		echo
		echo '```'
		printf '%s\n' "${commands[@]}"
		echo '```'
	} >"$out"
	log "wrote $out"
}

# per_call SECONDS N prints SECONDS/N in milliseconds, two decimals.
per_call() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", s*1000/n }'; }

# at_most VALUE LIMIT prints "met" if VALUE <= LIMIT, else "**missed**".
at_most() { awk -v v="$1" -v l="$2" 'BEGIN { if (v + 0 <= l + 0) print "met"; else print "**missed**" }'; }

# scenario_run: 800 true jobs, 8 in flight, pace run vs xargs and GNU
# parallel, alternated (issue #22). PATH is the same short one for all
# three, so that no runner gains from where true sits in a long PATH (pace
# looks a program up once, xargs once per job).
scenario_run() {
	local n=800 runs x p g
	runs=$((reps < 3 ? 3 : reps))
	log "overhead: $n true jobs, 8 in flight"
	seq "$n" >"$tmp/items$n"
	xs=() ps=() gs=()
	for _ in $(seq "$runs"); do
		xs+=("$(PATH=/usr/bin:/bin time_cmd sh -c "xargs -P8 -n1 true <'$tmp/items$n'")")
		ps+=("$(PATH=/usr/bin:/bin time_cmd "$pace" run -j 8 --summary none -a "$tmp/items$n" -- true)")
		if have parallel; then gs+=("$(PATH=/usr/bin:/bin time_cmd sh -c "parallel -j8 true <'$tmp/items$n'")"); fi
	done
	x=$(median "${xs[@]}") p=$(median "${ps[@]}")
	add "## Overhead: $n \`true\` jobs, 8 in flight, no rule"
	add ""
	add "Median wall time of $runs runs each, alternated, as a ratio to \`xargs -P8 -n1 true\`; PATH=/usr/bin:/bin for all."
	add ""
	add "| runner | wall (s) | wall / xargs |"
	add "|---|---|---|"
	add "| xargs -P8 -n1 | $x | 1.00 |"
	add "| pace run -j 8 | $p | $(ratio "$p" "$x") |"
	if [ ${#gs[@]} -gt 0 ]; then
		g=$(median "${gs[@]}")
		add "| GNU parallel -j8 | $g | $(ratio "$g" "$x") |"
		add ""
		add "GNU parallel / pace: $(ratio "$g" "$p")x."
	fi
	add ""
	verdicts+=("| #22 \`pace run -j 8 -- true\`, $n items | ≤ 1.00x \`xargs -P8 -n1 true\` | $(ratio "$p" "$x")x (runs: pace ${ps[*]} s; xargs ${xs[*]} s) | $(at_most "$(ratio "$p" "$x")" 1.00) |")
	if [ ${#gs[@]} -gt 0 ]; then
		verdicts+=("| #22 \`pace run -j 8 -- true\` vs GNU parallel | report | $(ratio "$p" "$g")x \`parallel -j8 true\` | reported |")
	fi
	cmdline "PATH=/usr/bin:/bin xargs -P8 -n1 true <items$n;  PATH=/usr/bin:/bin pace run -j 8 --summary none -a items$n -- true;  PATH=/usr/bin:/bin parallel -j8 true <items$n   # items$n: seq $n"
}

# scenario_exec: what one pace exec costs, in a shell loop of n calls,
# alternated with /bin/true: in memory, and with a local store (--key), for
# --wait-only and for running /bin/true (issues #14, #22). The rule never
# binds, so every call is start-up, admission and exit.
scenario_exec() {
	local n=${EXEC_N:-200} runs t k i label w
	runs=$((reps < 3 ? 3 : reps))
	log "pace exec overhead"
	local -a cases=("-r 1000000/s --wait-only" "-r 1000000/s -- /bin/true")
	if has_local; then
		cases+=("--key K --state DIR -r 1000000/s --wait-only" "--key K --state DIR -r 1000000/s -- /bin/true")
	fi
	local -a ts=() sums=()
	for k in "${!cases[@]}"; do sums[k]=""; done
	for _ in $(seq "$runs"); do
		run=$((run + 1))
		ts+=("$(time_cmd sh -c "for i in \$(seq $n); do /bin/true; done")")
		for k in "${!cases[@]}"; do
			args=${cases[k]//K/ov$run-$k}
			args=${args//DIR/$tmp/state}
			sums[k]="${sums[k]} $(time_cmd sh -c "for i in \$(seq $n); do '$pace' exec $args || exit 1; done")"
		done
	done
	t=$(median "${ts[@]}")
	add "### \`pace exec\` overhead per call"
	add ""
	add "A shell loop of $n calls, median of $runs runs, alternated with a loop of \`/bin/true\`; a rule that never binds"
	add "(1000000/s); with \`--key\`, one local store per run. Built as released (static, \`CGO_ENABLED=0\`)."
	add ""
	add "| loop body | ms per call | / \`/bin/true\` |"
	add "|---|---|---|"
	add "| \`/bin/true\` | $(per_call "$t" $n) | 1.00 |"
	for k in "${!cases[@]}"; do
		# shellcheck disable=SC2086 # the runs are words
		w=$(median ${sums[k]})
		label="pace exec ${cases[k]}"
		add "| \`$label\` | $(per_call "$w" $n) | $(ratio "$w" "$t") |"
		case ${cases[k]} in
		"--key K --state DIR -r 1000000/s -- /bin/true")
			verdicts+=("| #22 \`pace exec --key K -- true\` | ≤ 4 ms a call and ≤ 2x \`/bin/true\` | $(per_call "$w" $n) ms, $(ratio "$w" "$t")x | $(awk -v ms="$(per_call "$w" $n)" -v r="$(ratio "$w" "$t")" 'BEGIN { if (ms + 0 <= 4 && r + 0 <= 2) print "met"; else print "**missed**" }') |") ;;
		"--key K --state DIR -r 1000000/s --wait-only")
			verdicts+=("| #22 \`pace exec --key K --wait-only\` | ≤ 3 ms a call | $(per_call "$w" $n) ms, $(ratio "$w" "$t")x \`/bin/true\` | $(at_most "$(per_call "$w" $n)" 3) |") ;;
		"-r 1000000/s --wait-only")
			verdicts+=("| #22 \`pace exec --wait-only\`, in memory | report | $(per_call "$w" $n) ms, $(ratio "$w" "$t")x \`/bin/true\` | reported |") ;;
		esac
	done
	add ""
	cmdline "for i in \$(seq $n); do pace exec [--key K --state DIR] -r 1000000/s {--wait-only | -- /bin/true}; done   # vs for i in \$(seq $n); do /bin/true; done"
}

# time_cpu CMD...: runs CMD and prints its wall time and its CPU time
# (user + sys), in seconds.
time_cpu() {
	local TIMEFORMAT='%R %U %S' w u y
	read -r w u y < <({ time "$@" >/dev/null 2>&1 </dev/null; } 2>&1)
	awk -v w="$w" -v u="$u" -v y="$y" 'BEGIN { printf "%.4f %.4f\n", w, u + y }'
}

# scenario_fetch: 5000 URLs on the local strict server (no rule), 32 in
# flight: pace fetch, without a rule and with one that never binds
# (-r 100000/s), vs curl --parallel --parallel-max 32, alternated (issue
# #22). Wall time is the target; CPU time (user + sys) is reported too,
# as it varies less with the load.
scenario_fetch() {
	local runs i c f r cc fc rc
	runs=$((reps < 5 ? 5 : reps))
	log "fetch throughput: 5000 URLs, 32 in flight, $runs runs"
	start_strict ""
	seq 5000 | sed "s|^|http://127.0.0.1:$port/|" >"$tmp/urls"
	while read -r u; do printf 'url = "%s"\noutput = "/dev/null"\n' "$u"; done <"$tmp/urls" >"$tmp/curl.cfg"
	local cw=() cu=() fw=() fu=() rw=() ru=()
	for i in $(seq "$runs"); do
		read -r c cc < <(time_cpu curl -s --parallel --parallel-max 32 --config "$tmp/curl.cfg")
		read -r f fc < <(time_cpu "$pace" fetch -j 32 --summary none -a "$tmp/urls")
		read -r r rc < <(time_cpu "$pace" fetch -j 32 -r 100000/s --summary none -a "$tmp/urls")
		cw+=("$c") cu+=("$cc") fw+=("$f") fu+=("$fc") rw+=("$r") ru+=("$rc")
	done
	stop_strict
	c=$(median "${cw[@]}") f=$(median "${fw[@]}") r=$(median "${rw[@]}")
	cc=$(median "${cu[@]}") fc=$(median "${fu[@]}") rc=$(median "${ru[@]}")
	add "## Fetch throughput: 5000 URLs, 32 in flight, local server"
	add ""
	add "Median of $runs runs each, alternated; the server (strictd) has no rule. CPU is user + sys."
	add ""
	add "| client | wall (s) | wall / curl | CPU (s) | CPU / curl |"
	add "|---|---|---|---|---|"
	add "| curl --parallel --parallel-max 32 | $c | 1.00 | $cc | 1.00 |"
	add "| pace fetch -j 32 | $f | $(ratio "$f" "$c") | $fc | $(ratio "$fc" "$cc") |"
	add "| pace fetch -j 32 -r 100000/s | $r | $(ratio "$r" "$c") | $rc | $(ratio "$rc" "$cc") |"
	add ""
	verdicts+=("| #22 \`pace fetch -j 32\`, 5000 URLs, no rule | ≤ 1.00x curl --parallel | $(ratio "$f" "$c")x (CPU $(ratio "$fc" "$cc")x; runs: pace ${fw[*]} s; curl ${cw[*]} s) | $(at_most "$(ratio "$f" "$c")" 1.00) |")
	verdicts+=("| #22 \`pace fetch -j 32 -r 100000/s\` (never binds) | ≤ 1.00x curl --parallel | $(ratio "$r" "$c")x (CPU $(ratio "$rc" "$cc")x; runs: pace ${rw[*]} s) | $(at_most "$(ratio "$r" "$c")" 1.00) |")
	cmdline "curl -s --parallel --parallel-max 32 --config curl.cfg;  pace fetch -j 32 [-r 100000/s] --summary none -a urls   # urls: 5000 URLs on strictd; curl.cfg: url = URL, output = /dev/null for each"
}

# has_local: this pace has a local store (pace exec, --state).
has_local() {
	"$pace" exec --help >/dev/null 2>&1 && "$pace" fetch --help 2>/dev/null | grep -- '--state' >/dev/null # not -q: pace must not get SIGPIPE (pipefail)
}

# ---------------------------------------------------------------------------
# pace proxy (issue #21): clients that are not pace, through the proxy.

# start_proxy N ARGS...: starts pace proxy N (a digit) in front of strictd,
# its summary in runs/proxy-$run-N.json; sets $purl and $proxy_pid.
start_proxy() {
	local n=$1
	shift
	rm -f "$tmp/pport$n"
	"$pace" proxy --upstream "http://127.0.0.1:$port" --port-file "$tmp/pport$n" --summary none --progress never \
		--summary-file "$tmp/runs/proxy-$run-$n.json" "$@" >/dev/null 2>>"$tmp/runs/proxy-$run.err" &
	proxy_pid=$!
	pids+=("$proxy_pid")
	for _ in $(seq 200); do [ -s "$tmp/pport$n" ] && break; sleep 0.05; done
	purl=$(cat "$tmp/pport$n")
}

# stop_proxy PID: interrupts a proxy; fails unless it exits 130 (SIGINT).
stop_proxy() {
	local rc=0
	kill -INT "$1"
	wait "$1" 2>/dev/null || rc=$?
	[ "$rc" = 130 ]
}

# The Python client: N GETs of BASE/1..N from a pool of W threads, one
# requests.Session per thread; RETRY=1 retries 429/503 after Retry-After.
# Prints the number of answers that were not 200.
cat >"$tmp/client.py" <<'PY'
import concurrent.futures, os, sys, threading
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry
base, n, w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
local = threading.local()
def get(i):
    s = getattr(local, "s", None)
    if s is None:
        s = local.s = requests.Session()
        if os.environ.get("RETRY"):
            s.mount("http://", HTTPAdapter(max_retries=Retry(total=10, status_forcelist=[429, 503], respect_retry_after_header=True)))
    return s.get(f"{base}/{i}").status_code
with concurrent.futures.ThreadPoolExecutor(w) as ex:
    codes = list(ex.map(get, range(1, n + 1)))
bad = sum(c != 200 for c in codes)
print(bad)
sys.exit(1 if bad else 0)
PY

# proxy_clients MODE: 60 (64 for clients8) calls under 5/s AND 12/3s through
# pace proxy -r 5/s,12/3s, from: python (a thread pool of 8), xargs (xargs -P
# 8 curl), clients8 (8 shell loops of 8 curls at once), shared (2 proxies
# sharing --key, 30 calls each from xargs -P 4 curl), loose (pace -r 20/s,
# the server 5/1s with Retry-After; xargs -P 8 curl --retry 10).
proxy_clients() {
	local mode=$1 f=0 p c pp=() cp=()
	local curl="curl -sf -o /dev/null"
	if [ "$mode" = loose ]; then
		start_strict 5/1s -retry-after
		start_proxy 1 -r 20/s
		curl="curl -sf --retry 10 -o /dev/null"
	else
		start_strict 5/s,12/3s
		start_proxy 1 -r 5/s,12/3s
	fi
	pp+=("$proxy_pid")
	case $mode in
	python) python3 "$tmp/client.py" "$purl" 60 8 >/dev/null || f=1 ;;
	xargs | loose) seq 60 | xargs -P 8 -I{} $curl "$purl/{}" || f=1 ;;
	clients8)
		for c in 1 2 3 4 5 6 7 8; do
			(for i in 1 2 3 4 5 6 7 8; do $curl "$purl/c$c-$i" || exit 1; done) &
			cp+=("$!")
		done
		for p in "${cp[@]}"; do wait "$p" || f=$((f + 1)); done ;;
	shared)
		kill -INT "$proxy_pid" && wait "$proxy_pid" 2>/dev/null || true
		pp=()
		local urls=()
		for p in 1 2; do
			start_proxy "$p" -r 5/s,12/3s --key "proxy$run" --state "$tmp/state"
			pp+=("$proxy_pid") urls+=("$purl")
		done
		for p in 1 2; do
			(seq 30 | xargs -P 4 -I{} $curl "${urls[p - 1]}/p$p-{}") &
			cp+=("$!")
		done
		for p in "${cp[@]}"; do wait "$p" || f=$((f + 1)); done ;;
	esac
	for p in "${pp[@]}"; do stop_proxy "$p" || f=$((f + 1)); done
	strict_result "$f"
}

# wrk_p50 URL: wrk with one connection for 3 s; prints the median latency in ms.
wrk_p50() {
	wrk -t1 -c1 -d3s --latency "$1" 2>/dev/null | awk '$1 == "50%" {
		v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		if (u == "us") v /= 1000; else if (u == "s") v *= 1000
		printf "%.3f", v }'
}

# wrk_rps URL: wrk with 32 connections (2 threads) for 3 s; prints requests a second.
wrk_rps() { wrk -t2 -c32 -d3s "$1" 2>/dev/null | awk '/^Requests\/sec/ { printf "%.0f", $2 }'; }

# proxy_overhead: pace proxy with no rule against nginx proxy_pass with a
# keepalive upstream, in front of the same loopback upstream (benchtool
# upstream), measured with wrk, alternated; then one 1 GiB answer through a
# fresh pace proxy and its peak RSS.
proxy_overhead() {
	local nginx=/usr/sbin/nginx uport nport upid npid ppid purl i runs
	have nginx && nginx=$(command -v nginx)
	if [ ! -x "$nginx" ] || ! have wrk; then
		verdicts+=("| #21 proxy overhead vs nginx | p50 +≤ 0.1 ms; ≥ 0.5x nginx | not measured: no nginx or wrk | **not measured** |")
		return
	fi
	log "pace proxy: overhead against nginx proxy_pass (wrk)"
	rm -f "$tmp/uport"
	"$tmp/benchtool" upstream -portfile "$tmp/uport" &
	upid=$!
	pids+=("$upid")
	for _ in $(seq 100); do [ -s "$tmp/uport" ] && break; sleep 0.05; done
	uport=$(cat "$tmp/uport")
	nport=$("$tmp/benchtool" freeport)
	mkdir -p "$tmp/nginx"
	cat >"$tmp/nginx/nginx.conf" <<NGINX
daemon off;
worker_processes auto;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx/body;
	proxy_temp_path $tmp/nginx/proxy;
	fastcgi_temp_path $tmp/nginx/fastcgi;
	uwsgi_temp_path $tmp/nginx/uwsgi;
	scgi_temp_path $tmp/nginx/scgi;
	upstream up { server 127.0.0.1:$uport; keepalive 64; }
	server {
		listen 127.0.0.1:$nport;
		location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; }
	}
}
NGINX
	"$nginx" -e "$tmp/nginx/error.log" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
	npid=$!
	pids+=("$npid")
	rm -f "$tmp/pport0"
	"$pace" proxy --upstream "http://127.0.0.1:$uport" --port-file "$tmp/pport0" --summary none --progress never \
		>/dev/null 2>>"$tmp/errors.log" &
	ppid=$!
	pids+=("$ppid")
	for _ in $(seq 100); do [ -s "$tmp/pport0" ] && curl -sf -o /dev/null "http://127.0.0.1:$nport/small" && break; sleep 0.05; done
	purl=$(cat "$tmp/pport0")
	# Warm-up: connections open, the proxy's memory of recent calls full.
	wrk -t2 -c32 -d3s "$purl/small" >/dev/null 2>&1
	wrk -t2 -c32 -d1s "http://127.0.0.1:$nport/small" >/dev/null 2>&1
	local ds=() ns=() ps=() nr=() pr=() load_ov
	load_ov=$(loadavg)
	runs=$((reps < 3 ? 3 : reps))
	for i in $(seq "$runs"); do
		ds+=("$(wrk_p50 "http://127.0.0.1:$uport/small")")
		ns+=("$(wrk_p50 "http://127.0.0.1:$nport/small")")
		ps+=("$(wrk_p50 "$purl/small")")
		nr+=("$(wrk_rps "http://127.0.0.1:$nport/small")")
		pr+=("$(wrk_rps "$purl/small")")
	done
	local d n p nrm prm padd nadd tr
	d=$(median "${ds[@]}") n=$(median "${ns[@]}") p=$(median "${ps[@]}")
	nrm=$(median "${nr[@]}") prm=$(median "${pr[@]}")
	padd=$(awk -v a="$p" -v b="$d" 'BEGIN { printf "%.3f", a - b }')
	nadd=$(awk -v a="$n" -v b="$d" 'BEGIN { printf "%.3f", a - b }')
	tr=$(ratio "$prm" "$nrm")
	kill -INT "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null || true
	add "### Overhead: \`pace proxy\` with no rule vs nginx \`proxy_pass\`"
	add ""
	add "One loopback upstream (\`benchtool upstream\`: /small answers 64 bytes), nginx $("$nginx" -v 2>&1 | sed 's|.*/||')"
	add "(\`worker_processes auto\`, \`proxy_pass\` to an upstream block with \`keepalive 64\`, HTTP/1.1) and"
	add "\`pace proxy --upstream\` (no rule, no -j) in front of it. wrk, alternated, $runs runs of 3 s each;"
	add "median latency with one connection (\`wrk -t1 -c1 --latency\`), requests a second with 32"
	add "(\`wrk -t2 -c32\`); wrk, the upstream and the proxy share the $(nproc) cores. Load average before: $load_ov."
	add ""
	add "| path | p50 latency, 1 connection (ms) | added to direct (ms) | requests/s, 32 connections | / nginx |"
	add "|---|---|---|---|---|"
	add "| direct to the upstream | $d (runs: ${ds[*]}) | 0 | | |"
	add "| nginx proxy_pass | $n (runs: ${ns[*]}) | $nadd | $nrm (runs: ${nr[*]}) | 1.00 |"
	add "| pace proxy | $p (runs: ${ps[*]}) | $padd | $prm (runs: ${pr[*]}) | $tr |"
	add ""
	verdicts+=("| #21 proxy added latency, 1 connection | p50 ≤ 0.1 ms over direct | +$padd ms (nginx +$nadd ms) | $(at_most "$padd" 0.1) |")
	verdicts+=("| #21 proxy throughput, 32 connections | ≥ 0.5x nginx proxy_pass | ${tr}x ($prm vs $nrm req/s) | $(awk -v r="$tr" 'BEGIN { print (r + 0 >= 0.5) ? "met" : "**missed**" }') |")
	cmdline "benchtool upstream -portfile F;  nginx -c nginx.conf (proxy_pass, keepalive 64);  pace proxy --upstream http://127.0.0.1:UPORT;  wrk -t1 -c1 -d3s --latency URL/small;  wrk -t2 -c32 -d3s URL/small"

	# One answer of 1 GiB, through a fresh proxy: the peak RSS of pace.
	log "pace proxy: a 1 GiB answer"
	rm -f "$tmp/pport0"
	"$pace" proxy --upstream "http://127.0.0.1:$uport" --port-file "$tmp/pport0" --summary none --progress never \
		>/dev/null 2>>"$tmp/errors.log" &
	ppid=$!
	pids+=("$ppid")
	for _ in $(seq 100); do [ -s "$tmp/pport0" ] && break; sleep 0.05; done
	purl=$(cat "$tmp/pport0")
	local got hwm
	got=$(curl -s -o /dev/null -w '%{size_download}' "$purl/bytes/1073741824" || echo 0)
	hwm=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$ppid/status" 2>/dev/null || echo "?")
	kill -INT "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null || true
	kill "$npid" "$upid" 2>/dev/null; wait "$npid" "$upid" 2>/dev/null || true
	add "A 1 GiB answer (\`/bytes/1073741824\`, made on the fly by the upstream) through a fresh \`pace proxy\`,"
	add "read by curl: $got bytes arrived; the proxy's peak RSS (VmHWM in /proc/PID/status) was $hwm MiB."
	add ""
	verdicts+=("| #21 proxy, a 1 GiB answer | peak RSS ≤ 50 MB | $hwm MiB ($got bytes through) | $(awk -v h="$hwm" -v g="$got" 'BEGIN { print (h != "?" && h + 0 <= 50 && g == 1073741824) ? "met" : "**missed**" }') |")
	cmdline "pace proxy --upstream http://127.0.0.1:UPORT --port-file F &  curl -s -o /dev/null \$(cat F)/bytes/1073741824;  grep VmHWM /proc/PID/status"
}

scenario_proxy() {
	log "pace proxy: clients that are not pace, through the proxy"
	add "## pace proxy (issue #21)"
	add ""
	add "Clients that know nothing of the rules send their calls as fast as they can through"
	add "\`pace proxy -r 5/s,12/3s\` to the strict server (5/s AND 12/3s). Makespan is the server's, first"
	add "to last accepted arrival (strictd's own count), against the fastest legal schedule for the same"
	add "number of calls; \"failed\" counts clients that got an answer other than 200 and proxies that did"
	add "not exit 130 on SIGINT. The margin is the proxy's (its \`--summary-file\`)."
	add ""
	table_head "client"
	optargs=(-rules 5/s,12/3s -n 60)
	series "$reps" proxy_clients python
	row "Python requests, ThreadPoolExecutor(8)"
	verdict "#21 proxy, Python requests ×8 threads, 60 calls" "0 refused, within 1%" "$(judge 0 1.01 60)"
	series "$reps" proxy_clients xargs
	row "xargs -P 8 curl"
	verdict "#21 proxy, xargs -P 8 curl, 60 calls" "0 refused, within 1%" "$(judge 0 1.01 60)"
	optargs=(-rules 5/s,12/3s -n 64)
	series "$reps" proxy_clients clients8
	row "8 clients at once (shell loops of 8 curls)"
	verdict "#21 proxy, 8 concurrent clients, 64 calls" "0 refused, within 2%" "$(judge 0 1.02 64)"
	optargs=(-rules 5/s,12/3s -n 60)
	series "$reps" proxy_clients shared
	row "2 proxies sharing --key, xargs -P 4 curl each, 30 calls each"
	verdict "#21 2 proxies sharing one --key, 60 calls" "0 refused, within 2%" "$(judge 0 1.02 60)"
	add ""
	add "A rule looser than the server's: \`pace proxy -r 20/s\`, the server allows 5/1s and answers 429 with"
	add "Retry-After; the proxy passes the 429s on (it never retries), learns the server's rate and pauses;"
	add "the client (\`curl --retry 10\`) retries. Optimum under the server's 5/1s."
	add ""
	table_head "client"
	optargs=(-rules 5/1s -n 60)
	series "$reps" proxy_clients loose
	row "xargs -P 8 curl --retry 10, proxy -r 20/s"
	verdict "#21 proxy, rule too loose (20/s vs server 5/1s)" "≤ 8 refused of 60, all served" "$(judge 8 99 60)"
	add ""
	cmdline "pace proxy --upstream http://127.0.0.1:PORT -r 5/s,12/3s --port-file F &  then:  python3 client.py \$(cat F) 60 8   # client.py: ThreadPoolExecutor(8), requests.Session per thread"
	cmdline "seq 60 | xargs -P 8 -I{} curl -sf -o /dev/null \$(cat F)/{}   # through the same proxy"
	cmdline "8 × at once: for i in 1..8; do curl -sf -o /dev/null \$(cat F)/cC-\$i; done"
	cmdline "2 × pace proxy --key proxyRUN --state DIR -r 5/s,12/3s, each: seq 30 | xargs -P 4 -I{} curl -sf -o /dev/null URL/pP-{}"
	cmdline "pace proxy -r 20/s (strictd -rules 5/1s -retry-after);  seq 60 | xargs -P 8 -I{} curl -sf --retry 10 -o /dev/null \$(cat F)/{}"
	proxy_overhead
}

# scenario_store: the admission cost of the two shared stores, by their Go
# benchmarks (rules that never make a caller wait): the local store, one
# caller and 4 processes sharing a quota (issue #22: at least 10,000
# admissions/s from 4 processes), and Redis.
scenario_store() {
	local ls1 ls4 rd1 rd4 aps
	log "store admission benchmarks (local store, Redis)"
	go test -run '^$' -bench . -benchmem -count 1 ./throttle/localstore ./throttle/redisrate >"$tmp/storebench.txt" 2>&1 || true
	add "### Admission cost: local store vs Redis, same machine"
	add ""
	add "\`go test -run '^\$' -bench . -benchmem ./throttle/localstore ./throttle/redisrate\`: rules that never"
	add "make a caller wait, so each admission is one store transaction (local store: lock, check that the"
	add "file kept open is current, check, record, commit; a commit waits for the disk once a second, or"
	add "always with \"sync\") or one Lua"
	add "script call (Redis, a redis-server on a free port started by the test). \"processes\" are separate"
	add "child processes sharing the key."
	add ""
	add '```'
	while IFS= read -r l; do add "$l"; done < <(grep -E '^(pkg:|Benchmark|FAIL|---)' "$tmp/storebench.txt")
	add '```'
	add ""
	ls1=$(sb localstore BenchmarkAdmit/log/1) ls4=$(sb localstore BenchmarkAdmit/log/4-processes)
	rd1=$(sb redisrate BenchmarkAdmit/log/1) rd4=$(sb redisrate BenchmarkAdmit/log/4-limiters)
	if [ -n "$ls4" ]; then
		aps=$(awk -v n="$ls4" 'BEGIN { printf "%.0f", 1e9/n }')
		verdicts+=("| #22 local store, 4 processes | ≥ 10,000 admissions/s | $aps admissions/s | $(awk -v a="$aps" 'BEGIN { if (a + 0 >= 10000) print "met"; else print "**missed**" }') |")
	fi
	if [ -n "$ls1" ] && [ -n "$rd1" ]; then
		add "- One caller: local store $(awk -v n="$ls1" 'BEGIN { printf "%.0f", n/1000 }') µs per admission, Redis" \
			"$(awk -v n="$rd1" 'BEGIN { printf "%.0f", n/1000 }') µs (local / Redis = $(ratio "$ls1" "$rd1"))."
		add "- Four: local store, 4 processes $(awk -v n="$ls4" 'BEGIN { printf "%.0f", n/1000 }') µs per admission (all" \
			"processes together); Redis, 4 limiters $(awk -v n="$rd4" 'BEGIN { printf "%.0f", n/1000 }') µs (local / Redis = $(ratio "$ls4" "$rd4"))."
		add ""
		verdicts+=("| #14 admission cost, local store vs Redis | report | 1 caller $(ratio "$ls1" "$rd1")x Redis; 4 callers $(ratio "$ls4" "$rd4")x Redis | reported |")
	fi
	cmdline "go test -run '^\$' -bench . -benchmem -count 1 ./throttle/localstore ./throttle/redisrate"
}

# sb PKG NAME prints ns/op of benchmark NAME of package PKG in the store
# benchmarks' output.
sb() { awk -v p="$1" -v n="$2" '$1 == "pkg:" { cur = $2 } cur ~ p"$" && $1 ~ "^"n"(-[0-9]+)?$" { print $3; exit }' "$tmp/storebench.txt"; }

# start_redis: starts a redis-server on a free port on 127.0.0.1 once, if
# there is one; sets $redis_port and $redis_url ("" without one).
redis_url=""
start_redis() {
	[ -n "$redis_url" ] && return 0
	have redis-server || return 0
	redis_port=$("$tmp/benchtool" freeport)
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
		>"$tmp/redis.out" 2>&1 &
	pids+=("$!")
	for _ in $(seq 100); do grep -q 'Ready to accept' "$tmp/redis.out" 2>/dev/null && break; sleep 0.05; done
	redis_url="redis://127.0.0.1:$redis_port"
}

# start_link TO DELAY JITTER: starts a link simulator (benchtool linksim)
# from a free port to TO; sets $link_port, adds its pid to $links.
links=()
start_link() {
	local f=$tmp/link$((${#links[@]} + 1))
	rm -f "$f"
	"$tmp/benchtool" linksim -to "$1" -delay "$2" -jitter "$3" -portfile "$f" &
	links+=("$!")
	pids+=("$!")
	for _ in $(seq 100); do [ -s "$f" ] && break; sleep 0.02; done
	link_port=$(cat "$f")
}

# stop_links: stops every link simulator started since the last call.
stop_links() {
	local l
	for l in "${links[@]}"; do kill -TERM "$l" 2>/dev/null || true; done
	for l in "${links[@]}"; do wait "$l" 2>/dev/null || true; done
	links=()
}

# fleet_slow DELAY JITTER [MARGIN [JOBS]]: the Redis fleet of issue #10 (4
# pace fetch processes, 50 URLs each, 20/1s AND 60/5s), each process
# reaching Redis and the strict server through links of its own that add
# DELAY ± JITTER one way, in each direction (issue #22). MARGIN ("" for
# the default) fixes --margin; JOBS is each process's -j (4). Every link
# is up before the first process starts, and the four start together: the
# optimum has every call ready at the start, and a process started a
# link set-up later (about 150 ms each) spreads the first burst, which a
# sliding window then repeats to the end.
fleet_slow() {
	local delay=$1 jitter=$2 margin=${3:-} jobs=${4:-4} fp=() failed=0 p
	local -a rports=() sports=()
	start_strict 20/1s,60/5s
	for p in 1 2 3 4; do
		start_link "127.0.0.1:$redis_port" "$delay" "$jitter"
		rports[p]=$link_port
		start_link "127.0.0.1:$port" "$delay" "$jitter"
		sports[p]=$link_port
		seq 50 | sed "s|^|http://127.0.0.1:${sports[p]}/p$p-|" >"$tmp/slow$p"
	done
	for p in 1 2 3 4; do
		"$pace" fetch -r 20/1s -r 60/5s ${margin:+--margin "$margin"} -j "$jobs" --retries 0 --summary none \
			--summary-file "$tmp/runs/slow-$run-$p.json" --joblog "$tmp/runs/slow-$run-$p.joblog" \
			--redis "redis://127.0.0.1:${rports[p]}" --key "slow$run" -a "$tmp/slow$p" >/dev/null 2>>"$tmp/runs/slow-$run-$p.err" &
		fp+=("$!")
	done
	for p in "${fp[@]}"; do wait "$p" || failed=$((failed + 1)); done
	stop_links
	strict_result "$failed"
	# Each call's lag from its admission (Redis's clock, the job logs) to
	# its arrival (the server's clock): one machine, one clock.
	"$tmp/benchtool" lags -rules 20/1s,60/5s -requests "$tmp/runs/requests-$run" \
		"$tmp/runs/slow-$run-"[1-4].joblog >"$tmp/runs/lags-$run" 2>&1 || true
}

# fromlags N AWK: for each of the last N runs, what the awk program AWK
# prints of its benchtool lags output ("? " if it prints nothing).
fromlags() {
	local r out
	for r in $(seq $((run - $1 + 1)) "$run"); do
		out=$(awk "$2" "$tmp/runs/lags-$r" 2>/dev/null)
		printf '%s ' "${out:-?}"
	done
}

# lagspans N: "MIN–MAX" (ms) of the lags from admission to arrival at the
# server, for each of the last N runs.
lagspans() { fromlags "$1" '$1 == "lags" { printf "%.0f–%.0f", $3, $5 }'; }

# closest N: for each of the last N runs, how close it came to a refusal
# (ms): the least slack over the count rules.
closest() { fromlags "$1" '$1 == "slack" { if (!f || $3 < m) m = $3; f = 1 } END { if (f) printf "%.0f", m }'; }

# efficiencies: optimum / makespan of every run of the last series.
efficiencies() { local r; for r in "${ratios[@]}"; do awk -v r="$r" 'BEGIN { if (r > 0) printf "%.3f ", 1/r; else printf "? " }'; done; }

# scenario_slowlink: fleet_slow at 20±5 ms and 40±15 ms (issue #22).
scenario_slowlink() {
	local d j target maxr
	start_redis
	if [ -z "$redis_url" ]; then
		verdicts+=("| #22 Redis fleet over slow links | 0 refused; efficiency ≥ 0.99 (20±5 ms), ≥ 0.98 (40±15 ms) | not measured: no redis-server | **not measured** |")
		return 0
	fi
	log "issue #22: Redis fleet over slow links"
	add "### Fleet over slow links: four \`pace fetch --redis\` processes, each behind its own links"
	add ""
	add "The Redis fleet above (4 × 50 calls, 20/s AND 60/5s, -j 4 each, \`--retries 0\`, default margin),"
	add "but every process reaches Redis and the strict server through link simulators of its own"
	add "(\`benchtool linksim\`, internal/linksim: a TCP proxy adding a one-way delay ± a uniform jitter"
	add "to every chunk, in each direction, never reordering a stream). Efficiency is the optimum"
	add "($(fastest -rules 20/1s,60/5s -n 200) s for the 200 calls) over the makespan at the server."
	add "Every link is up before the four processes start, together (until 2026-12-05 each process started"
	add "once its own links were up, about 150 ms after the one before, which spread the first burst and, through"
	add "the sliding windows, every burst after it)."
	add "pace asks Redis again after every wait, a round trip early; issue #22 measured 0 refused"
	add "in 3 runs and efficiency 0.96–0.97 at 20±5 ms, 0.93–0.94 at 40±15 ms. Reservations (the store"
	add "records a future instant, the process sleeps until it) were built and reverted: on the plain"
	add "Redis fleet they refused calls where this path refused none (docs/design.md, \"Reservations, tried\")."
	add ""
	add "What bounds the efficiency here (docs/design.md, \"What bounds a fleet over slow links\"): the last call"
	add "is three windows plus three margins after a call of the first burst (the 60/5s rule's chain), so the"
	add "margin in force caps it (the column \"at that margin\" is the optimum with every window widened by it); pace"
	add "sees round trips, four legs of jitter, and cannot tell the legs to the server from those back, so its margin"
	add "covers about twice the spread the server's arrivals have. With \`-j 4\` the fleet holds 16 slots for"
	add "bursts of 20, so four calls of every burst wait for an answer to free a slot; the \`-j 8\` rows have slots"
	add "to spare, and show what that costs."
	add ""
	add "\"lag\" is, for each run, the least and the most time from a call's admission (Redis's clock, the job"
	add "logs) to its arrival at the server (its own clock; the same machine's): the margin must cover the"
	add "difference between two calls' lags (docs/design.md). \"closest\" is how near each run came to a"
	add "refusal: the least, over the accepted arrivals, of how much later than a window after the Nth"
	add "arrival before it each came (N per window, either count rule; negative is a refusal)."
	add ""
	add "| link (one way) | refused | makespan / optimum | efficiency | margin (ms) | lag (ms) | closest (ms) | makespan / optimum at that margin | accepted | failed |"
	add "|---|---|---|---|---|---|---|---|---|---|"
	optargs=(-rules 20/1s,60/5s -n 200)
	for link in "20ms 5ms 0.99" "40ms 15ms 0.98"; do
		read -r d j target <<<"$link"
		[ -n "${SLOWLINKS:-}" ] && [ "$SLOWLINKS" != "$d" ] && continue
		maxr=$(awk -v e="$target" 'BEGIN { printf "%.4f", 1/e }')
		series "$fleets" fleet_slow "$d" "$j"
		add "| $d ± $j | ${refs[*]} | ${ratios[*]} | $(efficiencies)| ${margins[*]} | $(lagspans "${#refs[@]}")| $(closest "${#refs[@]}")| ${at_margin[*]} | ${accepted[*]} | ${failed[*]} |"
		verdict "#22 Redis fleet over links of $d ± $j" "0 refused, efficiency ≥ $target" \
			"$(judge 0 "$maxr" 200) (efficiency: $(efficiencies | sed 's/ $//'))"
	done
	if [ -n "${SLOWLINKS:-}" ]; then
		add ""
		return 0
	fi
	# pace sees the spread of its trips to Redis, not of those to the
	# server: with a margin fixed to cover both (4 × the jitter, + 5 ms),
	# what is left is the mechanism's own cost.
	for link in "20ms 5ms 25ms" "40ms 15ms 65ms"; do
		read -r d j m <<<"$link"
		series "$reps" fleet_slow "$d" "$j" "$m"
		add "| $d ± $j, \`--margin $m\` | ${refs[*]} | ${ratios[*]} | $(efficiencies)| ${margins[*]} | $(lagspans "${#refs[@]}")| $(closest "${#refs[@]}")| ${at_margin[*]} | ${accepted[*]} | ${failed[*]} |"
	done
	# With -j 8 the fleet's 32 slots hold a whole burst of 20.
	for link in "20ms 5ms" "40ms 15ms"; do
		read -r d j <<<"$link"
		series "$reps" fleet_slow "$d" "$j" "" 8
		add "| $d ± $j, \`-j 8\` | ${refs[*]} | ${ratios[*]} | $(efficiencies)| ${margins[*]} | $(lagspans "${#refs[@]}")| $(closest "${#refs[@]}")| ${at_margin[*]} | ${accepted[*]} | ${failed[*]} |"
	done
	add ""
	cmdline "4 × in parallel, each with its own two links: benchtool linksim -to 127.0.0.1:RPORT -delay D -jitter J -portfile F (and the same to PORT);  pace fetch -r 20/1s -r 60/5s -j 4 --retries 0 --summary none --redis redis://127.0.0.1:LINKED_RPORT --key slow\$RUN --joblog slowP.log -a slowP (-j 8, --margin M in the rows that say so)   # slowP: URLs on LINKED_PORT; strictd -rules 20/1s,60/5s; D ± J = 20ms ± 5ms, 40ms ± 15ms"
}

# scenario_throttle: package throttle's Go benchmarks against
# golang.org/x/time/rate, from one test binary. The uncontended ones run 5
# times each and are judged by their medians. The contended pair is run
# alternated, pace then x/time/rate, 3 × REPS times (9; 3 with QUICK=1),
# and compared by medians: on this 2-core machine one run of each, back to
# back, gave anything from 0.4x to 2.8x x/time/rate's time, with what else
# the machine was doing.
scenario_throttle() {
	log "throttle: Go benchmarks (pace vs golang.org/x/time/rate)"
	local crounds=$((3 * reps)) i pm xm
	local -a cps=() cxs=()
	go test -c -o "$tmp/throttle.test" ./throttle/
	"$tmp/throttle.test" -test.run '^$' -test.bench 'XTimeRate3$|Admit3Rules|AdmitN3Rules' -test.benchmem -test.count 5 >"$tmp/gobench.txt"
	"$tmp/throttle.test" -test.run '^$' -test.bench 'RuleMemory' -test.benchtime 1x >>"$tmp/gobench.txt"
	for i in $(seq "$crounds"); do
		cps+=("$("$tmp/throttle.test" -test.run '^$' -test.bench 'AdmitContended$' -test.benchtime 1s | awk '/^Benchmark/ { print $3 }')")
		cxs+=("$("$tmp/throttle.test" -test.run '^$' -test.bench 'XTimeRateContended$' -test.benchtime 1s | awk '/^Benchmark/ { print $3 }')")
	done
	pm=$(median "${cps[@]}") xm=$(median "${cxs[@]}")
	gb() { median $(awk -v n="$1" '$1 ~ "^"n"(-[0-9]+)?$" { print $3 }' "$tmp/gobench.txt"); }
	gba() { awk -v n="$1" '$1 ~ "^"n"(-[0-9]+)?$" { for (i = 1; i < NF; i++) if ($(i+1) == "allocs/op") print $i; exit }' "$tmp/gobench.txt"; }
	under() { awk -v ns="$1" -v al="$2" 'BEGIN { if (ns + 0 <= 200 && al == "0") print "met"; else print "**missed**" }'; }
	add "## Package throttle"
	add ""
	add "\`go test -c ./throttle/\`, then \`-test.bench 'XTimeRate3\$|Admit3Rules|AdmitN3Rules' -test.benchmem -test.count 5\` (the figures below are the medians) and \`-test.bench RuleMemory -test.benchtime 1x\`:"
	add ""
	add '```'
	while IFS= read -r l; do add "$l"; done < <(grep -E '^(Benchmark|cpu:)' "$tmp/gobench.txt")
	add '```'
	add ""
	add "- Uncontended \`Admit\` + \`Release\` under 3 rules: $(gb BenchmarkAdmit3Rules/exact) ns/op, $(gba BenchmarkAdmit3Rules/exact) allocs" \
		"($(under "$(gb BenchmarkAdmit3Rules/exact)" "$(gba BenchmarkAdmit3Rules/exact)") against <= 200 ns, 0 allocs);" \
		"three stacked x/time/rate limiters: $(gb BenchmarkXTimeRate3) ns/op," \
		"ratio $(ratio "$(gb BenchmarkAdmit3Rules/exact)" "$(gb BenchmarkXTimeRate3)")x."
	add "- Weighted (1 count rule, 2 cost rules, cost 7), through the Backend contract as the pool admits:" \
		"$(gb BenchmarkAdmitN3Rules) ns/op, $(gba BenchmarkAdmitN3Rules) allocs ($(under "$(gb BenchmarkAdmitN3Rules)" "$(gba BenchmarkAdmitN3Rules)"))."
	add "- 8 goroutines contending (\`Admit\` + \`Release\`, 3 rules; \`BenchmarkAdmitContended\`) against one x/time/rate limiter" \
		"(\`BenchmarkXTimeRateContended\`), $crounds runs of 1 s each, alternated: median $pm vs $xm ns/op, ratio $(ratio "$pm" "$xm")x" \
		"($(at_most "$pm" "$xm")). Runs: pace ${cps[*]} ns/op; x/time/rate ${cxs[*]} ns/op."
	add ""
	cmdline "go test -c -o throttle.test ./throttle/; $crounds times: throttle.test -test.run '^\$' -test.bench 'AdmitContended\$' -test.benchtime 1s; throttle.test -test.run '^\$' -test.bench 'XTimeRateContended\$' -test.benchtime 1s"
	verdicts+=("| throttle: 3-rule \`Admit\`+\`Release\` | <= 200 ns, 0 allocs | $(gb BenchmarkAdmit3Rules/exact) ns, $(gba BenchmarkAdmit3Rules/exact) allocs | $(under "$(gb BenchmarkAdmit3Rules/exact)" "$(gba BenchmarkAdmit3Rules/exact)") |")
	verdicts+=("| throttle: weighted 3-rule \`Admit\`+\`Release\` | <= 200 ns, 0 allocs | $(gb BenchmarkAdmitN3Rules) ns, $(gba BenchmarkAdmitN3Rules) allocs | $(under "$(gb BenchmarkAdmitN3Rules)" "$(gba BenchmarkAdmitN3Rules)") |")
	verdicts+=("| throttle: 8 goroutines contending | <= one x/time/rate limiter | median $pm vs $xm ns ($crounds alternated runs each: pace ${cps[*]}; x/time/rate ${cxs[*]}) | $(at_most "$pm" "$xm") |")
}

if [ -n "${ONLY:-}" ]; then
	for s in ${ONLY//,/ }; do
		case $s in
		run | exec | proxy | fetch | store | slowlink | throttle) "scenario_$s" ;;
		proxy_overhead) proxy_overhead ;; # scenario_proxy's part against nginx, and the 1 GiB answer
		*) echo "bench.sh: ONLY=$ONLY: no scenario $s (run, exec, proxy, proxy_overhead, fetch, store, slowlink, throttle)" >&2 && exit 2 ;;
		esac
	done
	write_report
	exit 0
fi

# Optima, from throttle's oracle.
opt30=$(fastest -rules 5/s,12/3s -n 30 -jobs 4)
opt200=$(fastest -rules 20/s,60/5s -n 200)
opt60loose=$(fastest -rules 5/s -n 60 -jobs 4)
opt60exec=$(fastest -rules 5/s,12/3s -n 60)
"$tmp/benchtool" items -n 60 -max 60 -seed 13 >"$tmp/items60"
read -r optw _ _ wtotal < <("$tmp/benchtool" fastest -rules 5/s,cost:100/s -items "$tmp/items60" -jobs 4)
seq 30 >"$tmp/items30"

# ---------------------------------------------------------------------------
scenario_throttle

# ---------------------------------------------------------------------------
# acc30 MODE MARGIN: 30 calls under 5/s,12/3s with -j 4 against strictd;
# MARGIN "" is the default (adaptive).
acc30() {
	local mode=$1 margin=$2 rc=0
	start_strict 5/s,12/3s
	if [ "$mode" = run ]; then
		"$pace" run -j 4 -r 5/s -r 12/3s ${margin:+--margin "$margin"} --summary none \
			--summary-file "$tmp/runs/acc-run-$run.json" -a "$tmp/items30" -- \
			curl -sf -o /dev/null "http://127.0.0.1:$port/{}" >/dev/null 2>>"$tmp/runs/acc-run-$run.err" || rc=1
	else
		"$pace" fetch -j 4 -r 5/s -r 12/3s ${margin:+--margin "$margin"} --retries 0 --summary none \
			--summary-file "$tmp/runs/acc-fetch-$run.json" -a "$tmp/items30" \
			"http://127.0.0.1:$port/{}" >/dev/null 2>>"$tmp/runs/acc-fetch-$run.err" || rc=1
	fi
	strict_result "$rc"
}

# settle: waits (at most 90 s) for the 1-minute load average to fall below
# a quarter per core, so that a "quiet" scenario does not inherit the load
# of the builds and benchmarks before it. Without /proc/loadavg it returns.
settle() {
	local lim l
	lim=$(awk -v n="$(nproc 2>/dev/null || echo 1)" 'BEGIN { print 0.25 * n }')
	for _ in $(seq 90); do
		l=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
		awk -v l="$l" -v m="$lim" 'BEGIN { exit !(l < m) }' && return
		sleep 1
	done
}

# busy_start N: N busy loops; busy_stop ends them.
busy=()
busy_start() {
	for _ in $(seq "$1"); do
		sh -c 'while :; do :; done' &
		busy+=("$!")
		pids+=("$!")
	done
	sleep 1
}
busy_stop() {
	for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${busy[@]}"; do wait "$p" 2>/dev/null || true; done
	busy=()
}

add "## Issue #10: exactness at the server"
add ""
add "The strict server (internal/strictserver, run as strictd) refuses with 429 any request that would"
add "put more than N arrivals (or cost) in a window (t-W, t], by its own clock on arrival. Makespan is"
add "the server's first to last accepted arrival; the optimum is the fastest legal schedule computed by"
add "\`throttle.ScheduleCosts\` for the same calls, rules and -j (calls taking no time). Every run is"
add "listed, in order; \"failed\" counts pace processes that exited non-zero (or items that failed)."
add ""
add "pace widens every rule's window by a margin, so that calls admitted a window apart still arrive a"
add "window apart when their trips to the server vary; by default the margin adapts to the lags pace"
add "measures and, for \`pace run\`, to what the jobs' ends prove (docs/design.md), and a fleet keeps its"
add "widest margin. \"margin\" is"
add "the largest margin a pace process of the run ended with (its \`--summary-file\`), and the next"
add "column compares the makespan with the fastest legal schedule whose windows are that much wider:"
add "about 1.000 means pace lost nothing but its margin."
add ""

log "issue #10: 30 calls, pace run + curl, quiet machine"
add "### 30 calls under 5/s AND 12/3s, -j 4, one \`curl\` per job (\`pace run\`), default margin"
add ""
add "Optimum: $opt30 s. Quiet: nothing else started by this script, after the load average fell below"
add "a quarter per core (at most 90 s of waiting). Loaded: four"
add "\`sh -c 'while :; do :; done'\` busy loops on the $(nproc) cores during the runs."
add ""
table_head "machine"
optargs=(-rules 5/s,12/3s -n 30 -jobs 4)
settle
series "$accs" acc30 run ""
row "quiet (load before: $(loadavg))"
verdict "#10 pace run + curl, quiet" "0 refused, within 1.5%" "$(judge 0 1.015 30)"
log "issue #10: 30 calls, pace run + curl, loaded machine"
busy_start 4
load_busy=$(loadavg)
series "$accs" acc30 run ""
load_busy_end=$(loadavg)
busy_stop
row "loaded, 4 busy loops (load $load_busy → $load_busy_end)"
verdict "#10 pace run + curl, loaded (4 busy loops)" "0 refused, within 5%" "$(judge 0 1.05 30)"
add ""
cmdline "pace run -j 4 -r 5/s -r 12/3s --summary none -a items30 -- curl -sf -o /dev/null 'http://127.0.0.1:PORT/{}'   # strictd -rules 5/s,12/3s; loaded: 4 × sh -c 'while :; do :; done' &"

log "issue #10: 30 calls, pace fetch (no regression)"
add "### No regression: \`pace fetch\`, the same 30 calls, default margin"
add ""
table_head "command"
series "$accs" acc30 fetch ""
row "pace fetch -j 4"
verdict "#10 pace fetch, 30 calls (no regression)" "0 refused, within 1%" "$(judge 0 1.01 30)"
add ""
cmdline "pace fetch -j 4 -r 5/s -r 12/3s --retries 0 --summary none -a items30 'http://127.0.0.1:PORT/{}'   # strictd -rules 5/s,12/3s"

# loose: 60 URLs, pace told 20/s, the server allows 5/1s and sends Retry-After.
loose() {
	local rc=0
	start_strict 5/1s -retry-after
	seq 60 | sed "s|^|http://127.0.0.1:$port/|" >"$tmp/urls60"
	"$pace" fetch -r 20/s -j 4 --summary none --summary-file "$tmp/runs/loose-$run.json" -a "$tmp/urls60" \
		>/dev/null 2>>"$tmp/runs/loose-$run.err" || rc=1
	strict_result "$rc"
}
log "issue #10: a rule too loose for the server"
add "### A rule too loose: \`pace fetch -r 20/s -j 4\`, 60 URLs, the server allows 5/1s"
add ""
add "The server answers 429 with Retry-After (seconds until admissible, rounded up). The optimum is the"
add "fastest legal schedule under the server's real rule, 5/1s: $opt60loose s. Default retries (3)."
add ""
table_head "command"
optargs=(-rules 5/1s -n 60 -jobs 4)
series "$reps" loose
row "pace fetch -r 20/s -j 4"
verdict "#10 rule too loose (20/s vs server 5/1s)" "≤ 8 refused per run, all 60 fetched, within 10%" "$(judge 8 1.10 60)"
add ""
cmdline "pace fetch -r 20/s -j 4 --summary none -a urls60   # strictd -rules 5/1s -retry-after"

# fleet_redis MARGIN: 4 pace fetch processes through Redis, 50 URLs each.
fleet_redis() {
	local margin=$1 fp=() failed=0 p
	start_strict 20/1s,60/5s
	for p in 1 2 3 4; do
		seq 50 | sed "s|^|http://127.0.0.1:$port/p$p-|" >"$tmp/fleet$p"
		"$pace" fetch -r 20/1s -r 60/5s ${margin:+--margin "$margin"} -j 4 --retries 0 --summary none \
			--summary-file "$tmp/runs/fleet-redis-$run-$p.json" \
			--redis "$redis_url" --key "bench$run" -a "$tmp/fleet$p" >/dev/null 2>>"$tmp/runs/fleet-redis-$run-$p.err" &
		fp+=("$!")
	done
	for p in "${fp[@]}"; do wait "$p" || failed=$((failed + 1)); done
	strict_result "$failed"
}

start_redis

if [ -n "$redis_url" ]; then
	log "issue #10: fleet of 4 pace fetch processes through Redis"
	add "### Fleet: four \`pace fetch --redis\` processes, 50 URLs each, 20/s AND 60/5s"
	add ""
	add "One local redis-server (started by this script on a free port), one strict server, -j 4 each,"
	add "\`--retries 0\`. Optimum for the 200 calls: $opt200 s."
	add ""
	table_head "margin"
	optargs=(-rules 20/1s,60/5s -n 200)
	series "$fleets" fleet_redis ""
	row "default (adaptive)"
	verdict "#10 Redis fleet, 4 × 50 calls" "0 refused, each within 2%" "$(judge 0 1.02 200)"
	add ""
	cmdline "4 × in parallel: pace fetch -r 20/1s -r 60/5s -j 4 --retries 0 --summary none --redis redis://127.0.0.1:RPORT --key bench\$RUN -a fleetP   # strictd -rules 20/1s,60/5s"
	scenario_slowlink
else
	verdicts+=("| #10 Redis fleet | 0 refused, within 2% | not measured: no redis-server | **not measured** |")
fi

# ---------------------------------------------------------------------------
# weighted MODE: 60 items with costs, 5/s AND cost:100/s, -j 4.
# MODE: fifo, reorder, cookbook, redis2.
weighted() {
	local mode=$1 rc=0 url p wp=()
	start_strict 5/s,cost:100/s -cost-param cost
	url="http://127.0.0.1:$port/{1}?cost={2}"
	case $mode in
	fifo | reorder)
		"$pace" fetch -r 5/s --cost-rate 100/s --cost '{2}' --colsep ' ' -j 4 --retries 0 \
			$([ "$mode" = reorder ] && echo --allow-reorder) --summary none \
			--summary-file "$tmp/runs/w-$mode-$run.json" -a "$tmp/items60" "$url" \
			>/dev/null 2>>"$tmp/runs/w-$mode-$run.err" || rc=1
		;;
	cookbook)
		"$tmp/cookbook" -items "$tmp/items60" -url "$url" -requests 5 -tokens 100 -per 1s -pause 1.5s \
			>"$tmp/runs/w-cookbook-$run.out" 2>&1 || rc=1
		rc=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$tmp/runs/w-cookbook-$run.out")
		rc=${rc:-1}
		;;
	redis2)
		awk 'NR % 2 == 1' "$tmp/items60" >"$tmp/items60-1"
		awk 'NR % 2 == 0' "$tmp/items60" >"$tmp/items60-2"
		for p in 1 2; do
			"$pace" fetch -r 5/s --cost-rate 100/s --cost '{2}' --colsep ' ' -j 4 --retries 0 --summary none \
				--redis "$redis_url" --key "w$run" --summary-file "$tmp/runs/w-redis2-$run-$p.json" \
				-a "$tmp/items60-$p" "$url" >/dev/null 2>>"$tmp/runs/w-redis2-$run-$p.err" &
			wp+=("$!")
		done
		for p in "${wp[@]}"; do wait "$p" || rc=$((rc + 1)); done
		;;
	esac
	strict_result "$rc"
}

log "issue #13: weighted quotas"
add "## Issue #13: weighted quotas"
add ""
add "60 items whose costs are drawn from 1..60 by \`benchtool items -n 60 -max 60 -seed 13\` (a PCG"
add "seeded with 13: the same file everywhere; total cost $wtotal), under 5 calls/s AND 100 cost/s,"
add "-j 4, against a strict server that counts both (the cost travels as \`?cost=N\`, read with"
add "\`-cost-param cost\`). The optimum is the greedy FIFO schedule (\`throttle.ScheduleCosts\`): $optw s."
add "An order other than FIFO may be faster; whatever the order, the cost rule alone needs more"
add "than $(awk -v c="$wtotal" 'BEGIN { n = int((c + 99) / 100); print n - 2 }') s ($wtotal at 100 per window (t-1s, t])."
add ""
add "Costs, in input order: $(cut -d' ' -f2 "$tmp/items60" | tr '\n' ' ' | sed 's/ $//')."
add ""
add "The \"arrival order\" column compares each run with the greedy FIFO optimum for its calls in the"
add "order the server accepted them (its record of arrivals, \`strictd -calls\`): a client that"
add "reorders, or two processes interleaving their halves, serve another order than the file's, and"
add "this is the optimum for the order they chose. For a FIFO client it says little: calls admitted"
add "together (when a window opens) reach the server in any order, and with these costs a few such"
add "swaps can change the FIFO optimum by seconds."
add ""
served="5/s,cost:100/s 4"
table_head "client"
optargs=(-rules 5/s,cost:100/s -items "$tmp/items60" -jobs 4)
series "$reps" weighted fifo
row "pace fetch (FIFO)"
verdict "#13 weighted, pace fetch (FIFO)" "0 refused, within 2% of FIFO optimum" "$(judge 0 1.02 60)"
series "$reps" weighted reorder
row "pace fetch --allow-reorder"
reorder_best=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1)
verdicts+=("| #13 weighted, --allow-reorder | report (may beat FIFO optimum) | $(summarize) | $(awk -v b="$reorder_best" 'BEGIN { if (b + 0 < 1) print "beats the FIFO optimum"; else print "does not beat the FIFO optimum" }') |")
series "$reps" weighted cookbook
row "cookbook approach (token buckets, 1.5 s pause after a 429)"
verdicts+=("| #13 weighted, cookbook approach | report | $(summarize) | for comparison |")
if [ -n "$redis_url" ]; then
	series "$reps" weighted redis2
	row "2 × pace fetch --redis (odd / even items)"
	verdict "#13 weighted, 2 processes through Redis" "0 refused, within 5%" \
		"$(judge 0 1.05 60) (arrival-order FIFO optimum: ${served_ratios[*]})"
fi
served=""
add ""
add "\"failed\" for the cookbook client is its count of items that failed after 5 attempts. The"
add "cookbook client (internal/benchtools/cookbook) follows api_request_parallel_processor.py: two"
add "token buckets (5 requests and 100 tokens, full at the start, refilled continuously at 5/s and"
add "100/s: the per-minute limits scaled to this scenario's 1 s windows), estimate (here: the true cost)"
add "then consume, one request sent per pass of a loop that sleeps 1 ms, no cap on requests in flight,"
add "up to 5 attempts, and after any 429 a pause before sending again. The cookbook pauses 15 s for"
add "per-minute limits; scaled to 1 s windows that would be 0.25 s, and 1.5 s was chosen instead"
add "(longer than the window, so a refused burst has fully left it before the next send)."
add ""
cmdline "pace fetch -r 5/s --cost-rate 100/s --cost '{2}' --colsep ' ' -j 4 --retries 0 [--allow-reorder] --summary none -a items60 'http://127.0.0.1:PORT/{1}?cost={2}'   # strictd -rules 5/s,cost:100/s -cost-param cost"
cmdline "cookbook -items items60 -url 'http://127.0.0.1:PORT/{1}?cost={2}' -requests 5 -tokens 100 -per 1s -pause 1.5s"
cmdline "2 × in parallel (odd lines, even lines): pace fetch -r 5/s --cost-rate 100/s --cost '{2}' --colsep ' ' -j 4 --retries 0 --redis redis://127.0.0.1:RPORT --key w\$RUN -a items60-P 'http://127.0.0.1:PORT/{1}?cost={2}'"

# ---------------------------------------------------------------------------
# Issue #14: the local store, once the build has it.

# fleet_local: 4 pace fetch processes through the local store.
fleet_local() {
	local fp=() failed=0 p
	start_strict 20/1s,60/5s
	for p in 1 2 3 4; do
		seq 50 | sed "s|^|http://127.0.0.1:$port/p$p-|" >"$tmp/fleet$p"
		"$pace" fetch -r 20/1s -r 60/5s -j 4 --retries 0 --summary none \
			--summary-file "$tmp/runs/fleet-local-$run-$p.json" \
			--key "bench$run" --state "$tmp/state" -a "$tmp/fleet$p" >/dev/null 2>>"$tmp/runs/fleet-local-$run-$p.err" &
		fp+=("$!")
	done
	for p in "${fp[@]}"; do wait "$p" || failed=$((failed + 1)); done
	strict_result "$failed"
}

# exec_loops: two shell loops of 30 pace exec -- curl each.
exec_loops() {
	local lp=() failed=0 l
	start_strict 5/s,12/3s
	for l in 1 2; do
		(
			bad=0
			for i in $(seq 30); do
				"$pace" exec --key "ex$run" --state "$tmp/state" -r 5/s -r 12/3s -- \
					curl -sf -o /dev/null "http://127.0.0.1:$port/l$l-$i" 2>>"$tmp/runs/exec-$run.err" || bad=$((bad + 1))
			done
			exit "$bad"
		) &
		lp+=("$!")
	done
	for l in "${lp[@]}"; do wait "$l" || failed=$((failed + $?)); done
	strict_result "$failed"
}

add "## Issue #14: one quota per host (the local store)"
add ""
if has_local; then
	log "issue #14: fleet of 4 pace fetch processes through the local store"
	add "### Fleet: four \`pace fetch --key K --state DIR\` processes, 50 URLs each, 20/s AND 60/5s"
	add ""
	add "Optimum for the 200 calls: $opt200 s. -j 4 each, \`--retries 0\`, default margin."
	add ""
	table_head "store"
	optargs=(-rules 20/1s,60/5s -n 200)
	series "$fleets" fleet_local
	row "local store"
	verdict "#14 local-store fleet, 4 × 50 calls" "0 refused, within 3%" "$(judge 0 1.03 200)"
	add ""
	cmdline "4 × in parallel: pace fetch -r 20/1s -r 60/5s -j 4 --retries 0 --summary none --key bench\$RUN --state DIR -a fleetP   # strictd -rules 20/1s,60/5s"

	log "issue #14: two shell loops of pace exec"
	add "### Two shell loops of 30 \`pace exec --key K -r 5/s -r 12/3s -- curl\` each"
	add ""
	add "Both loops run at once; each call is a new pace process. Optimum for 60 calls: $opt60exec s."
	add "\`pace exec\` writes no summary: its margin is its fixed default, 50 ms."
	add ""
	table_head "loops"
	optargs=(-rules 5/s,12/3s -n 60)
	series "$reps" exec_loops
	row "2 × 30 pace exec"
	verdict "#14 pace exec, 2 loops × 30 calls" "0 refused, within 10%" "$(judge 0 1.10 60)"
	add ""
	cmdline "2 × in parallel: for i in \$(seq 30); do pace exec --key ex\$RUN --state DIR -r 5/s -r 12/3s -- curl -sf -o /dev/null http://127.0.0.1:PORT/lL-\$i; done   # strictd -rules 5/s,12/3s"

	scenario_exec
else
	add "Not measured: this build has no \`pace exec\`, or \`pace fetch\` has no \`--state\`."
	add ""
	verdicts+=("| #14 local store | fleet 0 refused within 3%; exec loops within 10% | not in this build | **not measured** |")
fi

scenario_store

# ---------------------------------------------------------------------------
log "accuracy: fixed margins"
add "## Accuracy: 30 calls under 5/s AND 12/3s, -j 4, fixed margins"
add ""
add "The scenario of issue #10 with \`--margin\` fixed instead of adapted; $reps run(s) each, every run"
add "listed. Optimum: $opt30 s."
add ""
table_head "command, margin"
optargs=(-rules 5/s,12/3s -n 30 -jobs 4)
for mode in run fetch; do
	have curl || [ "$mode" = fetch ] || continue
	margins="0s 20ms 50ms"
	[ "$mode" = fetch ] && margins="0s 5ms 10ms"
	for margin in $margins; do
		log "accuracy: pace $mode --margin $margin"
		series "$reps" acc30 "$mode" "$margin"
		label="pace fetch"
		[ "$mode" = run ] && label="pace run (one curl per job)"
		row "$label, --margin $margin"
	done
done
add ""

if [ -n "$redis_url" ]; then
	log "redis: fleet with fixed margins"
	add "## Redis fleet with fixed margins"
	add ""
	add "The fleet of issue #10 (4 × 50 calls, 20/1s AND 60/5s) with \`--margin\` fixed; optimum $opt200 s."
	add ""
	table_head "margin"
	optargs=(-rules 20/1s,60/5s -n 200)
	for margin in 20ms 50ms; do
		series "$reps" fleet_redis "$margin"
		row "$margin"
	done
	add ""
fi

# ---------------------------------------------------------------------------
scenario_run

# ---------------------------------------------------------------------------
scenario_proxy

# ---------------------------------------------------------------------------
log "CPU while waiting"
seq 5 >"$tmp/items5"
TIMEFORMAT='%R %U %S'
read -r wall user sys < <({ time "$pace" run -r 1/s --summary none -a "$tmp/items5" -- true >/dev/null 2>&1; } 2>&1)
add "## CPU while waiting"
add ""
add "\`pace run -r 1/s\` over 5 items (4 s spent waiting on the rule): CPU time (user+sys) / wall time ="
add "$(awk -v u="$user" -v s="$sys" -v w="$wall" 'BEGIN { printf "%.3f", (u+s)/w }')."
add ""

# ---------------------------------------------------------------------------
have curl && scenario_fetch

# ---------------------------------------------------------------------------
write_report
