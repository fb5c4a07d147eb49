# GET /metrics (control/api/metrics.c): kilnd in Prometheus's text format.
# Sourced by run.sh; its cases are METRICS_TESTS.
# shellcheck shell=bash

METRICS_TESTS="t_metrics"

# metric NAME{LABELS}: its value in $T/metrics, or nothing.
metric() {
	awk -v k="$1" '$1 == k { print $2 }' "$T/metrics"
}

t_metrics() {
	local id st
	id=$("$KILN" create | tail -n 1)
	"$KILN" exec "$id" -- true >/dev/null
	"$KILN" exec "$id" -- sh -c 'exit 3' >/dev/null 2>&1
	st=$(curl -sS --unix-socket "$SOCK" -o "$T/metrics" -D "$T/metrics.h" -w '%{http_code}' \
		http://k/metrics)
	[ "$st" = 200 ] && grep -qi '^content-type: text/plain; version=0.0.4' "$T/metrics.h"
	check $? "GET /metrics is 200 in the text format, version 0.0.4 ($st)"
	[ "$(metric 'kiln_sandboxes{state="running"}')" -ge 1 ] &&
		[ "$(metric 'kiln_api_operations_total{op="create",result="ok"}')" -ge 1 ] &&
		[ "$(metric 'kiln_api_operations_total{op="exec",result="ok"}')" -ge 2 ] &&
		[ "$(metric 'kiln_api_operation_seconds_count{op="exec"}')" -ge 2 ]
	check $? "it counts the running sandbox, the create and both execs"
	[ -n "$(metric "kiln_sandbox_memory_pss_bytes{sandbox=\"$id\"}")" ] &&
		[ -n "$(metric "kiln_sandbox_cpu_seconds_total{sandbox=\"$id\"}")" ]
	check $? "and the sandbox's VMM memory (PSS) and CPU time"
	# The guest's memory and the vsock bytes come from the sampler (every
	# --metrics-interval, 10 s here): 1 MiB of output must show in them.
	# (A real VM's: the fake VMM has no vsock device to count, and its
	# agent reports the host's memory.)
	[ $FAKE = 0 ] && metrics_guest "$id"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$T/metrics" >"$T/promtool" 2>&1
		check $? "promtool check metrics accepts it ($(head -c 200 "$T/promtool"))"
	else
		not_ok "promtool check metrics accepts it (promtool is missing: apt-get install prometheus)"
	fi
	st=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")
	[ "$st" = 401 ]
	check $? "over TCP without the API key it is 401 ($st)"
	"$KILN" rm "$id"
}

# metrics_guest ID: the sampler's series of a running sandbox: its guest's
# memory and its vsock bytes after 1 MiB of output.
metrics_guest() {
	local id=$1 i used total from to
	"$KILN" exec "$id" -- head -c 1048576 /dev/zero | wc -c >"$T/n"
	for i in $(seq 30); do
		sleep 1
		curl -sS --unix-socket "$SOCK" -o "$T/metrics" http://k/metrics
		from=$(metric "kiln_sandbox_vsock_bytes_total{sandbox=\"$id\",direction=\"from_guest\"}")
		used=$(metric "kiln_sandbox_guest_memory_used_bytes{sandbox=\"$id\"}")
		[ "${from:-0}" -ge 1048576 ] && [ -n "$used" ] && break
	done
	to=$(metric "kiln_sandbox_vsock_bytes_total{sandbox=\"$id\",direction=\"to_guest\"}")
	total=$(metric "kiln_sandbox_guest_memory_bytes{sandbox=\"$id\"}")
	[ "$(cat "$T/n")" = 1048576 ] && [ "${from:-0}" -ge 1048576 ] && [ "${to:-0}" -gt 0 ] &&
		[ "${from:-0}" -lt $((8 << 20)) ]
	check $? "the vsock bytes count the 1 MiB the guest sent (from $from, to $to after ${i}s)"
	[ -n "$used" ] && [ "$used" -gt 0 ] && [ "$used" -lt "${total:-0}" ] &&
		[ "$total" -le $((1 << 30)) ]
	check $? "the guest's memory in use, as it reports it ($used of $total)"
}
