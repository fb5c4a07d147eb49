#!/bin/sh
# Integration tests: boot real kiln VMs (kiln-vmm + kiln-kernel + test.cpio)
# on /dev/kvm and check what the guest programs print and how they exit.
# Where possible the expected output is not written down here but produced
# by running the same program on the host: the same /bin/busybox with the
# same arguments, environment and input, or the same test program.
#
#   sh tests/integration/run.sh [PATTERN...]   (make integration)
#
# PATTERNs are shell globs; only the cases whose name matches one run.
# Environment: KILN_VMM, KILN_KERNEL, KILN_INITRD, KILN_PROGS (host copies of
# the test programs), KILN_TIMEOUT (seconds per VM, default 60), KILN_KVM_DEV.
#
# What the guest must provide for these cases:
#  - the console carries only the program's output (stdout and stderr); a
#    tty's CR LF is read as LF; it does not echo input
#  - init's environment is exactly PATH=/bin:/sbin:/usr/bin:/usr/sbin, HOME=/,
#    TERM=linux (in that order) and its working directory is /
#  - a program killed by signal SIG ends the VM with status 128 + SIG after a
#    console line containing "killed by SIG<NAME>"
#
# To add a case, add a line to one of the case lists at the bottom:
#   expect_same NAME [--stdin FILE] -- ARGV...    same output and status as on the host
#   guest_case NAME STATUS [CHECKS] -- [ARGV...]  boot with test.cpio and run ARGV
#   vmm_case NAME STATUS [CHECKS] -- VMM-ARGS...  run kiln-vmm with exactly these arguments
# STATUS is a number, alternatives like 1|2, or !0 for any failure. CHECKS:
#   --out RE / --err RE / --any RE  console / VMM stderr / either matches the
#                                    extended regular expression RE
#   --no-out RE / --no-err RE        the console / VMM stderr does not match RE
#   --out-is FILE                    the console output is exactly FILE
#   --stdin FILE                     the VMM's (so the guest's) stdin
#   --vmm 'OPTS'                     kiln-vmm options (split at spaces)
set -u

cd "$(dirname "$0")/../.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/test.cpio}
PROGS=${KILN_PROGS:-build/tests/progs}
TIMEOUT=${KILN_TIMEOUT:-60}
KVM_DEV=${KILN_KVM_DEV:-/dev/kvm}
# The busybox that initramfs/test.list packs, run on the host for reference.
BUSYBOX=/bin/busybox
DATA=tests/integration/data

if [ ! -e "$KVM_DEV" ] || [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
	echo "integration: skipped: /dev/kvm not available"
	exit 0
fi

missing=
for f in "$VMM" "$KERNEL" "$INITRD" "$BUSYBOX" "$PROGS/fileio" "$PROGS/memtouch"; do
	[ -f "$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then
	echo "integration: cannot run, missing:$missing (build them with: make integration)"
	exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-integration.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' HUP TERM

# The host stand-in for the guest's root: the guest runs in / with /data and
# /tmp; host runs happen in $HOSTROOT, and arguments naming /data or /tmp are
# rewritten to $HOSTROOT/data and $HOSTROOT/tmp.
HOSTROOT=$T/root
mkdir -p "$HOSTROOT/tmp" && cp -R "$DATA" "$HOSTROOT/data" || exit 1

PROGS_ABS=$(cd "$PROGS" && pwd) || exit 1
CR=$(printf '\r')
npass=0
nfail=0
failed=

# ---------------------------------------------------------------- plumbing

want_case() {
	[ -z "$PATTERNS" ] && return 0
	set -f
	for p in $PATTERNS; do
		# shellcheck disable=SC2254 # $p is a glob on purpose
		case $1 in
		$p)
			set +f
			return 0
			;;
		esac
	done
	set +f
	return 1
}

pass() {
	npass=$((npass + 1))
	echo "ok   $1"
}

# fail NAME REASON: the details (show_*) follow on indented lines.
fail() {
	nfail=$((nfail + 1))
	failed="$failed $1"
	echo "FAIL $1: $2"
}

# show TITLE FILE [LINES]: up to LINES (default 20) lines of FILE, indented.
show() {
	[ -s "$2" ] || return 0
	echo "    $1:"
	head -n "${3:-20}" "$2" | sed 's/^/    | /'
	n=$(wc -l <"$2")
	[ "$n" -le "${3:-20}" ] || echo "    | ... ($n lines)"
}

# parse_opts ARGS...: reads case options up to "--"; the caller shifts $nshift.
parse_opts() {
	stdin_file=/dev/null
	vmm_opts=
	out_is=
	: >"$T/checks"
	nshift=0
	while [ $# -gt 0 ]; do
		case $1 in
		--)
			nshift=$((nshift + 1))
			return 0
			;;
		--stdin) stdin_file=$2 ;;
		--vmm) vmm_opts="$vmm_opts $2" ;;
		--out-is) out_is=$2 ;;
		--out | --err | --any | --no-out | --no-err) printf '%s %s\n' "${1#--}" "$2" >>"$T/checks" ;;
		*)
			echo "run.sh: unknown case option '$1'" >&2
			exit 2
			;;
		esac
		[ $# -ge 2 ] || {
			echo "run.sh: case option '$1' needs a value" >&2
			exit 2
		}
		nshift=$((nshift + 2))
		shift 2
	done
	echo "run.sh: case options must end with '--'" >&2
	exit 2
}

