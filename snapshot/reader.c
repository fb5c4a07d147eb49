/* SPDX-License-Identifier: MIT */
/*
 * Opening a snapshot: every byte that says how to read the rest is checked
 * before it is used, in the order the trust chain allows (magic, version and
 * header size, then the header checksum, then what the header says, then the
 * section table and its checksum, then each payload). Nothing is returned
 * unless all of it holds; chunk payloads are checked when they are read.
 * A version 3 file has two header slots: the newest generation that holds
 * is taken, else the other (a crash while a generation was added).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define U(x) ((unsigned long long)(x))

static int check_header(struct snap *s, struct snap_err *err)
{
	struct snap_header *h = &s->hdr;
	uint64_t stored = h->checksum, sum;
	uint64_t tend;

	bool v3 = h->version == SNAP_FORMAT_VERSION;

	if (h->version < SNAP_FORMAT_V2)
		return snap_errf(err, -EPROTONOSUPPORT,
		                 "format version %u not supported (this build reads versions %u "
		                 "and %u): an older kiln wrote it; restore it with that kiln and "
		                 "take the snapshot again",
		                 h->version, SNAP_FORMAT_V2, SNAP_FORMAT_VERSION);
	if (h->version > SNAP_FORMAT_VERSION)
		return snap_errf(err, -EPROTONOSUPPORT,
		                 "format version %u not supported (this build reads versions %u "
		                 "and %u): a newer kiln wrote it",
		                 h->version, SNAP_FORMAT_V2, SNAP_FORMAT_VERSION);
	if (h->header_size != sizeof(*h))
		return snap_errf(err, -EINVAL, "header size %u, expected %zu", h->header_size,
		                 sizeof(*h));
	h->checksum = 0;
	sum = snap_xxh64(h, sizeof(*h), 0);
	h->checksum = stored;
	if (sum != stored)
		return snap_errf(err, -EBADMSG,
		                 "header checksum mismatch (stored %016llx, computed %016llx)",
		                 U(stored), U(sum));
	if (h->arch != SNAP_ARCH_X86_64)
		return snap_errf(err, -EINVAL, "architecture %u is not x86-64 (%u)", h->arch,
		                 SNAP_ARCH_X86_64);
	if (h->flags & ~SNAP_F_ALL)
		return snap_errf(err, -EINVAL, "unknown header flags 0x%x", h->flags);
	if (!(h->flags & SNAP_F_DIFF) != !h->parent_id)
		return snap_errf(err, -EINVAL, "diff flag and parent id disagree");
	if (!snap_is_zero(h->reserved, sizeof(h->reserved)))
		return snap_errf(err, -EINVAL, "reserved header fields are not zero");
	if (v3 ? !h->generation : h->generation != 0)
		return snap_errf(err, -EINVAL, "generation %llu in a version %u file",
		                 U(h->generation), h->version);
	if (h->section_entry_size != sizeof(struct snap_section) ||
	    (v3 ? h->section_table_offset < SNAP_BODY_OFFSET || h->section_table_offset % 8 ||
	              h->section_table_offset > h->file_size
	        : h->section_table_offset != sizeof(*h)))
		return snap_errf(err, -EINVAL, "section table at %llu with %u-byte entries",
		                 U(h->section_table_offset), h->section_entry_size);
	/* At least one vCPU, the VM, the memory index and data. */
	if (h->nsections < 4 || h->nsections > SNAP_MAX_SECTIONS)
		return snap_errf(err, -EINVAL, "%u sections (4..%u)", h->nsections,
		                 SNAP_MAX_SECTIONS);
	tend = h->section_table_offset + (uint64_t)h->nsections * sizeof(struct snap_section);
	if (h->file_size < tend)
		return snap_errf(err, -EINVAL, "file size %llu is smaller than its section table",
		                 U(h->file_size));
	if (s->file_size < tend)
		return snap_errf(err, -ENODATA,
		                 "truncated at byte %llu: section table needs %llu bytes",
		                 U(s->file_size), U(tend));
	return 0;
}

