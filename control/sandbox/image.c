/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http/buf.h"
#include "image.h"
#include "util.h"

#define IMG_EXT ".erofs"

/* NAME of a directory entry NAME.erofs, or NULL. */
static char *entry_name(const char *file)
{
	size_t n = strlen(file), e = strlen(IMG_EXT);

	if (n <= e || strcmp(file + n - e, IMG_EXT) || file[0] == '.')
		return NULL;
	return strndup(file, n - e);
}

int img_resolve(struct kilnd *kd, const char *name, char **path)
{
	char *file, *real;
	struct stat st;

	*path = NULL;
	if (!strcmp(name, IMG_BUILTIN))
		return 0;
	if (!name_ok(name))
		return -ENOENT;
	if (asprintf(&file, "%s/%s" IMG_EXT, kd->cfg.images_dir, name) < 0)
		return -ENOMEM;
	/* The real path: `make images` replaces the link with a new build, and
	 * a paused sandbox must go on with the file it was booted with. */
	real = realpath(file, NULL);
	free(file);
	if (!real || stat(real, &st) || !S_ISREG(st.st_mode)) {
		free(real);
		return -ENOENT;
	}
	*path = real;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The image names in the directory, sorted; *n of them. */
static char **scan(struct kilnd *kd, size_t *n)
{
	DIR *d = opendir(kd->cfg.images_dir);
	struct dirent *e;
	char **names = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char *name = entry_name(e->d_name), *path;

		if (!name)
			continue;
		if (!strcmp(name, IMG_BUILTIN) || img_resolve(kd, name, &path)) {
			free(name);
			continue;
		}
		free(path);
		if (*n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 8) * sizeof(*nn));

			if (!nn) {
				free(name);
				break;
			}
			names = nn;
		}
		names[(*n)++] = name;
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

json_t *img_list(struct kilnd *kd)
{
	json_t *arr = json_array();
	size_t n;
	char **names = scan(kd, &n);

	json_array_append_new(arr, json_pack("{s:s,s:b,s:n,s:i}", "name", IMG_BUILTIN, "builtin", 1,
	                                     "path", "sizeBytes", 0));
	for (size_t i = 0; i < n; i++) {
		char *path;
		struct stat st;

		if (!img_resolve(kd, names[i], &path) && !stat(path, &st))
			json_array_append_new(arr, json_pack("{s:s,s:b,s:s,s:I}", "name", names[i],
			                                     "builtin", 0, "path", path,
			                                     "sizeBytes", (json_int_t)st.st_size));
		free(path);
		free(names[i]);
	}
	free(names);
	return arr;
}

char *img_names(struct kilnd *kd)
{
	struct buf b = {0};
	size_t n;
	char **names = scan(kd, &n);
	char *s;

	buf_puts(&b, IMG_BUILTIN " (built in)");
	for (size_t i = 0; i < n; i++) {
		buf_printf(&b, ", %s", names[i]);
		free(names[i]);
	}
	free(names);
	if (!n)
		buf_printf(&b, "; no images in %s (build them with make images)",
		           kd->cfg.images_dir);
	s = buf_strdup(&b);
	buf_free(&b);
	return s;
}
