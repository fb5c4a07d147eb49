/* SPDX-License-Identifier: MIT */
/* kiln-agent: was a command killed for memory? The library OS lists its
 * recent out-of-memory kills in /proc/kiln/oom (MONOTONIC_NS PID SID COMM
 * per line, guest-kernel/include/oom.h); a command runs in a session of
 * its own (its pid), so a kill in that session since it started was the
 * command's, whichever of its processes it hit. Read only when a command
 * ended as a kill would leave it, so an exec pays nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

#define OOM_FILE "/proc/kiln/oom"

bool oom_killed_in(pid_t sid, int64_t since_ms)
{
	char buf[4096], *line, *save = NULL;
	ssize_t n;
	int fd = open(OOM_FILE, O_RDONLY | O_CLOEXEC);
	bool hit = false;

	if (fd < 0)
		return false; /* not kiln's kernel (the host build of the agent) */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long at_ns;
		int pid, s;

		if (sscanf(line, "%llu %d %d", &at_ns, &pid, &s) == 3 && s == sid &&
		    (int64_t)(at_ns / 1000000) >= since_ms)
			hit = true;
	}
	return hit;
}

/* The status a kill for memory leaves: SIGKILL, or a shell's 128+9 for its
 * child killed so. */
bool oom_suspect(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return WTERMSIG(wstatus) == SIGKILL;
	return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 128 + SIGKILL;
}