static int check_image(const struct snap_image_id *id, const char *what, struct snap_err *err)
{
	if (id->alg >= SNAP_HASH_MAX || id->reserved || (id->alg == SNAP_HASH_NONE && id->size) ||
	    (id->alg == SNAP_HASH_XXH64 && !snap_is_zero(id->digest + 8, 24)))
		return snap_errf(err, -EINVAL, "config: bad %s identity", what);
	return 0;
}

static int check_config(const struct snap_vm_config *c, struct snap_err *err)
{
	uint32_t slots = 0;
	int ret;

	if (!c->nr_vcpus || c->nr_vcpus > SNAP_MAX_VCPUS)
		return snap_errf(err, -EINVAL, "config: %u vCPUs (1..%u)", c->nr_vcpus,
		                 SNAP_MAX_VCPUS);
	if (!c->mem_size || c->mem_size > SNAP_MAX_MEM || c->mem_size % SNAP_PAGE_SIZE ||
	    c->mem_low_size > c->mem_size || c->mem_low_size % SNAP_PAGE_SIZE)
		return snap_errf(err, -EINVAL, "config: memory size %llu, low part %llu",
		                 U(c->mem_size), U(c->mem_low_size));
	if (c->nr_devices > SNAP_MAX_DEVICES || c->reserved)
		return snap_errf(err, -EINVAL, "config: %u devices (max %u)", c->nr_devices,
		                 SNAP_MAX_DEVICES);
	for (uint32_t d = 0; d < SNAP_MAX_DEVICES; d++) {
		const struct snap_device_desc *dv = &c->devices[d];

		if (d >= c->nr_devices) {
			if (dv->type || dv->slot)
				return snap_errf(err, -EINVAL,
				                 "config: device entry %u past the list", d);
			continue;
		}
		if (!dv->type || dv->slot >= SNAP_MAX_DEVICES || (slots & (1u << dv->slot)))
			return snap_errf(err, -EINVAL, "config: device %u: type %u, slot %u", d,
			                 dv->type, dv->slot);
		slots |= 1u << dv->slot;
	}
	ret = check_image(&c->kernel, "kernel", err);
	return ret ? ret : check_image(&c->initrd, "initramfs", err);
}

/* Section i, named for messages ("section 3 (vcpu 2)"). */
static const char *sec_name(const struct snap_section *e, uint32_t i, char *buf, size_t len)
{
	if (e->type == SNAP_SEC_VCPU || e->type == SNAP_SEC_DEVICE)
		snprintf(buf, len, "section %u (%s %u)", i, snap_section_name(e->type),
		         e->instance);
	else
		snprintf(buf, len, "section %u (%s)", i, snap_section_name(e->type));
	return buf;
}

/* Extent, order, type, version and multiplicity of every section. */

/* The VM state's flags, and where late RAM starts: inside the first RAM
 * range, 2 MiB aligned, with RAM past it (version 1: never late). */
static int check_vm(const struct snap_vm_state *v, uint32_t version, const struct snap_vm_config *c,
                    struct snap_err *err)
{
	uint64_t late = (uint64_t)v->late_ram_mib << 20;
	bool bad;

	if ((v->flags & ~SNAP_VM_F_ALL) ||
	    (version == SNAP_VM_STATE_V1 && (v->flags & SNAP_VM_LATE_RAM)))
		return snap_errf(err, -EINVAL, "vm state: unknown flags 0x%x", v->flags);
	if (!(v->flags & SNAP_VM_LATE_RAM))
		bad = late != 0;
	else
		bad = !late || late % (2ULL << 20) || late > c->mem_low_size || late >= c->mem_size;
	if (bad)
		return snap_errf(err, -EINVAL,
		                 "vm state: late RAM from %u MiB does not fit %llu MiB of RAM",
		                 v->late_ram_mib, U(c->mem_size >> 20));
	return 0;
}

