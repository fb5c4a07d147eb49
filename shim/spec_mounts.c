/* SPDX-License-Identifier: MIT */
/* The spec's mounts. The kernel file systems containerd always lists
 * (proc, sysfs, tmpfs, devpts, mqueue, cgroup) are the guest's own
 * already and are passed over. A bind mount of a host path (the kubelet's
 * /etc/hosts, /etc/hostname, /etc/resolv.conf, volumes; ctr run --mount;
 * docker -v) becomes a struct shim_bind that binds.c copies into the
 * guest before the process starts. What a copy cannot give is refused
 * here, naming the mount: propagation both ways (shared, slave), noexec,
 * destinations in the guest's kernel file systems, relative or ".." paths.
 * The CRI's bind of a pod's shm directory to /dev/shm is passed over too:
 * the guest's own /dev/shm (a tmpfs of the VM, which is the pod's) is what
 * it stands for, shared by the pod's containers as the CRI's is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shim.h"

#define PATH_MAX_LEN 4095
#define OPT_MAX      64 /* options of one mount */

void spec_binds_free(struct spec_binds *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].src);
		free(b->v[i].dst);
	}
	free(b->v);
	memset(b, 0, sizeof(*b));
}

/* An absolute path with no "." or ".." component, no NUL, no repeated or
 * trailing '/', or NULL. */
