/* SPDX-License-Identifier: MIT */
/* kiln cp: copy files and directory trees between here and a sandbox.
 * Either side may be ID:/path. Files stream in both directions (nothing is
 * held whole in memory); downloads land in a temporary file renamed into
 * place, uploads are made atomic by the agent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln.h"

struct cp {
	struct kc *k;
	const char *id;
	int errors;
};

static char *join(const char *dir, const char *name)
{
	char *p;
	size_t dl = strlen(dir);

	if (asprintf(&p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name) < 0)
		die_oom();
	return p;
}

static char *base_of(const char *path)
{
	char *tmp = strdup(path), *b, *r;
	size_t n = strlen(tmp);

	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = 0;
	b = basename(tmp);
	r = strdup(b);
	free(tmp);
	return r;
}

static char *api_path(const struct cp *c, const char *what, const char *remote, const char *extra)
{
	char *esc = url_escape(remote), *p;

	if (asprintf(&p, "/sandboxes/%s/%s?path=%s%s", c->id, what, esc, extra ? extra : "") < 0)
		die_oom();
	free(esc);
	return p;
}

/* The remote entry as JSON, or NULL if it does not exist (*status = 404). */
static json_t *remote_stat(struct cp *c, const char *remote, int *status)
{
	char *p = api_path(c, "files/stat", remote, NULL);
	struct kc_resp r = {0};
	json_t *j = NULL;

	*status = -1;
	if (!kc_request(c->k, "GET", p, NULL, NULL, 0, &r)) {
		*status = r.status;
		if (r.status == 200)
			j = json_loadb(r.body, r.body_len, 0, NULL);
		else if (r.status != 404)
			kc_print_error(remote, &r);
	}
	kc_resp_free(&r);
	free(p);
	return j;
}

static bool is_dir_entry(json_t *e)
{
	const char *t = json_string_value(json_object_get(e, "type"));

	return t && !strcmp(t, "dir");
}

/* ---------------------------------------------------------------- upload */

/* A refused upload: say why, and what to do when the directory is missing. */
static void upload_error(struct cp *c, const char *remote, const struct kc_resp *r)
{
	json_t *j = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	char *dir = strdup(remote);
	int status = 0;

	if (!dir)
		die_oom();
	dirname(dir);
	if (json_integer_value(json_object_get(j, "errno")) == ENOENT)
		json_decref(remote_stat(c, dir, &status));
	if (status == 404)
		fprintf(stderr,
		        "kiln: %s:%s: the directory %s does not exist in the sandbox (create it "
		        "with: kiln exec %s -- mkdir -p %s)\n",
		        c->id, remote, dir, c->id, dir);
	else
		kc_print_error(remote, r);
	free(dir);
	json_decref(j);
}

