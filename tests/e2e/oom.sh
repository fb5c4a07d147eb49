# shellcheck shell=bash
# kilnd end-to-end tests of a guest that runs out of memory (sourced by
# run.sh, whose helpers and variables they use): the exec stream ends with
# the command's status and the reason, whether the library OS killed a
# process that had no page, or the agent had no memory for the output. Real
# VMs only: the fake VMM runs the host's agent, and a memory hog there
# would be the host's.

# shellcheck disable=SC2034 # run.sh runs them
OOM_TESTS="t_oom"

# exec_events ID SHELL-COMMAND: the raw exec events, in $T/events
exec_events() {
	local body
	body=$(printf '%s' "$2" | python3 -c 'import json,sys; print(json.dumps({"cmd": sys.stdin.read()}))')
	curl -sS --unix-socket "$SOCK" -o "$T/events" -d "$body" "http://k/sandboxes/$1/exec"
}

t_oom() {
	local id rc last
	if [ $FAKE = 1 ]; then
		echo "# skip t_oom: needs a real VM (KILN_E2E_VMM=build/bin/kiln-vmm)"
		return
	fi
	id=$("$KILN" create --mem 64) || { not_ok "create a 64 MiB sandbox"; return; }
	# shellcheck disable=SC2016 # the guest's shell expands these
	"$KILN" exec "$id" -- sh -c 'x=a; while :; do x="$x$x"; done' 2>"$T/err"
	rc=$?
	[ $rc = 137 ] && grep -q "the command was killed: the sandbox ran out of memory" "$T/err"
	check $? "a shell that allocates until the library OS kills it: 137 and why ($(cat "$T/err"))"
	# shellcheck disable=SC2016
	exec_events "$id" 'x=a; while :; do x="$x$x"; done'
	last=$(tail -1 "$T/events")
	grep -q '"type":"exit","exitCode":-1,"signal":9,.*"oom":true,"reason":"killed: the sandbox ran out of memory"' <<<"$last"
	check $? "the exec stream ends with signal 9 and the reason ($last)"
	# a child of the command killed for memory: the shell exits 137
	# shellcheck disable=SC2016
	exec_events "$id" 'sh -c '\''x=a; while :; do x="$x$x"; done'\''; exit $?'
	last=$(tail -1 "$T/events")
	grep -q '"exitCode":137,"signal":0,.*"oom":true' <<<"$last"
	check $? "a process of its session killed for memory marks the command's exit too ($last)"
	# the agent has no memory for the output: tmpfs holds it all
	exec_events "$id" 'rm -f /tmp/big; dd if=/dev/zero of=/tmp/big bs=4k 2>/dev/null; yes'
	last=$(tail -1 "$T/events")
	grep -q '"signal":9,.*"oom":true' <<<"$last"
	check $? "output the agent cannot hold: the command is killed and the stream says why ($last)"
	out=$("$KILN" exec "$id" -- sh -c 'rm /tmp/big; echo still-here')
	[ "$out" = still-here ]
	check $? "the sandbox goes on once the memory is back"
	# shellcheck disable=SC2016
	exec_events "$id" 'kill -KILL $$'
	last=$(tail -1 "$T/events")
	grep -q '"signal":9' <<<"$last" && ! grep -q oom <<<"$last"
	check $? "a SIGKILL that is not for memory is not called one ($last)"
	if have_base; then
		"$KILN" rm "$id"
		id=$("$KILN" create --image base --mem 96) || { not_ok "create a base sandbox"; return; }
		"$KILN" exec "$id" -- python3 -c 'a = []
while True: a.append(bytearray(1 << 20))' 2>"$T/err"
		rc=$?
		[ $rc = 137 ] && grep -q "ran out of memory" "$T/err"
		check $? "python3 allocating until killed: 137 and why (rc $rc)"
	fi
	"$KILN" rm "$id"
}
