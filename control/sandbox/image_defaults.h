/* SPDX-License-Identifier: MIT */
/* An imported image's config defaults (kiln-image-import's NAME.json beside
 * the image file): the working directory, user and command that the
 * sandbox's commands get when their request does not say. */
#ifndef KILND_IMAGE_DEFAULTS_H
#define KILND_IMAGE_DEFAULTS_H

#include <stdint.h>

#include <jansson.h>

struct sandbox;

struct img_defaults {
	char *cwd;    /* WorkingDir, or NULL */
	uint32_t uid; /* User, resolved at import; 0: root */
	char **argv;  /* Entrypoint + Cmd, NULL-terminated, or NULL */
};

/* The defaults of the sandbox's image, read once (an image without a
 * manifest, or none at all, has none: every field empty). Never NULL. */
const struct img_defaults *sb_defaults(struct sandbox *sb);
/* Parse a manifest (exposed for the unit tests). 0, or -EINVAL with msg. */
int img_defaults_parse(json_t *man, struct img_defaults *d, char *msg, size_t n);
void img_defaults_free(struct img_defaults *d);

#endif
