/* SPDX-License-Identifier: MIT */
/*
 * kiln-image-import: a container image archive into a kiln image.
 *
 *   kiln-image-import [--name NAME] [--out DIR] [--cache DIR] [--max-size MIB]
 *                     [--force] ARCHIVE.tar
 *
 * ARCHIVE is what `docker save IMAGE -o FILE` or `podman save` writes, or an
 * OCI image layout in a tar. Its layers are applied in order onto a root
 * (layer.c), which mkfs.erofs packs as mkimage packs images (uncompressed,
 * page-aligned file data). The image is cached in $KILN_CACHE (default
 * ~/.cache/kiln) under its config's digest; OUT/NAME.erofs and
 * OUT/NAME.json link to it. NAME.json carries the image config's Env, Cmd,
 * Entrypoint, WorkingDir and User; the environment is also in the image's
 * /etc/kiln-env, as for mkimage's images.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "import.h"

int import_fail(struct import *im, int err, const char *fmt, ...)
{
	va_list ap;

	if (!im->err[0]) {
		va_start(ap, fmt);
		vsnprintf(im->err, sizeof(im->err), fmt, ap);
		va_end(ap);
	}
	return err;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: kiln-image-import [--name NAME] [--out DIR] [--cache DIR] [--max-size MIB]\n"
	    "                         [--force] ARCHIVE.tar\n"
	    "\n"
	    "Turn a container image archive (docker save, podman save, or an OCI\n"
	    "layout in a tar) into a kiln image: OUT/NAME.erofs and OUT/NAME.json.\n"
	    "\n"
	    "  --name NAME      the kiln image's name (default: from the image's tag)\n"
	    "  --out DIR        where the image is linked (default build/images)\n"
	    "  --cache DIR      the image cache (default $KILN_CACHE or ~/.cache/kiln)\n"
	    "  --max-size MIB   refuse images whose files add up to more (default 16384)\n"
	    "  --force          import again even if the image is cached\n"
	    "  --source TEXT    where the archive came from, for NAME.json (default: its path)\n");
}

static void die(struct import *im, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln-image-import: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (im && im->stage)
		layer_rm_tree(im->stage);
	exit(1);
}

/* NAME from a tag such as "registry/org/app:1.2": "app"; letters, digits,
 * '-' and '_' only. */
static void name_from_tag(const char *tag, char *out, size_t cap)
{
	const char *p = tag ? strrchr(tag, '/') : NULL;
	size_t n = 0;

	p = p ? p + 1 : tag ? tag : "imported";
	for (; *p && *p != ':' && *p != '@' && n + 1 < cap; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')
			out[n++] = *p;
		else if (*p >= 'A' && *p <= 'Z')
			out[n++] = (char)(*p - 'A' + 'a');
	if (!n)
		n = (size_t)snprintf(out, cap, "imported");
	out[n] = 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

/* The outer archive into im->stage, refusing anything that would land
 * outside it. */
static int unpack_outer(struct import *im, const char *archive)
{
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	struct archive_entry *e;
	int r, err = 0;

	archive_read_support_format_tar(a);
	archive_read_support_filter_all(a);
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	                                      ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                      ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	if (archive_read_open_filename(a, archive, 1 << 16) != ARCHIVE_OK) {
		err = import_fail(im, -EINVAL, "%s: %s", archive, archive_error_string(a));
		goto out;
	}
	if (chdir(im->stage)) {
		err = import_fail(im, -errno, "%s: %s", im->stage, strerror(errno));
		goto out;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		mode_t t = archive_entry_filetype(e);

		if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK)
			continue;
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			err = import_fail(im, -EINVAL, "%s: refused %s: %s", archive,
			                  archive_entry_pathname(e), archive_error_string(w));
			break;
		}
		if (archive_entry_size(e) > 0) {
			const void *buf;
			size_t len;
			la_int64_t off;

			while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
				archive_write_data_block(w, buf, len, off);
			if (r != ARCHIVE_EOF) {
				err =
				    import_fail(im, -EIO, "%s: %s is cut short: %s", archive,
				                archive_entry_pathname(e), archive_error_string(a));
				break;
			}
		}
		archive_write_finish_entry(w);
	}
	if (!err && r != ARCHIVE_EOF)
		err = import_fail(im, -EINVAL, "%s: damaged or truncated: %s", archive,
		                  archive_error_string(a));
	if (chdir("/"))
		err = -errno;
out:
	archive_write_free(w);
	archive_read_free(a);
	return err;
}

/* The image config's environment into root/etc/kiln-env, written through
 * plain directories only (the image may have made etc a link). */
