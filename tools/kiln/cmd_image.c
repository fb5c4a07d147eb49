/* SPDX-License-Identifier: MIT */
/* kiln image import: a container image archive into an image sandboxes can
 * boot, by kiln-image-import (tools/image-import), which sits beside kiln.
 * The image goes where kilnd looks by default (build/images beside its
 * bin/), or to --out DIR (kilnd --images DIR). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln.h"

static int image_usage(FILE *f, int status)
{
	fprintf(f, "usage: kiln image import [--name NAME] [--out DIR] [--force] ARCHIVE.tar\n"
	           "\n"
	           "Turn a container image archive (docker save IMAGE -o FILE.tar, podman save,\n"
	           "or an OCI layout in a tar) into a kiln image: its layers become an erofs\n"
	           "image, cached by content, and kiln create --image NAME boots it. NAME\n"
	           "comes from the image's tag unless given. --out is kilnd's --images\n"
	           "directory (default: images beside kiln's bin/ directory).\n");
	return status;
}

int cmd_image(struct kc *k, int argc, char **argv)
{
	char self[PATH_MAX], tool[PATH_MAX + 32], out[PATH_MAX + 32], *slash, **args;
	ssize_t n;
	int i, j = 0;
	bool have_out = false;

	(void)k;
	if (argc < 2 || want_help(argc, argv))
		return image_usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
	if (strcmp(argv[1], "import")) {
		fprintf(stderr, "kiln image: unknown command '%s' (kiln image import)\n", argv[1]);
		return 2;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		perror("kiln image import: /proc/self/exe");
		return 1;
	}
	self[n] = 0;
	slash = strrchr(self, '/');
	*slash = 0;
	snprintf(tool, sizeof(tool), "%s/kiln-image-import", self);
	if ((slash = strrchr(self, '/')))
		*slash = 0;
	snprintf(out, sizeof(out), "%s/images", self);
	args = calloc((size_t)argc + 4, sizeof(*args));
	if (!args)
		return 1;
	args[j++] = tool;
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--out") || !strncmp(argv[i], "--out=", 6))
			have_out = true;
		args[j++] = argv[i];
	}
	if (!have_out) {
		args[j++] = "--out";
		args[j++] = out;
	}
	args[j] = NULL;
	execv(tool, args);
	fprintf(stderr, "kiln image import: cannot run %s: %m (build it with make)\n", tool);
	free(args);
	return 1;
}
