/* SPDX-License-Identifier: MIT */
/* kiln-agent: user lookup in /etc/passwd and /etc/group (users.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/agent.h>

#include "users.h"

/* The file, NUL-terminated, or NULL (errno set; EFBIG past the limit).
 * The buffer grows as needed: a big first allocation would be mapped and
 * unmapped around every request. */
static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	size_t len = 0, cap = 16384;
	char *buf, *nb;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len < cap)
			continue;
		if (cap >= USER_FILE_MAX) {
			free(buf);
			buf = NULL;
			errno = EFBIG;
			break;
		}
		cap *= 2;
		nb = realloc(buf, cap + 1);
		if (!nb)
			free(buf);
		buf = nb;
	}
	close(fd);
	if (buf)
		buf[len] = 0;
	return buf;
}

/* Split line at ':' into exactly n fields (in place); false if it has not n. */
static bool split(char *line, char **f, int n)
{
	int i = 0;

	f[i++] = line;
	for (char *p = line; *p; p++) {
		if (*p != ':')
			continue;
		if (i == n)
			return false;
		*p = 0;
		f[i++] = p + 1;
	}
	return i == n;
}

/* A decimal id below 2^32 - 1 ((uid_t)-1 means "unchanged" to the kernel). */
static bool parse_id(const char *s, uint32_t *out)
{
	uint64_t v = 0;

	if (!*s || strlen(s) > 10)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v >= UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* The next line of the buffer at *pos (NUL-terminated in place), or NULL. */
static char *next_line(char **pos)
{
	char *line = *pos, *nl;

	if (!*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = 0;
		*pos = nl + 1;
	} else {
		*pos = line + strlen(line);
	}
	return line;
}

/* name's /etc/passwd entry: 0, -ESRCH if none, -errno. */
static int find_passwd(const char *name, struct agent_user *u)
{
	char *buf = slurp("/etc/passwd"), *pos = buf, *line, *f[7];
	int err = -ESRCH;

	if (!buf)
		return errno == ENOENT ? -ESRCH : -errno;
	while (err == -ESRCH && (line = next_line(&pos))) {
		uint32_t uid, gid;

		if (!split(line, f, 7) || strcmp(f[0], name))
			continue;
		if (!parse_id(f[2], &uid) || !parse_id(f[3], &gid) || f[5][0] != '/' ||
		    strlen(f[5]) > USER_HOME_MAX)
			continue; /* malformed: as if absent */
		u->uid = uid;
		u->gid = gid;
		strcpy(u->home, f[5]);
		err = 0;
	}
	free(buf);
	return err;
}

/* The groups of /etc/group that list u->name, after its primary group. */
static void find_groups(struct agent_user *u)
{
	char *buf = slurp("/etc/group"), *pos = buf, *line, *f[4];

	u->groups[0] = u->gid;
	u->ngroups = 1;
	while (buf && u->ngroups < USER_MAX_GROUPS && (line = next_line(&pos))) {
		uint32_t gid;
		bool member = false;

		if (!split(line, f, 4) || !parse_id(f[2], &gid))
			continue;
		for (char *m = strtok(f[3], ","); m && !member; m = strtok(NULL, ","))
			member = !strcmp(m, u->name);
		for (int i = 0; member && i < u->ngroups; i++)
			member = u->groups[i] != gid;
		if (member)
			u->groups[u->ngroups++] = gid;
	}
	free(buf);
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > USER_NAME_MAX || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

int user_resolve(const char *name, uint32_t flags, struct agent_user *u, char *why, size_t why_len)
{
	int err;

	memset(u, 0, sizeof(*u));
	if (!name || !*name)
		name = "root";
	if (!valid_name(name)) {
		snprintf(why, why_len,
		         "'%.64s' is not a user name (letters, digits, '.', '_', '-')", name);
		return -EINVAL;
	}
	strcpy(u->name, name);
	err = find_passwd(name, u);
	if (err == -ESRCH && (!strcmp(name, "root") || (flags & KILN_USER_OR_ROOT))) {
		if (strcmp(name, "root")) /* the fallback: root as it is in the file */
			return user_resolve("root", 0, u, why, why_len);
		strcpy(u->home, "/root");
		err = 0;
	}
	if (err == -ESRCH) {
		snprintf(why, why_len, "no user '%s' in the sandbox's /etc/passwd", name);
		return err;
	}
	if (err) {
		snprintf(why, why_len, "cannot read /etc/passwd: %s", strerror(-err));
		return err;
	}
	find_groups(u);
	snprintf(u->env_home, sizeof(u->env_home), "HOME=%s", u->home);
	snprintf(u->env_user, sizeof(u->env_user), "USER=%s", u->name);
	snprintf(u->env_logname, sizeof(u->env_logname), "LOGNAME=%s", u->name);
	return 0;
}

int user_enter(const struct agent_user *u)
{
	if (!u || !u->uid)
		return 0;
	if (setgroups((size_t)u->ngroups, u->groups) < 0 || setresgid(-1, u->gid, -1) < 0 ||
	    setresuid(-1, u->uid, -1) < 0) {
		int err = -errno;

		user_leave(u);
		return err;
	}
	return 0;
}

void user_leave(const struct agent_user *u)
{
	if (!u || !u->uid)
		return;
	/* (the saved ids are root's: these cannot fail) */
	if (setresuid(-1, 0, -1) < 0 || setresgid(-1, 0, -1) < 0 || setgroups(0, NULL) < 0)
		abort();
}