static int check_table(struct snap *s, struct snap_err *err)
{
	const struct snap_vm_config *c = &s->hdr.config;
	bool v3 = s->hdr.version == SNAP_FORMAT_VERSION;
	uint64_t prev_end =
	    v3 ? SNAP_BODY_OFFSET : sizeof(s->hdr) + s->hdr.nsections * sizeof(struct snap_section);
	uint32_t nvcpu = 0, nvm = 0, nidx = 0, ndata = 0, devs = 0, want_devs = 0;
	uint8_t *vseen = calloc(c->nr_vcpus, 1);
	const struct snap_section *cur = NULL;
	static const uint32_t versions[SNAP_SEC_MAX] = {
	    [SNAP_SEC_VCPU] = SNAP_VCPU_STATE_VERSION,
	    [SNAP_SEC_VM] = SNAP_VM_STATE_VERSION,
	    [SNAP_SEC_MEM_INDEX] = SNAP_MEM_INDEX_VERSION,
	    [SNAP_SEC_MEM_DATA] = SNAP_MEM_DATA_VERSION,
	};
	char nm[64];
	int ret = -EINVAL;

	if (!vseen)
		return snap_errf(err, -ENOMEM, "out of memory");
	for (uint32_t d = 0; d < c->nr_devices; d++)
		want_devs |= 1u << c->devices[d].slot;
	for (uint32_t i = 0; i < s->hdr.nsections; i++) {
		const struct snap_section *e = cur = &s->sec[i];

		sec_name(e, i, nm, sizeof(nm));
		if (e->type == SNAP_SEC_NONE || e->type >= SNAP_SEC_MAX) {
			snap_errf(err, ret, "section %u: unknown type %u", i, e->type);
			goto out;
		}
		if (e->flags) {
			snap_errf(err, ret, "%s: unknown flags 0x%x", nm, e->flags);
			goto out;
		}
		if (e->offset < prev_end || e->length > s->hdr.file_size ||
		    e->offset > s->hdr.file_size - e->length) {
			snap_errf(
			    err, ret,
			    "%s: bytes [%llu, %llu) overlap its predecessor or leave the file", nm,
			    U(e->offset), U(e->offset + e->length));
			goto out;
		}
		prev_end = e->offset + e->length;
		if (e->type != SNAP_SEC_DEVICE && e->version != versions[e->type] &&
		    !(e->type == SNAP_SEC_VM && e->version == SNAP_VM_STATE_V1)) {
			ret = snap_errf(err, -EPROTONOSUPPORT,
			                "%s: version %u not supported (this build reads %u)", nm,
			                e->version, versions[e->type]);
			goto out;
		}
		switch (e->type) {
		case SNAP_SEC_VCPU:
			if (e->instance >= c->nr_vcpus || vseen[e->instance]++ ||
			    e->length != sizeof(struct snap_vcpu_state))
				goto bad;
			nvcpu++;
			break;
		case SNAP_SEC_VM:
			if (e->instance || nvm++ || e->length != sizeof(struct snap_vm_state))
				goto bad;
			break;
		case SNAP_SEC_DEVICE:
			if (e->instance >= SNAP_MAX_DEVICES || !(want_devs & (1u << e->instance)) ||
			    (devs & (1u << e->instance)) || e->length > SNAP_MAX_DEV_STATE)
				goto bad;
			devs |= 1u << e->instance;
			break;
		case SNAP_SEC_MEM_INDEX:
			if (e->instance || nidx++)
				goto bad;
			break;
		case SNAP_SEC_MEM_DATA:
			if (e->instance || ndata++ || e->checksum)
				goto bad;
			break;
		}
	}
	if (nvcpu != c->nr_vcpus || nvm != 1 || nidx != 1 || ndata != 1 || devs != want_devs) {
		snap_errf(err, ret,
		          "section table: %u of %u vCPUs, %u VM, %u memory index, %u memory data "
		          "sections, devices 0x%x of 0x%x",
		          nvcpu, c->nr_vcpus, nvm, nidx, ndata, devs, want_devs);
		goto out;
	}
	if (v3 && s->hdr.section_table_offset < prev_end) {
		snap_errf(err, ret, "section table at %llu overlaps the sections (end at %llu)",
		          U(s->hdr.section_table_offset), U(prev_end));
		goto out;
	}
	ret = 0;
	goto out;
bad:
	snap_errf(err, ret, "%s: unexpected (%llu bytes; repeated, out of range or wrong size)", nm,
	          U(cur->length));
out:
	free(vseen);
	return ret;
}

