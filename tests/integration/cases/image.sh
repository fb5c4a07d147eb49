# Booting from erofs images (kiln-vmm --image, make images): the union root
# (image below, ramfs above), copy-up, deletes, damaged images, and the
# base image's Python data stack, whose analysis script must print exactly
# what it prints on the host in a chroot of the same image root, and Node.js
# and npm (the same host reference for a node script). Sourced by
# run.sh. The cases of an image that is not built are skipped; once it is
# there, they must pass.

IMG_MIN=build/images/minimal.erofs
IMG_BASE=build/images/base.erofs
# kiln-vmm's default memory: OpenBLAS's 128 MiB buffers and other large
# reservations cost only the pages touched (VMA_LAZY).
PY_MEM=256M

# image_case NAME STATUS IMAGE [CHECKS] -- [ARGV...]: boot IMAGE alone
# (a vmm_case whose VMM arguments are made here).
image_case() {
	_name=$1 _status=$2 _img=$3
	shift 3
	_n=$# _i=0 _seen=
	while [ $_i -lt $_n ]; do
		_a=$1
		shift
		if [ -z "$_seen" ] && [ "$_a" = -- ]; then
			set -- "$@" -- --kernel "$KERNEL" --image "$_img" --mem "$PY_MEM" --
			_seen=1
		else
			set -- "$@" "$_a"
		fi
		_i=$((_i + 1))
	done
	vmm_case "$_name" "$_status" "$@"
}

if [ ! -f "$IMG_MIN" ]; then
	echo "skip image-minimal-*: $IMG_MIN missing — run make images"
