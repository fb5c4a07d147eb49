/* SPDX-License-Identifier: MIT */
/*
 * The container's writes reach its snapshot: when the init of the
 * container whose rootfs is the VM's root ends, and before the VM goes
 * (or, for a further container of a pod, whose root ctr_root.c copied
 * into the VM and then had its change bits cleared, BASE: at its init's
 * end, its root in the guest asked),
 * the shim asks the agent for what changed in the guest's root (CHANGES,
 * include/kiln/agent.h: the guest kernel notes changed inodes,
 * include/kiln/rootchg.h) and replays it onto BUNDLE/rootfs
 * (rwlayer_apply.c), containerd's overlay, so its upper dir holds the
 * files and whiteouts as after runc (or onto an absolute root.path given
 * without mounts, which runc would write in: Docker's own layer store): `docker start` / `ctr task start`
 * of the same container, `ctr snapshots diff`, `docker commit` see them.
 *
 * Nothing is saved for a root.readonly spec (runc would have refused the
 * writes; the guest's are in its memory only). Left out: the guest's mounts (/proc, /dev, /sys, every destination of
 * the spec's mounts, the copied binds among them) and the agent's own
 * /run/kiln. Bounded by KILN_SHIM_RW_MAX_MB (default 10240) and 90% of the
 * free space of the snapshot's disk, and KILN_SHIM_RW_MAX_ENTRIES (default
 * 1048576) changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "agent/agent_proto.h"
#include "frame_rd.h"
#include "rwlayer.h"
#include "shim.h"

#define RW_FRAME_MS  30000
#define RW_TOTAL_S   600
#define RW_MAX_EXCL  (SPEC_MAX_MOUNTS + 8)
#define RW_MAX_NAMES (KILN_FRAME_MAX / 4)

static const char *const fixed_excl[] = {"/proc", "/dev", "/sys", "/run/kiln"};

/* The spec's mount destinations (a tmpfs, a bind: not the snapshot's). */
static size_t spec_dests(const char *bundle, const char **out, size_t cap, json_t **keep)
{
	char path[4096];
	json_t *mounts, *m;
	size_t n = 0, i;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	*keep = json_load_file(path, 0, NULL);
	mounts = *keep ? json_object_get(*keep, "mounts") : NULL;
	json_array_foreach(mounts, i, m)
	{
		const char *d = json_string_value(json_object_get(m, "destination"));

		if (d && d[0] == '/' && n < cap)
			out[n++] = d;
	}
	return n;
}

static uint64_t max_bytes(int root)
{
	uint64_t cap = shim_env_num("KILN_SHIM_RW_MAX_MB", 10240) << 20;
	struct statvfs sv;

	if (!fstatvfs(root, &sv)) {
		uint64_t free_b = (uint64_t)sv.f_bavail * sv.f_frsize / 10 * 9;

		if (free_b < cap)
			cap = free_b;
	}
	return cap;
}

