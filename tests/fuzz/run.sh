#!/bin/sh
# Run libFuzzer targets (tests/fuzz/fuzz.mk): each for SECONDS on its seeds
# (tests/fuzz/corpus/TARGET) and what earlier runs found
# (build/fuzz/corpus/TARGET). Prints executions per second and the corpus
# size per target; a crash fails the run, its input kept under build/fuzz/.
#
#   sh tests/fuzz/run.sh SECONDS TARGET...
set -u
cd "$(dirname "$0")/../.." || exit 1
secs=$1
shift
failed=0
passed=0
for t in "$@"; do
	found=build/fuzz/corpus/$t
	mkdir -p "$found" "tests/fuzz/corpus/$t"
	log=build/fuzz/$t.log
	# -rss_limit_mb and -malloc_limit_mb: an input that makes a parser
	# allocate what a file merely claims is a failure too.
	if build/fuzz/"$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
		-malloc_limit_mb=256 -print_final_stats=1 -artifact_prefix=build/fuzz/"$t"- \
		"$found" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
		execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
		eps=$(awk '/stat::average_exec_per_sec/ { print $2 }' "$log")
		units=$(ls "$found" | wc -l)
		printf 'ok   %-18s %8s runs, %7s/s, %s inputs found\n' "$t" "${execs:-?}" "${eps:-?}" "$units"
		passed=$((passed + 1))
	else
		echo "FAIL $t: (see $log)"
		grep -E 'ERROR|SUMMARY|==[0-9]+==|Test unit written' "$log" | head -n 12 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
