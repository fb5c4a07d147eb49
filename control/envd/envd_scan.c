/* SPDX-License-Identifier: MIT */
/* Directory scans for envd's watches (envd_watch.c).
 *
 * kiln-agent has no change notification, so a watch polls: each period it
 * lists the directory (and, when recursive, every subdirectory below it)
 * through the agent and reports what differs from the previous scan:
 *
 *   CREATE  a path appeared          REMOVE  a path disappeared
 *   WRITE   its size or mtime moved  CHMOD   its permission bits changed
 *
 * A path whose type changed is REMOVE then CREATE, a rename REMOVE of the
 * old name and CREATE of the new; changes undone within one period are not
 * seen. The period grows with the cost of a scan (SCAN_LOAD), so a big
 * tree costs the sandbox a bounded share of its time. A paused sandbox is
 * not scanned (nor woken): scans go on once it runs again.
 *
 * The listings run as the watch's user: a watched directory it may not
 * list fails the watch (permission_denied), a subdirectory it may not list
 * below a recursive one is watched as empty. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent_client.h"
#include "http/connectrpc.h"
#include "envd_scan.h"
#include "util.h"

#define SCAN_PERIOD_MIN 0.1  /* seconds between scans, at least */
#define SCAN_PERIOD_MAX 5.0  /* and at most */
#define SCAN_LOAD       0.05 /* share of wall time a scan may take */

struct scan_ent {
	char *rel; /* the path below the watched directory */
	uint32_t mode;
	uint64_t size;
	int64_t mtime;
	uint32_t mtime_ns;
	char *target;
};

struct scan_set {
	struct scan_ent *v;
	size_t n, cap;
};

struct scan {
	struct kilnd *kd;
	char id[SB_ID_LEN + 1];
	struct envd_user user; /* who lists */
	char *root;
	bool recursive, include_entry;
	struct scan_ops ops;
	void *ctx;
	bool ready;           /* the first scan is done */
	struct scan_set prev; /* the last complete scan */
	struct scan_set cur;  /* the one under way */
	char **dirs;          /* directories still to list (relative) */
	size_t dhead, dlen, dcap;
	char *dir; /* the one being listed */
	struct fsop *op;
	ev_timer timer;
	ev_tstamp began;
	double period;
};

static void set_clear(struct scan_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].rel);
		free(s->v[i].target);
	}
	s->n = 0;
}

static void set_free(struct scan_set *s)
{
	set_clear(s);
	free(s->v);
	*s = (struct scan_set){0};
}

static void dirs_clear(struct scan *s)
{
	for (size_t i = s->dhead; i < s->dlen; i++)
		free(s->dirs[i]);
	s->dhead = s->dlen = 0;
	free(s->dir);
	s->dir = NULL;
}

void scan_free(struct scan *s)
{
	if (!s)
		return;
	fsop_cancel(s->op);
	ev_timer_stop(s->kd->loop, &s->timer);
	dirs_clear(s);
	free(s->dirs);
	set_free(&s->prev);
	set_free(&s->cur);
	free(s->root);
	free(s);
}

static int push_dir(struct scan *s, char *rel)
{
	if (s->dlen == s->dcap) {
		size_t cap = s->dcap ? 2 * s->dcap : 8;
		char **nd = realloc(s->dirs, cap * sizeof(*nd));

		if (!nd)
			return -1;
		s->dirs = nd;
		s->dcap = cap;
	}
	s->dirs[s->dlen++] = rel;
	return 0;
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a);
	char *p;

	/* no "//" after a root of "/" or with a trailing slash */
	if (asprintf(&p, "%s%s%s", a, n && a[n - 1] != '/' && *b ? "/" : "", b) < 0)
		return NULL;
	return p;
}

/* The scan cannot go on: the owner is told once and frees the scan. */
static void fail(struct scan *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct scan *s, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fsop_cancel(s->op);
	s->op = NULL;
	ev_timer_stop(s->kd->loop, &s->timer);
	s->ops.fail(s->ctx, code, msg);
}

static void arm(struct scan *s, double after)
{
	ev_timer_stop(s->kd->loop, &s->timer);
	ev_timer_set(&s->timer, after, 0);
	ev_timer_start(s->kd->loop, &s->timer);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct scan_ent *)a)->rel, ((const struct scan_ent *)b)->rel);
}

