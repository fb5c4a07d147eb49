/* SPDX-License-Identifier: MIT */
/* Reading kilnd's host CPUID file (host_cpuid.h). */
#include "host_cpuid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../snapshot/snap.h"
#include "kiln/host_cpuid.h"

#define ENTRY_SIZE sizeof(struct kvm_cpuid_entry2)
#define FILE_MAX   (sizeof(struct kiln_host_cpuid_hdr) + KILN_HOST_CPUID_MAX * ENTRY_SIZE)

static int bad(char *why, size_t wlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t wlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, wlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The highest leaf of function's range (leaf 0's or 0x80000000's EAX), or
 * ~0 for ranges without one here (the hypervisor leaves from 0x40000000). */
static uint32_t range_max(const struct kvm_cpuid_entry2 *e, unsigned n, uint32_t function)
{
	uint32_t base = function & 0xf0000000u;

	if (base != 0 && base != 0x80000000u)
		return ~0u;
	for (unsigned i = 0; i < n; i++)
		if (e[i].function == base && e[i].index == 0)
			return e[i].eax;
	return base ? 0 : ~0u; /* leaf 0 is checked on its own */
}

static int check_entries(const struct kvm_cpuid_entry2 *e, unsigned n, char *why, size_t wlen)
{
	bool leaf0 = false;

	for (unsigned i = 0; i < n; i++) {
		if (e[i].padding[0] || e[i].padding[1] || e[i].padding[2])
			return bad(why, wlen, "entry %u: padding is not zero", i);
		if (e[i].flags & ~(uint32_t)KVM_CPUID_FLAG_SIGNIFCANT_INDEX)
			return bad(why, wlen, "entry %u: unknown flags %#x", i, e[i].flags);
		if (e[i].function > range_max(e, n, e[i].function))
			return bad(why, wlen, "entry %u: leaf %#x is past its range's maximum", i,
			           e[i].function);
		for (unsigned j = 0; j < i; j++)
			if (e[j].function == e[i].function && e[j].index == e[i].index)
				return bad(why, wlen, "entries %u and %u are the same leaf", j, i);
		leaf0 |= e[i].function == 0 && e[i].index == 0;
	}
	if (!leaf0)
		return bad(why, wlen, "no leaf 0 among its %u entries", n);
	return 0;
}

int host_cpuid_parse(const void *buf, size_t len, struct kvm_cpuid2 *out, char *why, size_t wlen)
{
	struct kiln_host_cpuid_hdr h;
	const unsigned char *entries = (const unsigned char *)buf + sizeof(h);
	int err;

	if (len < sizeof(h))
		return bad(why, wlen, "%zu bytes, shorter than its %zu-byte header", len,
		           sizeof(h));
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, KILN_HOST_CPUID_MAGIC, sizeof(h.magic)))
		return bad(why, wlen, "not a kiln host CPUID file (bad magic)");
	if (h.version != KILN_HOST_CPUID_VERSION)
		return bad(why, wlen, "version %u, this kiln-vmm reads version %u", h.version,
		           KILN_HOST_CPUID_VERSION);
	if (h.entry_size != ENTRY_SIZE || h.reserved)
		return bad(why, wlen, "entry size %u (expected %zu) or reserved field not zero",
		           h.entry_size, ENTRY_SIZE);
	if (h.nent < 1 || h.nent > KILN_HOST_CPUID_MAX)
		return bad(why, wlen, "%u entries, expected 1 to %u", h.nent, KILN_HOST_CPUID_MAX);
	if (len != sizeof(h) + (size_t)h.nent * ENTRY_SIZE)
		return bad(why, wlen, "%zu bytes where %u entries take %zu", len, h.nent,
		           sizeof(h) + h.nent * ENTRY_SIZE);
	if (snap_xxh64(entries, h.nent * ENTRY_SIZE, 0) != h.hash)
		return bad(why, wlen, "the entries' hash does not match (a damaged file)");
	memset(out, 0, sizeof(*out) + KILN_HOST_CPUID_MAX * ENTRY_SIZE);
	memcpy(out->entries, entries, h.nent * ENTRY_SIZE);
	err = check_entries(out->entries, h.nent, why, wlen);
	if (err)
		return err;
	out->nent = h.nent;
	return 0;
}

struct kvm_cpuid2 *host_cpuid_read(const char *path, char *why, size_t wlen)
{
	unsigned char buf[FILE_MAX + 1];
	struct kvm_cpuid2 *cp;
	struct stat st;
	size_t len = 0;
	ssize_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0) {
		snprintf(why, wlen, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, wlen, "not a regular file");
		close(fd);
		return NULL;
	}
	/* One byte more than a file may hold, to tell a longer one. */
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	if (n < 0) {
		snprintf(why, wlen, "read: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	close(fd);
	cp = calloc(1, sizeof(*cp) + KILN_HOST_CPUID_MAX * ENTRY_SIZE);
	if (!cp) {
		snprintf(why, wlen, "out of memory");
		return NULL;
	}
	if (host_cpuid_parse(buf, len, cp, why, wlen)) {
		free(cp);
		return NULL;
	}
	return cp;
}
