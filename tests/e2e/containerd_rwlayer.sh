#!/bin/bash
# A container's rootfs writes reach containerd's snapshot (shim/rwlayer.c),
# on real VMs under a containerd of the test's own: a container writes a
# file, modifies and deletes image files, makes a directory and a symlink,
# and ends; the snapshot's upper dir then holds exactly those changes (and
# whiteouts); a second start of the same container boots over them; what
# the agent and the bind mounts write is not in it. Prints the replay's cost
# (ms per MiB changed, medians) against the host writing the same bytes.
#
#   bash tests/e2e/containerd_rwlayer.sh
#
# Prints "ok"/"not ok" per check and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/e2e/containerd_env.sh
. tests/e2e/containerd_env.sh e2e-rwlayer
IMG=docker.io/library/kiln-rw:1
PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $1"; }
check() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi; }
ms() { date +%s%3N; }
# the upper dir of container $1's snapshot
upper() { $C snapshots mounts "$T/m" "$1" | grep -o 'upperdir=[^,]*' | cut -d= -f2; }
# the shim's "N changes (B bytes...) saved ... in T ms" for container $1, the last
saved_ms() { grep "$1: .* saved to the snapshot in" "$T/containerd.log" | tail -1 | grep -o 'in [0-9]* ms' | tr -dc 0-9; }

python3 tests/e2e/images/mkarchive.py "$T/img.tar" --tag "$IMG" --dir /srv/data \
	--file /srv/data/motd='from the image' --file /etc/gone='bye' --file /etc/keep=keep \
	--cmd '["/bin/sh"]' && $C image import "$T/img.tar" >/dev/null
check $? "ctr image import of an archive the test built"

# the same process both times: writes on the first start, reads on the second
script='if [ -e /f ]; then echo second; cat /f /srv/data/motd; ls /etc/gone 2>&1; readlink /newdir/link; stat -c %a /f; else
echo hi > /f; chmod 600 /f; echo changed > /srv/data/motd; rm /etc/gone; mkdir -p /newdir/sub; ln -s /srv/data/motd /newdir/link; echo first; fi'
echo bound >"$T/bound"
out=$($C run $RT --mount "type=bind,src=$T/bound,dst=/etc/bound,options=rbind:ro" "$IMG" w1 sh -c "$script" 2>&1)
rc=$?
[ $rc = 0 ] && [ "$out" = first ]
check $? "the container writes and ends ($rc: $out)"
$C task rm w1 >/dev/null 2>&1
up=$(upper w1)
[ -n "$up" ] && [ -d "$up" ]
check $? "the container's snapshot has an upper dir ($up)"
got=$(cd "$up" 2>/dev/null && find . -mindepth 1 | sort | tr '\n' ' ')
want='./etc ./etc/gone ./f ./newdir ./newdir/link ./newdir/sub ./srv ./srv/data ./srv/data/motd '
[ "$got" = "$want" ]
check $? "the upper dir holds exactly the container's changes, not the agent's or the bind's ($got)"
[ "$(cat "$up/f")" = hi ] && [ "$(stat -c %a "$up/f")" = 600 ] &&
	[ "$(cat "$up/srv/data/motd")" = changed ] && [ -d "$up/newdir/sub" ] &&
	[ "$(readlink "$up/newdir/link")" = /srv/data/motd ]
check $? "a new file (bytes, mode), a modified image file, a dir and a symlink"
[ "$(stat -c %F:%t:%T "$up/etc/gone" 2>/dev/null)" = "character special file:0:0" ]
check $? "the deleted image file is a whiteout ($(stat -c %F:%t:%T "$up/etc/gone" 2>&1))"
mkdir -p "$T/m" && eval "$($C snapshots mounts "$T/m" w1)" &&
	[ "$(cat "$T/m/srv/data/motd")" = changed ] && [ ! -e "$T/m/etc/gone" ] && [ -e "$T/m/etc/keep" ]
check $? "the snapshot mounted again shows the changes over the image"
umount "$T/m" 2>/dev/null