/* A file shorter than the header says: name the section that is cut. */
static int check_size(struct snap *s, struct snap_err *err)
{
	char nm[64];

	/* Version 3: a newer generation may follow. */
	if (s->file_size > s->hdr.file_size && s->hdr.version == SNAP_FORMAT_VERSION)
		return 0;
	if (s->file_size > s->hdr.file_size)
		return snap_errf(err, -EINVAL,
		                 "file is %llu bytes, header says %llu: trailing data",
		                 U(s->file_size), U(s->hdr.file_size));
	if (s->file_size == s->hdr.file_size)
		return 0;
	for (uint32_t i = 0; i < s->hdr.nsections; i++) {
		const struct snap_section *e = &s->sec[i];

		if (e->offset + e->length > s->file_size)
			return snap_errf(err, -ENODATA,
			                 "truncated at byte %llu: %s needs bytes [%llu, %llu) "
			                 "(file should be %llu bytes)",
			                 U(s->file_size), sec_name(e, i, nm, sizeof(nm)),
			                 U(e->offset), U(e->offset + e->length),
			                 U(s->hdr.file_size));
	}
	return snap_errf(err, -ENODATA, "truncated at byte %llu: file should be %llu bytes",
	                 U(s->file_size), U(s->hdr.file_size));
}

static int read_payload(struct snap *s, uint32_t i, void *buf, struct snap_err *err)
{
	const struct snap_section *e = &s->sec[i];
	char nm[64];
	int ret = snap_pread(s->fd, buf, e->length, e->offset);

	if (ret < 0)
		return snap_errf(err, ret, "%s: read: %s", sec_name(e, i, nm, sizeof(nm)),
		                 strerror(-ret));
	if (snap_xxh64(buf, e->length, 0) != e->checksum)
		return snap_errf(err, -EBADMSG, "%s: checksum mismatch",
		                 sec_name(e, i, nm, sizeof(nm)));
	return 0;
}

static int check_vcpu(const struct snap_vcpu_state *v, uint32_t idx, struct snap_err *err)
{
	if (v->id != idx || v->reserved || v->pad)
		return snap_errf(err, -EINVAL, "vcpu %u: id %u or reserved fields wrong", idx,
		                 v->id);
	if (v->nmsrs > SNAP_MAX_MSRS)
		return snap_errf(err, -EINVAL, "vcpu %u: %u MSRs (max %u)", idx, v->nmsrs,
		                 SNAP_MAX_MSRS);
	if (v->xsave_size < 576 || v->xsave_size > SNAP_KVM_XSAVE_SIZE)
		return snap_errf(err, -EINVAL, "vcpu %u: xsave size %u (576..%u)", idx,
		                 v->xsave_size, SNAP_KVM_XSAVE_SIZE);
	for (uint32_t m = 0; m < SNAP_MAX_MSRS; m++)
		if (v->msrs[m].pad || (m >= v->nmsrs && (v->msrs[m].index || v->msrs[m].data)))
			return snap_errf(err, -EINVAL, "vcpu %u: MSR entry %u malformed", idx, m);
	return 0;
}

