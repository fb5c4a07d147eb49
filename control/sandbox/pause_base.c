/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../snapshot/snap.h"
#include "pause_base.h"

void pause_base_read(const char *path, uint64_t max_size, struct pause_base *b)
{
	/* The VMM's uid owns a jailed VMM's output directory: what is there
	 * may be a link or a fifo; only a regular file is opened by name. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct snap_err err;
	struct snap *s;
	struct stat st;
	char self[64];

	memset(b, 0, sizeof(*b));
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	b->file = true;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if ((uint64_t)st.st_size <= max_size && !snap_open(self, &s, &err)) {
		b->id = snap_id(s);
		snap_close(s);
	}
	close(fd);
}

char *pause_base_dump(const struct pause_base *b)
{
	char *t;

	if (!b->file)
		return strdup("none");
	return asprintf(&t, "%" PRIu64 " %" PRIu64 " %016" PRIx64, b->dev, b->ino, b->id) < 0 ? NULL
	                                                                                      : t;
}

bool pause_base_load(const char *text, struct pause_base *b)
{
	int end = 0;

	memset(b, 0, sizeof(*b));
	if (!text)
		return false;
	if (!strcmp(text, "none"))
		return true;
	if (sscanf(text, "%" SCNu64 " %" SCNu64 " %16" SCNx64 "%n", &b->dev, &b->ino, &b->id,
	           &end) != 3 ||
	    text[end]) {
		memset(b, 0, sizeof(*b));
		return false;
	}
	b->file = true;
	return true;
}

bool pause_base_passed(const char *path, uint64_t max_size, const struct pause_base *base)
{
	struct pause_base now;

	pause_base_read(path, max_size, &now);
	if (!now.file)
		return false;
	if (!base->file || now.dev != base->dev || now.ino != base->ino)
		return true;
	return now.id && now.id != base->id;
}
