/* SPDX-License-Identifier: MIT */
/* kiln image import: a container image archive into an image sandboxes can
 * boot, by kiln-image-import (tools/image-import), which sits beside kiln.
 * The image goes where kilnd looks by default (build/images beside its
 * bin/), or to --out DIR (kilnd --images DIR). With --docker NAME the
 * archive is `docker save NAME`, written to a temporary file in the image
 * cache first (docker save says nothing while it works: kiln reports the
 * bytes written). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln.h"
#include "util.h"

static int image_usage(FILE *f, int status)
{
	fprintf(f, "usage: kiln image import [--name NAME] [--out DIR] [--force] ARCHIVE.tar\n"
	           "       kiln image import [--name NAME] [--out DIR] [--force] --docker IMAGE\n"
	           "\n"
	           "Turn a container image archive (docker save IMAGE -o FILE.tar, podman save,\n"
	           "or an OCI layout in a tar) into a kiln image: its layers become an erofs\n"
	           "image, cached by content, and kiln create --image NAME boots it. Its\n"
	           "config's Env, WorkingDir, User and Entrypoint/Cmd are the defaults of\n"
	           "the commands its sandboxes run. NAME comes from the image's tag unless\n"
	           "given. --docker IMAGE exports IMAGE from the local Docker daemon with\n"
	           "docker save first. --out is kilnd's --images directory (default: images\n"
	           "beside kiln's bin/ directory).\n");
	return status;
}

/* `docker save image` into path, reporting its size as it grows. */
static int docker_save(const char *image, const char *path)
{
	struct timespec tick = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
	long long shown = -1;
	int st, n = 0;
	pid_t pid;

	printf("kiln image import: docker save %s\n", image);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("docker", "docker", "save", "-o", path, image, (char *)NULL);
		fprintf(stderr,
		        "kiln image import: cannot run docker: %s (install docker.io, or "
		        "give a docker save archive instead of --docker)\n",
		        strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, WNOHANG) == 0) {
		struct stat sb;

		nanosleep(&tick, NULL);
		if (++n % 10 == 0 && !stat(path, &sb) && sb.st_size >> 20 != shown) {
			shown = sb.st_size >> 20;
			printf("kiln image import:   %lld MiB exported\n", shown);
			fflush(stdout);
		}
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr,
		        "kiln image import: docker save %s failed (is the image in the local "
		        "Docker store? docker images lists it)\n",
		        image);
		return -EIO;
	}
	return 0;
}

/* The directory kiln-image-import caches into (its --cache default). */
static void cache_dir(char *out, size_t n)
{
	const char *c = getenv("KILN_CACHE"), *home = getenv("HOME");

	if (c && *c)
		snprintf(out, n, "%s", c);
	else
		snprintf(out, n, "%s/.cache/kiln", home && *home ? home : "/root");
}

static int run_import(char **args)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		execv(args[0], args);
		fprintf(stderr, "kiln image import: cannot run %s: %s (build it with make)\n",
		        args[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int cmd_image(struct kc *k, int argc, char **argv)
{
	char self[PATH_MAX], tool[PATH_MAX + 32], out[PATH_MAX + 32], tmp[PATH_MAX + 64], *slash,
	    **args, *source = NULL;
	const char *docker = NULL;
	ssize_t n;
	int i, j = 0, rc;
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
	args = calloc((size_t)argc + 7, sizeof(*args));
	if (!args)
		return 1;
	args[j++] = tool;
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--docker")) {
			if (i + 1 >= argc || docker) {
				free(args);
				return image_usage(stderr, 2);
			}
			docker = argv[++i];
			continue;
		}
		if (!strcmp(argv[i], "--out") || !strncmp(argv[i], "--out=", 6))
			have_out = true;
		args[j++] = argv[i];
	}
	if (!have_out) {
		args[j++] = "--out";
		args[j++] = out;
	}
	if (!docker) {
		args[j] = NULL;
		execv(tool, args);
		fprintf(stderr, "kiln image import: cannot run %s: %m (build it with make)\n",
		        tool);
		free(args);
		return 1;
	}
	cache_dir(tmp, sizeof(tmp));
	if (mkdir_p(tmp, 0755)) {
		fprintf(stderr, "kiln image import: %s: %m\n", tmp);
		free(args);
		return 1;
	}
	strcat(tmp, "/.docker-save-XXXXXX");
	{
		int fd = mkstemp(tmp);

		if (fd < 0) {
			fprintf(stderr, "kiln image import: %s: %m\n", tmp);
			free(args);
			return 1;
		}
		close(fd);
	}
	rc = docker_save(docker, tmp) ? 1 : 0;
	if (!rc && asprintf(&source, "docker:%s", docker) < 0)
		rc = 1;
	if (!rc) {
		args[j++] = "--source";
		args[j++] = source;
		args[j++] = tmp;
		args[j] = NULL;
		rc = run_import(args);
	}
	unlink(tmp);
	free(source);
	free(args);
	return rc;
}
