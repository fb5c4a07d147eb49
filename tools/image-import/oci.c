/* SPDX-License-Identifier: MIT */
/*
 * The index of an image archive, unpacked: docker save's manifest.json
 * ([{"Config": FILE, "RepoTags": [...], "Layers": [FILE...]}]), or an OCI
 * image layout (index.json -> a manifest blob -> config and layer blobs
 * under blobs/sha256/). Every file it names must be a regular file inside
 * the unpacked archive.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "import.h"

#define JSON_MAX (16u << 20)

/* stage/rel, if it is a regular file under stage (after links, which the
 * unpacking kept inside it): its malloc'd real path, else NULL. */
static char *inside(struct import *im, const char *rel)
{
	char path[PATH_MAX], real[PATH_MAX], stage[PATH_MAX];
	struct stat st;
	size_t n;

	if (!rel || !*rel || rel[0] == '/' || strstr(rel, "..") ||
	    snprintf(path, sizeof(path), "%s/%s", im->stage, rel) >= (int)sizeof(path))
		return NULL;
	if (!realpath(path, real) || !realpath(im->stage, stage))
		return NULL;
	n = strlen(stage);
	if (strncmp(real, stage, n) || real[n] != '/' || stat(real, &st) || !S_ISREG(st.st_mode))
		return NULL;
	return strdup(real);
}

static json_t *load(struct import *im, const char *path)
{
	json_error_t je;
	struct stat st;
	json_t *j;

	if (stat(path, &st) || st.st_size > JSON_MAX) {
		import_fail(im, -EFBIG, "%s: larger than %u MiB, not an image index", path,
		            JSON_MAX >> 20);
		return NULL;
	}
	j = json_load_file(path, 0, &je);
	if (!j)
		import_fail(im, -EINVAL, "%s: not JSON: %s (line %d)", path, je.text, je.line);
	return j;
}

/* "sha256:HEX" -> blobs/sha256/HEX, checked. */
static char *blob(struct import *im, const char *digest)
{
	char rel[160];

	if (!digest || strncmp(digest, "sha256:", 7) || strlen(digest + 7) != 64 ||
	    strspn(digest + 7, "0123456789abcdef") != 64)
		return NULL;
	snprintf(rel, sizeof(rel), "blobs/sha256/%s", digest + 7);
	return inside(im, rel);
}

/* The hex sha256 of a file, malloc'd. */
static char *sha256_file(const char *path)
{
	struct sha256_ctx c;
	uint8_t buf[1 << 16], d[SHA256_DIGEST_SIZE];
	char *hex = malloc(2 * SHA256_DIGEST_SIZE + 1);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !hex) {
		if (fd >= 0)
			close(fd);
		free(hex);
		return NULL;
	}
	sha256_init(&c);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sha256_update(&c, (size_t)n, buf);
	close(fd);
	sha256_digest(&c, sizeof(d), d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	return hex;
}

static int take_config(struct import *im, struct oci_image *img, const char *cfg_path)
{
	json_t *cfg = load(im, cfg_path);

	if (!cfg)
		return -EINVAL;
	img->config = json_incref(json_object_get(cfg, "config"));
	json_decref(cfg);
	img->digest = sha256_file(cfg_path);
	return img->digest ? 0 : import_fail(im, -EIO, "cannot read %s", cfg_path);
}

static int add_layer(struct import *im, struct oci_image *img, char *path, const char *name)
{
	if (!path)
		return import_fail(im, -EINVAL, "layer %s is not a file in the archive", name);
	if (img->nlayers == IMPORT_MAX_LAYERS) {
		free(path);
		return import_fail(im, -E2BIG, "more than %d layers", IMPORT_MAX_LAYERS);
	}
	img->layers[img->nlayers++] = path;
	return 0;
}

