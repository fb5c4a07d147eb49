# Shared memory (guest-kernel/libos/fs/shmem.c, mm/vm.c VMA_SHARED): the
# test program must print what it prints on the host; memory mapped shared
# and dropped in every way comes back. Sourced by run.sh.

expect_same shmtest -- /bin/shmtest
guest_case shmtest-leak 0 --out '^no leak$' -- /bin/shmtest leak

# Python's users of shared memory, from the base image: multiprocessing's
# shared_memory, Value and Array under fork, forkserver and spawn (named
# semaphores in /dev/shm, fds passed over AF_UNIX), a forkserver Pool, the
# mmap module (file and anonymous, across fork, resize), SQLite in WAL
# mode (its -shm file mapped by two connections and a child process). The
# reference is the host's python3 running the same script (a file:
# spawn and forkserver children import it).
if [ ! -f build/images/base.erofs ]; then
	echo "skip shm-python: build/images/base.erofs missing — run make images"
elif want_case shm-python; then
	mkdir -p "$T/shm-python"
	cp "$DATA/shm.py" "$T/shm-python/shm.py"
	(cd "$T/shm-python" && timeout -k 5 "$TIMEOUT" python3 shm.py) >"$T/shm-python.host" 2>&1
	vmm_case shm-python 0 --out-is "$T/shm-python.host" -- --kernel "$KERNEL" \
		--image build/images/base.erofs --mem 1G -- /bin/sh -c \
		'printf "%s" "$1" >/tmp/shm.py && exec python3 /tmp/shm.py' sh "$(cat "$DATA/shm.py")"
fi