static int write_env(struct import *im, const struct oci_image *img)
{
	json_t *env = json_object_get(img->config, "Env"), *v;
	int dfd = layer_open_beneath(im->root_fd, "./etc"), fd;
	size_t i;
	FILE *f;

	if (dfd < 0)
		return 0; /* no plain /etc: nothing to write to */
	fd = openat(dfd, "kiln-env", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(dfd);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		return import_fail(im, -errno, "cannot write /etc/kiln-env in the image: %s",
		                   strerror(errno));
	}
	fprintf(f, "# kiln image environment (from the image config)\n");
	json_array_foreach(env, i, v)
	{
		const char *kv = json_string_value(v);

		if (kv && strchr(kv, '=') && !strchr(kv, '\n'))
			fprintf(f, "%s\n", kv);
	}
	return fclose(f) ? import_fail(im, -EIO, "writing /etc/kiln-env failed") : 0;
}

static int run(char *const argv[], const char *log)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* A link at dir/name to target, replacing what was there. */
static int relink(const char *dir, const char *name, const char *target)
{
	char path[PATH_MAX + 128], tmp[PATH_MAX + 128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	unlink(tmp);
	if (symlink(target, tmp) || rename(tmp, path))
		return -errno;
	return 0;
}

/* NAME.json: the config's defaults as kilnd applies them (control/sandbox/
 * image_defaults.c), User resolved to uid and gid. */
static int write_manifest(const char *path, const char *name, const char *key, const char *archive,
                          const struct oci_image *img, off_t size, long uid, long gid)
{
	json_t *cfg = img->config, *j;
	int err;

	j = json_pack(
	    "{s:s,s:s,s:I,s:s,s:s,s:s?,s:O?,s:O?,s:O?,s:O?,s:O?,s:I,s:I}", "name", name, "key", key,
	    "size", (json_int_t)size, "source", archive, "digest", img->digest, "tag", img->tag,
	    "env", json_object_get(cfg, "Env"), "entrypoint", json_object_get(cfg, "Entrypoint"),
	    "cmd", json_object_get(cfg, "Cmd"), "workingDir", json_object_get(cfg, "WorkingDir"),
	    "user", json_object_get(cfg, "User"), "uid", (json_int_t)uid, "gid", (json_int_t)gid);
	if (!j)
		return -ENOMEM;
	/* A User by name is also the image's "defaultUser", as mkimage's
	 * manifests name theirs (what envd runs requests as). */
	{
		const char *u = json_string_value(json_object_get(cfg, "User"));
		size_t n = u ? strcspn(u, ":") : 0;

		if (n && n <= 32 && strspn(u, "0123456789") != n)
			json_object_set_new(j, "defaultUser", json_stringn(u, n));
	}
	err = json_dump_file(j, path, JSON_INDENT(2)) ? -EIO : 0;
	json_decref(j);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"name", required_argument, 0, 'n'},  {"out", required_argument, 0, 'o'},
	    {"cache", required_argument, 0, 'c'}, {"max-size", required_argument, 0, 'm'},
	    {"force", no_argument, 0, 'f'},       {"source", required_argument, 0, 's'},
	    {"help", no_argument, 0, 'h'},        {0, 0, 0, 0},
	};
	const char *out = "build/images", *name_opt = NULL, *home = getenv("HOME"), *source = NULL;
	/* Paths made from cache (at most PATH_MAX) have room for what follows it. */
	char cache[PATH_MAX], images[PATH_MAX + 16], name[80], key[17], img_path[PATH_MAX + 256],
	    man_path[PATH_MAX + 256], tmp_img[PATH_MAX + 64], log[PATH_MAX + 256],
	    archive[PATH_MAX], outdir[PATH_MAX];
	struct import im = {.root_fd = -1, .max_bytes = 16384ULL << 20};
	struct oci_image img;
	struct stat st;
	bool force = false;
	long uid = 0, gid = 0;
	int c;

	snprintf(cache, sizeof(cache), "%s", getenv("KILN_CACHE") ? getenv("KILN_CACHE") : "");
	if (!cache[0])
		snprintf(cache, sizeof(cache), "%s/.cache/kiln", home && *home ? home : "/root");
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'n':
			name_opt = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'c':
			snprintf(cache, sizeof(cache), "%s", optarg);
			break;
		case 'm':
			im.max_bytes = strtoull(optarg, &end, 10) << 20;
			if (*end || !im.max_bytes) {
				fprintf(stderr,
				        "kiln-image-import: --max-size '%s': a number of MiB\n",
				        optarg);
				return 2;
			}
			break;
		case 'f':
			force = true;
			break;
		case 's':
			source = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (!realpath(argv[optind], archive))
		die(NULL, "%s: %s", argv[optind], strerror(errno));
	if (name_opt && !name_ok(name_opt))
		die(NULL, "--name '%s': use 1 to 64 of a-z, 0-9, - and _", name_opt);
	if (mkdir(out, 0755) && errno != EEXIST)
		die(NULL, "%s: %s", out, strerror(errno));
	if (!realpath(out, outdir))
		die(NULL, "%s: %s", out, strerror(errno));
	snprintf(images, sizeof(images), "%s/images", cache);
	if ((mkdir(cache, 0755) && errno != EEXIST) || (mkdir(images, 0755) && errno != EEXIST))
		die(NULL, "%s: %s", images, strerror(errno));

	/* A private staging directory in the cache: on the same filesystem as
	 * the image's final place, and nobody else's. */
	snprintf(tmp_img, sizeof(tmp_img), "%s/.import-XXXXXX", images);
	if (!mkdtemp(tmp_img))
		die(NULL, "%s: %s", images, strerror(errno));
	im.stage = strdup(tmp_img);
	printf("kiln-image-import: [1/4] unpacking %s\n", argv[optind]);
	fflush(stdout);
	if (unpack_outer(&im, archive) || oci_read(&im, &img))
		die(&im, "%s", im.err);
	if (name_opt)
		snprintf(name, sizeof(name), "%s", name_opt);
	else
		name_from_tag(img.tag, name, sizeof(name));
	snprintf(key, sizeof(key), "%.16s", img.digest);
	snprintf(img_path, sizeof(img_path), "%s/%s-%s.erofs", images, name, key);
	snprintf(man_path, sizeof(man_path), "%s/%s-%s.json", images, name, key);
	if (!force && !stat(img_path, &st) && st.st_size && !stat(man_path, &st)) {
		printf("kiln-image-import: %s: cached (%s)\n", name, img_path);
		goto link;
	}

	snprintf(log, sizeof(log), "%s/root", im.stage);
	im.root = strdup(log);
	if (mkdir(im.root, 0755) || (im.root_fd = open(im.root, O_RDONLY | O_DIRECTORY)) < 0)
		die(&im, "%s: %s", im.root, strerror(errno));
	for (unsigned i = 0; i < img.nlayers; i++) {
		struct layer_stats ls;

		const char *base = strrchr(img.layers[i], '/');

		snprintf(im.layer, sizeof(im.layer), "layer %u (%.12s)", i + 1,
		         base ? base + 1 : "?");
		printf("kiln-image-import: %s [2/4] layer %u of %u\n", name, i + 1, img.nlayers);
		fflush(stdout);
		if (layer_apply(&im, img.layers[i], &ls))
			die(&im, "%s", im.err);
		printf("kiln-image-import:   %llu entries, %llu whiteouts%s, %llu MiB so far\n",
		       (unsigned long long)ls.entries, (unsigned long long)ls.whiteouts,
		       ls.skipped ? " (device nodes and FIFOs left out)" : "",
		       (unsigned long long)(im.bytes >> 20));
	}
	if (write_env(&im, &img) ||
	    user_resolve(&im, json_string_value(json_object_get(img.config, "User")), &uid, &gid))
		die(&im, "%s", im.err);
	printf("kiln-image-import: %s [3/4] mkfs.erofs (uncompressed, page-aligned file data)\n",
	       name);
	fflush(stdout);
	{
		char tmp_out[PATH_MAX + 256];
		char *mkfs[] = {"mkfs.erofs", "--quiet", "-Enoinline_data", "-T0", tmp_out,
		                im.root,      NULL};

		snprintf(tmp_out, sizeof(tmp_out), "%s/image.erofs", im.stage);
		snprintf(log, sizeof(log), "%s/mkfs.log", im.stage);
		if (run(mkfs, log))
			die(&im, "mkfs.erofs failed (is erofs-utils installed? its log: %s)", log);
		if (stat(tmp_out, &st) || rename(tmp_out, img_path))
			die(&im, "%s: %s", img_path, strerror(errno));
	}
	printf("kiln-image-import: %s [4/4] manifest\n", name);
	if (write_manifest(man_path, name, key, source ? source : archive, &img, st.st_size, uid,
	                   gid))
		die(&im, "%s: cannot write", man_path);
link:
	if (relink(outdir, strcat(strcpy(log, name), ".erofs"), img_path) ||
	    relink(outdir, strcat(strcpy(log, name), ".json"), man_path))
		die(&im, "cannot link the image into %s: %s", outdir, strerror(errno));
	if (!stat(img_path, &st))
		printf("kiln-image-import: %s: %llu MiB, %s/%s.erofs\n", name,
		       (unsigned long long)(st.st_size >> 20), outdir, name);
	oci_free(&img);
	if (im.root_fd >= 0)
		close(im.root_fd);
	layer_rm_tree(im.stage);
	free(im.stage);
	free(im.root);
	return 0;
}
