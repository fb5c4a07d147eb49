#!/bin/bash
# kilnd e2e tests of the VMMs' jail (vmm/jail/, README.md "The jail"),
# sourced by tests/e2e/run.sh: each VMM gets a uid of its own, a VMM killed
# by its seccomp filter or by its cgroup's memory limit ends its sandbox
# with the reason while kilnd goes on, and --no-jail reaches the VMM. Real
# VMMs as root only; the fake VMM has no jail (said, not passed).
# shellcheck disable=SC2154 # T, DATA, SOCK, KILN ... come from run.sh

JAIL_TESTS="t_jail_ids t_jail_seccomp t_jail_oom t_jail_snapshot_link"

jail_runs() {
	if [ $FAKE = 1 ] || [ "$(id -u)" != 0 ]; then
		echo "# $1: not run (needs real VMs and root)"
		return 1
	fi
}

# The VMM of sandbox $1: the pid kilnd recorded, pid 1 of its own pid
# namespace (kilnd made it: no waiting parent in between).
vmm_pid() {
	local p
	p=$(cut -d' ' -f1 "$DATA/sandboxes/$1/run/vmm.pid")
	awk '/^NSpid:/ && $3 == 1 { print $2 }' "/proc/$p/status"
}
vmm_uid() { awk '/^Uid:/ { print $2 }' "/proc/$(vmm_pid "$1")/status" 2>/dev/null; }

restart_kilnd_with() {
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	start_kilnd "$@"
}

# The fake VMM, jailed all the same (kilnd gives it an id and a pid
# namespace; it ignores the rest): run.sh starts it with --no-jail.
start_kilnd_jailed_fake() {
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	# shellcheck disable=SC2046 # vmm_opts' words are split on purpose
	"$KILND" --data-dir "$DATA" $(vmm_opts | sed 's/ --no-jail$//') --listen-tcp "127.0.0.1:$PORT" \
		>>"$T/kilnd.log" 2>&1 &
	KILND_PID=$!
	wait_socket "$SOCK" || { echo "e2e: kilnd did not start"; exit 1; }
}

