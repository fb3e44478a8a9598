#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh: runs each libFuzzer harness for a while and prints a table of executions, coverage and
# crashes. Usage: run.sh BUILD_FUZZ_DIR SECONDS HARNESS...  (the Makefile's `fuzz` target).
dir=$1 secs=$2
shift 2
mkdir -p "$dir/log"
total=0
rows=""
for h in "$@"; do
	mkdir -p "$dir/corpus/$h" "$dir/artifacts/$h"
	rm -f "$dir/artifacts/$h"/crash-* "$dir/artifacts/$h"/leak-* "$dir/artifacts/$h"/timeout-* "$dir/artifacts/$h"/oom-*
	echo "fuzz: $h for ${secs}s" >&2
	seeds="fuzz/corpus/$h"
	[ -d "$seeds" ] || seeds=""
	"$dir/fuzz_$h" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$dir/artifacts/$h/" "$dir/corpus/$h" $seeds >"$dir/log/$h.log" 2>&1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log/$h.log" | tail -n 1)
	cov=$(grep -E '^#[0-9]+' "$dir/log/$h.log" | grep -o 'cov: [0-9]*' | tail -n 1 | sed 's/cov: //')
	crashes=$(ls "$dir/artifacts/$h" | grep -c -E '^(crash|leak|timeout|oom)-')
	total=$((total + crashes))
	rows="$rows$(printf '%-10s %12s %8s %8s' "$h" "${execs:-?}" "${cov:-?}" "$crashes")
"
done
printf '%-10s %12s %8s %8s\n' harness executions cov crashes
printf '%s' "$rows"
if [ "$total" -gt 0 ]; then
	echo "fuzz: $total crash(es): inputs in $dir/artifacts/HARNESS/, logs in $dir/log/" >&2
	exit 1
fi
