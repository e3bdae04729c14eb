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

# bench_ratio A B — A/B to three places, "?" unless both are positive numbers
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f\n", a / b; else print "?" }'; }

# bench_median FMT VALUES... — the median (the mean of the middle two for an even count) printed with the
# printf format FMT, "?" if any value is "?"
bench_median() {
	local fmt=$1; shift
	printf '%s\n' "$@" | sort -g | awk -v f="$fmt\n" '/\?/ { bad = 1 } { v[NR] = $1 }
		END { if (bad || NR == 0) print "?"; else if (NR % 2) printf f, v[(NR + 1) / 2];
		      else printf f, (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_cpu_ticks PID — the process's user + system clock ticks, all threads (nothing for no PID)
bench_cpu_ticks() { [ -n "$1" ] && awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }
