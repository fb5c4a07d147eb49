/* SPDX-License-Identifier: MIT */
/* The whole of a command, for its timeout and for a host that left: its
 * process group is not enough, since a child that called setsid() (a
 * daemon, `setsid sh -c ...`) has a group and session of its own. Found
 * through /proc/PID/stat: every descendant of the command's process, and
 * every process in a session or group one of them leads. A process whose
 * parents all exited before is the init's child by then and not found
 * (the agent is that init in a guest; kilnd's VM ends it at the latest). */
#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

#define TREE_MAX 4096 /* processes looked at */

struct pinfo {
	pid_t pid, ppid, pgid, sid;
	bool in;
};

static bool read_stat(pid_t pid, struct pinfo *pi)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p)
		return false;
	pi->pid = pid;
	pi->in = false;
	return sscanf(p + 1, " %*c %d %d %d", &pi->ppid, &pi->pgid, &pi->sid) == 3;
}

void kill_tree(pid_t root, int sig)
{
	struct pinfo *ps = calloc(TREE_MAX, sizeof(*ps));
	pid_t self = getpid();
	size_t n = 0;
	bool grew = true;
	DIR *d;
	struct dirent *e;

	/* (0: a command not started; a process whose session leader is
	 * outside the pid namespace has sid 0) */
	if (root <= 1 || !ps) {
		free(ps);
		return;
	}
	d = opendir("/proc");
	while (d && (e = readdir(d)) && n < TREE_MAX) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (read_stat((pid_t)atoi(e->d_name), &ps[n]) && ps[n].pid != self)
			n++;
	}
	if (d)
		closedir(d);
	/* (the root itself may be gone: its session and group remain) */
	for (size_t i = 0; i < n; i++)
		ps[i].in = ps[i].pid == root || ps[i].sid == root || ps[i].pgid == root;
	/* to a fixed point: children of the tree, and the members of the
	 * sessions and groups its processes lead */
	for (int round = 0; grew && round < 64; round++) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (ps[i].in)
				continue;
			for (size_t j = 0; j < n && !ps[i].in; j++)
				if (ps[j].in &&
				    (ps[i].ppid == ps[j].pid ||
				     (ps[j].sid == ps[j].pid && ps[i].sid == ps[j].pid) ||
				     (ps[j].pgid == ps[j].pid && ps[i].pgid == ps[j].pid)))
					ps[i].in = grew = true;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (ps[i].in && ps[i].pid != root && ps[i].pid > 1)
			kill(ps[i].pid, sig);
	free(ps);
}
