/* SPDX-License-Identifier: MIT */
/* Images by name: NAME is the read-only erofs file IMAGES_DIR/NAME.erofs
 * (kilnd --images, default build/images beside kilnd: what `make images`
 * builds). A sandbox of an image boots kilnd's image initramfs (the agent
 * alone, as /init) over it, so the image's own /bin, /usr and /etc show.
 * One name is built in: IMG_BUILTIN, the initramfs with the agent and
 * busybox and no image at all, which is what a request without a name gets. */
#ifndef KILND_IMAGE_H
#define KILND_IMAGE_H

#include <jansson.h>

#include "kilnd.h"

#define IMG_BUILTIN "busybox"
/* The code interpreter SDK's default template: when no template or image
 * has that name, the image IMG_CI_IMAGE (python and its data stack) stands
 * in for it. */
#define IMG_CI_TEMPLATE "code-interpreter-v1"
#define IMG_CI_IMAGE    "base"

/* The image named `name`: *path gets the real path of its file (malloc'd;
 * NULL for IMG_BUILTIN, which has none). 0, or -ENOENT if there is no such
 * image, -ENOMEM. */
int img_resolve(struct kilnd *kd, const char *name, char **path);
/* [{"name","builtin","path","sizeBytes"}...], the built-in one first. */
json_t *img_list(struct kilnd *kd);
/* "busybox (built in), base, minimal", for messages (malloc'd). */
char *img_names(struct kilnd *kd);

#endif