static int send_request(int fd, const char *root, const char *const *excl, size_t n)
{
	struct buf b = {0};
	struct agent_wr w;
	int err;

	agent_begin(&w, &b, KILN_MSG_FILE_REQUEST);
	agent_put_u32(&w, KILN_FILE_CHANGES);
	agent_put_str(&w, root, strlen(root));
	agent_put_u32(&w, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		agent_put_str(&w, excl[i], strlen(excl[i]));
	err = agent_end(&w);
	if (!err)
		err = vm_write_all(fd, buf_head(&b), buf_avail(&b));
	buf_free(&b);
	return err;
}

/* One CHANGE frame onto the tree. */
static int apply_change(struct rwl *w, const uint8_t *pl, uint32_t len, const char **names)
{
	char path[PATH_MAX], link[PATH_MAX];
	struct agent_rd r;
	const char *s;
	uint32_t kind, n;
	struct rwl_attr a;

	agent_rd_init(&r, pl, len);
	kind = agent_get_u32(&r);
	agent_get_str(&r, &s, &n);
	if (r.err || n >= sizeof(path))
		goto bad;
	memcpy(path, s, n);
	path[n] = 0;
	if (kind == KILN_CHANGE_NODE) {
		a.mode = agent_get_u32(&r);
		a.uid = agent_get_u32(&r);
		a.gid = agent_get_u32(&r);
		a.mtime_s = (int64_t)agent_get_u64(&r);
		a.mtime_ns = agent_get_u32(&r);
		a.size = agent_get_u64(&r);
		agent_get_str(&r, &s, &n);
		if (agent_rd_done(&r) || n >= sizeof(link) || a.mtime_ns >= 1000000000u)
			goto bad;
		memcpy(link, s, n);
		link[n] = 0;
		return rwl_node(w, path, &a, link);
	}
	if (kind == KILN_CHANGE_LINK) {
		agent_get_str(&r, &s, &n);
		if (agent_rd_done(&r) || n >= sizeof(link))
			goto bad;
		memcpy(link, s, n);
		link[n] = 0;
		return rwl_link(w, path, link);
	}
	if (kind == KILN_CHANGE_NAMES) {
		uint32_t count = agent_get_u32(&r);
		char *pool; /* the names, NUL-ended */
		size_t used = 0;
		int err;

		if (r.err || count > RW_MAX_NAMES)
			goto bad;
		pool = malloc(len + count + 1);
		if (!pool)
			return -ENOMEM;
		for (uint32_t i = 0; i < count; i++) {
			agent_get_str(&r, &s, &n);
			if (r.err)
				break;
			memcpy(pool + used, s, n);
			pool[used + n] = 0;
			names[i] = pool + used;
			used += n + 1;
		}
		if (agent_rd_done(&r)) {
			free(pool);
			goto bad;
		}
		err = rwl_names(w, path, names, count);
		free(pool);
		return err;
	}
bad:
	snprintf(w->msg, sizeof(w->msg), "the agent sent a malformed CHANGE frame");
	return -EPROTO;
}

/* Frames until DONE: 0, or -errno with w->msg. A guest that trickles
 * frames is held to RW_TOTAL_S in all. Read through a buffer (frame_rd.h):
 * a walk of many small files sends its frames in batches. */
static int pump(struct rwl *w, struct frame_rd *rd, const char **names)
{
	int64_t end = now_ns() + (int64_t)RW_TOTAL_S * 1000000000;

	for (;;) {
		struct kiln_frame f;
		const uint8_t *pl;
		int err = now_ns() > end ? -ETIMEDOUT : frame_rd_next(rd, &f, &pl, RW_FRAME_MS);

		if (err == -ETIMEDOUT && now_ns() > end) {
			snprintf(w->msg, sizeof(w->msg),
			         "the agent's change set took more than %d s: left unfinished",
			         RW_TOTAL_S);
			return err;
		}
		if (err) {
			snprintf(w->msg, sizeof(w->msg), "the agent's change set broke off: %s",
			         strerror(-err));
			return err;
		}
		if (f.type == KILN_MSG_CHANGE) {
			err = apply_change(w, pl, f.len, names);
		} else if (f.type == KILN_MSG_DATA) {
			err = rwl_data(w, pl, f.len);
		} else if (f.type == KILN_MSG_DONE) {
			return rwl_end(w);
		} else if (f.type == KILN_MSG_ERROR) {
			uint32_t e = EPROTO, ml = 0;
			const char *m = "";

			agent_parse_error(pl, f.len, &e, &m, &ml);
			snprintf(w->msg, sizeof(w->msg),
			         "the guest could not list its changes: %.*s",
			         (int)(ml < 1000 ? ml : 1000), m);
			err = -(int)(e ? e : EPROTO);
		} else {
			snprintf(w->msg, sizeof(w->msg), "the agent sent a %s frame in its changes",
			         agent_msg_name(f.type));
			err = -EPROTO;
		}
		if (err)
			return err;
	}
}

bool rwlayer_root(const struct ctr *c, char *out, size_t n)
{
	if (!c->owner && !c->guest_root)
		return false;
	if (c->guest_root && !c->rw_base)
		return false; /* its root's base was not told from its changes */
	if (c->rootfs_mounted)
		snprintf(out, n, "%s/rootfs", c->bundle);
	else if (c->root_path && c->root_path[0] == '/')
		snprintf(out, n, "%s", c->root_path); /* what runc would write in */
	else
		return false;
	return true;
}

int rwlayer_save(struct shim *s, struct ctr *c, char *msg, size_t n)
{
	const char *excl[RW_MAX_EXCL], **names = NULL;
	char root[4096], why[1100];
	size_t nx = 0;
	json_t *spec = NULL;
	struct frame_rd rd;
	struct rwl w;
	int64_t t0 = now_ns();
	int fd = -1, err;

	for (size_t i = 0; i < sizeof(fixed_excl) / sizeof(fixed_excl[0]); i++)
		excl[nx++] = fixed_excl[i];
	nx += spec_dests(c->bundle, excl + nx, RW_MAX_EXCL - nx, &spec);
	if (json_is_true(json_object_get(json_object_get(spec, "root"), "readonly"))) {
		/* runc would have refused the writes */
		shim_log("%s: root.readonly: the guest's writes to its root are not saved", c->id);
		json_decref(spec);
		return 0;
	}
	if (!rwlayer_root(c, root, sizeof(root))) {
		snprintf(msg, n, "the container has no rootfs of its own on the host");
		json_decref(spec);
		return -ENOENT;
	}
	err = rwl_begin(&w, root, 0, shim_env_num("KILN_SHIM_RW_MAX_ENTRIES", 1u << 20), excl, nx);
	if (err)
		goto out;
	w.max_bytes = max_bytes(w.root);
	w.keep_special = c->guest_root != NULL; /* ctr_root.c copied none in */
	names = malloc(RW_MAX_NAMES * sizeof(*names));
	fd = names ? vm_dial(s, KILN_STREAM_FILE, RW_FRAME_MS) : -ENOMEM;
	if (fd < 0) {
		err = fd;
		vm_dial_explain(err, s->vm.vsock, RW_FRAME_MS, why, sizeof(why));
		snprintf(w.msg, sizeof(w.msg), "cannot reach the VM's agent: %s", why);
		goto out;
	}
	if ((err = agent_expect(fd, KILN_MSG_HELLO, RW_FRAME_MS, why, sizeof(why)))) {
		snprintf(w.msg, sizeof(w.msg), "the VM's agent: %s", why);
		goto out;
	}
	if ((err = send_request(fd, c->guest_root ? c->guest_root : "/", excl, nx))) {
		snprintf(w.msg, sizeof(w.msg), "asking the agent: %s", strerror(-err));
		goto out;
	}
	if ((err = frame_rd_init(&rd, fd))) {
		snprintf(w.msg, sizeof(w.msg), "no memory for the agent's frames");
		goto out;
	}
	err = pump(&w, &rd, names);
	frame_rd_free(&rd);
out:
	if (fd >= 0)
		close(fd);
	json_decref(spec); /* (excl's strings are its) */
	free(names);
	if (err)
		snprintf(msg, n, "the container's writes were not all saved to its snapshot: %s",
		         w.msg);
	shim_log("%s: %llu changes (%llu bytes, %u removed, %u hard links, %u set-id bits "
	         "dropped) saved to the snapshot in %lld ms%s%s",
	         c->id, (unsigned long long)w.entries, (unsigned long long)w.bytes, w.removed,
	         w.links, w.setid, (long long)((now_ns() - t0) / 1000000), err ? "; " : "",
	         err ? msg : "");
	rwl_free(&w);
	return err;
}
