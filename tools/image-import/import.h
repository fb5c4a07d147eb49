/* SPDX-License-Identifier: MIT */
/* kiln-image-import: an OCI image archive (or `docker save`'s) into a kiln
 * erofs image. main.c drives it, oci.c reads the archive's index, layer.c
 * applies layers onto a root directory. */
#ifndef KILN_IMAGE_IMPORT_H
#define KILN_IMAGE_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define IMPORT_MAX_LAYERS 128

struct import {
	char *stage;    /* the outer archive, unpacked (a private temporary dir) */
	char *root;     /* the image's root being built */
	int root_fd;    /* open on root */
	uint64_t bytes; /* file bytes written so far */
	uint64_t max_bytes;
	char layer[64]; /* the layer being applied, as messages name it */
	char err[512];  /* what went wrong, for the user */
};

/* What the image's manifest and config say (oci.c). Paths are inside stage. */
struct oci_image {
	char *digest; /* sha256 of the config's and the layers' digests: the cache key */
	char *layers[IMPORT_MAX_LAYERS];
	unsigned nlayers;
	json_t *config; /* the config's "config" object: Env, Cmd, Entrypoint, ... (may be NULL) */
	char *tag;      /* the first RepoTag or ref.name, or NULL */
};

struct layer_stats {
	uint64_t entries, whiteouts, skipped;
};

/* Record an error message; returns err. */
int import_fail(struct import *im, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Read the index of the archive unpacked in im->stage: an OCI layout
 * (index.json) or docker save's (manifest.json). */
int oci_read(struct import *im, struct oci_image *img);
void oci_free(struct oci_image *img);

/* Apply the layer tar at file (absolute path) onto im->root. */
int layer_apply(struct import *im, const char *file, struct layer_stats *ls);

/* Directory rel ("./a/b") of the root open, reached through plain
 * directories only, never leaving it; -errno otherwise (layer.c). */
int layer_open_beneath(int root, const char *rel);
/* The image config's User as numbers, names looked up in the image's
 * /etc/passwd and /etc/group (user.c); empty or NULL: 0:0. */
int user_resolve(struct import *im, const char *user, long *uid, long *gid);
/* Remove a whole tree, never following a link. */
int layer_rm_tree(const char *path);

#endif