else
	image_case image-minimal-ls 0 "$IMG_MIN" --out '^bin$' --out '^etc$' --out '^proc$' \
		--out '^dev$' -- /bin/busybox ls -1 /
	image_case image-minimal-stat 0 "$IMG_MIN" --out '^/bin/busybox [1-9][0-9]* 755 0 0$' \
		--out '^/etc 755 0 directory$' -- /bin/busybox sh -c \
		'busybox stat -c "%n %s %a %u %g" /bin/busybox; busybox stat -c "%n %a %u %F" /etc'
	# No program given and no /sbin/kiln-init in the image: a clear error.
	vmm_case image-minimal-no-init 127 --any 'no /sbin/kiln-init' -- \
		--kernel "$KERNEL" --image "$IMG_MIN"
	# Both: the initramfs is unpacked over the image, its files win.
	vmm_case image-with-initramfs 0 --out '^hello from musl$' --out '^kiln-env$' \
		--out '^BASE SYSTEM$' -- --kernel "$KERNEL" --initrd "$INITRD" --image "$IMG_MIN" \
		-- /bin/busybox sh -c '/bin/hello-musl; ls /etc | grep kiln-env;
			grep -o "BASE SYSTEM" /etc/fstab'

	# An exec that fails late: busybox's segments are loaded, into the
	# page tables and pages kept from its last run (vm_keep.c), when its
	# interpreter turns out to be gone. The kept tree must come out whole
	# (no page of it lost or freed twice: 100 more such runs leak nothing) and
	# the next runs of the program must work.
	# shellcheck disable=SC2016 # the guest's shell expands these
	image_case image-exec-late-fail 0 "$IMG_MIN" --out '^before 42 42 42 42$' \
		--out '^gone 126$' --out '^after 42 42 42 42$' --out '^no leak$' -- \
		/bin/busybox sh -c 'b=/bin/busybox ld=/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
			run() { r=; for i in 1 2 3 4; do r="$r $($b expr 6 \* 7)"; done; echo "$1$r"; }
			avail() { $ld $b awk "/^MemAvailable/ { print \$2 }" /proc/meminfo; }
			run before; $b mv /lib64/ld-linux-x86-64.so.2 /lib64/saved
			$b expr 6 \* 7 2>/dev/null; echo "gone $?"; m0=$(avail) i=0
			while [ $i -lt 100 ]; do $b expr 1 2>/dev/null; i=$((i + 1)); done
			m1=$(avail); $ld $b mv /lib64/saved /lib64/ld-linux-x86-64.so.2; run after
			[ $((m0 - m1)) -lt 8192 ] && echo "no leak" || echo "leaked $((m0 - m1)) KiB"'

	# Writes go to memory (copy-up), the image stays as it was.
	if want_case image-copy-up; then
		sum_before=$(sha256sum <"$IMG_MIN")
		# shellcheck disable=SC2016 # the guest's shell expands these
		image_case image-copy-up 0 "$IMG_MIN" --out '^# UNCONFIGURED FSTAB FOR BASE SYSTEM$' \
			--out '^appended$' --out '^header: ok$' --out '^size: same$' --out '^new: hi$' -- \
			/bin/busybox sh -c 'b=busybox f=/usr/lib/x86_64-linux-gnu/gconv/UTF-7.so;
				echo appended >>/etc/fstab; $b cat /etc/fstab; s=$($b stat -c %s $f);
				printf "xx" | $b dd of=$f bs=1 seek=1 conv=notrunc 2>/dev/null;
				$b head -c 4 $f | $b od -c | $b grep -q "177   x   x   F" &&
				echo "header: ok"; [ "$s" = "$($b stat -c %s $f)" ] && echo "size: same";
				echo hi >/usr/new; echo "new: $($b cat /usr/new)"'
		[ "$sum_before" = "$(sha256sum <"$IMG_MIN")" ] ||
			fail image-copy-up-unchanged "the image file changed"
	fi
	# Deletes and renames of image entries; the deleted stay deleted.
	# shellcheck disable=SC2016 # the guest's shell expands these
	image_case image-delete 0 "$IMG_MIN" --no-out 'hostname' --out '^gone$' \
		--out '^sources.list$' --out 'Directory not empty' --out '^empty-rmdir ok$' -- \
		/bin/busybox sh -c 'b=busybox; $b rm /etc/hostname; $b ls /etc;
			$b rm -r /usr/lib/x86_64-linux-gnu/gconv; [ -e /usr/lib/x86_64-linux-gnu/gconv ] ||
			echo gone; $b mv /etc/apt /etc/apt2; $b ls /etc/apt2 | $b grep sources.list$;
			$b rmdir /etc/dpkg 2>&1; $b rmdir /etc/dpkg/dpkg.cfg.d && echo "empty-rmdir ok"'

	# Damaged images: a clear message, never a crash or a hang.
	d=$T/damaged
	mkdir -p "$d"
	if ! { python3 tests/integration/erofs_damage.py "$IMG_MIN" "$d/magic.erofs" magic &&
		python3 tests/integration/erofs_damage.py "$IMG_MIN" "$d/root.erofs" rootdir &&
		python3 tests/integration/erofs_damage.py "$IMG_MIN" "$d/etc.erofs" dir /etc &&
		python3 tests/integration/erofs_damage.py "$IMG_MIN" "$d/loop.erofs" loop /usr/lib &&
		python3 tests/integration/erofs_damage.py "$IMG_MIN" "$d/half.erofs" truncate &&
		truncate -s 10G "$d/sparse.erofs"; }; then
		fail image-damage-tool "erofs_damage.py failed"
	fi
	image_case image-bad-magic 127 "$d/magic.erofs" --any 'not an erofs image' -- /bin/busybox true
	image_case image-sparse-10g 127 "$d/sparse.erofs" --any 'not an erofs image' -- \
		/bin/busybox true
	image_case image-corrupt-root 127 "$d/root.erofs" --any 'root directory is corrupt' -- \
		/bin/busybox true
	image_case image-corrupt-dir 0 "$d/etc.erofs" --any 'directory nid [0-9]+ is corrupt' \
		--out '^listed$' -- /bin/busybox sh -c 'busybox ls /etc; echo listed'
	image_case image-dir-loop 0 "$d/loop.erofs" --any 'a second name of a directory' \
		--out '^walked$' -- /bin/busybox sh -c 'busybox ls -R / >/dev/null; echo walked'
	image_case image-truncated 0 "$d/half.erofs" --any 'corrupt' --out '^walked$' -- \
		/bin/busybox sh -c 'busybox ls -R / >/dev/null; echo walked'
	rm -rf "$d"
