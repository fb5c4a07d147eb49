#!/bin/sh
# The jail kiln-vmm puts itself in (vmm/jail/), checked from outside on real
# VMs: its uid, capabilities and seccomp filters per thread; its root (what a
# process with its mount namespace and uid can open); its pid and network
# namespaces; its cgroup and memory.max; a denied system call killing it
# with a clear message; --no-jail. Prints ok/FAIL per case and exits 1 if
# any failed. Run by run.sh (case "jail"); as a non-root user only the
# unprivileged fallback is checked (the rest needs root: said, not passed).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
VMM=$ROOT/${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=$ROOT/${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=$ROOT/${KILN_INITRD:-build/initramfs/test.cpio}
case ${KILN_VMM:-} in /*) VMM=$KILN_VMM ;; esac
case ${KILN_KERNEL:-} in /*) KERNEL=$KILN_KERNEL ;; esac
case ${KILN_INITRD:-} in /*) INITRD=$KILN_INITRD ;; esac
T=$(mktemp -d /tmp/kiln-jail.XXXXXX)
PIDS=
nfail=0

cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

ok() { echo "ok   $1"; }
bad() {
	echo "FAIL $1: $2"
	nfail=$((nfail + 1))
}
field() { awk -v k="$1:" '$1 == k { sub(/^[^:]*:[ \t]*/, ""); print; exit }' "$2" 2>/dev/null; }