# run_vmm ARGS...: one kiln-vmm run with stdin from $stdin_file. Leaves the
# console output in $T/out (CR LF read as LF), the VMM's stderr in $T/err,
# both in $T/all and the exit status in $rc.
run_vmm() {
	timeout --foreground -k 5 "$TIMEOUT" "$VMM" "$@" <"$stdin_file" >"$T/out.raw" 2>"$T/err"
	rc=$?
	sed "s/$CR\$//" "$T/out.raw" >"$T/out"
	cat "$T/out" "$T/err" >"$T/all"
}

# run_guest [VMM-OPTS...] -- [ARGV...]: boot test.cpio; no ARGV runs /init.
run_guest() {
	run_vmm --kernel "$KERNEL" --initrd "$INITRD" "$@"
}

# status_ok WANT GOT: WANT is N, N|M|..., or !0 (failed, but not timed out).
status_ok() {
	case $1 in
	'!0') [ "$2" -ne 0 ] && [ "$2" -ne 124 ] ;;
	*)
		for s in $(echo "$1" | tr '|' ' '); do
			[ "$2" -eq "$s" ] && return 0
		done
		return 1
		;;
	esac
}

# judge NAME STATUS: checks the last run against STATUS and the case options.
judge() {
	why=
	if [ "$rc" -eq 124 ]; then
		why="timed out after ${TIMEOUT}s"
	elif ! status_ok "$2" "$rc"; then
		why="status $rc, expected $2"
	fi
	if [ -z "$why" ] && [ -n "$out_is" ] && ! cmp -s "$out_is" "$T/out"; then
		why="console output differs from the expected text"
		diff -u --label expected --label guest "$out_is" "$T/out" >"$T/diff"
	fi
	while [ -z "$why" ] && read -r where re; do
		case $where in
		no-out) ! grep -Eq -- "$re" "$T/out" || why="console output matches /$re/" ;;
		no-err) ! grep -Eq -- "$re" "$T/err" || why="VMM stderr matches /$re/" ;;
		out) grep -Eq -- "$re" "$T/out" || why="console output does not match /$re/" ;;
		err) grep -Eq -- "$re" "$T/err" || why="VMM stderr does not match /$re/" ;;
		any) grep -Eq -- "$re" "$T/all" || why="neither console nor VMM stderr matches /$re/" ;;
		esac
	done <"$T/checks"
	if [ -z "$why" ]; then
		pass "$1"
		return
	fi
	fail "$1" "$why"
	[ -z "$out_is" ] || show "diff" "$T/diff" 40
	show "console" "$T/out"
	show "VMM stderr" "$T/err"
}

