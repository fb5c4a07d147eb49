#!/bin/bash
# A container's rootfs writes reach containerd's snapshot (shim/rwlayer.c),
# on real VMs under a containerd of the test's own: a container writes a
# file, modifies and deletes image files, makes a directory and a symlink,
# and ends; the snapshot's upper dir then holds exactly those changes (and
# whiteouts); a second start of the same container boots over them; what
# the agent and the bind mounts write is not in it. Then the same for an
# app container of a pod (its root copied into the pod's VM: only its own
# writes, with a rename, a chmod and a hard link, reach its snapshot). Prints
# the replay's cost (ms per MiB changed, medians) against the host writing
# the same bytes, and a pod container's cost at its exit (nothing changed,
# thousands of files touched, a few MiB written) beside a host find of the
# same tree.
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
	--file /etc/mode=m --file /etc/moved=moved \
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

# a second start of container $1 prints $2 and leaves its upper dir $up as
# it was ($3, the listing), and the container goes; $4 says what it is
restart_sees() {
	local out rc got
	out=$($C task start "$1" 2>&1)
	rc=$?
	[ $rc = 0 ] && [ "$out" = "$2" ]
	check $? "a second start of $4 sees its writes ($rc: $(tr '\n' '|' <<<"$out"))"
	$C task rm "$1" >/dev/null 2>&1
	got=$(cd "$up" 2>/dev/null && find . -mindepth 1 | sort | tr '\n' ' ')
	[ "$got" = "$3" ]
	check $? "a start that changes nothing adds nothing ($got)"
	$C c rm "$1" >/dev/null 2>&1
}
restart_sees w1 "$(printf 'second\nhi\nchanged\nls: /etc/gone: No such file or directory\n/srv/data/motd\n600')" \
	"$want" "the same container"

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

# ---- an app container of a pod: its root is copied into the pod's VM (by
# the agent, with its dev/, proc/ and binds), which is not its change; what
# it writes itself reaches its own snapshot at its exit
member="--annotation io.kubernetes.cri.container-type=container --annotation io.kubernetes.cri.sandbox-id=rwpod"
$C run -d $RT --annotation io.kubernetes.cri.container-type=sandbox \
	--annotation io.kubernetes.cri.sandbox-id=rwpod "$IMG" rwpod sleep 600 >/dev/null 2>&1
pscript='if [ -e /f ]; then echo second; cat /f /newdir/hard /srv/data/motd /srv/data/renamed; echo; ls /etc/gone 2>&1; stat -c %a /etc/mode; stat -c %h /f; else
echo hi > /f; chmod 600 /f; echo changed > /srv/data/motd; rm /etc/gone; mkdir -p /newdir/sub; chmod 751 /etc/mode;
mv /etc/moved /srv/data/renamed; ln /f /newdir/hard; echo first; fi'
out=$($C run $RT $member --mount "type=bind,src=$T/bound,dst=/etc/bound,options=rbind:ro" "$IMG" pa1 sh -c "$pscript" 2>&1)
rc=$?
[ $rc = 0 ] && [ "$out" = first ] && [ "$($C task ls 2>/dev/null | awk '$1 == "rwpod" {print $3}')" = RUNNING ]
check $? "a pod's app container writes and ends, the pod runs on ($rc: $out)"
$C task rm pa1 >/dev/null 2>&1
up=$(upper pa1)
got=$(cd "$up" 2>/dev/null && find . -mindepth 1 | sort | tr '\n' ' ')
want='./etc ./etc/gone ./etc/mode ./etc/moved ./f ./newdir ./newdir/hard ./newdir/sub ./srv ./srv/data ./srv/data/motd ./srv/data/renamed '
[ -n "$up" ] && [ "$got" = "$want" ]
check $? "the app container's upper dir holds exactly its changes, not the copy's, the agent's or the bind's ($got)"
[ "$(cat "$up/f" 2>/dev/null)" = hi ] && [ "$(stat -c %a "$up/f")" = 600 ] &&
	[ "$(stat -c %a "$up/etc/mode" 2>/dev/null)" = 751 ] && [ "$(cat "$up/etc/mode")" = m ] &&
	[ "$(cat "$up/srv/data/renamed" 2>/dev/null)" = moved ] &&
	[ "$(stat -c %F:%t:%T "$up/etc/moved" 2>/dev/null)" = "character special file:0:0" ] &&
	[ "$(stat -c %F:%t:%T "$up/etc/gone" 2>/dev/null)" = "character special file:0:0" ] &&
	[ "$(stat -c %i "$up/f")" = "$(stat -c %i "$up/newdir/hard" 2>/dev/null)" ] && [ "$(stat -c %h "$up/f")" = 2 ]