out=$($C task start w1 2>&1)
rc=$?
want=$(printf 'second\nhi\nchanged\nls: /etc/gone: No such file or directory\n/srv/data/motd\n600')
[ $rc = 0 ] && [ "$out" = "$want" ]
check $? "a second start of the same container sees its writes ($rc: $(tr '\n' '|' <<<"$out"))"
$C task rm w1 >/dev/null 2>&1
got=$(cd "$up" 2>/dev/null && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$got" = "./etc ./etc/gone ./f ./newdir ./newdir/link ./newdir/sub ./srv ./srv/data ./srv/data/motd " ]
check $? "a start that changes nothing adds nothing ($got)"
$C c rm w1 >/dev/null 2>&1

# a rename of an image directory, and a tree removed
out=$($C run $RT "$IMG" w2 sh -c 'mv /srv/data /srv/moved && rm -rf /etc && echo done' 2>&1)
$C task rm w2 >/dev/null 2>&1
up=$(upper w2)
[ "$out" = 'done' ] && [ "$(cat "$up/srv/moved/motd" 2>/dev/null)" = 'from the image' ] &&
	[ "$(stat -c %t:%T "$up/srv/data" 2>/dev/null)" = 0:0 ] && [ "$(stat -c %t:%T "$up/etc" 2>/dev/null)" = 0:0 ]
check $? "a renamed image directory is copied whole, the old name and a removed tree whited out ($out)"
$C c rm w2 >/dev/null 2>&1

# a root.path without mounts (ctr run --rootfs) gets the writes itself, as
# with runc; a readonly one none
mkdir -p "$T/rd" && $C image mount --rw "$IMG" "$T/rd" >/dev/null
out=$($C run --rm $RT --rootfs "$T/rd" rf1 sh -c 'echo r > /rootfile; rm /etc/gone; echo ok' 2>&1)
[ "$out" = ok ] && [ "$(cat "$T/rd/rootfile" 2>/dev/null)" = r ] && [ ! -e "$T/rd/etc/gone" ]
check $? "ctr run --rootfs DIR: the writes land in DIR ($out)"
$C oci spec | python3 -c "
import json, sys
d = json.load(sys.stdin)
d['root'] = {'path': '$T/rd', 'readonly': True}
d['process']['args'] = ['sh', '-c', 'echo ro > /rofile; echo ok']
json.dump(d, open('$T/ro.json', 'w'))"
out=$($C run --rm $RT --config "$T/ro.json" rf2 2>&1)
[ "$out" = ok ] && [ ! -e "$T/rd/rofile" ] && grep -q "rf2: root.readonly" "$T/containerd.log"
check $? "a root.readonly spec's guest writes are not saved ($out)"
$C image unmount "$T/rd" >/dev/null 2>&1

# a task killed (SIGKILL, as `docker stop` after its grace period) keeps
# what it wrote: the guest ends it and its writes are saved first
$C run -d $RT "$IMG" k1 sh -c 'echo before-kill > /k; exec sleep 600' >/dev/null 2>&1
for _ in $(seq 50); do $C task exec --exec-id e1 k1 test -e /k 2>/dev/null && break; sleep 0.2; done
$C task kill -s SIGKILL k1 >/dev/null 2>&1
for _ in $(seq 50); do $C task ls 2>/dev/null | grep -q '^k1 .*STOPPED' && break; sleep 0.2; done
$C task rm k1 >/dev/null 2>&1
[ "$(cat "$(upper k1)/k" 2>/dev/null)" = before-kill ]
check $? "a SIGKILLed task's writes reach its snapshot"
$C c rm k1 >/dev/null 2>&1

# the cost: a container writing N MiB, the replay's time from the shim's log,
# against the host copying the same bytes onto the same file system
for mib in 8 64; do
	rm -f "$T/guest_ms" "$T/host_ms"
	for i in 1 2 3; do
		$C run $RT "$IMG" c$mib-$i sh -c "dd if=/dev/urandom of=/big bs=1M count=$mib 2>/dev/null" >/dev/null 2>&1
		$C task rm c$mib-$i >/dev/null 2>&1
		echo "$(saved_ms c$mib-$i)" >>"$T/guest_ms"
		[ "$(stat -c %s "$(upper c$mib-$i)/big" 2>/dev/null)" = $((mib << 20)) ] || echo bad >>"$T/guest_ms"
		$C c rm c$mib-$i >/dev/null 2>&1
		dd if=/dev/urandom of="$T/src.big" bs=1M count=$mib 2>/dev/null
		t0=$(ms)
		cp "$T/src.big" "$T/host.big"
		echo $(($(ms) - t0)) >>"$T/host_ms"
		rm -f "$T/host.big" "$T/src.big"
	done
	! grep -q bad "$T/guest_ms"
	check $? "a $mib MiB file written in the guest lands whole in the snapshot (3 runs)"
	g=$(sort -n "$T/guest_ms" | sed -n 2p)
	h=$(sort -n "$T/host_ms" | sed -n 2p)
	echo "# replaying $mib MiB changed: median $g ms ($(awk "BEGIN{printf \"%.2f\", $g/$mib}") ms/MiB); host cp of the same bytes (page cache to the same disk) $h ms (ratio $(awk "BEGIN{printf \"%.1f\", $g/($h?$h:1)}")); load $(cut -d' ' -f1 /proc/loadavg)"
done

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