/* {"name","type"[,"entry"]}: a FilesystemEvent. */
static int add_event(struct scan *s, json_t *evs, const struct scan_ent *e, const char *type)
{
	json_t *ev = json_pack("{s:s,s:s}", "name", e->rel, "type", type);

	if (ev && s->include_entry && strcmp(type, "EVENT_TYPE_REMOVE")) {
		const char *base = strrchr(e->rel, '/');
		char *path = join(s->root, e->rel);
		json_t *ent = path ? envd_entry_json(e->mode, e->size, e->mtime,
		                                     base ? base + 1 : e->rel, e->target, path)
		                   : NULL;

		free(path);
		if (!ent || json_object_set_new(ev, "entry", ent)) {
			json_decref(ev);
			ev = NULL;
		}
	}
	return ev ? json_array_append_new(evs, ev) : -1;
}

/* The events that turn prev into cur (both sorted by path). */
static json_t *diff(struct scan *s)
{
	json_t *evs = json_array();
	size_t i = 0, j = 0;
	int rc = evs ? 0 : -1;

	while (!rc && (i < s->prev.n || j < s->cur.n)) {
		const struct scan_ent *a = i < s->prev.n ? &s->prev.v[i] : NULL;
		const struct scan_ent *b = j < s->cur.n ? &s->cur.v[j] : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->rel, b->rel);

		if (c < 0) {
			rc = add_event(s, evs, a, "EVENT_TYPE_REMOVE");
			i++;
		} else if (c > 0) {
			rc = add_event(s, evs, b, "EVENT_TYPE_CREATE");
			j++;
		} else {
			if ((a->mode & S_IFMT) != (b->mode & S_IFMT)) {
				rc = add_event(s, evs, a, "EVENT_TYPE_REMOVE");
				if (!rc)
					rc = add_event(s, evs, b, "EVENT_TYPE_CREATE");
			} else if (!S_ISDIR(b->mode) &&
			           (a->size != b->size || a->mtime != b->mtime ||
			            a->mtime_ns != b->mtime_ns)) {
				rc = add_event(s, evs, b, "EVENT_TYPE_WRITE");
			}
			if (!rc && (a->mode & S_IFMT) == (b->mode & S_IFMT) &&
			    (a->mode & 07777) != (b->mode & 07777))
				rc = add_event(s, evs, b, "EVENT_TYPE_CHMOD");
			i++;
			j++;
		}
	}
	if (rc) {
		json_decref(evs);
		return NULL;
	}
	return evs;
}

static void scan_done(struct scan *s)
{
	struct scan_set t;
	double took = ev_now(s->kd->loop) - s->began;
	json_t *evs = NULL;

	qsort(s->cur.v, s->cur.n, sizeof(*s->cur.v), ent_cmp);
	if (s->ready && !(evs = diff(s))) {
		fail(s, CRPC_INTERNAL, "out of memory");
		return;
	}
	t = s->prev;
	s->prev = s->cur;
	s->cur = t;
	set_clear(&s->cur);
	s->period = took / SCAN_LOAD;
	if (s->period < SCAN_PERIOD_MIN)
		s->period = SCAN_PERIOD_MIN;
	if (s->period > SCAN_PERIOD_MAX)
		s->period = SCAN_PERIOD_MAX;
	arm(s, s->period);
	if (!s->ready) {
		s->ready = true;
		s->ops.ready(s->ctx);
	} else if (json_array_size(evs)) {
		s->ops.events(s->ctx, evs); /* may free s */
	}
	json_decref(evs);
}

static void list_next(struct scan *s);