fi

if [ ! -f "$IMG_BASE" ]; then
	echo "skip image-python-*: $IMG_BASE missing — run make images"
else
	image_case image-python-import 0 "$IMG_BASE" --out '^ok$' -- \
		/usr/bin/python3 -c 'import numpy, pandas, matplotlib; print("ok")'
	# python3's data segment (and its libraries') copied by the VMM
	# (KILN_PORT_COPY), none of it left to the library OS.
	vmm_case image-python-host-copy 0 --out '^ok$' \
		--any '^kiln: copies of image bytes: [1-9][0-9]* by the VMM, 0 by the library OS' -- \
		--kernel "$KERNEL" --image "$IMG_BASE" --mem "$PY_MEM" --cmdline kiln.stats=1 -- \
		/usr/bin/python3 -c 'print("ok")'
	# The same with image pages copied instead of mapped in place.
	vmm_case image-python-copying 0 --out '^ok$' -- --kernel "$KERNEL" --image "$IMG_BASE" \
		--mem "$PY_MEM" --cmdline kiln.borrow=0 -- /usr/bin/python3 -c 'import numpy; print("ok")'
	image_case image-python-mmap 0 "$IMG_BASE" --out '^mmap ok$' -- \
		/usr/bin/python3 -c "$(cat "$DATA/mmap_cow.py")"
	# A library one python3 process mapped must not be readable in the next
	# ones, which run the same program but do not map it (vm_keep.c keeps
	# the dead process's entries of image pages as stale entries, which no
	# access may reach): "map" loads _bz2 and prints the address of its code;
	# "probe" reads there through the kernel (EFAULT) and directly (SIGSEGV);
	# "fill" maps the free range around it, lazily, and finds zeroes there.
	# shellcheck disable=SC2016 # the guest's shell expands these
	image_case image-python-stale-map 0 "$IMG_BASE" --out '^write: -1 14$' \
		--out '^status 139$' --no-out 'read an unmapped page' --out '^fill: zeroes AAAA$' \
		-- /bin/sh -c 'a=$(python3 -c "$0" map) && python3 -c "$0" probe "$a";
			echo "status $?"; python3 -c "$0" fill "$a"' '
import ctypes, sys
if sys.argv[1] == "map":
    import _bz2
    lib = ctypes.CDLL(_bz2.__file__)
    print(ctypes.cast(lib.PyInit__bz2, ctypes.c_void_p).value)
    sys.exit(0)
addr, lo, hi = int(sys.argv[2]), 0, 1 << 47
for line in open("/proc/self/maps"):
    a, b = (int(x, 16) for x in line.split()[0].split("-"))
    if a <= addr < b:
        sys.exit("mapped again: the test proves nothing")
    lo, hi = (max(lo, b), hi) if b <= addr else (lo, min(hi, a) if a > addr else hi)
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "probe":
    n = libc.write(1, ctypes.c_void_p(addr), 1)
    print("write:", n, ctypes.get_errno(), flush=True)
    ctypes.string_at(addr, 1)
    sys.exit("read an unmapped page")
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
# PROT_NONE first: the range is mapped lazily, page by page on first touch.
if libc.mmap(lo, hi - lo, 0, 0x32, -1, 0) != lo or libc.mprotect(ctypes.c_void_p(lo), hi - lo, 3):
    sys.exit("mmap or mprotect failed")
page = addr & ~4095
zero = ctypes.string_at(page, 4096) == bytes(4096) and ctypes.string_at(lo, hi - lo) == bytes(hi - lo)
ctypes.memset(page, 65, 4)
print("fill:", "zeroes" if zero else "old bytes", ctypes.string_at(page, 4).decode())'
	image_case image-python-threads 0 "$IMG_BASE" --out '^True 244999650000 1f646c20b86da694$' -- \
		/usr/bin/python3 -c '