/* Every state section: read, checksum, and the checks a payload allows. */
static int load_state(struct snap *s, struct snap_err *err)
{
	const struct snap_vm_config *c = &s->hdr.config;
	int ret = 0;

	s->vcpus = calloc(c->nr_vcpus, sizeof(*s->vcpus));
	if (!s->vcpus)
		return snap_errf(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < s->hdr.nsections && !ret; i++) {
		const struct snap_section *e = &s->sec[i];
		struct snap_devstate *d;

		switch (e->type) {
		case SNAP_SEC_VCPU:
			ret = read_payload(s, i, &s->vcpus[e->instance], err);
			if (!ret)
				ret = check_vcpu(&s->vcpus[e->instance], e->instance, err);
			break;
		case SNAP_SEC_VM:
			ret = read_payload(s, i, &s->vm, err);
			if (!ret)
				ret = check_vm(&s->vm, e->version, &s->hdr.config, err);
			break;
		case SNAP_SEC_DEVICE:
			d = &s->devs[s->ndevs++];
			d->slot = e->instance;
			d->version = e->version;
			d->len = (uint32_t)e->length;
			for (uint32_t k = 0; k < c->nr_devices; k++)
				if (c->devices[k].slot == d->slot)
					d->type = c->devices[k].type;
			d->data = malloc(e->length ? e->length : 1);
			ret = d->data ? read_payload(s, i, d->data, err)
			              : snap_errf(err, -ENOMEM, "out of memory");
			break;
		case SNAP_SEC_MEM_DATA:
			s->data_off = e->offset;
			s->data_len = e->length;
			break;
		}
	}
	return ret;
}

/* Everything after the header: what the header in s->hdr names. */
static int load_gen(struct snap *s, struct snap_err *err)
{
	size_t tlen;
	int ret;

	ret = check_header(s, err);
	if (ret < 0)
		return ret;
	ret = check_config(&s->hdr.config, err);
	if (ret < 0)
		return ret;

	tlen = s->hdr.nsections * sizeof(struct snap_section);
	s->sec = malloc(tlen);
	if (!s->sec)
		return snap_errf(err, -ENOMEM, "out of memory");
	ret = snap_pread(s->fd, s->sec, tlen, s->hdr.section_table_offset);
	if (ret < 0)
		return snap_errf(err, ret, "read: %s", strerror(-ret));
	if (snap_xxh64(s->sec, tlen, 0) != s->hdr.table_checksum)
		return snap_errf(err, -EBADMSG, "section table checksum mismatch");
	ret = check_table(s, err);
	if (ret < 0)
		return ret;
	ret = check_size(s, err);
	if (ret < 0)
		return ret;
	ret = load_state(s, err);
	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < s->hdr.nsections; i++)
		if (s->sec[i].type == SNAP_SEC_MEM_INDEX)
			return snap_load_index(s, i, err);
	return snap_errf(err, -EINVAL, "no memory index"); /* check_table saw one */
}

/* What load_gen() made, so that the other header slot can be tried. */
static void unload(struct snap *s)
{
	for (unsigned d = 0; d < s->ndevs; d++)
		free(s->devs[d].data);
	free(s->vcpus);
	free(s->sec);
	free(s->index);
	memset(s->devs, 0, sizeof(s->devs));
	s->ndevs = 0;
	s->vcpus = NULL;
	s->sec = NULL;
	s->index = NULL;
	s->present = s->zero = NULL;
	s->chunks = NULL;
	s->data_off = s->data_len = 0;
	s->max_stored = 0;
}

/* Slot k's header into h; whether it is a version 3 one (magic, version). */
static bool read_slot(const struct snap *s, unsigned k, struct snap_header *h)
{
	uint64_t off = (uint64_t)k * SNAP_SLOT_SIZE;

	if (s->file_size < off + sizeof(*h) || snap_pread(s->fd, h, sizeof(*h), off) < 0)
		return false;
	return !memcmp(h->magic, SNAP_MAGIC, sizeof(h->magic)) && h->version == SNAP_FORMAT_VERSION;
}

/* Version 3: the newest generation that validates, else the other slot's;
 * the newest one's message if neither does. */
static int load_slots(struct snap *s, const struct snap_header h[2], const bool have[2],
                      struct snap_err *err)
{
	unsigned first = have[0] && (!have[1] || h[0].generation >= h[1].generation) ? 0 : 1;
	struct snap_err first_err;
	int ret;

	s->hdr = h[first];
	s->slot = first;
	ret = load_gen(s, err);
	if (ret == 0 || !have[1 - first])
		return ret;
	if (err)
		first_err = *err;
	unload(s);
	s->hdr = h[1 - first];
	s->slot = 1 - first;
	if (load_gen(s, err) == 0)
		return 0;
	if (err)
		*err = first_err;
	return ret;
}

