# Shell scripts (tests/integration/scripts/) under busybox sh and bash: the
# guest's output and status must equal the host's for the same script, the
# same busybox and the same bash. Sourced by run.sh.

# On the host, commands must be the same busybox applets the guest runs
# (bash would otherwise find GNU coreutils): a directory of applet links.
BBBIN=$T/bbbin
mkdir -p "$BBBIN"
for a in $("$BUSYBOX" --list); do ln -sf "$BUSYBOX" "$BBBIN/$a"; done
TIMEOUT_BIN=$(command -v timeout)

# script_case NAME SHELL: SHELL is sh (busybox) or bash.
script_case() {
	name=$1-$2
	script=tests/integration/scripts/$1.sh
	want_case "$name" || return 0
	parse_opts --
	case $2 in
	sh) host_shell="$BUSYBOX sh" ;;
	bash) host_shell=/bin/bash ;;
	esac
	# shellcheck disable=SC2086 # host_shell is a command with arguments
	(cd / && exec env -i PATH="$BBBIN" HOME=/ TERM=linux \
		"$TIMEOUT_BIN" --foreground -k 5 "$TIMEOUT" $host_shell "$OLDPWD/$script") \
		</dev/null >"$T/host.out" 2>&1
	hrc=$?
	run_guest -- "/bin/$2" "/scripts/$1.sh"
	if [ "$rc" -eq 124 ]; then
		fail "$name" "timed out after ${TIMEOUT}s"
	elif [ "$rc" -ne "$hrc" ]; then
		fail "$name" "status $rc, the host's is $hrc"
	elif ! cmp -s "$T/host.out" "$T/out"; then
		fail "$name" "output differs from the host's"
	else
		pass "$name"
		return
	fi
	diff -u --label host --label guest "$T/host.out" "$T/out" >"$T/diff"
	show "diff" "$T/diff" 40
	show "VMM stderr" "$T/err"
}

for s in pipelines heredoc jobs errexit textproc shebang; do
	script_case "$s" sh
	script_case "$s" bash
done
script_case bashisms bash