static int upload_file(struct cp *c, const char *local, const char *remote)
{
	struct kc_resp r = {0};
	struct stat st;
	char mode[16], *p;
	int fd = open(local, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "kiln: %s: %s\n", local, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(mode, sizeof(mode), "&mode=%o", st.st_mode & 07777);
	p = api_path(c, "files", remote, mode);
	rc = kc_upload(c->k, "PUT", p, fd, st.st_size, local, &r);
	close(fd);
	if (!rc && r.status != 200) {
		upload_error(c, remote, &r);
		rc = -1;
	}
	kc_resp_free(&r);
	free(p);
	return rc;
}

static int remote_mkdir(struct cp *c, const char *remote, unsigned mode)
{
	json_t *req = json_pack("{s:s,s:i}", "path", remote, "mode", (int)(mode & 07777));
	char path[128];
	int st;

	snprintf(path, sizeof(path), "/sandboxes/%s/files/mkdir", c->id);
	st = kc_json(c->k, "POST", path, req, NULL);
	json_decref(req);
	return st / 100 == 2 ? 0 : -1;
}

static int upload_tree(struct cp *c, const char *local, const char *remote)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (stat(local, &st) || remote_mkdir(c, remote, st.st_mode | 0700))
		return -1;
	d = opendir(local);
	if (!d) {
		fprintf(stderr, "kiln: %s: %s\n", local, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		char *l, *r;
		struct stat es;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		l = join(local, e->d_name);
		r = join(remote, e->d_name);
		if (lstat(l, &es)) {
			fprintf(stderr, "kiln: %s: %s\n", l, strerror(errno));
			c->errors++;
		} else if (S_ISDIR(es.st_mode)) {
			if (upload_tree(c, l, r))
				c->errors++;
		} else if (S_ISREG(es.st_mode)) {
			if (upload_file(c, l, r))
				c->errors++;
		} else {
			fprintf(stderr, "kiln: %s: skipped (not a regular file or directory)\n", l);
		}
		free(l);
		free(r);
	}
	closedir(d);
	return 0;
}

static int upload(struct cp *c, const char *local, const char *remote)
{
	struct stat st;
	json_t *target;
	char *dst, *b;
	int status, rc;

	if (stat(local, &st)) {
		fprintf(stderr, "kiln: %s: %s\n", local, strerror(errno));
		return -1;
	}
	target = remote_stat(c, remote, &status);
	if (status != 200 && status != 404) {
		json_decref(target);
		return -1;
	}
	b = base_of(local);
	/* Into an existing directory (or "dir/"), like cp. */
	dst = (target && is_dir_entry(target)) || remote[strlen(remote) - 1] == '/'
	          ? join(remote, b)
	          : strdup(remote);
	free(b);
	json_decref(target);
	if (S_ISDIR(st.st_mode))
		rc = upload_tree(c, local, dst);
	else if (S_ISREG(st.st_mode))
		rc = upload_file(c, local, dst);
	else {
		fprintf(stderr, "kiln: %s: not a regular file or directory\n", local);
		rc = -1;
	}
	free(dst);
	return rc;
}

/* ---------------------------------------------------------------- download */

struct sink {
	int fd;
	struct progress pr;
	bool started;
	const char *label;
	struct kc_resp *r;
};

static int sink_data(void *ctx, const char *p, size_t n)
{
	struct sink *s = ctx;

	if (!s->started) {
		/* the headers (and X-Kiln-Size) are in by now */
		s->started = true;
		progress_init(&s->pr, s->label, s->r->kiln_size);
	}
	if (write_all(s->fd, p, n)) {
		fprintf(stderr, "kiln: writing: %s\n", strerror(errno));
		return -1;
	}
	progress_add(&s->pr, (long long)n);
	return 0;
}

static int download_file(struct cp *c, const char *remote, const char *local)
{
	struct sink s = {0};
	struct kc_resp r = {.on_data = sink_data, .ctx = &s};
	char *p = api_path(c, "files", remote, NULL), *tmp = NULL;
	bool to_stdout = !strcmp(local, "-");
	int rc;

	if (to_stdout) {
		s.fd = 1;
	} else {
		char *dir = strdup(local);

		if (asprintf(&tmp, "%s/.%s.kiln-XXXXXX", dirname(dir), "part") < 0)
			die_oom();
		free(dir);
		s.fd = mkstemp(tmp);
		if (s.fd < 0) {
			fprintf(stderr, "kiln: %s: cannot create a file in %s: %s\n", local,
			        dirname(tmp), strerror(errno));
			free(tmp);
			free(p);
			return -1;
		}
	}
	s.label = remote;
	s.r = &r;
	rc = kc_request(c->k, "GET", p, NULL, NULL, 0, &r);
	if (s.started)
		progress_done(&s.pr);
	if (!rc && r.status != 200) {
		kc_print_error(remote, &r);
		rc = -1;
	}
	if (!rc && !r.complete)
		rc = -1;
	if (!to_stdout) {
		if (!rc && r.kiln_mode)
			fchmod(s.fd, r.kiln_mode & 07777);
		if (close(s.fd))
			rc = -1;
		if (!rc && rename(tmp, local)) {
			fprintf(stderr, "kiln: %s: %s\n", local, strerror(errno));
			rc = -1;
		}
		if (rc)
			unlink(tmp);
	}
	kc_resp_free(&r);
	free(tmp);
	free(p);
	return rc;
}

static int download_tree(struct cp *c, const char *remote, const char *local, unsigned mode)
{
	char *p = api_path(c, "files/list", remote, NULL);
	json_t *list = NULL, *entries, *e;
	size_t i;
	int st;

	st = kc_json(c->k, "GET", p, NULL, &list);
	free(p);
	if (st != 200)
		return -1;
	if (mkdir(local, (mode & 07777) | 0700) && errno != EEXIST) {
		fprintf(stderr, "kiln: %s: %s\n", local, strerror(errno));
		json_decref(list);
		return -1;
	}
	entries = json_object_get(list, "entries");
	json_array_foreach(entries, i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *type = json_string_value(json_object_get(e, "type"));
		char *r, *l;

		if (!name || !type || !*name || strchr(name, '/') || !strcmp(name, ".") ||
		    !strcmp(name, ".."))
			continue; /* never write outside the target */
		r = join(remote, name);
		l = join(local, name);
		if (!strcmp(type, "dir")) {
			if (download_tree(c, r, l,
			                  (unsigned)json_integer_value(json_object_get(e, "mode"))))
				c->errors++;
		} else if (!strcmp(type, "file")) {
			if (download_file(c, r, l))
				c->errors++;
		} else if (!strcmp(type, "symlink")) {
			const char *t = json_string_value(json_object_get(e, "symlinkTarget"));

			if (t && symlink(t, l) && errno != EEXIST) {
				fprintf(stderr, "kiln: %s: %s\n", l, strerror(errno));
				c->errors++;
			}
		}
		free(r);
		free(l);
	}
	json_decref(list);
	return 0;
}

static int download(struct cp *c, const char *remote, const char *local)
{
	struct stat st;
	json_t *src;
	char *dst, *b;
	int status, rc;
	bool local_dir = strcmp(local, "-") && !stat(local, &st) && S_ISDIR(st.st_mode);

	src = remote_stat(c, remote, &status);
	if (!src) {
		if (status == 404)
			fprintf(stderr, "kiln: %s:%s: no such file or directory\n", c->id, remote);
		return -1;
	}
	b = base_of(remote);
	dst = local_dir ? join(local, b) : strdup(local);
	free(b);
	if (is_dir_entry(src)) {
		if (!strcmp(local, "-")) {
			fprintf(stderr, "kiln: %s is a directory\n", remote);
			rc = -1;
		} else {
			rc = download_tree(
			    c, remote, dst,
			    (unsigned)json_integer_value(json_object_get(src, "mode")));
		}
	} else {
		rc = download_file(c, remote, dst);
	}
	json_decref(src);
	free(dst);
	return rc;
}

int cmd_cp(struct kc *k, int argc, char **argv)
{
	const char *spath, *dpath;
	char *sid, *did;
	struct cp c = {.k = k};
	int rc;

	if (argc != 3 || want_help(argc, argv)) {
		bool help = want_help(argc, argv);

		fprintf(help ? stdout : stderr,
		        "usage: kiln cp SRC DST\n\n"
		        "Copy a file or a directory tree. One side is ID:/absolute/path in a\n"
		        "sandbox, the other a local path ('-' as DST writes a file to stdout).\n"
		        "Copying onto an existing directory copies into it.\n");
		return help ? 0 : 2;
	}
	sid = split_remote(argv[1], &spath);
	did = split_remote(argv[2], &dpath);
	if ((sid != NULL) == (did != NULL)) {
		fprintf(stderr, "kiln cp: exactly one of SRC and DST must be ID:/path\n");
		free(sid);
		free(did);
		return 2;
	}
	if (did && !strcmp(argv[1], "-")) {
		fprintf(stderr,
		        "kiln cp: '-' is for DST only; to write standard input to a file: kiln "
		        "exec -i %s -- sh -c 'cat >%s'\n",
		        did, dpath);
		free(did);
		return 2;
	}
	if (did) {
		c.id = did;
		rc = upload(&c, argv[1], dpath);
	} else {
		c.id = sid;
		rc = download(&c, spath, argv[2]);
	}
	free(sid);
	free(did);
	return rc || c.errors ? 1 : 0;
}