static int load(struct snap *s, struct snap_err *err)
{
	struct snap_header h[SNAP_NSLOTS];
	bool have[SNAP_NSLOTS];
	struct stat st;
	int ret;

	if (fstat(s->fd, &st) < 0)
		return snap_errf(err, -errno, "stat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return snap_errf(err, -EINVAL, "not a regular file");
	s->file_size = (uint64_t)st.st_size;
	have[0] = read_slot(s, 0, &h[0]);
	/* A version 2 file has no second slot: its bytes there are state. */
	have[1] = !(s->file_size >= sizeof(h[0]) && !memcmp(h[0].magic, SNAP_MAGIC, 8) &&
	            h[0].version != SNAP_FORMAT_VERSION) &&
	          read_slot(s, 1, &h[1]);
	if (have[0] || have[1])
		return load_slots(s, h, have, err);
	if (s->file_size >= sizeof(s->hdr.magic)) {
		ret = snap_pread(s->fd, s->hdr.magic, sizeof(s->hdr.magic), 0);
		if (ret < 0)
			return snap_errf(err, ret, "read: %s", strerror(-ret));
		if (memcmp(s->hdr.magic, SNAP_MAGIC, sizeof(s->hdr.magic)))
			return snap_errf(err, -EINVAL, "not a kiln snapshot (bad magic)");
	}
	if (s->file_size < sizeof(s->hdr))
		return snap_errf(err, -ENODATA, "truncated at byte %llu: header needs %zu bytes",
		                 U(s->file_size), sizeof(s->hdr));
	ret = snap_pread(s->fd, &s->hdr, sizeof(s->hdr), 0);
	if (ret < 0)
		return snap_errf(err, ret, "read: %s", strerror(-ret));
	return load_gen(s, err);
}

int snap_open(const char *path, struct snap **out, struct snap_err *err)
{
	struct snap *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return snap_errf(err, -ENOMEM, "snapshot '%s': out of memory", path);
	}
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		ret = snap_errf(err, -errno, "%s", strerror(errno));
	else
		ret = load(s, err);
	if (ret < 0) {
		snap_err_prefix(err, path);
		snap_close(s);
		return ret;
	}
	s->id = s->hdr.checksum;
	s->map = mmap(NULL, s->file_size, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED)
		s->map = NULL;
	*out = s;
	return 0;
}

void snap_close(struct snap *s)
{
	if (!s)
		return;
	if (s->map)
		munmap((void *)s->map, s->file_size);
	if (s->fd >= 0)
		close(s->fd);
	unload(s);
	free(s->path);
	free(s);
}

const char *snap_path(const struct snap *s)
{
	return s->path;
}

const struct snap_header *snap_header(const struct snap *s)
{
	return &s->hdr;
}

const struct snap_vm_config *snap_config(const struct snap *s)
{
	return &s->hdr.config;
}

unsigned snap_slot(const struct snap *s)
{
	return s->slot;
}

uint64_t snap_id(const struct snap *s)
{
	return s->id;
}

bool snap_is_diff(const struct snap *s)
{
	return s->hdr.flags & SNAP_F_DIFF;
}

const struct snap_section *snap_section(const struct snap *s, unsigned i)
{
	return i < s->hdr.nsections ? &s->sec[i] : NULL;
}

const struct snap_vcpu_state *snap_vcpu(const struct snap *s, unsigned idx)
{
	return idx < s->hdr.config.nr_vcpus ? &s->vcpus[idx] : NULL;
}

const struct snap_vm_state *snap_vm(const struct snap *s)
{
	return &s->vm;
}

int snap_device(const struct snap *s, unsigned slot, const void **data, uint32_t *len,
                uint32_t *version, uint32_t *type)
{
	for (unsigned d = 0; d < s->ndevs; d++) {
		if (s->devs[d].slot != slot)
			continue;
		*data = s->devs[d].data;
		*len = s->devs[d].len;
		if (version)
			*version = s->devs[d].version;
		if (type)
			*type = s->devs[d].type;
		return 0;
	}
	return -ENOENT;
}
