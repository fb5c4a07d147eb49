/* SPDX-License-Identifier: MIT */
/* libFuzzer: the snapshot reader on a damaged or hostile file: snap_open
 * validates everything but the chunk payloads, and snap_verify checks and
 * decompresses every chunk; neither may read past the file or allocate
 * what the file merely claims. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct snap_err err;
	struct snap *s;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/dev/shm/kiln-fuzz-snap.%d", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	if (snap_open(path, &s, &err) == 0) {
		snap_verify(s, 1, &err);
		snap_close(s);
	}
	unlink(path);
	return 0;
}
