#!/bin/sh
# make demo: boot real kiln sandboxes from build/initramfs/busybox.cpio and
# run a few busybox applets in them, one VM per command, showing each
# command line, its output and how long the whole VM took. Exits with the
# status of the first guest that fails (0 if none does).
#
# Environment: KILN_VMM, KILN_KERNEL, KILN_INITRD, KILN_KVM_DEV.
set -u

cd "$(dirname "$0")/.." || exit 1

VMM=${KILN_VMM:-build/bin/kiln-vmm}
KERNEL=${KILN_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILN_INITRD:-build/initramfs/busybox.cpio}
KVM_DEV=${KILN_KVM_DEV:-/dev/kvm}

if [ ! -e "$KVM_DEV" ] || [ ! -r "$KVM_DEV" ] || [ ! -w "$KVM_DEV" ]; then
	echo "demo: skipped: /dev/kvm not available (kiln needs KVM; on a cloud VM, nested"
	echo "      virtualization or the kvm_pvm module)"
	exit 0
fi
for f in "$VMM" "$KERNEL" "$INITRD"; do
	if [ ! -f "$f" ]; then
		echo "demo: missing $f (build it with: make demo)"
		exit 1
	fi
done

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-demo.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' HUP TERM

now_ns() {
	date +%s%N
}

# sandbox TITLE LINES [ARGV...]: boot one VM running ARGV (none: /init) and
# show the first LINES lines of its output. Stops the demo if the guest fails.
sandbox() {
	title=$1
	lines=$2
	shift 2
	echo "== $title"
	if [ $# -gt 0 ]; then
		printf '$ %s --kernel %s --initrd %s --' "$VMM" "$KERNEL" "$INITRD"
		for a in "$@"; do
			case $a in
			*[!A-Za-z0-9/._=-]* | '') printf " '%s'" "$a" ;;
			*) printf ' %s' "$a" ;;
			esac
		done
		echo
	else
		echo "\$ $VMM --kernel $KERNEL --initrd $INITRD"
	fi
	t0=$(now_ns)
	if [ $# -gt 0 ]; then
		"$VMM" --kernel "$KERNEL" --initrd "$INITRD" -- "$@" </dev/null >"$T/out"
	else
		"$VMM" --kernel "$KERNEL" --initrd "$INITRD" </dev/null >"$T/out"
	fi
	st=$?
	t1=$(now_ns)
	tr -d '\r' <"$T/out" >"$T/out.lf"
	head -n "$lines" "$T/out.lf"
	total=$(wc -l <"$T/out.lf")
	[ "$total" -le "$lines" ] || echo "... ($((total - lines)) more lines)"
	echo "   [whole VM: $(((t1 - t0) / 1000000)).$(((t1 - t0) / 100000 % 10)) ms, exit status $st]"
	echo
	if [ $st -ne 0 ]; then
		echo "demo: the guest exited with status $st"
		exit $st
	fi
}

echo "kiln demo: each command below boots a fresh KVM virtual machine running kiln-kernel"
echo "with $INITRD as its root file system, runs one program as"
echo "init, and ends when that program exits."
echo

sandbox "booting with no program runs /init (hello-musl)" 10
sandbox "which kernel is this?" 5 /bin/uname -a
sandbox "the initramfs: busybox and its applet links" 8 /bin/ls -1 /bin
sandbox "a message from inside the sandbox" 5 /bin/echo 'hello from kiln'
sandbox "reading a file from the initramfs" 5 /bin/wc -c /bin/busybox

echo "demo: done; every sandbox exited with status 0"