static int add_ents(struct scan *s, const struct fs_ent *ents, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct scan_ent *e;

		if (s->cur.n == SCAN_MAX_ENTRIES)
			return -E2BIG;
		if (s->cur.n == s->cur.cap) {
			size_t cap = s->cur.cap ? 2 * s->cur.cap : 64;
			struct scan_ent *nv = realloc(s->cur.v, cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			s->cur.v = nv;
			s->cur.cap = cap;
		}
		e = &s->cur.v[s->cur.n];
		*e = (struct scan_ent){
		    .rel = join(s->dir, ents[k].name),
		    .mode = ents[k].mode,
		    .size = ents[k].size,
		    .mtime = ents[k].mtime,
		    .mtime_ns = ents[k].mtime_ns,
		    .target = ents[k].target ? strdup(ents[k].target) : NULL,
		};
		s->cur.n++;
		if (!e->rel || (ents[k].target && !e->target))
			return -ENOMEM;
		/* lstat types: symlinks to directories are not followed */
		if (s->recursive && S_ISDIR(e->mode)) {
			char *d = strdup(e->rel);

			if (!d || push_dir(s, d)) {
				free(d);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

static void listed(void *ctx, int err, const char *msg, const struct fs_ent *ents, size_t n)
{
	struct scan *s = ctx;
	bool top = !*s->dir;
	int rc;

	s->op = NULL;
	if (err < 0 && err != -E2BIG) {
		/* the agent could not be reached (a pause under way, say):
		 * this scan is dropped, the next one may do better */
		set_clear(&s->cur);
		dirs_clear(s);
		if (!s->ready) {
			fail(s, CRPC_UNAVAILABLE, "%s: %s", s->root, msg ? msg : "cannot list");
			return;
		}
		arm(s, s->period);
		return;
	}
	if (err == -E2BIG) {
		fail(s, CRPC_RESOURCE_EXHAUSTED, "%s: a directory has too many entries to watch",
		     s->root);
		return;
	}
	if (err && top && (!s->ready || err != ENOENT)) {
		char text[512];
		int code = envd_fs_error(err, msg, s->root, text, sizeof(text));

		if (err == ENOTDIR)
			fail(s, CRPC_INVALID_ARGUMENT, "%s: not a directory", s->root);
		else
			fail(s, code, "%s", text);
		return;
	}
	/* a directory that vanished meanwhile (the watched one too): empty */
	rc = err ? 0 : add_ents(s, ents, n);
	if (rc == -E2BIG) {
		fail(s, CRPC_RESOURCE_EXHAUSTED,
		     "%s: more than %d entries; watch a smaller tree or not recursively", s->root,
		     SCAN_MAX_ENTRIES);
		return;
	}
	if (rc) {
		fail(s, CRPC_INTERNAL, "out of memory");
		return;
	}
	list_next(s);
}

static void list_next(struct scan *s)
{
	struct sandbox *sb;
	char *path;

	free(s->dir);
	s->dir = NULL;
	if (s->dhead == s->dlen) {
		s->dhead = s->dlen = 0;
		scan_done(s);
		return;
	}
	s->dir = s->dirs[s->dhead++];
	sb = sb_find(s->kd, s->id);
	if (!sb) {
		fail(s, CRPC_NOT_FOUND, "sandbox %s is gone", s->id);
		return;
	}
	path = *s->dir ? join(s->root, s->dir) : strdup(s->root);
	if (!path) {
		fail(s, CRPC_INTERNAL, "out of memory");
		return;
	}
	if (sb->state != SB_RUNNING) {
		free(path);
		listed(s, -EAGAIN, "the sandbox is not running", NULL, 0);
		return;
	}
	s->op = fsop_start_as(sb, KILN_FILE_LIST, path, 0, NULL, &s->user, listed, s);
	free(path);
	if (!s->op)
		listed(s, -EAGAIN, "cannot reach the sandbox's agent", NULL, 0);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct scan *s = w->data;
	struct sandbox *sb = sb_find(s->kd, s->id);
	char *top;

	(void)revents;
	if (!sb) {
		fail(s, CRPC_NOT_FOUND, "sandbox %s is gone", s->id);
		return;
	}
	if (sb->state != SB_RUNNING) {
		/* paused or on its way: not woken for a watch */
		arm(s, SCAN_PERIOD_MAX);
		return;
	}
	top = strdup("");
	if (!top || push_dir(s, top)) {
		free(top);
		fail(s, CRPC_INTERNAL, "out of memory");
		return;
	}
	s->began = ev_now(loop);
	list_next(s);
}

struct scan *scan_start(struct sandbox *sb, const struct envd_user *user, const char *root,
                        bool recursive, bool include_entry, const struct scan_ops *ops, void *ctx)
{
	struct scan *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kd = sb->kd;
	s->user = *user;
	snprintf(s->id, sizeof(s->id), "%s", sb->rec.id);
	s->root = strdup(root);
	s->recursive = recursive;
	s->include_entry = include_entry;
	s->ops = *ops;
	s->ctx = ctx;
	s->period = SCAN_PERIOD_MIN;
	ev_init(&s->timer, on_timer);
	s->timer.data = s;
	if (!s->root) {
		free(s);
		return NULL;
	}
	arm(s, 0);
	return s;
}