# The fallback without root: a user namespace with no network, seccomp on,
# and a line that says what is missing. Run as the caller when not root,
# else as nobody (with /dev/kvm's group) through setpriv.
unprivileged() {
	"$@" "$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- /bin/busybox sleep 30 \
		</dev/null >"$T/unpriv.out" 2>&1 &
	P=$!
	PIDS="$PIDS $P"
	i=0
	while [ $i -lt 100 ] && ! grep -q 'kiln-vcpu' /proc/"$P"/task/*/comm 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	why=
	grep -q 'jail: not root: .*seccomp filters on' "$T/unpriv.out" || why="$why no 'jail: not root' line;"
	for t in /proc/"$P"/task/*; do
		[ "$(field Seccomp "$t/status")" = 2 ] || why="$why thread $(cat "$t/comm") has no filter;"
	done
	if grep -q 'a user namespace with no network' "$T/unpriv.out"; then
		ifs=$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' "/proc/$P/net/dev" | tr '\n' ' ')
		[ "$ifs" = "lo " ] || why="$why interfaces: $ifs;"
	fi
	kill "$P"
	[ -z "$why" ] && ok jail-unprivileged || bad jail-unprivileged "$why $(tr '\n' ' ' <"$T/unpriv.out")"
}

if [ "$(id -u)" != 0 ]; then
	unprivileged
	echo "NOT RUN jail-ids jail-root jail-pidns jail-net jail-cgroup jail-memory-max" \
		"jail-seccomp-kill: the whole jail needs root"
	exit $((nfail != 0))
fi
if command -v setpriv >/dev/null && [ -e /dev/kvm ]; then
	asuser="setpriv --reuid=65534 --regid=65534 --groups=$(stat -c %g /dev/kvm) --inh-caps=-all"
	if $asuser sh -c 'exec 3<>/dev/kvm' 2>/dev/null; then
		unprivileged $asuser
	else
		# /dev/kvm is root's alone on this host (0600, no kvm group): give
		# the test's user a node of its own, over /dev/kvm in a mount
		# namespace of the test's, so the host's node is left as it is.
		mknod "$T/kvm" c "$((0x$(stat -c %t /dev/kvm)))" "$((0x$(stat -c %T /dev/kvm)))" &&
			chown 65534:65534 "$T/kvm" && chmod 600 "$T/kvm"
		# shellcheck disable=SC2016 # expanded by the inner shell
		unprivileged unshare -m --propagation private \
			sh -c 'mount --bind "$0" /dev/kvm && exec "$@"' "$T/kvm" $asuser
	fi
else
	echo "NOT RUN jail-unprivileged: no setpriv to run kiln-vmm as another user"
fi

# start_vm NAME ID [VMM OPTIONS]: a VM that sleeps 30 s, as jail id ID; sets
# OUTER (the waiting parent) and INNER (the VMM) once the VMM has dropped to ID.
start_vm() {
	name=$1 id=$2
	shift 2
	"$VMM" --kernel "$KERNEL" --initrd "$INITRD" --jail-id "$id" "$@" -- /bin/busybox sleep 30 \
		</dev/null >"$T/$name.out" 2>&1 &
	OUTER=$!
	PIDS="$PIDS $OUTER"
	INNER=
	i=0
	while [ $i -lt 200 ]; do
		INNER=$(tr -d ' ' <"/proc/$OUTER/task/$OUTER/children" 2>/dev/null)
		[ -n "$INNER" ] && [ "$(field Uid "/proc/$INNER/status" | cut -f1)" = "$id" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# ---------------------------------------------------------------- ids, caps, filters
# A disk any uid could write, given read-only: the bind mount refuses it.
: >"$T/disk.img"
chmod 0666 "$T/disk.img"
truncate -s 1M "$T/disk.img"
if start_vm a 987001 --disk "$T/disk.img,ro"; then
	st=/proc/$INNER/status
	why=
	[ "$(field Uid "$st")" = "$(printf '987001\t987001\t987001\t987001')" ] || why="$why uid: $(field Uid "$st");"
	[ "$(field Gid "$st")" = "$(printf '987001\t987001\t987001\t987001')" ] || why="$why gid: $(field Gid "$st");"
	[ "$(field Groups "$st" | tr -d ' ')" = "987001" ] || why="$why groups: $(field Groups "$st");"
	[ "$(field CapEff "$st")" = 0000000000000000 ] || why="$why CapEff $(field CapEff "$st");"
	[ "$(field CapPrm "$st")" = 0000000000000000 ] || why="$why CapPrm $(field CapPrm "$st");"
	[ "$(field NoNewPrivs "$st")" = 1 ] || why="$why NoNewPrivs $(field NoNewPrivs "$st");"
	case "$(field NSpid "$st")" in *"	1") ;; *) why="$why NSpid $(field NSpid "$st") (not pid 1 of its own);" ;; esac
	n=0
	for t in /proc/"$INNER"/task/*; do
		n=$((n + 1))
		[ "$(field Seccomp "$t/status")" = 2 ] ||
			why="$why thread $(cat "$t/comm") has no seccomp filter;"
	done
	[ $n -ge 2 ] || why="$why only $n threads;"
	grep -q 'kiln-vcpu' /proc/"$INNER"/task/*/comm || why="$why no kiln-vcpu thread;"
	[ "$(field Seccomp "/proc/$OUTER/status")" = 2 ] || why="$why the waiting parent has no filter;"
	[ -z "$why" ] && ok jail-ids || bad jail-ids "$why"

	# The VMM's view: only its own files, read-only where it only reads.
	python3 tests/integration/jail_probe.py "$INNER" 987001 /etc/passwd /etc/hostname \
		"$KERNEL" "w:$KERNEL" "w:$T/disk.img" "$INITRD" "$ROOT/build/bin/kilnd" "$ROOT/Makefile" /dev/kvm \
		/proc/1/status /root /home >"$T/probe" 2>&1
	want="/etc/passwd ENOENT
/etc/hostname ENOENT
$KERNEL ok
$KERNEL EACCES
$T/disk.img EROFS
$INITRD ok
$ROOT/build/bin/kilnd ENOENT
$ROOT/Makefile ENOENT
/dev/kvm EACCES
/proc/1/status ok
/root ENOENT
/home ENOENT"
	if [ "$(cat "$T/probe")" = "$want" ]; then
		ok jail-root
	else
		bad jail-root "as uid 987001 in its mount namespace: $(tr '\n' ';' <"$T/probe") (wanted: $(echo "$want" | tr '\n' ';'))"
	fi

	# Its network namespace: lo and nothing else.
	ifs=$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' "/proc/$INNER/net/dev" | tr '\n' ' ')
	[ "$ifs" = "lo " ] && ok jail-net || bad jail-net "interfaces: $ifs"

	# Its cgroup: the leaf's memory limit is guest RAM + 1/8 + 128 MiB.
	cg=$(awk -F: '$2 == "memory" { print "/sys/fs/cgroup/memory" $3 "/memory.limit_in_bytes" }
		$1 == "0" && $3 != "/" { print "/sys/fs/cgroup" $3 "/memory.max" }' "/proc/$INNER/cgroup" | head -1)
	lim=$(cat "$cg" 2>/dev/null)
	if [ "$lim" = $(((256 + 32 + 128) << 20)) ]; then
		ok jail-cgroup
	else
		bad jail-cgroup "memory limit '$lim' in '$cg' ($(tr '\n' ' ' <"/proc/$INNER/cgroup"))"
	fi
	leaf_a=$(dirname "$cg")

	# Another VMM's processes are out of sight.
	A_INNER=$INNER A_OUTER=$OUTER
	if start_vm b 987002; then
		seen=$(ls "/proc/$A_INNER/root/proc" | grep -E '^[0-9]+$' | tr '\n' ' ')
		seen_b=$(ls "/proc/$INNER/root/proc" | grep -E '^[0-9]+$' | tr '\n' ' ')
		if [ "$seen" = "1 " ] && [ "$seen_b" = "1 " ]; then
			ok jail-pidns
		else
			bad jail-pidns "VMM a sees pids '$seen', VMM b '$seen_b' (each should see only itself, 1)"
		fi
		# SIGKILL of the waiting parent (no chance to pass it on): the
		# VMM dies with it, not left running under init.
		kill -9 "$OUTER"
		i=0
		while [ $i -lt 40 ] && [ -e "/proc/$INNER" ] && [ "$(field State "/proc/$INNER/status" | cut -c1)" != Z ]; do
			sleep 0.05
			i=$((i + 1))
		done
		if [ -e "/proc/$INNER" ] && [ "$(field State "/proc/$INNER/status" | cut -c1)" != Z ]; then
			bad jail-parent-killed "the VMM (pid $INNER) still runs 2 s after its parent's SIGKILL"
			kill -9 "$INNER"
		else
			ok jail-parent-killed
		fi
	else
		bad jail-pidns "a second jailed VMM did not start: $(cat "$T/b.out")"
	fi
	kill "$A_OUTER"
	wait "$A_OUTER"
	[ -d "$leaf_a" ] && bad jail-cgroup-gone "the leaf $leaf_a is still there after the VMM ended" ||
		ok jail-cgroup-gone
else
	bad jail-ids "the jailed VMM did not start or drop to uid 987001: $(cat "$T/a.out")"
fi

# ---------------------------------------------------------------- a denied call
KILN_VMM_TEST_SECCOMP=300 timeout 30 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" --jail-id 987003 \
	-- /bin/busybox sleep 20 </dev/null >"$T/sys.out" 2>&1
rc=$?
if [ $rc = $((128 + 31)) ] && grep -q 'killed by its seccomp filter (SIGSYS)' "$T/sys.out"; then
	ok jail-seccomp-kill
else
	bad jail-seccomp-kill "status $rc (want 159, SIGSYS): $(tr '\n' ' ' <"$T/sys.out")"
fi
# ...and the hook is refused where no filter would stop it.
KILN_VMM_TEST_SECCOMP=0 timeout 30 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" --no-jail \
	-- /bin/hello-musl </dev/null >"$T/nojail.out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q 'KILN_VMM_TEST_SECCOMP: refused' "$T/nojail.out"; then
	ok jail-test-hook-refused
else
	bad jail-test-hook-refused "status $rc: $(tr '\n' ' ' <"$T/nojail.out")"
fi

# ---------------------------------------------------------------- memory.max
timeout 60 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" --mem 512M --jail-id 987004 \
	--jail-mem-max 96M -- /bin/memtouch 200 </dev/null >"$T/oom.out" 2>&1
rc=$?
timeout 60 "$VMM" --kernel "$KERNEL" --initrd "$INITRD" --mem 512M --jail-id 987004 \
	-- /bin/memtouch 200 </dev/null >"$T/nooom.out" 2>&1
rc2=$?
if [ $rc = 137 ] && grep -q "killed by the kernel's OOM killer" "$T/oom.out" &&
	grep -q '96 MiB' "$T/oom.out" && [ $rc2 = 0 ] && grep -q 'memtouch ok' "$T/nooom.out"; then
	ok jail-memory-max
else
	bad jail-memory-max "with --jail-mem-max 96M: status $rc ($(tail -3 "$T/oom.out" | tr '\n' ' ')); without: status $rc2 ($(tail -2 "$T/nooom.out" | tr '\n' ' '))"
fi

# ---------------------------------------------------------------- --jail-cgroup-joined
# The cgroup it was started in is its leaf (the containerd shim's pod
# cgroup): the limits are written there, no kiln.slice is made under it,
# and it is left for its caller to remove.
J=kiln-jtest-$$
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then dirs="/sys/fs/cgroup/$J"; else
	dirs="/sys/fs/cgroup/memory/$J /sys/fs/cgroup/pids/$J /sys/fs/cgroup/cpu/$J"; fi
# shellcheck disable=SC2086 # the list
mkdir $dirs
sh -c 'k=$1 i=$2; shift 2; for d; do echo $$ >"$d/cgroup.procs" || exit 1; done
	exec "$0" --kernel "$k" --initrd "$i" --jail-id 987005 --jail-cgroup-joined -- /bin/busybox sleep 30' \
	"$VMM" "$KERNEL" "$INITRD" $dirs \
	</dev/null >"$T/joined.out" 2>&1 &
P=$!
PIDS="$PIDS $P"
i=0
while [ $i -lt 200 ]; do
	INNER=$( (tr -d ' ' <"/proc/$P/task/$P/children") 2>/dev/null)
	[ -n "$INNER" ] && [ "$(field Uid "/proc/$INNER/status" | cut -f1)" = 987005 ] && break
	sleep 0.05
	i=$((i + 1))
done
first=${dirs%% *}
lim=$(cat "$first/memory.limit_in_bytes" "$first/memory.max" 2>/dev/null | head -1)
mcg=$(awk -F: '$2 == "memory" || ($1 == "0" && !found) { print $3; found = 1 }' "/proc/$INNER/cgroup" 2>/dev/null | tail -1)
kill "$P" 2>/dev/null
wait "$P" 2>/dev/null
left=0
for d in $dirs; do [ -d "$d" ] && left=$((left + 1)); done
if [ "$lim" = $(((256 + 32 + 128) << 20)) ] && [ "$mcg" = "/$J" ] && [ ! -e "$first/kiln.slice" ] &&
	[ "$left" = "$(echo $dirs | wc -w)" ]; then
	ok jail-cgroup-joined
else
	bad jail-cgroup-joined "limit '$lim' in $first, its memory cgroup '$mcg' (wanted /$J), kiln.slice $(ls -d "$first/kiln.slice" 2>/dev/null), $left dirs left ($(tail -2 "$T/joined.out" | tr '\n' ' '))"
fi
# shellcheck disable=SC2086
rmdir $dirs 2>/dev/null
out=$("$VMM" --kernel "$KERNEL" --jail-cgroup /sys/fs/cgroup --jail-cgroup-joined 2>&1)
rc=$?
[ $rc != 0 ] && echo "$out" | grep -q "give one of them" && ok jail-cgroup-joined-usage ||
	bad jail-cgroup-joined-usage "status $rc: $out"

# ---------------------------------------------------------------- --no-jail
"$VMM" --kernel "$KERNEL" --initrd "$INITRD" --no-jail -- /bin/busybox sleep 30 \
	</dev/null >"$T/off.out" 2>&1 &
P=$!
PIDS="$PIDS $P"
sleep 0.5
if [ "$(field Seccomp "/proc/$P/status")" = 0 ] && [ "$(field Uid "/proc/$P/status" | cut -f1)" = 0 ] &&
	[ -z "$(cat "/proc/$P/task/$P/children")" ]; then
	ok jail-off
else
	bad jail-off "--no-jail: Seccomp $(field Seccomp "/proc/$P/status"), uid $(field Uid "/proc/$P/status")"
fi
kill "$P"

exit $((nfail != 0))
