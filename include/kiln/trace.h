/* SPDX-License-Identifier: MIT */
/*
 * Hop timestamps of a guest's request through the host, for benchmarks
 * (tools/bench/net_connect_hops.sh) and debugging only. With KILN_TRACE=FILE
 * in its environment, kiln-vmm (which inherits kilnd's) and kilnd each
 * append one struct kiln_trace_rec to FILE at every point below; without
 * it nothing is opened or written.
 *
 * The clock is the TSC. A kiln guest reads the host's TSC unchanged (PVM
 * runs CPL3 rdtsc natively and the VMM applies no offset, also across a
 * restore: vmm/vcpu_state.c), so a guest program's own rdtsc stamps line
 * up with these records.
 *
 * Version 1. The file is host-local scratch in host byte order; a new
 * point goes before KILN_TRACE_MAX and keeps the numbers of the others.
 */
#ifndef KILN_TRACE_H
#define KILN_TRACE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

#define KILN_TRACE_ENV "KILN_TRACE"

enum kiln_trace_point {
	KILN_TRACE_NONE = 0,     /* reserved */
	KILN_TRACE_VMM_KICK,     /* VMM: serving the guest's vsock transmit kick */
	KILN_TRACE_VMM_FORWARD,  /* VMM: guest stream bytes written to a host socket */
	KILN_TRACE_KILND_ACCEPT, /* kilnd: a guest stream accepted on an egress listener */
	KILN_TRACE_KILND_HELLO,  /* kilnd: its hello complete, deciding */
	KILN_TRACE_KILND_REPLY,  /* kilnd: the hello's reply sent */
	KILN_TRACE_VMM_READ,     /* VMM: a host socket of a guest stream readable */
	KILN_TRACE_VMM_IRQ,      /* VMM: an interrupt raised for a virtio device */
	KILN_TRACE_VMM_KICKED,   /* VMM: done with the transmit kick */
	KILN_TRACE_MAX,
};

struct kiln_trace_rec {
	uint64_t tsc;
	uint32_t point; /* enum kiln_trace_point */
	uint32_t pid;   /* of the writer */
};

/* The trace file's descriptor, or -1 without KILN_TRACE (or if it cannot
 * be opened: then a line on stderr says why). Never a standard stream's
 * number, so that a zeroed descriptor field means no trace. Call while
 * the path can still be reached (before a jail's new root). */
static inline int kiln_trace_open(const char *who)
{
	const char *path = getenv(KILN_TRACE_ENV);
	int fd;

	if (!path || !*path)
		return -1;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && fd <= 2) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		fd = high;
	}
	if (fd < 0) {
		/* The benchmark that asked for it says the trace is empty. */
		const char msg[] = ": cannot open $KILN_TRACE; no hop timestamps\n";

		if (write(2, who, __builtin_strlen(who)) < 0 || write(2, msg, sizeof(msg) - 1) < 0)
			return -1;
	}
	return fd;
}

/* One record (a write of 16 bytes with O_APPEND: whole, whatever the
 * other writers do). */
static inline void kiln_trace(int fd, enum kiln_trace_point point)
{
	struct kiln_trace_rec r;

	if (fd <= 2)
		return;
	r.tsc = __rdtsc();
	r.point = point;
	r.pid = (uint32_t)getpid();
	if (write(fd, &r, sizeof(r)) < 0) {
		/* a full disk loses records; the reader counts what it has */
	}
}

#endif