check $? "a new file, a chmod, a rename (whited out, copied), a removal and a hard link (one file, two names) in it ($(stat -c '%n %a %h %i' "$up/f" "$up/newdir/hard" "$up/etc/mode" 2>&1 | tr '\n' ' '))"
usage=$($C snapshots usage pa1 2>/dev/null | awk 'NR == 2 {print $NF}')
[ "$usage" = 11 ]
check $? "ctr snapshots usage counts them: 11 inodes for its 12 names, two of them one file ($usage)"
restart_sees pa1 "$(printf 'second\nhi\nhi\nchanged\nmoved\nls: /etc/gone: No such file or directory\n751\n2')" \
	"$want" "the app container in the pod (the hard link one file)"

# the cost at a pod container's exit, its copied root holding some
# thousands of files (the image's): nothing changed, all touched, a few
# MiB written, as many files made; beside a host find (a stat of each name)
# of the same tree, the snapshot mounted
NF=3000
BIGIMG=docker.io/library/kiln-rw-big:1
python3 tests/e2e/images/mkarchive.py "$T/big.tar" --tag "$BIGIMG" --cmd '["/bin/sh"]' \
	$(for i in $(seq $NF); do echo "--file /t/f$i=$i"; done) && $C image import "$T/big.tar" >/dev/null
check $? "an image of $NF files imported"
for kind in none touch mib new; do : >"$T/p_$kind"; done
: >"$T/p_find"; : >"$T/p_base"
for i in 1 2 3; do
	for kind in none touch mib new; do
		case $kind in
		none) cmd=true ;;
		touch) cmd='touch /t/*' ;;
		mib) cmd='dd if=/dev/urandom of=/t/big bs=1M count=4 2>/dev/null' ;;
		new) cmd="mkdir /n && cd /n && for i in \$(seq $NF); do echo \$i >g\$i; done" ;;
		esac
		$C run $RT $member "$BIGIMG" "p$kind$i" sh -c "$cmd" >/dev/null 2>&1
		$C task rm "p$kind$i" >/dev/null 2>&1
		echo "$(saved_ms "p$kind$i")" >>"$T/p_$kind"
		grep -o "container p$kind$i: its root copied .* cleared in [0-9]*" "$T/containerd.log" |
			tail -1 | grep -o '[0-9]*$' >>"$T/p_base"
	done
	[ "$(find "$(upper "ptouch$i")/t" -type f 2>/dev/null | wc -l)" = $NF ] || echo bad >>"$T/p_touch"
	[ "$(find "$(upper "pnew$i")/n" -type f 2>/dev/null | wc -l)" = $NF ] || echo bad >>"$T/p_new"
	[ "$(stat -c %s "$(upper "pmib$i")/t/big" 2>/dev/null)" = $((4 << 20)) ] || echo bad >>"$T/p_mib"
	[ -z "$(ls -A "$(upper "pnone$i")" 2>/dev/null)" ] || echo bad >>"$T/p_none"
	mkdir -p "$T/pm" && eval "$($C snapshots mounts "$T/pm" "pnone$i")"
	t0=$(ms)
	find "$T/pm" -printf '%m %s %T@\n' >/dev/null
	echo $(($(ms) - t0)) >>"$T/p_find"
	umount "$T/pm" 2>/dev/null
	for kind in none touch mib new; do $C c rm "p$kind$i" >/dev/null 2>&1; done
done
for kind in none touch mib new; do
	[ "$(grep -c '^[0-9][0-9]*$' "$T/p_$kind")" = 3 ] && ! grep -q bad "$T/p_$kind"
	check $? "pod container exits ($kind): each saved, the snapshot as written (3 runs: $(tr '\n' ' ' <"$T/p_$kind"))"
done
med() { sort -n "$1" | sed -n 2p; }
echo "# a pod container's exit, $NF files in its copied root: nothing changed $(med "$T/p_none") ms, all $NF touched $(med "$T/p_touch") ms, 4 MiB written $(med "$T/p_mib") ms, $NF files made $(med "$T/p_new") ms (medians of 3); host find -printf of the same tree $(med "$T/p_find") ms; at create, the copy's change bits cleared in $(sort -n "$T/p_base" | sed -n 6p) ms (median of 12); load $(cut -d' ' -f1 /proc/loadavg)"
$C task kill -s SIGKILL rwpod >/dev/null 2>&1
for _ in $(seq 50); do [ "$($C task ls 2>/dev/null | awk '$1 == "rwpod" {print $3}')" = STOPPED ] && break; sleep 0.2; done
$C task rm rwpod >/dev/null 2>&1
$C c rm rwpod >/dev/null 2>&1

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
