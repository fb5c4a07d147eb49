/* SPDX-License-Identifier: MIT */
/*
 * The OCI spec's linux.cgroupsPath as a path from a cgroup hierarchy's
 * root (podcg.c makes and joins it). Two forms, as runc takes them:
 * cgroupfs, an absolute path ("/kubepods/burstable/podUID/ID"), and
 * systemd's "SLICE:PREFIX:NAME", where the slice's dashes nest
 * ("kubepods-burstable-podUID.slice" is
 * /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podUID.slice)
 * and the leaf is the scope PREFIX-NAME.scope (NAME itself if it is a
 * slice; an empty SLICE is system.slice, "-.slice" the root). The path
 * comes from a client: "." and "..", empty components, a relative path,
 * the root itself, NUL, control characters, spaces and non-ASCII bytes
 * are refused, and so are paths longer than PODCG_PATH_MAX, components
 * longer than NAME_MAX and more than PODCG_DEPTH_MAX of them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

#define NAME_MAX_ 255

/* A path component: printable ASCII but '/', not "." or "..". */
static bool name_ok(const char *s, size_t len)
{
	if (!len || len > NAME_MAX_ || (len == 1 && s[0] == '.') ||
	    (len == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || s[i] == '/')
			return false;
	return true;
}

/* "/" + len bytes of s onto out (used bytes *at). */
static bool append(char *out, size_t cap, size_t *at, const char *s, size_t len)
{
	if (*at + 1 + len >= cap)
		return false;
	out[(*at)++] = '/';
	memcpy(out + *at, s, len);
	*at += len;
	out[*at] = 0;
	return true;
}

static int cgroupfs(const char *p, size_t len, char *out, size_t cap, char *msg, size_t n)
{
	size_t at = 0, depth = 0;

	out[0] = 0;
	for (size_t i = 1; i <= len; i++) {
		size_t j = i;

		while (j < len && p[j] != '/')
			j++;
		if (!name_ok(p + i, j - i)) {
			snprintf(
			    msg, n,
			    "linux.cgroupsPath '%.200s': component %zu ('%.*s') is not a cgroup "
			    "name (empty, '.', '..', longer than %d bytes, or with a space, "
			    "control or non-ASCII character)",
			    p, depth + 1, (int)(j - i > 64 ? 64 : j - i), p + i, NAME_MAX_);
			return -EINVAL;
		}
		if (++depth > PODCG_DEPTH_MAX || !append(out, cap, &at, p + i, j - i)) {
			snprintf(msg, n,
			         "linux.cgroupsPath '%.200s' is deeper than %d or longer than %zu",
			         p, PODCG_DEPTH_MAX, cap - 1);
			return -EINVAL;
		}
		i = j;
	}
	return 0;
}

/* SLICE:PREFIX:NAME (its two colons at c1 and c2). */
static int systemd(const char *p, size_t len, const char *c1, const char *c2, char *out, size_t cap,
                   char *msg, size_t n)
{
	static const char sfx[] = ".slice";
	const size_t sl = sizeof(sfx) - 1;
	const char *slice = p, *prefix = c1 + 1, *name = c2 + 1;
	size_t slen = (size_t)(c1 - p), plen = (size_t)(c2 - prefix);
	size_t nlen = len - (size_t)(name - p), at = 0, depth = 0, base;
	char leaf[NAME_MAX_ + 1];

	out[0] = 0;
	if (!slen) {
		slice = "system.slice";
		slen = strlen(slice);
	}
	if (slen <= sl || memcmp(slice + slen - sl, sfx, sl) || !name_ok(slice, slen)) {
		snprintf(msg, n,
		         "linux.cgroupsPath '%.200s': the slice '%.*s' is not a systemd slice name "
		         "(NAME.slice, no '/' or space)",
		         p, (int)(slen > 64 ? 64 : slen), slice);
		return -EINVAL;
	}
	if (!name_ok(name, nlen) || (plen && !name_ok(prefix, plen))) {
		snprintf(msg, n,
		         "linux.cgroupsPath '%.200s': the unit's prefix and name are not unit "
		         "names (the name is empty, '.', '..', or has a '/', space or control "
		         "character)",
		         p);
		return -EINVAL;
	}
	/* kubepods-burstable.slice: /kubepods.slice/kubepods-burstable.slice,
	 * one level per dash-ended prefix of its name */
	base = slen - sl;
	if (!(base == 1 && slice[0] == '-'))
		for (size_t i = 0; i <= base; i++) {
			if (i < base && slice[i] != '-')
				continue;
			if (i == 0 || slice[i - 1] == '-' || (i < base && i + 1 == base)) {
				snprintf(
				    msg, n,
				    "linux.cgroupsPath '%.200s': the slice '%.*s' has an empty "
				    "part between its dashes",
				    p, (int)(slen > 64 ? 64 : slen), slice);
				return -EINVAL;
			}
			if (++depth > PODCG_DEPTH_MAX || at + 1 + i + sl >= cap)
				goto long_;
			out[at++] = '/';
			memcpy(out + at, slice, i);
			memcpy(out + at + i, sfx, sl);
			at += i + sl;
			out[at] = 0;
		}
	if (nlen > sl && !memcmp(name + nlen - sl, sfx, sl))
		snprintf(leaf, sizeof(leaf), "%.*s", (int)nlen, name);
	else if (snprintf(leaf, sizeof(leaf), "%.*s%s%.*s.scope", (int)plen, prefix,
	                  plen ? "-" : "", (int)nlen, name) >= (int)sizeof(leaf))
		goto long_;
	if (++depth > PODCG_DEPTH_MAX || !append(out, cap, &at, leaf, strlen(leaf)))
		goto long_;
	return 0;
long_:
	snprintf(msg, n,
	         "linux.cgroupsPath '%.200s' expands to a path deeper than %d or longer "
	         "than %zu",
	         p, PODCG_DEPTH_MAX, cap - 1);
	return -EINVAL;
}

static int parse(const char *p, size_t len, char *out, size_t cap, char *msg, size_t n)
{
	const char *c1, *c2;

	out[0] = 0;
	if (len > PODCG_PATH_MAX || cap < 2) {
		snprintf(msg, n, "linux.cgroupsPath is %zu bytes long: at most %d are taken", len,
		         PODCG_PATH_MAX);
		return -EINVAL;
	}
	if (memchr(p, 0, len)) {
		snprintf(msg, n, "linux.cgroupsPath has a NUL byte");
		return -EINVAL;
	}
	if (len && p[0] == '/') {
		if (len == 1) {
			snprintf(msg, n,
			         "linux.cgroupsPath '/' is the root cgroup: the pod's VMM takes a "
			         "cgroup of its own (e.g. /kubepods/podUID/ID)");
			return -EINVAL;
		}
		return cgroupfs(p, len, out, cap, msg, n);
	}
	c1 = memchr(p, ':', len);
	c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - p)) : NULL;
	if (!c2 || memchr(c2 + 1, ':', len - (size_t)(c2 + 1 - p))) {
		snprintf(msg, n,
		         "linux.cgroupsPath '%.200s' is neither an absolute path (cgroupfs: "
		         "/kubepods/podUID/ID) nor systemd's SLICE:PREFIX:NAME",
		         p);
		return -EINVAL;
	}
	return systemd(p, len, c1, c2, out, cap, msg, n);
}

int podcg_parse(const char *p, size_t len, char *out, size_t cap, char *msg, size_t n)
{
	int err = parse(p, len, out, cap, msg, n);

	if (err && cap)
		out[0] = 0;
	return err;
}
