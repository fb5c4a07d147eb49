#!/bin/sh
# The guest console as a real terminal: kiln-vmm runs busybox sh as init in
# a tmux pane (so its stdin is a terminal, put in raw mode, with a size),
# and this script types into it (send-keys) and reads the screen
# (capture-pane): the prompt, line editing, a canonical read and ^D, ^C
# ending `sleep 100`, ^Z and fg, vi writing a file, `stty size` against
# the pane's size before and after a resize, and `exit` ending the VM with
# status 0 and the host terminal's modes restored.
#
#   sh tests/integration/tmux_console.sh
#
# Prints ok/FAIL per step and exits non-zero if one failed. Installs tmux
# with apt-get if it is missing. Environment: KILN_VMM, KILN_KERNEL,
# KILN_INITRD, KILN_KVM_DEV as for run.sh; KILN_TMUX_WAIT (seconds a step
# may take, default 10).
set -u

cd "$(dirname "$0")/../.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/test.cpio}
KVM_DEV=${KILN_KVM_DEV:-/dev/kvm}
WAIT=${KILN_TMUX_WAIT:-10}

if [ ! -e "$KVM_DEV" ] || [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
	echo "tmux_console: skipped: /dev/kvm not available"
	exit 0
fi
for f in "$VMM" "$KERNEL" "$INITRD"; do
	if [ ! -f "$f" ]; then
		echo "tmux_console: cannot run, missing $f (build it with: make integration)"
		exit 1
	fi
done
if ! command -v tmux >/dev/null 2>&1; then
	echo "tmux_console: installing tmux"
	sudo=
	[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
	{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux; } \
		>/dev/null 2>&1
	if ! command -v tmux >/dev/null 2>&1; then
		echo "tmux_console: cannot run: tmux is missing and apt-get could not install it"
		exit 1
	fi
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-tmux.XXXXXX") || exit 1
SOCK=kiln-console-$$
tm() {
	tmux -L "$SOCK" -f "$T/tmux.conf" "$@"
}
trap 'tm kill-server >/dev/null 2>&1; rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' HUP TERM

start=$(date +%s)
npass=0
nfail=0
failed=

pass() {
	npass=$((npass + 1))
	echo "ok   $1"
}

# fail NAME REASON: with the screen as it is.
fail() {
	nfail=$((nfail + 1))
	failed="$failed $1"
	echo "FAIL $1: $2"
	screen | grep -v '^$' | tail -n 15 | sed 's/^/    | /'
}

# The pane: its history and what it shows now, trailing blanks trimmed.
screen() {
	tm capture-pane -p -t kiln -S - 2>/dev/null
}

# wait_for RE [SECONDS]: until a line of the pane matches RE.
wait_for() {
	n=$((${2:-$WAIT} * 20))
	while [ "$n" -gt 0 ]; do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}

keys() {
	tm send-keys -t kiln "$@"
}

# run NAME RE KEYS...: type KEYS and Enter, expect a line matching RE.
run() {
	name=$1
	re=$2
	shift 2
	keys "$@" Enter
	if wait_for "$re"; then
		pass "$name"
	else
		fail "$name" "no line matches /$re/"
	fi
}

now_ms() {
	date +%s%3N
}

# The pane runs kiln-vmm and notes how it ended and the terminal's modes
# before and after.
cat >"$T/tmux.conf" <<'EOF'
set -g status off
set -g remain-on-exit on
EOF
cat >"$T/pane.sh" <<EOF
stty -g >"$T/stty.before"
"$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- /bin/sh
echo \$? >"$T/status.tmp" && mv "$T/status.tmp" "$T/status"
stty -g >"$T/stty.after"
EOF
tm new-session -d -s kiln -x 100 -y 30 "sh $T/pane.sh" || exit 1

# ---------------------------------------------------------------- steps

if wait_for '^/ # ?$' 20; then
	pass prompt
else
	fail prompt "no shell prompt"
	exit 1
fi

# Backspace, and the cursor keys: "hello, wrld" gets its o in the middle.
run line-editing '^hello, world$' 'echo hellx' BSpace 'o, wrld' Left Left Left 'o'

# A program reading the terminal in canonical mode: a line, then ^D.
# shellcheck disable=SC2016 # $x is the guest shell's
keys 'read x; echo "got [$x]"' Enter
sleep 0.3
run canonical-line '^got \[typed line\]$' 'typed line'
keys 'read x || echo eof-on-ctrl-d' Enter
sleep 0.3
keys C-d
if wait_for '^eof-on-ctrl-d$'; then
	pass ctrl-d
else
	fail ctrl-d "^D did not end the read"
fi

keys 'sleep 100' Enter
sleep 0.5
t0=$(now_ms)
keys C-c
keys 'echo after-interrupt' Enter
if wait_for '^after-interrupt$'; then
	t=$(($(now_ms) - t0))
	if [ "$t" -lt 3000 ]; then
		pass "ctrl-c (${t} ms)"
	else
		fail ctrl-c "the prompt took ${t} ms to come back"
	fi
else
	fail ctrl-c "sleep 100 was not interrupted"
fi

keys 'sleep 100' Enter
sleep 0.5
keys C-z
if wait_for 'Stopped.*sleep 100'; then
	pass ctrl-z
else
	fail ctrl-z "sleep 100 was not stopped"
fi
run fg '^sleep 100$' fg
sleep 0.3
keys C-c
run fg-ctrl-c '^after-fg$' 'echo after-fg'

keys 'busybox vi /tmp/f' Enter
if wait_for '^~' && keys i 'hello from vi' Escape && sleep 0.3 && keys ':wq' Enter &&
	wait_for '^/ # ?$'; then
	run vi '^saved: hello from vi$' 'busybox sed "s/^/saved: /" /tmp/f'
else
	fail vi "vi did not start or did not quit"
fi

size=$(tm display -p -t kiln '#{pane_height} #{pane_width}')
run "stty-size ($size)" "^$size\$" 'busybox stty size'

tm resize-window -t kiln -x 88 -y 26
size=$(tm display -p -t kiln '#{pane_height} #{pane_width}')
sleep 0.2
run "stty-size-resized ($size)" "^$size\$" 'busybox stty size'

keys exit Enter
n=$((WAIT * 20))
while [ ! -f "$T/status" ] && [ "$n" -gt 0 ]; do
	sleep 0.05
	n=$((n - 1))
done
if [ ! -f "$T/status" ]; then
	fail exit "the VM did not end"
elif [ "$(cat "$T/status")" != 0 ]; then
	fail exit "kiln-vmm exited with status $(cat "$T/status")"
else
	pass exit
fi
n=40
while [ ! -f "$T/stty.after" ] && [ "$n" -gt 0 ]; do
	sleep 0.05
	n=$((n - 1))
done
if [ -f "$T/stty.after" ] && cmp -s "$T/stty.before" "$T/stty.after"; then
	pass terminal-restored
else
	fail terminal-restored "the pane's terminal modes differ after kiln-vmm"
fi

echo "tmux_console: $npass passed, $nfail failed in $(($(date +%s) - start)) s"
if [ "$nfail" -ne 0 ]; then
	echo "tmux_console: failed:$failed"
	exit 1
fi
exit 0
