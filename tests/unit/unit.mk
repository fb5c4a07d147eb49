# One block per unit test: add the test's name to UNIT_TESTS and list the
# sources it links with.

UNIT_TESTS += test_virtq
UNIT_SRCS_test_virtq := vmm/virtio/virtq.c vmm/mem.c

UNIT_TESTS += test_mmio
UNIT_SRCS_test_mmio := tests/unit/kvm_stubs.c vmm/virtio/mmio.c vmm/virtio/virtq.c vmm/virtio/console.c \
	vmm/virtio/rng.c vmm/mem.c

UNIT_TESTS += test_cpio
UNIT_SRCS_test_cpio := guest-kernel/libos/fs/cpio.c
UNIT_TESTS += test_elf
UNIT_SRCS_test_elf := guest-kernel/libos/proc/elf.c
UNIT_TESTS += test_exec_cred
UNIT_SRCS_test_exec_cred := guest-kernel/libos/proc/exec_cred.c

UNIT_TESTS += test_erofs
UNIT_SRCS_test_erofs := guest-kernel/libos/fs/erofs.c

UNIT_TESTS += test_fdt
UNIT_SRCS_test_fdt := vmm/fdt.c guest-kernel/libos/core/bootinfo.c

UNIT_TESTS += test_mem
UNIT_SRCS_test_mem := vmm/mem.c

UNIT_TESTS += test_loader
UNIT_SRCS_test_loader := vmm/loader.c vmm/mem.c

UNIT_TESTS += test_ramfs
UNIT_SRCS_test_ramfs := guest-kernel/libos/fs/vfs.c guest-kernel/libos/fs/namei.c \
	guest-kernel/libos/fs/ramfs.c guest-kernel/libos/fs/shmem.c guest-kernel/libos/fs/devfs.c guest-kernel/libos/fs/perm.c \
	guest-kernel/libos/fs/file.c guest-kernel/libos/fs/cpio.c guest-kernel/libos/tty/tty.c guest-kernel/libos/tty/tty_input.c \
	guest-kernel/libos/tty/tty_ioctl.c guest-kernel/libos/tty/pty.c guest-kernel/libos/mm/host_copy.c \
	guest-kernel/libos/proc/pidns.c guest-kernel/libos/fs/changes.c guest-kernel/libos/proc/fair.c \
	tests/unit/sched_stubs.c

UNIT_TESTS += test_tty
UNIT_SRCS_test_tty := guest-kernel/libos/tty/tty.c guest-kernel/libos/tty/tty_input.c \
	guest-kernel/libos/tty/tty_ioctl.c guest-kernel/libos/proc/pidns.c guest-kernel/libos/proc/fair.c tests/unit/sched_stubs.c

UNIT_TESTS += test_vsock
UNIT_SRCS_test_vsock := tests/unit/kvm_stubs.c tests/unit/virtio_driver.c vmm/virtio/vsock.c vmm/virtio/vsock_conn.c vmm/virtio/mmio.c \
	vmm/virtio/virtq.c vmm/mem.c

UNIT_TESTS += test_blk
UNIT_SRCS_test_blk := tests/unit/kvm_stubs.c tests/unit/virtio_driver.c vmm/virtio/blk.c vmm/virtio/mmio.c vmm/virtio/virtq.c vmm/mem.c

UNIT_TESTS += test_pmem
UNIT_SRCS_test_pmem := tests/unit/kvm_stubs.c tests/unit/virtio_driver.c vmm/virtio/pmem.c vmm/virtio/mmio.c vmm/virtio/virtq.c vmm/mem.c \
	snapshot/hash.c

UNIT_TESTS += test_virtio_state
UNIT_SRCS_test_virtio_state := tests/unit/kvm_stubs.c vmm/virtio/mmio.c vmm/virtio/mmio_state.c vmm/virtio/virtq.c \
	vmm/virtio/console.c vmm/mem.c

# Capabilities, priorities, affinity, membarrier (the sources are included).
UNIT_TESTS += test_sched
UNIT_SRCS_test_sched := guest-kernel/libos/proc/pidns.c guest-kernel/libos/proc/fair.c

# CPU shares between PID namespaces.
UNIT_TESTS += test_fair
UNIT_SRCS_test_fair := guest-kernel/libos/proc/fair.c

# The guest's page allocator and address spaces, 2 MiB pages included.
UNIT_TESTS += test_vm
UNIT_SRCS_test_vm := guest-kernel/libos/mm/vm.c guest-kernel/libos/mm/vm_move.c guest-kernel/libos/mm/vm_zpoline.c guest-kernel/libos/mm/vm_pt.c guest-kernel/libos/mm/vm_text.c guest-kernel/libos/mm/vm_keep.c \
	guest-kernel/libos/mm/vm_huge.c guest-kernel/libos/mm/pmem.c

UNIT_TESTS += test_snapshot
UNIT_SRCS_test_snapshot := $(wildcard snapshot/*.c) control/sandbox/pause_base.c
$(BUILD)/tests/unit/test_snapshot $(BUILD)/tests/unit-san/test_snapshot: UNIT_LDLIBS += -lzstd

UNIT_TESTS += test_imageid
UNIT_SRCS_test_imageid := vmm/imageid.c $(wildcard snapshot/*.c)
$(BUILD)/tests/unit/test_imageid $(BUILD)/tests/unit-san/test_imageid: UNIT_LDLIBS += -lzstd

UNIT_TESTS += test_udp_frame
UNIT_SRCS_test_udp_frame := control/net/udp_frame.c
$(BUILD)/tests/unit/test_udp_frame $(BUILD)/tests/unit-san/test_udp_frame: UNIT_CFLAGS += -iquote control

UNIT_TESTS += test_relay
UNIT_SRCS_test_relay := control/net/relay.c
$(BUILD)/tests/unit/test_relay $(BUILD)/tests/unit-san/test_relay: UNIT_CFLAGS += -iquote control

UNIT_TESTS += test_net_policy
UNIT_SRCS_test_net_policy := control/net/policy.c
$(BUILD)/tests/unit/test_net_policy $(BUILD)/tests/unit-san/test_net_policy: UNIT_CFLAGS += -iquote control

UNIT_TESTS += test_cpuid_cache
UNIT_SRCS_test_cpuid_cache := vmm/cpuid_cache.c

UNIT_TESTS += test_host_cpuid
UNIT_SRCS_test_host_cpuid := vmm/host_cpuid.c snapshot/hash.c