static char *clean_path(json_t *j)
{
	const char *s = json_string_value(j);
	size_t len = json_string_length(j);
	char *out, *o;

	if (!s || s[0] != '/' || len > PATH_MAX_LEN || strlen(s) != len)
		return NULL;
	if (!(o = out = malloc(len + 1)))
		return NULL;
	for (const char *c = s; *c;) {
		size_t k;

		while (*c == '/')
			c++;
		k = strcspn(c, "/");
		if (!k)
			break;
		if ((k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.')) {
			free(out);
			return NULL;
		}
		*o++ = '/';
		memcpy(o, c, k);
		o += k;
		c += k;
	}
	*o = 0;
	if (o == out) { /* "/" */
		free(out);
		return strdup("/");
	}
	return out;
}

static bool under(const char *path, const char *dir)
{
	size_t k = strlen(dir);

	return !strncmp(path, dir, k) && (path[k] == 0 || path[k] == '/');
}

/* The options of a bind: 0, or -ENOTSUP with msg naming what cannot be had. */
static int bind_options(json_t *opts, size_t i, bool *ro, char *msg, size_t n)
{
	static const char *const fine[] = {"bind",        "rbind",     "rw",         "private",
	                                   "rprivate",    "nosuid",    "nodev",      "unbindable",
	                                   "runbindable", "relatime",  "norelatime", "noatime",
	                                   "strictatime", "nodiratime"};
	size_t k;
	json_t *o;

	*ro = false;
	if (opts && (!json_is_array(opts) || json_array_size(opts) > OPT_MAX)) {
		snprintf(msg, n, "mounts[%zu].options is not a list of at most %d strings", i,
		         OPT_MAX);
		return -EINVAL;
	}
	json_array_foreach(opts, k, o)
	{
		const char *s = json_string_value(o);
		bool ok = false;

		if (!s || json_string_length(o) > 256) {
			snprintf(msg, n, "mounts[%zu].options[%zu] is not a string", i, k);
			return -EINVAL;
		}
		if (!strcmp(s, "ro")) {
			*ro = true;
			continue;
		}
		for (size_t f = 0; f < sizeof(fine) / sizeof(fine[0]); f++)
			ok |= !strcmp(s, fine[f]);
		if (!ok) {
			snprintf(
			    msg, n,
			    "mounts[%zu] has option '%.200s', which kiln's shim cannot give: a "
			    "bind mount is copied into the VM before the process starts, so "
			    "there is no propagation (shared, slave) between host and guest, "
			    "and noexec or file system options do not apply",
			    i, s);
			return -ENOTSUP;
		}
	}
	return 0;
}

static int parse_bind(json_t *m, size_t i, struct shim_bind *b, char *msg, size_t n)
{
	static const char *const kernel_fs[] = {"/proc", "/sys", "/dev"};
	json_t *src = json_object_get(m, "source"), *dst = json_object_get(m, "destination");
	int err;

	memset(b, 0, sizeof(*b));
	if ((err = bind_options(json_object_get(m, "options"), i, &b->ro, msg, n)))
		return err;
	b->src = clean_path(src);
	b->dst = clean_path(dst);
	if (!b->src || !b->dst) {
		snprintf(
		    msg, n,
		    "mounts[%zu]: its %s '%.1000s' is not an absolute path without '.' or '..' "
		    "(at most %d bytes)",
		    i, b->src ? "destination" : "source",
		    json_string_value(b->src ? dst : src) ?: "?", PATH_MAX_LEN);
		return -EINVAL;
	}
	if (!strcmp(b->dst, "/")) {
		snprintf(msg, n,
		         "mounts[%zu] binds %.1000s over the guest's root: give it as the "
		         "rootfs instead",
		         i, b->src);
		return -ENOTSUP;
	}
	/* The kubelet's termination log is a file the guest can hold in /dev. */
	if (!strcmp(b->dst, "/dev/termination-log"))
		return 0;
	for (size_t k = 0; k < sizeof(kernel_fs) / sizeof(kernel_fs[0]); k++)
		if (under(b->dst, kernel_fs[k])) {
			snprintf(
			    msg, n,
			    "mounts[%zu] binds %.1000s to %.1000s, inside the guest kernel's own "
			    "%s: kiln's shim copies bind mounts into the guest and cannot put "
			    "files there",
			    i, b->src, b->dst, kernel_fs[k]);
			return -ENOTSUP;
		}
	return 0;
}

/* containerd's CRI: SANDBOX_STATE_DIR/io.containerd.grpc.v1.cri/sandboxes/
 * ID/shm on /dev/shm, in the sandbox's spec and its containers'. A pod with
 * the host's IPC (its source the host's /dev/shm) is not passed over. */
static bool cri_pod_shm(json_t *m)
{
	static const char dir[] = "/io.containerd.grpc.v1.cri/sandboxes/";
	const char *src = json_string_value(json_object_get(m, "source"));
	const char *dst = json_string_value(json_object_get(m, "destination"));
	const char *id, *end;

	if (!src || !dst || strcmp(dst, "/dev/shm") || !(id = strstr(src, dir)))
		return false;
	id += sizeof(dir) - 1;
	end = strchr(id, '/');
	return end && end > id && !strcmp(end, "/shm") && !strstr(src, "/../");
}

int spec_parse_mounts(json_t *mounts, struct spec_binds *b, char *msg, size_t n)
{
	size_t i, k;
	json_t *m, *o;
	int err;

	memset(b, 0, sizeof(*b));
	if (mounts && (!json_is_array(mounts) || json_array_size(mounts) > SPEC_MAX_MOUNTS)) {
		snprintf(msg, n, "the spec's mounts is not a list of at most %d mounts",
		         SPEC_MAX_MOUNTS);
		return -EINVAL;
	}
	json_array_foreach(mounts, i, m)
	{
		const char *type = json_string_value(json_object_get(m, "type"));
		bool bind = type && !strcmp(type, "bind");

		if (!json_is_object(m)) {
			snprintf(msg, n, "mounts[%zu] is not an object", i);
			spec_binds_free(b);
			return -EINVAL;
		}
		json_array_foreach(json_object_get(m, "options"), k, o)
		{
			const char *opt = json_string_value(o);

			bind |= opt && (!strcmp(opt, "bind") || !strcmp(opt, "rbind"));
		}
		if (!bind || cri_pod_shm(m))
			continue;
		if (b->n == SPEC_MAX_BINDS) {
			snprintf(msg, n,
			         "the spec has more than %d bind mounts; kiln's shim copies "
			         "at most that many into the VM",
			         SPEC_MAX_BINDS);
			spec_binds_free(b);
			return -E2BIG;
		}
		if (!b->v && !(b->v = calloc(SPEC_MAX_BINDS, sizeof(*b->v)))) {
			snprintf(msg, n, "out of memory");
			return -ENOMEM;
		}
		err = parse_bind(m, i, &b->v[b->n], msg, n);
		b->n++; /* freed with the rest, whole or not */
		if (err) {
			spec_binds_free(b);
			return err;
		}
	}
	return 0;
}
