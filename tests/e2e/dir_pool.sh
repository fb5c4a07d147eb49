# shellcheck shell=bash
# kilnd end-to-end tests of the sandbox directories kept for reuse
# (control/sandbox/dir_pool.h). Sourced by run.sh.

# shellcheck disable=SC2034 # run.sh runs them
DIR_POOL_TESTS="t_dir_pool"

gone_vmm() { # ID: until no VMM works in its directory (5 s at most)
	for _ in $(seq 100); do
		vmm_alive "$1" || [ -d "$DATA/spare/$1" ] || return 0
		sleep 0.05
	done
}

pooled() { # ID: until its directory is in the pool (5 s at most)
	for _ in $(seq 100); do
		[ -d "$DATA/spare/$1" ] && [ ! -e "$DATA/sandboxes/$1" ] && return 0
		sleep 0.05
	done
	return 1
}

t_dir_pool() {
	local a b c ino
	a=$("$KILN" create)
	"$KILN" rm "$a" >/dev/null
	pooled "$a"
	check $? "a deleted sandbox's directory goes into DATA_DIR/spare"
	ino=$(stat -c %i "$DATA/spare/$a")
	b=$("$KILN" create)
	[ "$(stat -c %i "$DATA/sandboxes/$b" 2>/dev/null)" = "$ino" ] && [ ! -e "$DATA/spare/$a" ] &&
		[ "$(stat -c %a "$DATA/sandboxes/$b")" = "$([ $FAKE = 1 ] && echo 700 || echo 711)" ] &&
		[ "$("$KILN" exec "$b" -- echo reused)" = reused ]
	check $? "the next sandbox gets that directory and runs"
	[ "$(readlink "$DATA/sandboxes/$b/run")" != "$(readlink "$DATA/spare/$a/run" 2>/dev/null)" ] &&
		[ -S "$DATA/sandboxes/$b/run/vsock.sock" ]
	check $? "with a run link of its own"
	echo stray >"$DATA/sandboxes/$b/stray"
	"$KILN" rm "$b" >/dev/null
	gone_vmm "$b"
	sleep 0.2
	[ ! -e "$DATA/spare/$b" ] && [ ! -e "$DATA/sandboxes/$b" ]
	check $? "a directory with anything else in it is removed, not kept"
	c=$("$KILN" create)
	"$KILN" rm "$c" >/dev/null
	pooled "$c" && mkdir -p "$DATA/spare/$c/vmm-out" && echo planted >"$DATA/spare/$c/vmm-out/snapshot"
	b=$("$KILN" create)
	[ ! -e "$DATA/spare/$c" ] && [ ! -e "$DATA/sandboxes/$b/vmm-out/snapshot" ] &&
		[ "$("$KILN" exec "$b" -- echo fresh)" = fresh ]
	check $? "a pooled directory that got a file meanwhile is dropped, not handed out"
	"$KILN" rm "$b" >/dev/null
	pooled "$b"
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	start_kilnd
	[ -d "$DATA/spare" ] && [ -z "$(ls -A "$DATA/spare")" ]
	check $? "a restarted kilnd starts with an empty pool"
}