static int from_docker(struct import *im, struct oci_image *img, json_t *man)
{
	json_t *m = json_array_get(man, 0), *layers, *tags, *v;
	const char *cfg = json_string_value(json_object_get(m, "Config"));
	char *cfg_path;
	size_t i;
	int err;

	if (json_array_size(man) != 1)
		return import_fail(im, -EINVAL,
		                   "manifest.json names %zu images; import one at a time "
		                   "(docker save one image)",
		                   json_array_size(man));
	if (!(cfg_path = inside(im, cfg)))
		return import_fail(im, -EINVAL,
		                   "manifest.json: Config is not a file in the archive");
	err = take_config(im, img, cfg_path);
	free(cfg_path);
	if (err)
		return err;
	tags = json_object_get(m, "RepoTags");
	if (json_is_string(json_array_get(tags, 0)))
		img->tag = strdup(json_string_value(json_array_get(tags, 0)));
	layers = json_object_get(m, "Layers");
	if (!json_is_array(layers))
		return import_fail(im, -EINVAL, "manifest.json: no Layers");
	json_array_foreach(layers, i, v)
	{
		const char *name = json_string_value(v);

		if ((err = add_layer(im, img, inside(im, name), name ? name : "?")))
			return err;
	}
	return 0;
}

static int from_oci(struct import *im, struct oci_image *img, json_t *index)
{
	json_t *desc = json_array_get(json_object_get(index, "manifests"), 0), *man, *layers, *v;
	const char *ref = json_string_value(json_object_get(json_object_get(desc, "annotations"),
	                                                    "org.opencontainers.image.ref.name"));
	char *path = blob(im, json_string_value(json_object_get(desc, "digest")));
	size_t i;
	int err;

	if (!path)
		return import_fail(im, -EINVAL,
		                   "index.json: its first manifest is not a blob in the archive");
	man = load(im, path);
	free(path);
	if (!man)
		return -EINVAL;
	if (json_object_get(man, "manifests")) {
		json_decref(man);
		return import_fail(im, -EOPNOTSUPP,
		                   "index.json names an index of several platforms; save the "
		                   "linux/amd64 image alone (docker save --platform linux/amd64)");
	}
	path =
	    blob(im, json_string_value(json_object_get(json_object_get(man, "config"), "digest")));
	err = path ? take_config(im, img, path)
	           : import_fail(im, -EINVAL, "the manifest has no config blob");
	free(path);
	if (!err && ref)
		img->tag = strdup(ref);
	layers = json_object_get(man, "layers");
	if (!err && !json_is_array(layers))
		err = import_fail(im, -EINVAL, "the manifest has no layers");
	json_array_foreach(layers, i, v)
	{
		const char *d = json_string_value(json_object_get(v, "digest"));

		if (err || (err = add_layer(im, img, blob(im, d), d ? d : "?")))
			break;
	}
	json_decref(man);
	return err;
}

/* The cache key: the config's digest and every layer's, hashed together
 * (an archive's own names for them are not to be trusted). */
static int content_key(struct import *im, struct oci_image *img)
{
	struct sha256_ctx c;
	uint8_t d[SHA256_DIGEST_SIZE];
	char *hex;

	sha256_init(&c);
	sha256_update(&c, strlen(img->digest), (const uint8_t *)img->digest);
	for (unsigned i = 0; i < img->nlayers; i++) {
		if (!(hex = sha256_file(img->layers[i])))
			return import_fail(im, -EIO, "cannot read layer %s", img->layers[i]);
		sha256_update(&c, strlen(hex), (const uint8_t *)hex);
		free(hex);
	}
	sha256_digest(&c, sizeof(d), d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		sprintf(img->digest + 2 * i, "%02x", d[i]);
	return 0;
}

int oci_read(struct import *im, struct oci_image *img)
{
	char *path;
	json_t *j;
	int err;

	memset(img, 0, sizeof(*img));
	if ((path = inside(im, "manifest.json"))) {
		j = load(im, path);
		err = j ? from_docker(im, img, j) : -EINVAL;
	} else if ((path = inside(im, "index.json"))) {
		j = load(im, path);
		err = j ? from_oci(im, img, j) : -EINVAL;
	} else {
		return import_fail(im, -EINVAL,
		                   "neither manifest.json nor index.json: not an image archive "
		                   "(make one with docker save IMAGE -o FILE.tar)");
	}
	free(path);
	json_decref(j);
	if (!err && !img->nlayers)
		err = import_fail(im, -EINVAL, "the image has no layers");
	if (!err)
		err = content_key(im, img);
	return err;
}

void oci_free(struct oci_image *img)
{
	for (unsigned i = 0; i < img->nlayers; i++)
		free(img->layers[i]);
	json_decref(img->config);
	free(img->digest);
	free(img->tag);
	memset(img, 0, sizeof(*img));
}