t_jail_ids() {
	jail_runs t_jail_ids || return 0
	local a b ua ub
	a=$("$KILN" create) && b=$("$KILN" create) || { not_ok "create for jail ids"; return; }
	ua=$(vmm_uid "$a")
	ub=$(vmm_uid "$b")
	[ -n "$ua" ] && [ -n "$ub" ] && [ "$ua" != "$ub" ] && [ "$ua" -gt 900000 ] &&
		[ "$ub" -gt 900000 ] && [ "$(stat -c %u "$DATA/sandboxes/$a/vmm-out")" = "$ua" ] &&
		[ "$(stat -c %u "$DATA/sandboxes/$a")" = 0 ] &&
		[ "$(cut -d' ' -f3 "$DATA/sandboxes/$a/run/vmm.pid")" = "$ua" ]
	check $? "two sandboxes' VMMs run as uids of their own ($ua, $ub), each owning its vmm-out"
	# What kilnd writes as root in the sandbox's directory and its run
	# directory is not the VMM's to replace (the sandbox's directory is only
	# the jail's read-only root there: the run directory and vmm-out are
	# what is bound in it); kilnd's own files are out of its sight.
	python3 tests/integration/jail_probe.py "$(vmm_pid "$a")" "$ua" \
		"w:$DATA/sandboxes/$a/run/console.log" "w:$DATA/sandboxes/$a/run/vmm.pid" \
		"c:$DATA/sandboxes/$a/x" "c:$DATA/sandboxes/$a/run/x" "c:$DATA/sandboxes/$a/vmm-out/x" "$DATA/kilnd.db" "$DATA/sandboxes/$b/run/console.log" \
		>"$T/probe" 2>&1
	[ "$(tr '\n' ' ' <"$T/probe")" = "$DATA/sandboxes/$a/run/console.log EACCES $DATA/sandboxes/$a/run/vmm.pid EACCES $DATA/sandboxes/$a/x EROFS $DATA/sandboxes/$a/run/x EACCES $DATA/sandboxes/$a/vmm-out/x ok $DATA/kilnd.db ENOENT $DATA/sandboxes/$b/run/console.log ENOENT " ]
	check $? "its VMM cannot write kilnd's files in the sandbox's directory, nor see the store or other sandboxes ($(tr '\n' ' ' <"$T/probe"))"
	# Every thread of the VMM is in its cgroup leaf (the join is made on a
	# thread of its own, vmm/jail/jail.c): the v2 one, or the memory, pids
	# and cpu v1 ones where the host has those controllers only in v1.
	local want=v1 leaves
	grep -qsw memory /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/unified/cgroup.controllers && want=v2
	leaves=$(for f in /proc/"$(vmm_pid "$a")"/task/*/cgroup; do
		if [ $want = v2 ]; then grep '^0::' "$f"; else grep -E '^[0-9]+:(memory|pids|cpu(,cpuacct)?|cpuacct,cpu):' "$f"; fi
	done)
	[ -n "$leaves" ] && ! grep -qv "/kiln.slice/vmm-$ua\$" <<<"$leaves" &&
		[ "$(wc -l <<<"$leaves")" -eq $(($(find /proc/"$(vmm_pid "$a")"/task -mindepth 1 -maxdepth 1 | wc -l) * $([ $want = v2 ] && echo 1 || echo 3))) ]
	check $? "every thread of its VMM is in its own cgroup leaf ($want: $(sort -u <<<"$leaves" | tr '\n' ' '))"
	"$KILN" rm "$a" "$b"
}

t_jail_seccomp() {
	jail_runs t_jail_seccomp || return 0
	local id st
	export KILN_VMM_TEST_SECCOMP=1500
	restart_kilnd_with
	unset KILN_VMM_TEST_SECCOMP
	id=$("$KILN" create) || { not_ok "create for the seccomp test"; return; }
	for _ in $(seq 100); do
		api GET "/sandboxes/$id" >/dev/null
		grep -q '"state":"error"' "$T/body" && break
		sleep 0.1
	done
	grep -q '"state":"error"' "$T/body" && grep -q 'killed by signal 31' "$T/body" &&
		grep -q 'killed by its seccomp filter (SIGSYS)' "$T/body" && [ "$(api GET /health)" = 200 ]
	check $? "a VMM that makes a call its filter denies ends its sandbox with the reason; kilnd goes on"
	"$KILN" rm "$id"
	restart_kilnd_with
}

t_jail_oom() {
	jail_runs t_jail_oom || return 0
	local id st
	restart_kilnd_with --jail-mem-max-mb 96
	st=$(api POST /sandboxes -d '{"memoryMB":512}')
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/body")
	[ "$st" = 201 ] || { not_ok "create for the memory test ($st)"; restart_kilnd_with; return; }
	"$KILN" exec "$id" -- sh -c 'dd if=/dev/zero of=/tmp/fill bs=1M count=300' >/dev/null 2>&1
	for _ in $(seq 100); do
		api GET "/sandboxes/$id" >/dev/null
		grep -q '"state":"error"' "$T/body" && break
		sleep 0.1
	done
	grep -q '"state":"error"' "$T/body" && grep -q "killed by the kernel's OOM killer" "$T/body" &&
		[ "$(api GET /health)" = 200 ] && [ "$("$KILN" run -- echo alive)" = alive ]
	check $? "a guest that grows its VMM past memory.max (96 MiB) ends its sandbox with the reason; kilnd goes on"
	"$KILN" rm "$id"
	restart_kilnd_with
}

# A VMM a guest took over may leave anything in vmm-out: kilnd takes only a
# plain file of its own into place. The fake VMM (root, no jail of its own,
# but given --jail-id by kilnd) plays the hostile VMM; kilnd as root only.
t_jail_snapshot_link() {
	if [ $FAKE = 0 ] || [ "$(id -u)" != 0 ]; then
		echo "# t_jail_snapshot_link: not run (needs the fake VMM and root)"
		return 0
	fi
	local id st victim=$T/victim
	echo "kilnd must not write here" >"$victim"
	export FAKE_VMM_SNAPSHOT_LINK=$victim
	start_kilnd_jailed_fake
	unset FAKE_VMM_SNAPSHOT_LINK
	id=$("$KILN" create) || { not_ok "create for the link test"; restart_kilnd_with; return; }
	st=$(api POST "/sandboxes/$id/pause")
	[ "$st" != 204 ] && grep -q 'is not a plain file of its own' "$T/body" &&
		[ "$(cat "$victim")" = "kilnd must not write here" ] &&
		[ ! -L "$DATA/sandboxes/$id/snapshot" ] && [ ! -e "$DATA/sandboxes/$id/vmm-out/snapshot" ] &&
		[ "$(sb_field "$id" state)" = running ]
	check $? "a link the VMM leaves for its snapshot is refused and removed; the sandbox runs on ($st)"
	"$KILN" rm "$id"
	restart_kilnd_with
}
