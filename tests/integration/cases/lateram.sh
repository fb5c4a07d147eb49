# Guest RAM past its early part (kiln,early-ram-end): kiln-vmm registers it
# with KVM only once the guest runs out of the early part and asks
# (KILN_PORT_RAM). A small program never asks; all of RAM counts from the
# start, before and after; programs using more than the early part get it,
# below and above the 3 GiB hole, in either host backing. Sourced by run.sh.
guest_case lateram-not-asked 0 --vmm '--mem 256M --stats' \
	--err '^kiln-vmm: late RAM \(from 66 MiB\): not asked for$' \
	--out '^MemTotal: +26[0-9]{4} kB$' -- /bin/busybox head -1 /proc/meminfo
guest_case lateram-asked 0 --vmm '--mem 256M --stats' \
	--err '^kiln-vmm: late RAM \(from 66 MiB\): asked for at' --out '^same MemTotal: +26[0-9]{4} kB$' \
	-- /bin/sh -c 'a=$(head -1 /proc/meminfo); /bin/memtouch 150 >/tmp/m || exit 1;
		[ "$a" = "$(head -1 /proc/meminfo)" ] && echo same $a'
guest_case lateram-high 0 --vmm '--mem 4G --stats' --no-out FAIL \
	--err '^kiln-vmm: late RAM \(from 80 MiB\): asked for at' -- /bin/memtouch 150
guest_case lateram-thp 0 --vmm '--mem 256M --mem-backing thp --stats' --no-out FAIL \
	--err '^kiln-vmm: late RAM \(from 66 MiB\): asked for at' -- /bin/memtouch 150
# At most as much RAM as the early part: all of it from the start.
guest_case lateram-none 0 --vmm '--mem 64M --stats' --out '^MemTotal: +6[0-9]{4} kB$' \
	--err '^kiln-vmm: time:' --no-err 'late RAM' -- /bin/busybox head -1 /proc/meminfo
# A program at the port itself (kiln/boot.h: harmless however called):
# before the kernel asks, with garbage in the registers, and again after.
guest_case lateram-port 0 --vmm '--mem 256M --stats' --out '^touched 150 MiB: yes$' \
	--err '^kiln-vmm: late RAM \(from 66 MiB\): asked for at' -- /bin/ramport 150
