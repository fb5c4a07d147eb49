/* SPDX-License-Identifier: MIT */
/*
 * A later pause of a resumed sandbox appends a generation to the file its
 * VMM was restored from (snapshot format 3, include/kiln/snapshot.h): that
 * file stays at the VMM's output path while the sandbox runs. A file there
 * is then no proof of a finished pause: until the new generation's header
 * slot is written it holds the older one, the state the VM had at the
 * resume. The pause's base is that file as it was when the pause started,
 * recorded before the VMM is asked: its inode and the id (header checksum)
 * of its newest valid generation. A restarted kilnd counts the file as the
 * pause's only if it has passed its base (pause_base_passed()).
 */
#ifndef KILND_PAUSE_BASE_H
#define KILND_PAUSE_BASE_H

#include <stdbool.h>
#include <stdint.h>

struct pause_base {
	bool file; /* a regular file was there */
	uint64_t dev, ino;
	uint64_t id; /* its newest valid generation's id, 0: not a kiln snapshot */
};

/* The largest file a VM of memory_mb MiB is parsed in: its memory
 * stored raw twice over, and room for its state. A larger one (a hostile
 * VMM's) is not read, which would hold kilnd up: its id stays 0. */
#define PAUSE_BASE_MAX(memory_mb) (((uint64_t)(memory_mb) << 21) + (64ULL << 20))

/* What path is now (never follows a link, never blocks on a fifo). */
void pause_base_read(const char *path, uint64_t max_size, struct pause_base *b);
/* The store's text of b (malloc'd, NULL when out of memory), and back:
 * false for text that is not one (b is then "no file"). */
char *pause_base_dump(const struct pause_base *b);
bool pause_base_load(const char *text, struct pause_base *b);
/* Whether path holds a snapshot newer than base: a regular file that is
 * another file (the VMM writes a new one whole and renames it into place),
 * or the same one with a valid newest generation other than base's. */
bool pause_base_passed(const char *path, uint64_t max_size, const struct pause_base *base);

#endif
