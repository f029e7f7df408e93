#!/usr/bin/env bash
# Benchmarks pace against its peers on this machine and writes
# docs/benchmarks.md. Every figure that matters is a ratio between runs made
# here, in the same invocation: the machines are shared and noisy.
#
#   scripts/bench.sh            # everything (about 7 minutes)
#   QUICK=1 scripts/bench.sh    # fewer repetitions
#
# Only loopback servers that this script starts receive traffic.
set -euo pipefail
cd "$(dirname "$0")/.."

reps=${REPS:-3}
[ -n "${QUICK:-}" ] && reps=1
out=docs/benchmarks.md
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

log() { printf '==> %s\n' "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

log "building"
go build -o "$tmp/pace" .
go build -o "$tmp/strictd" ./internal/strictserver/strictd
pace=$tmp/pace

# now_ns prints the time in nanoseconds.
now_ns() { date +%s%N; }

# median prints the median of its arguments (numbers).
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# ratio A B prints A/B with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a/b }'; }

# start_strict RULES [ARGS...]: starts strictd, sets $port.
start_strict() {
	local rules=$1
	shift
	rm -f "$tmp/port"
	"$tmp/strictd" -rules "$rules" -portfile "$tmp/port" "$@" >"$tmp/strictd.out" &
	strict_pid=$!
	pids+=("$strict_pid")
	for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
	port=$(cat "$tmp/port")
}

# stop_strict: stops strictd and prints its final JSON stats line.
stop_strict() {
	kill -TERM "$strict_pid"
	wait "$strict_pid" 2>/dev/null || true
	cat "$tmp/strictd.out"
}

# json_field JSON FIELD prints a numeric field of a flat JSON object.
json_field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\([-0-9.e]*\).*/\1/p"; }

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

# ---------------------------------------------------------------------------
log "throttle: Go benchmarks (pace vs golang.org/x/time/rate)"
go test -run '^$' -bench 'Wait|XTime|Acquire' -benchmem -count 1 ./throttle/ >"$tmp/gobench.txt"
go test -run '^$' -bench 'RuleMemory' -benchtime 1x ./throttle/ >>"$tmp/gobench.txt"
gb() { awk -v n="$1" '$1 ~ "^"n"(-[0-9]+)?$" { print $3; exit }' "$tmp/gobench.txt"; }
add "## Package throttle"
add ""
add "\`go test -run '^\$' -bench 'Wait|XTime|Acquire' -benchmem ./throttle/\` and \`-bench RuleMemory -benchtime 1x\`:"
add ""
add '```'
while IFS= read -r l; do add "$l"; done < <(grep -E '^(Benchmark|cpu:)' "$tmp/gobench.txt")
add '```'
add ""
add "- Uncontended admission under 3 rules: $(gb BenchmarkWait3Rules/exact) ns/op (goal < 200 ns, 0 allocs);" \
	"three stacked x/time/rate limiters: $(gb BenchmarkXTimeRate3) ns/op," \
	"ratio $(ratio "$(gb BenchmarkWait3Rules/exact)" "$(gb BenchmarkXTimeRate3)")x."
add "- 8 goroutines contending: $(gb BenchmarkWaitContended) ns/op vs one x/time/rate limiter $(gb BenchmarkXTimeRateContended) ns/op."
add ""

# ---------------------------------------------------------------------------
# accuracy MODE MARGIN: 30 calls under 5/s,12/3s with -j 4 against strictd;
# prints "refused makespan_seconds".
accuracy() {
	local mode=$1 margin=$2 stats
	start_strict 5/s,12/3s
	seq 30 >"$tmp/items30"
	if [ "$mode" = run ]; then
		"$pace" run -j 4 -r 5/s,12/3s --margin "$margin" --summary none -a "$tmp/items30" -- \
			curl -sf -o /dev/null "http://127.0.0.1:$port/{}" >/dev/null 2>&1 || true
	else
		"$pace" fetch -j 4 -r 5/s,12/3s --margin "$margin" --retries 0 --summary none -a "$tmp/items30" \
			"http://127.0.0.1:$port/{}" >/dev/null 2>&1 || true
	fi
	stats=$(stop_strict)
	echo "$(json_field "$stats" refused) $(json_field "$stats" makespan)"
}

add "## Accuracy: 30 calls under 5/s AND 12/3s, -j 4, against a strict server"
add ""
add "The server (internal/strictserver, run as strictd) refuses any request that would put more than N"
add "arrivals in a window (t-W, t], by its own clock on arrival. The fastest legal schedule takes 7.0 s."
add "Each cell lists every run: requests refused, and makespan (first to last accepted arrival) / 7.0 s."
add ""
add "| command | margin | refused | makespan / optimum |"
add "|---|---|---|---|"
for mode in run fetch; do
	have curl || [ "$mode" = fetch ] || continue
	margins="0s 20ms 50ms"
	[ "$mode" = fetch ] && margins="0s 5ms 10ms"
	for margin in $margins; do
		log "accuracy: pace $mode --margin $margin"
		refs=() spans=()
		for _ in $(seq "$reps"); do
			ref="" ms=""
			accuracy "$mode" "$margin" >"$tmp/acc" 2>>"$tmp/acc.err" || true
			read -r ref ms <"$tmp/acc" || true
			refs+=("${ref:-?}")
			spans+=("$(ratio "${ms:-0}" 7.0)")
		done
		label="pace fetch"
		[ "$mode" = run ] && label="pace run (one curl per job)"
		add "| $label | $margin | ${refs[*]} | ${spans[*]} |"
	done
done
add ""

# ---------------------------------------------------------------------------
log "overhead: 2000 true jobs, 8 in flight"
seq 2000 >"$tmp/items2000"
xs=() ps=() gs=()
for _ in $(seq "$reps"); do
	xs+=("$(time_cmd sh -c "xargs -P8 -n1 true <'$tmp/items2000'")")
	ps+=("$(time_cmd "$pace" run -j 8 --summary none -a "$tmp/items2000" -- true)")
	if have parallel; then gs+=("$(time_cmd sh -c "parallel -j8 true <'$tmp/items2000'")"); fi
done
x=$(median "${xs[@]}")
p=$(median "${ps[@]}")
add "## Overhead: 2000 \`true\` jobs, 8 in flight, no rule"
add ""
add "Median wall time of $reps runs each, as a ratio to \`xargs -P8 -n1 true\` in the same run."
add ""
add "| runner | wall / xargs |"
add "|---|---|"
add "| xargs -P8 -n1 | 1.00 |"
add "| pace run -j 8 | $(ratio "$p" "$x") |"
if [ ${#gs[@]} -gt 0 ]; then
	g=$(median "${gs[@]}")
	add "| GNU parallel -j8 | $(ratio "$g" "$x") |"
	add ""
	add "GNU parallel / pace: $(ratio "$g" "$p")x."
fi
add ""

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
if have curl; then
	log "fetch throughput: 5000 URLs, 32 in flight"
	start_strict ""
	seq 5000 | sed "s|^|http://127.0.0.1:$port/|" >"$tmp/urls"
	{
		while read -r u; do printf 'url = "%s"\noutput = "/dev/null"\n' "$u"; done <"$tmp/urls"
	} >"$tmp/curl.cfg"
	cs=() fs=()
	for _ in $(seq "$reps"); do
		cs+=("$(time_cmd curl -s --parallel --parallel-max 32 --config "$tmp/curl.cfg")")
		fs+=("$(time_cmd "$pace" fetch -j 32 --summary none -a "$tmp/urls")")
	done
	stop_strict >/dev/null
	c=$(median "${cs[@]}")
	f=$(median "${fs[@]}")
	add "## Fetch throughput: 5000 URLs, 32 in flight, no rule, local server"
	add ""
	add "Median of $reps runs: pace fetch -j 32 takes $(ratio "$f" "$c")x the wall time of"
	add "\`curl --parallel --parallel-max 32\` (goal: at most 1.25, below 1 is faster than curl)."
	add ""
fi

# ---------------------------------------------------------------------------
# Redis: a fleet of 4 pace processes sharing 20/1s AND 60/5s, and the cost
# of an admission. Needs redis-server; Redis listens on a unix socket only.
if have redis-server; then
	log "redis: fleet of 4 pace fetch processes"
	redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no --dir "$tmp" >"$tmp/redis.out" 2>&1 &
	pids+=("$!")
	for _ in $(seq 100); do [ -S "$tmp/redis.sock" ] && break; sleep 0.05; done
	# fleet MARGIN KEY: prints "refused makespan_seconds failed_processes".
	fleet() {
		local margin=$1 key=$2 fleet_pids=() failed=0 stats
		start_strict 20/1s,60/5s
		for p in 1 2 3 4; do
			seq 50 | sed "s|^|http://127.0.0.1:$port/p$p-|" >"$tmp/fleet$p"
			"$pace" fetch -r 20/1s,60/5s --margin "$margin" -j 4 --retries 0 --summary none \
				--redis "unix://$tmp/redis.sock" --key "$key" -a "$tmp/fleet$p" >/dev/null 2>&1 &
			fleet_pids+=("$!")
		done
		for p in "${fleet_pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
		stats=$(stop_strict)
		echo "$(json_field "$stats" refused) $(json_field "$stats" makespan) $failed"
	}
	add "## Redis: 4 processes share 20/1s AND 60/5s"
	add ""
	add "Four \`pace fetch --redis\` processes, 50 URLs each, one local Redis, against the strict server."
	add "The fastest legal schedule for the 200 calls takes 15.0 s (throttle.Fastest). Every run listed."
	add ""
	add "| margin | refused | makespan / optimum |"
	add "|---|---|---|"
	n=0
	for margin in 20ms 50ms; do
		refs=() spans=()
		for _ in $(seq "$reps"); do
			n=$((n + 1))
			ref="" ms=""
			fleet "$margin" "bench$n" >"$tmp/fleet" 2>>"$tmp/acc.err" || true
			read -r ref ms _ <"$tmp/fleet" || true
			refs+=("${ref:-?}")
			spans+=("$(ratio "${ms:-0}" 15.0)")
		done
		add "| $margin | ${refs[*]} | ${spans[*]} |"
	done
	add ""
	log "redis: admissions per second"
	go test -run '^$' -bench FleetAdmit -count 1 ./cmd/ >"$tmp/redisbench.txt"
	add "Admissions through one local Redis (\`go test -run '^\$' -bench FleetAdmit ./cmd/\`; separate"
	add "processes, one admission at a time each, two rules that never bind):"
	add ""
	add '```'
	while IFS= read -r l; do add "$l"; done < <(grep -E '^Benchmark' "$tmp/redisbench.txt")
	add '```'
	add ""
fi

# ---------------------------------------------------------------------------
{
	echo "# Benchmarks"
	echo
	echo "Written by \`scripts/bench.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(go version | cut -d' ' -f3)."
	echo "Absolute times vary with the machine's load; compare the ratios, which come from runs made"
	echo "side by side in the same invocation."
	echo
	printf '%s\n' "${report[@]}"
} >"$out"
log "wrote $out"