# guest_case NAME STATUS [OPTIONS] -- [ARGV...]
guest_case() {
	name=$1
	status=$2
	shift 2
	want_case "$name" || return 0
	parse_opts "$@"
	shift "$nshift"
	rm -f "$T/diff"
	# shellcheck disable=SC2086 # vmm_opts is a list of words
	if [ $# -gt 0 ]; then
		run_guest $vmm_opts -- "$@"
	else
		run_guest $vmm_opts
	fi
	judge "$name" "$status"
}

# vmm_case NAME STATUS [OPTIONS] -- VMM-ARGS...
vmm_case() {
	name=$1
	status=$2
	shift 2
	want_case "$name" || return 0
	parse_opts "$@"
	shift "$nshift"
	rm -f "$T/diff"
	run_vmm "$@"
	judge "$name" "$status"
}

# host_run ARGV...: what the guest's ARGV does, done on the host: test
# programs run from $PROGS, anything else is a busybox applet; output
# (stdout and stderr together, as on the guest console) in $T/host.out and
# the status in $hrc. /tmp is emptied first, as every VM starts afresh.
host_run() {
	prog=${1##*/}
	shift
	rm -rf "$HOSTROOT/tmp" && mkdir "$HOSTROOT/tmp"
	i=0
	n=$#
	while [ $i -lt $n ]; do
		a=$1
		shift
		case $a in
		/data | /data/* | /tmp | /tmp/*) a=$HOSTROOT$a ;;
		esac
		set -- "$@" "$a"
		i=$((i + 1))
	done
	if [ "$prog" != busybox ] && [ -f "$PROGS/$prog" ]; then
		set -- "$PROGS_ABS/$prog" "$@"
	elif [ "$prog" != busybox ]; then
		set -- "$BUSYBOX" "$prog" "$@"
	else
		set -- "$BUSYBOX" "$@"
	fi
	(cd "$HOSTROOT" && exec env -i PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/ TERM=linux \
		timeout --foreground -k 5 "$TIMEOUT" "$@") <"$stdin_file" >"$T/host.out" 2>&1
	hrc=$?
}

# expect_same NAME [--stdin FILE] [--vmm OPTS] -- ARGV...: the guest prints
# exactly what the host prints and exits with the same status.
expect_same() {
	name=$1
	shift
	want_case "$name" || return 0
	parse_opts "$@"
	shift "$nshift"
	host_run "$@"
	# shellcheck disable=SC2086 # vmm_opts is a list of words
	run_guest $vmm_opts -- "$@"
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

# hello_case NAME PROGRAM LIBC: prints its libc and exactly its argv.
hello_case() {
	printf '%s\n' "hello from $3" "argc=4" "argv[0]=$2" "argv[1]=one" "argv[2]=two=2" \
		"argv[3]=-x" >"$T/hello.expected"
	guest_case "$1" 0 --out-is "$T/hello.expected" -- "$2" one two=2 -x
}

# auxv_case NAME PROGRAM: auxv checks pass and the environment is exactly init's.
auxv_case() {
	guest_case "$1" 0 --out '^auxv ok$' --out '^argv\[1\]=arg$' \
		--out '^envp\[0\]=PATH=/bin:/sbin:/usr/bin:/usr/sbin$' --out '^envp\[1\]=HOME=/$' \
		--out '^envp\[2\]=TERM=linux$' --no-out '^envp\[3\]' -- "$2" arg
}

# ---------------------------------------------------------------- inputs

printf 'hello kiln\nSecond Line: 42\n' >"$T/small.in"
i=1
while [ $i -le 20000 ]; do
	echo "line $i of the big input"
	i=$((i + 1))
done >"$T/big.in"
head -c 65536 /dev/urandom >"$T/random.bin"
printf 'this is a text file, not a kernel\n' >"$T/text.bin"
head -c 1000 "$KERNEL" >"$T/truncated-kernel"
# A newc header with valid magic (so the VMM passes it on) and junk fields.
{ printf '070701' && printf '%0104d' 0 | tr 0 z; } >"$T/junk-header.cpio"
size=$(wc -c <"$INITRD")
head -c $((size / 2)) "$INITRD" >"$T/truncated.cpio"
# An archive larger than guest memory: it is mapped, not copied, so it boots.
mkdir -p "$T/big/bin" && head -c $((40 * 1024 * 1024)) /dev/zero >"$T/big/zeros" &&
	cp "$PROGS/hello-musl" "$T/big/bin/" &&
	(cd "$T/big" && printf 'zeros\nbin\nbin/hello-musl\n' | cpio -o -H newc --quiet) \
		>"$T/big.cpio" || exit 1
rm -rf "$T/big"
# A member named "../x" (written as zz/x, then renamed in place): the guest
# must refuse the archive, which the VMM then gives no index for.
mkdir -p "$T/dots/bin" "$T/dots/zz" && cp "$PROGS/hello-musl" "$T/dots/bin/" &&
	echo hi >"$T/dots/zz/x" &&
	(cd "$T/dots" && printf 'bin\nbin/hello-musl\nzz\nzz/x\n' | cpio -o -H newc --quiet) |
	perl -pe 's{zz/x\0}{../x\0}g' >"$T/dots.cpio" || exit 1
rm -rf "$T/dots"
# Larger than the 256 MiB window for the initramfs (sparse: costs no disk).
cp "$INITRD" "$T/huge.cpio" && truncate -s 300M "$T/huge.cpio" || exit 1

PATTERNS="$*"
echo "integration: $VMM, $KERNEL, $INITRD"

# ---------------------------------------------------------------- (a) busybox applets vs the host

expect_same busybox-echo -- /bin/busybox echo hi
expect_same echo -- /bin/echo a b c
expect_same cat-file -- /bin/cat /data/words.txt
expect_same cat-relative -- /bin/cat data/table.txt
expect_same cat-missing -- /bin/cat data/missing
expect_same ls -- /bin/ls -1 /data
expect_same ls-missing -- /bin/ls data/nope
expect_same wc -- /bin/wc data/words.txt
expect_same sort -- /bin/sort /data/words.txt
expect_same sort-ur -- /bin/sort -u -r /data/words.txt
expect_same printf -- /bin/printf '%s-%d\n' x 42
expect_same printf-args -- /bin/printf '[%s]\n' 'two words' 'back\slash' "$(printf 'tab\there')" '-n'
expect_same uname-s -- /bin/uname -s
expect_same uname-m -- /bin/uname -m
expect_same seq -- /bin/seq 1 5
expect_same seq-big -- /bin/seq 1 100000
expect_same head -- /bin/head -n 2 /data/words.txt
expect_same tail -- /bin/tail -n 2 /data/words.txt
expect_same grep -- /bin/grep -n an /data/words.txt
expect_same grep-nomatch -- /bin/grep xyz /data/words.txt
expect_same cut -- /bin/cut -d: -f1,3 /data/table.txt
expect_same env -- /bin/env
expect_same true -- /bin/true
expect_same false -- /bin/false
expect_same sleep -- /bin/sleep 0.1
expect_same mkdir-p -- /bin/mkdir -p /tmp/a/b/c
expect_same touch -- /bin/touch /tmp/f
expect_same rm-missing -- /bin/rm tmp/nonexistent
expect_same tr-stdin --stdin "$T/small.in" -- /bin/tr a-z A-Z
expect_same cat-stdin --stdin "$T/big.in" -- /bin/cat
expect_same wc-stdin --stdin "$T/big.in" -- /bin/wc -l
expect_same cat-empty-stdin -- /bin/cat

# ---------------------------------------------------------------- (b) (c) startup: libc, argv, auxv, env

hello_case hello-glibc /bin/hello-glibc glibc
hello_case hello-glibc-pie /bin/hello-glibc-pie "glibc static-pie"
hello_case hello-musl /bin/hello-musl musl
auxv_case auxv-glibc /bin/auxv-glibc
auxv_case auxv-glibc-pie /bin/auxv-glibc-pie
auxv_case auxv-musl /bin/auxv-musl
guest_case init-default 0 --out '^hello from musl$' --
guest_case init-cmdline 0 --vmm '--cmdline init=/bin/hello-glibc' --out '^hello from glibc$' --

# ---------------------------------------------------------------- (d) files and memory vs the host

expect_same fileio -- /bin/fileio /tmp/work
expect_same fileio-musl -- /bin/fileio-musl /tmp/work
expect_same memtouch -- /bin/memtouch
expect_same memtouch-musl -- /bin/memtouch-musl
# Large mappings get their pages on first touch: a 64 GiB reservation and a
# 1 GiB mapping in a 256 MiB machine; running out kills only the toucher.
expect_same lazymem --vmm '--mem 256M' -- /bin/lazymem
guest_case lazymem-oom 0 --vmm '--mem 256M' --out '^child killed by signal 9$' \
	--out '^parent fills 64 MiB afterwards: yes$' -- /bin/lazymem oom

# ---------------------------------------------------------------- (e) exit status

for s in 0 1 42 255; do
	guest_case "exitcode-$s" "$s" -- /bin/exitcode "$s"
done
guest_case exitcode-256 0 -- /bin/exitcode 256

# ---------------------------------------------------------------- (f) faults and unknown system calls

guest_case fault-null 139 --out 'killed by SIGSEGV' -- /bin/fault null
guest_case fault-ud2 132 --out 'killed by SIGILL' -- /bin/fault ud2
guest_case fault-wild 139 --out 'killed by SIGSEGV' -- /bin/fault wild
guest_case fault-wildsp 0 --out '^fault: wild stack pointer survived$' -- /bin/fault wildsp
expect_same fault-step -- /bin/fault step
guest_case fault-deepstack 0 --out '^deep stack ok$' -- /bin/fault deepstack
guest_case fault-stackoverflow 139 --out 'killed by SIGSEGV' -- /bin/fault stackoverflow
guest_case fault-div0 136 --out 'killed by SIGFPE' -- /bin/fault div0
guest_case fault-abort 134 --out 'killed by SIGABRT' -- /bin/fault abort
guest_case fault-badsyscall 0 --out '^ENOSYS ok$' -- /bin/fault badsyscall
guest_case fault-bigsyscall 0 --out '^ENOSYS ok$' -- /bin/fault bigsyscall
guest_case fault-negsyscall 0 --out '^ENOSYS ok$' -- /bin/fault negsyscall

# ---------------------------------------------------------------- (g) bad input to the VMM

vmm_case vmm-help 0 --out 'usage' -- --help
vmm_case kernel-missing 1 --err "$T/no-such-kernel" -- \
	--kernel "$T/no-such-kernel" --initrd "$INITRD" -- /bin/hello-musl
vmm_case kernel-text 1 --err 'not an ELF64' -- --kernel "$T/text.bin" --initrd "$INITRD" -- /bin/hello-musl
vmm_case kernel-random 1 --err 'not an ELF64' -- --kernel "$T/random.bin" --initrd "$INITRD" -- /bin/hello-musl
vmm_case kernel-truncated 1 --err 'kiln-vmm' -- \
	--kernel "$T/truncated-kernel" --initrd "$INITRD" -- /bin/hello-musl
vmm_case kernel-not-kiln 1 --err 'kiln-vmm' -- --kernel "$BUSYBOX" --initrd "$INITRD" -- /bin/hello-musl
vmm_case initrd-missing 1 --err "$T/no-such-initrd" -- \
	--kernel "$KERNEL" --initrd "$T/no-such-initrd" -- /bin/hello-musl
vmm_case initrd-random 1 --err 'cpio' -- --kernel "$KERNEL" --initrd "$T/random.bin" -- /bin/hello-musl
vmm_case initrd-junk-header '!0' --any 'cpio' -- \
	--kernel "$KERNEL" --initrd "$T/junk-header.cpio" -- /bin/hello-musl
vmm_case initrd-truncated '!0' --any 'cpio' -- \
	--kernel "$KERNEL" --initrd "$T/truncated.cpio" -- /bin/hello-musl
vmm_case initrd-bad-name 125 --any 'bad member name' -- \
	--kernel "$KERNEL" --initrd "$T/dots.cpio" -- /bin/hello-musl
vmm_case initrd-bigger-than-mem 0 --out 'hello from musl' -- \
	--kernel "$KERNEL" --initrd "$T/big.cpio" --mem 32M -- /bin/hello-musl
vmm_case initrd-too-big 1 --err 'larger than' -- \
	--kernel "$KERNEL" --initrd "$T/huge.cpio" -- /bin/hello-musl
vmm_case mem-1M '1|2' --err '[Mm]em' -- --kernel "$KERNEL" --initrd "$INITRD" --mem 1M -- /bin/hello-musl
vmm_case mem-garbage 2 --err 'mem' -- --kernel "$KERNEL" --initrd "$INITRD" --mem lots -- /bin/hello-musl
vmm_case unknown-flag 2 --err 'kiln-vmm' -- --kernel "$KERNEL" --frobnicate -- /bin/hello-musl
vmm_case no-kernel 2 --err 'kernel' -- --initrd "$INITRD" -- /bin/hello-musl
# kilnd's host CPUID file (vmm/host_cpuid.h; a good one: tests/e2e/host_cpuid.sh)
vmm_case host-cpuid-random 0 --out 'hello from musl' \
	--err "host-cpuid '$T/random.bin': not a kiln host CPUID file.*asking KVM" -- \
	--kernel "$KERNEL" --initrd "$INITRD" --host-cpuid "$T/random.bin" -- /bin/hello-musl
vmm_case host-cpuid-missing 0 --out 'hello from musl' --err "no-such-file': No such file.*asking KVM" -- \
	--kernel "$KERNEL" --initrd "$INITRD" --host-cpuid "$T/no-such-file" -- /bin/hello-musl
guest_case program-missing '!0' --any '/bin/no-such-program' -- /bin/no-such-program

# ---------------------------------------------------------------- (h) statistics

guest_case stats-unknown-syscall 0 --vmm '--cmdline kiln.stats=1' --out '^ENOSYS ok$' \
	--out '(^|[^0-9])999([^0-9]|$)' -- /bin/fault badsyscall
guest_case vmm-stats 0 --vmm --stats --out '^hello from musl$' --err '^kiln-vmm: RssAnon:' -- /bin/hello-musl
guest_case getpid-bench 0 --out '^getpid_ns [0-9]' --out '^clock_gettime_ns [0-9]' -- /bin/getpid_bench 2000

# ---------------------------------------------------------------- more cases

for f in tests/integration/cases/*.sh; do
	# shellcheck disable=SC1090 # case files are found at run time
	. "$f"
done

# ---------------------------------------------------------------- (i) pipes, poll, epoll, timers

expect_same pipes -- /bin/pipes
expect_same polltest -- /bin/polltest
expect_same polltest-musl -- /bin/polltest-musl
expect_same epolltest -- /bin/epolltest
expect_same epolltest-musl -- /bin/epolltest-musl
expect_same timers -- /bin/timers
expect_same alarmjmp -- /bin/alarmjmp
expect_same sh-pipeline -- /bin/sh -c 'seq 1 50000 | grep 7 | sort -r | tr 0-9 a-j | tail -n 3; cat data/words.txt | sort -u | wc -l'

# ---------------------------------------------------------------- (j) terminals

guest_case ptytest 0 --out '^ptytest ok$' --no-out 'FAIL' -- /bin/ptytest

# ---------------------------------------------------------------- summary

echo "integration: $npass passed, $nfail failed"
if [ "$nfail" -ne 0 ]; then
	echo "integration: failed:$failed"
	exit 1
fi
exit 0
