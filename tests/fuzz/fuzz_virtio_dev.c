/* SPDX-License-Identifier: MIT */
/* libFuzzer: kiln-vmm's virtio devices (console, rng, vsock, blk, pmem) behind
 * their virtio-mmio transport, against a hostile driver. The input picks a
 * device, makes a list of register writes (status, features, queue
 * numbers, ring addresses, ready, notify: in the input's order, so set-ups
 * a driver would never do are tried too), and fills the first 64 KiB of
 * guest RAM (descriptor tables, rings, buffers, the requests' headers: a
 * vsock packet, a blk request...). The device's queue work and its host
 * side (vsock's connections to unix sockets that nobody serves, blk's file)
 * run on the loop for a few turns; then the device is reset, as a driver
 * may. Nothing may touch memory outside RAM, crash, hang or leak.
 *
 * KVM is not involved: the interrupt and notification eventfds the
 * transport asks kvm.c for are plain eventfds here. */
#include <ev.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "jail/jail.h"
#include "virtio/virtio.h"
#include "vm.h"

#define MEM_SIZE (2u << 20)
#define IMAGE    (64u << 10)
#define NR_DEVS  5
#define ROUNDS   8

/* The transport's registers (virtio-mmio version 2). */
#define R_DRV_FEATURES     0x020
#define R_DRV_FEATURES_SEL 0x024
#define R_QUEUE_SEL        0x030
#define R_QUEUE_NUM        0x038
#define R_QUEUE_READY      0x044
#define R_QUEUE_NOTIFY     0x050
#define R_INT_ACK          0x064
#define R_STATUS           0x070
#define R_QUEUE_DESC_LO    0x080
#define R_QUEUE_DRIVER_LO  0x090
#define R_QUEUE_DEVICE_LO  0x0a0

/* kvm.c's, without KVM. */
int vm_msi_irqfd(struct vm *vm, unsigned vector)
{
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int vm_ioeventfd(struct vm *vm, uint64_t gpa, unsigned len, bool match, uint64_t data)
{
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

/* The blk worker's seccomp filter (vmm/jail/) would bind the fuzzer too. */
void jail_thread(struct vm *vm, enum jail_thread kind)
{
}

static struct vm vm;
static char dir[64];

static void remove_dir(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return;
}

static void setup(void)
{
	char path[128];
	const char *why = NULL;
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/kiln-fuzz-virtio.XXXXXX");
	if (!mkdtemp(dir) || mem_init(&vm.mem, MEM_SIZE))
		abort();
	atexit(remove_dir);
	vm.loop = ev_loop_new(EVFLAG_AUTO);
	pthread_mutex_init(&vm.stop_lock, NULL);
	snprintf(path, sizeof(path), "%s/disk", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (!vm.loop || fd < 0 || ftruncate(fd, 1 << 20))
		abort();
	close(fd);
	if (console_create(&vm, -1, open("/dev/null", O_WRONLY | O_CLOEXEC)) || rng_create(&vm))
		abort();
	snprintf(path, sizeof(path), "%s/vsock.sock", dir);
	if (vsock_create(&vm, 3, path))
		abort();
	snprintf(path, sizeof(path), "%s/disk", dir);
	if (blk_create(&vm, path, false, &why))
		abort();
	/* pmem: the disk file again, as the image (its flush requests) */
	if (pmem_map(&vm.mem, path, &why) || pmem_create(&vm) || vm.nr_devs != NR_DEVS)
		abort();
}

static void reg(unsigned dev, uint32_t off, uint32_t val)
{
	uint8_t b[4];

	memcpy(b, &val, 4);
	virtio_mmio_access(&vm, KILN_GPA_MMIO_BASE + dev * KILN_MMIO_SIZE + off, b, 4, true);
}

static uint32_t get_u32(const uint8_t **p, size_t *n)
{
	uint32_t v = 0;

	if (*n >= 4) {
		memcpy(&v, *p, 4);
		*p += 4;
		*n -= 4;
	}
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t regs[] = {
	    R_DRV_FEATURES,  R_DRV_FEATURES_SEL, R_QUEUE_SEL,       R_QUEUE_NUM,
	    R_QUEUE_READY,   R_QUEUE_NOTIFY,     R_INT_ACK,         R_STATUS,
	    R_QUEUE_DESC_LO, R_QUEUE_DRIVER_LO,  R_QUEUE_DEVICE_LO, 0x100 /* config */,
	};
	unsigned dev, nops;

	if (!vm.loop)
		setup();
	if (size < 2)
		return 0;
	dev = data[0] % NR_DEVS;
	nops = data[1] % 48;
	data += 2;
	size -= 2;
	/* A driver's start: acknowledge, driver, version 1, features ok. */
	reg(dev, R_STATUS, 0);
	reg(dev, R_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	reg(dev, R_DRV_FEATURES_SEL, 1);
	reg(dev, R_DRV_FEATURES, 1); /* VIRTIO_F_VERSION_1 */
	reg(dev, R_STATUS,
	    VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK);
	/* Then whatever the input says, one (register, value) at a time. */
	for (unsigned i = 0; i < nops && size >= 5; i++) {
		uint32_t off = regs[data[0] % (sizeof(regs) / sizeof(regs[0]))];

		data++;
		size--;
		reg(dev, off, get_u32(&data, &size));
	}
	memset(vm.mem.host, 0, IMAGE);
	memcpy(vm.mem.host, data, size < IMAGE ? size : IMAGE);
	/* Every queue kicked, and the host side given its turns. */
	for (int r = 0; r < ROUNDS; r++) {
		for (unsigned q = 0; q < vm.devs[dev]->ops->nr_queues; q++)
			reg(dev, R_QUEUE_NOTIFY, q);
		ev_run(vm.loop, EVRUN_NOWAIT);
	}
	reg(dev, R_STATUS, 0); /* reset */
	ev_run(vm.loop, EVRUN_NOWAIT);
	return 0;
}