import concurrent.futures as cf, hashlib, threading
def work(i):
    h = hashlib.sha256()
    for k in range(20000):
        h.update(b"%d-%d" % (i, k))
    return i, sum(range(i * 100000)), h.hexdigest()[:16], threading.get_ident()
with cf.ThreadPoolExecutor(max_workers=4) as ex:
    res = sorted(ex.map(work, range(8)))
main = threading.main_thread().ident
print(all(r[3] != main for r in res), res[7][1], res[7][2])'
	# pip's own scripts start with "#!/usr/bin/python3" (or the venv's).
	image_case image-python-venv 0 "$IMG_BASE" --out '^pip [0-9.]+ from /tmp/v/' -- \
		/bin/sh -c 'python3 -m venv /tmp/v && /tmp/v/bin/pip --version'
	image_case image-pip 0 "$IMG_BASE" --out '^pip [0-9.]+ from /usr/lib/python3/' -- \
		/usr/bin/pip --version

	# The analysis script against the host, in a chroot of the same root
	# (extracted once per image into the cache, next to the image).
	# base_root NAME: the root's directory in $root, or why not (skip/fail).
	base_root() {
		if [ "$(id -u)" -ne 0 ]; then
			echo "skip $1: the host reference needs root (chroot)"
			return 1
		fi
		root=$(tools/mkimage/extract-root "$IMG_BASE" 2>"$T/extract.err") && return 0
		fail "$1" "$(cat "$T/extract.err")"
		return 1
	}
	# on_host [VAR=VAL...] ARGV...: ARGV in the chroot, in init's environment
	on_host() {
		env -i PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/ TERM=linux "$@"
	}
	if want_case image-python-analysis && base_root image-python-analysis; then
		script=$(cat "$DATA/analysis.py")
		# As in a fresh guest: no matplotlib font cache yet.
		on_host MPLCONFIGDIR=/tmp/kiln-mpl-$$ timeout --foreground -k 5 "$TIMEOUT" \
			chroot "$root" /usr/bin/python3 -c "$script" "/tmp/kiln-chart-$$.png" \
			>"$T/analysis.host" 2>&1
		rm -rf "$root/tmp/kiln-chart-$$.png" "$root/tmp/kiln-mpl-$$"
		image_case image-python-analysis 0 "$IMG_BASE" --out-is "$T/analysis.host" -- \
			/usr/bin/python3 -c "$script" /tmp/chart.png
	fi

	# Node.js: node -e, and a script of what node programs and npm lean on
	# (fs, zlib streams, child processes and signals, http on loopback,
	# worker threads with shared memory, the event loop's order) against
	# the host in a chroot of the same root; npm packs a package and
	# installs the tarball, offline.
	image_case image-node-eval 0 "$IMG_BASE" --out '^2$' -- /usr/bin/node -e 'process.stdout.write(1 + 1 + "\n")'
	if want_case image-node-probe && base_root image-node-probe; then
		script=$(cat "$DATA/node_probe.js")
		on_host timeout --foreground -k 5 "$TIMEOUT" chroot "$root" /usr/bin/node -e "$script" \
			>"$T/node.host" 2>&1
		image_case image-node-probe 0 "$IMG_BASE" --out-is "$T/node.host" -- /usr/bin/node -e "$script"
	fi
	# shellcheck disable=SC2016 # the guest's shell expands these
	image_case image-npm-pack-install 0 "$IMG_BASE" --out '^npm [0-9]+\.[0-9]+\.[0-9]+$' \
		--out '^kilnnpm-1.0.0.tgz$' --out '^added 1 package' --out '^from-the-tarball$' -- /bin/sh -c '
		echo "npm $(npm --version)"
		mkdir -p /tmp/pkg /tmp/app && cd /tmp/pkg && npm init -y >/dev/null &&
		npm pkg set name=kilnnpm version=1.0.0 main=index.js &&
		echo "module.exports = \"from-the-tarball\"" >index.js && npm pack --silent &&
		cd /tmp/app && npm install --no-audit --no-fund --no-progress /tmp/pkg/kilnnpm-1.0.0.tgz &&
		node -e "console.log(require(\"kilnnpm\"))"'
fi
