# shellcheck shell=bash
# bench/lib.sh — the summary rows every bench prints and scripts/run-bench gathers into one table: one
# definition, so the benches' rows and the gathered table cannot drift apart. Sourced, not run.

# bench_row FIGURE OURS PEER RATIO GOAL — one row of the table
bench_row() { printf '| %-52s | %9s | %9s | %6s | %-40s |\n' "$@"; }

# bench_header — the table's heading and rule
bench_header() {
	bench_row figure ours peer ratio goal
	bench_row "----------------------------------------------------" "---------" "---------" "------" \
		"----------------------------------------"
}

# bench_met_min VALUE GOAL — "met" when a higher-is-better VALUE reaches GOAL, else "short"; "?" when VALUE
# is not a number (a figure that could not be measured). A report, not a test.
bench_met_min() { awk -v r="$1" -v g="$2" 'BEGIN { if (r !~ /^[+]?[0-9.]+$/) print "?"; else if (r + 0 >= g + 0) print "met"; else print "short" }'; }

# bench_met_max VALUE GOAL — the same for a lower-is-better VALUE (milliseconds, added latency)
bench_met_max() { awk -v r="$1" -v g="$2" 'BEGIN { if (r !~ /^[+]?[0-9.]+$/) print "?"; else if (r + 0 <= g + 0) print "met"; else print "short" }'; }
