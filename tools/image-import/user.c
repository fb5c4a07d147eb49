/* SPDX-License-Identifier: MIT */
/* The image config's User ("name", "uid", "name:group", "uid:gid") as
 * numbers, looked up in the image's own /etc/passwd and /etc/group as the
 * layers left them: what a container runtime does at start, done once at
 * import so that kilnd only passes numbers to the agent. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"

#define ID_MAX 0x7fffffffL

/* A decimal id, or -1 if s is not one. */
static long parse_id(const char *s)
{
	char *end;
	long v;

	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 10)
		return -1;
	v = strtol(s, &end, 10);
	return v <= ID_MAX ? v : -1;
}

/* The line of file (passwd or group, in the image's /etc) whose first field
 * is name: its third field (the id) and, for passwd, its fourth (the
 * primary group). 0, -ENOENT if no such entry or no such file. */
static int lookup(struct import *im, const char *file, const char *name, long *id, long *gid)
{
	int dfd = layer_open_beneath(im->root_fd, "./etc"), fd;
	char line[1024];
	int err = -ENOENT;
	FILE *f;

	if (dfd < 0)
		return -ENOENT;
	fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		char *field[4] = {0}, *p = line;

		line[strcspn(line, "\n")] = 0;
		for (int i = 0; i < 4 && p; i++) {
			field[i] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = 0;
		}
		if (!field[2] || strcmp(field[0], name))
			continue;
		*id = parse_id(field[2]);
		if (gid)
			*gid = field[3] ? parse_id(field[3]) : -1;
		if (*id >= 0 && (!gid || *gid >= 0))
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

int user_resolve(struct import *im, const char *user, long *uid, long *gid)
{
	char u[256], *colon;
	const char *group = NULL;
	long pw_gid = -1;

	*uid = 0;
	*gid = 0;
	if (!user || !*user)
		return 0;
	if (strlen(user) >= sizeof(u))
		return import_fail(im, -EINVAL, "the image's User is too long");
	snprintf(u, sizeof(u), "%s", user);
	colon = strchr(u, ':');
	if (colon) {
		*colon = 0;
		group = colon + 1;
	}
	if ((*uid = parse_id(u)) >= 0) {
		/* a number: the agent runs it with gid = uid (include/kiln/agent.h) */
		*gid = *uid;
	} else if (lookup(im, "passwd", u, uid, &pw_gid)) {
		return import_fail(im, -ENOENT,
		                   "the image's User '%s' is not in the image's /etc/passwd: "
		                   "give a uid[:gid] or an image that has that user",
		                   user);
	} else {
		*gid = pw_gid;
	}
	if (group && *group && (*gid = parse_id(group)) < 0 &&
	    lookup(im, "group", group, gid, NULL))
		return import_fail(im, -ENOENT,
		                   "the image's User '%s' names group '%s', which is not in the "
		                   "image's /etc/group",
		                   user, group);
	return 0;
}
