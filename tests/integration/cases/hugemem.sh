# 2 MiB pages for anonymous memory filled front to back
# (guest-kernel/libos/mm/vm_huge.c), cut up by fork, munmap, mprotect,
# MADV_DONTNEED and mremap, with guest RAM in either host backing
# (kiln-vmm --mem-backing). Sourced by run.sh.
expect_same hugemem -- /bin/hugemem
expect_same hugemem-thp --vmm '--mem-backing thp' -- /bin/hugemem
expect_same hugemem-always --vmm '--cmdline kiln.thp=always' -- /bin/hugemem
expect_same hugemem-never --vmm '--cmdline kiln.thp=never' -- /bin/hugemem
# PROT_NONE on filled pages, 4 KiB and 2 MiB (tests/integration/progs/protnone.c).
expect_same protnone -- /bin/protnone
expect_same protnone-always --vmm '--cmdline kiln.thp=always' -- /bin/protnone
expect_same lazymem-thp --vmm '--mem 256M --mem-backing thp' -- /bin/lazymem
# Running short: 4 KiB pages after the 2 MiB ones, for programs and for the
# copies fork makes.
guest_case hugemem-fill 0 --vmm '--mem 256M' --out '^filled all but 12 MiB: yes$' \
	--out '^2 MiB pages: yes$' --out '^4 KiB pages once memory ran short: yes$' \
	--out '^resident: yes$' -- /bin/hugemem fill
guest_case hugemem-fork 0 --vmm '--mem 256M --mem-backing thp' \
	--out '^the child got 4 KiB copies once memory ran short: yes$' \
	--out '^the child of a process filling half of memory sees it all: yes$' -- /bin/hugemem fork
vmm_case mem-backing-bad 2 --err "--mem-backing 'huge': expected memfd or thp" -- \
	--kernel "$KERNEL" --initrd "$INITRD" --mem-backing huge -- /bin/hello-musl
vmm_case mem-backing-lazy 2 --err 'mem-backing thp goes with booting or --restore-mode eager' -- \
	--kernel "$KERNEL" --restore "$T/no-such.snap" --restore-mode lazy --mem-backing thp
# Python's data stack on huge pages: an 80 MB array filled and summed.
if [ -f build/images/base.erofs ]; then
	vmm_case hugemem-python 0 --out '^ok 10000000$' -- --kernel "$KERNEL" \
		--image build/images/base.erofs --mem-backing thp -- /usr/bin/python3 -c \
		'import numpy, pandas; a = numpy.ones(10**7); print("ok", int(a.sum()))'
else
	echo "skip hugemem-python: build/images/base.erofs missing — run make images"
fi
