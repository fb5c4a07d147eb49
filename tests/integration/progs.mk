# Guest test programs: static Linux x86-64 programs that the integration
# tests run inside kiln (and, for comparison, on the host), built into
# $(BUILD)/tests/progs. Included from tests/tests.mk.
#
#   NAME            glibc, -static         (fileio, memtouch, exitcode, fault, getpid_bench)
#   NAME-glibc      glibc, -static         (hello, auxv)
#   NAME-glibc-pie  glibc, -static-pie     (hello, auxv)
#   NAME-musl       musl-gcc, -static      (hello, auxv, fileio, memtouch)
#
# Every program's source is tests/integration/progs/NAME.c. KILN_TEST_LIBC
# tells a program how it was built. Also builds the host-side benchmark
# helper $(BIN)/kiln-bench-boot, which `make bench` needs.
#
# TEST_PROGS lists everything built here; GUEST_PROGS only what goes into
# the initramfs (initramfs/test.list names each one).

PROGS_DIR    := $(BUILD)/tests/progs
PROGS_SRC    := tests/integration/progs
PROGS_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -MMD -MP -Iinclude
MUSL_CC      := musl-gcc

PROGS_PLAIN    := fileio memtouch exitcode fault getpid_bench forkbench stress pipebench
# Lazily mapped memory (reservations, first touch, running out), 2 MiB pages,
# and what a first touch costs (make bench).
PROGS_PLAIN    += lazymem hugemem firsttouch
# PROT_NONE pages that were filled (guard pages).
PROGS_PLAIN    += protnone
PROGS_VARIANTS := hello auxv
PROGS_MUSL     := $(PROGS_VARIANTS) fileio memtouch
# Pipes, poll/select, epoll, eventfd, timerfd and interval timers (and
# SIGALRM ending a blocking call: alarmjmp).
PROGS_PLAIN    += pipes polltest epolltest timers alarmjmp
PROGS_MUSL     += polltest epolltest
# procfs (/proc/self, maps, stat, status, a child's /proc/<pid>).
PROGS_PLAIN    += proctest
# AF_VSOCK sockets (tests/integration/vsock_test.sh).
PROGS_PLAIN    += vsocktest
# Pseudo-terminals, the line discipline and job control.
PROGS_PLAIN    += ptytest
# Snapshots: random numbers in clones, a warm process to pause and clone.
PROGS_PLAIN    += snaptest
# kiln-vmm's RAM port called by a program (kiln/boot.h KILN_PORT_RAM).
PROGS_PLAIN    += ramport
# pthreads (clone, futex, TLS).
PROGS_PLAIN    += threads
# AF_UNIX and loopback AF_INET/AF_INET6 sockets (cases/sockets.sh).
PROGS_PLAIN    += unixsock inetsock inetpeer
# The first run of syscall sites (cases/firstsys.sh).
PROGS_PLAIN    += firstsys
# Shared memory: MAP_SHARED, memfd_create, seals (cases/shm.sh).
PROGS_PLAIN    += shmtest
# Capabilities, priorities, affinity, membarrier, /proc/self/task (cases/schedcap.sh).
PROGS_PLAIN    += schedcap
# inotify (cases/inotify.sh).
PROGS_PLAIN    += inotifytest
# User and group ids, permissions between users (cases/creds.sh).
PROGS_PLAIN    += credtest
# /proc/PID/ of other users' processes, Cap* lines (cases/procfs.sh).
PROGS_PLAIN    += procperm
# capget's sets for root and the user, as on Linux (cases/procfs.sh).
PROGS_PLAIN    += capsets
# mount(2) of a procfs on an empty directory, and what is refused (cases/procfs.sh).
PROGS_PLAIN    += mounttest
# RLIMIT_NPROC and RLIMIT_AS (cases/rlimits.sh).
PROGS_PLAIN    += nproctest astest
# PID namespaces, one per pod container (cases/pidns.sh).
PROGS_PLAIN    += pidnstest

GUEST_PROGS := $(PROGS_PLAIN:%=$(PROGS_DIR)/%) \
	$(PROGS_VARIANTS:%=$(PROGS_DIR)/%-glibc) \
	$(PROGS_VARIANTS:%=$(PROGS_DIR)/%-glibc-pie) \
	$(PROGS_MUSL:%=$(PROGS_DIR)/%-musl)
BENCH_PROGS := $(BIN)/kiln-bench-boot
TEST_PROGS  := $(GUEST_PROGS) $(BENCH_PROGS)

$(PROGS_PLAIN:%=$(PROGS_DIR)/%): $(PROGS_DIR)/%: $(PROGS_SRC)/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) -static $(PROGS_CFLAGS) -DKILN_TEST_LIBC='"glibc"' -o $@ $<

$(PROGS_VARIANTS:%=$(PROGS_DIR)/%-glibc): $(PROGS_DIR)/%-glibc: $(PROGS_SRC)/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) -static $(PROGS_CFLAGS) -DKILN_TEST_LIBC='"glibc"' -o $@ $<

$(PROGS_VARIANTS:%=$(PROGS_DIR)/%-glibc-pie): $(PROGS_DIR)/%-glibc-pie: $(PROGS_SRC)/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) -static-pie -fPIE $(PROGS_CFLAGS) -DKILN_TEST_LIBC='"glibc static-pie"' -o $@ $<

$(PROGS_MUSL:%=$(PROGS_DIR)/%-musl): $(PROGS_DIR)/%-musl: $(PROGS_SRC)/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(MUSL_CC) -static $(PROGS_CFLAGS) -DKILN_TEST_LIBC='"musl"' -o $@ $<

$(BIN)/kiln-bench-boot: tools/bench/boot_latency.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@) $(BUILD)/host
	$(V)$(CC) $(HOST_CFLAGS) -MF $(BUILD)/host/kiln-bench-boot.d -o $@ $<
