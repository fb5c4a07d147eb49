/* SPDX-License-Identifier: MIT */
/* DATA_DIR/.host-cpuid (host_cpuid.h). */
#include "host_cpuid.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../snapshot/snap.h"
#include "kiln/host_cpuid.h"
#include "kilnd.h"
#include "util.h"

#define FILE_NAME ".host-cpuid"

/* The file's bytes for KVM's table now: its length, or -errno. */
static long host_table(unsigned char *out, size_t max)
{
	struct kiln_host_cpuid_hdr h = {.version = KILN_HOST_CPUID_VERSION};
	size_t esz = sizeof(struct kvm_cpuid_entry2);
	struct kvm_cpuid2 *cp = calloc(1, sizeof(*cp) + KILN_HOST_CPUID_MAX * esz);
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC), err = 0;

	if (!cp || fd < 0) {
		err = !cp ? -ENOMEM : -errno;
		goto out;
	}
	cp->nent = KILN_HOST_CPUID_MAX;
	if (ioctl(fd, KVM_GET_SUPPORTED_CPUID, cp) < 0) {
		err = -errno;
		goto out;
	}
	if (cp->nent < 1 || cp->nent > KILN_HOST_CPUID_MAX || sizeof(h) + cp->nent * esz > max) {
		err = -E2BIG;
		goto out;
	}
	/* The APIC ids are of the host CPU this ran on (the VMM puts its
	 * vCPUs' own there): zero, so the file changes with the host only. */
	for (unsigned i = 0; i < cp->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cp->entries[i];

		if (e->function == 1)
			e->ebx &= 0x00ffffff;
		else if (e->function == 0xb || e->function == 0x1f)
			e->edx = 0;
	}
	memcpy(h.magic, KILN_HOST_CPUID_MAGIC, sizeof(h.magic));
	h.nent = cp->nent;
	h.entry_size = (uint32_t)esz;
	h.hash = snap_xxh64(cp->entries, cp->nent * esz, 0);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), cp->entries, cp->nent * esz);
out:
	if (fd >= 0)
		close(fd);
	free(cp);
	return err ? err : (long)(sizeof(h) + h.nent * esz);
}

/* Write path through a temporary file renamed over it: a VMM starting
 * meanwhile reads the old file or the new one, never half of one. */
static int write_atomic(const char *path, const void *buf, size_t len)
{
	char *tmp = NULL;
	int fd, err = 0;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	errno = 0;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

void host_cpuid_publish(struct kilnd *kd)
{
	unsigned char now[sizeof(struct kiln_host_cpuid_hdr) +
	                  KILN_HOST_CPUID_MAX * sizeof(struct kvm_cpuid_entry2)];
	char *path = NULL, *old;
	size_t old_len = 0;
	long len;
	int err;

	kd->host_cpuid_path = NULL;
	len = host_table(now, sizeof(now));
	if (len < 0) {
		log_warn(
		    "cannot read the host's CPUID table from /dev/kvm (%s): every VMM asks KVM "
		    "itself",
		    strerror((int)-len));
		return;
	}
	if (asprintf(&path, "%s/" FILE_NAME, kd->cfg.data_dir) < 0) {
		log_warn("out of memory: every VMM asks KVM for the host's CPUID table itself");
		return;
	}
	old = read_small_file(path, sizeof(now) + 1, &old_len);
	if (!old || old_len != (size_t)len || memcmp(old, now, (size_t)len)) {
		err = write_atomic(path, now, (size_t)len);
		if (err) {
			log_warn("cannot write %s: %s; every VMM asks KVM for the host's CPUID "
			         "table itself",
			         path, strerror(-err));
			free(old);
			free(path);
			return;
		}
		log_info("host CPUID table (%ld bytes) %s %s", len,
		         old ? "rewritten in" : "written to", path);
	}
	free(old);
	kd->host_cpuid_path = path;
}
