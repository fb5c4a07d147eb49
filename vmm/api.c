/* SPDX-License-Identifier: MIT */
/*
 * The per-VM API socket (--api-sock PATH): newline-delimited JSON requests
 * and replies on a unix stream socket, served on the main loop. The
 * protocol is in vmm/API.md. A request line is at most API_MAX_LINE bytes;
 * anything malformed gets an error reply, never more than that.
 */
#include <errno.h>
#include <ev.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.h"
#include "snap_vm.h"
#include "virtio/virtio.h"

#define API_MAX_LINE     4096
#define API_MAX_CLIENTS  16
#define PAUSE_TIMEOUT_MS 2000

struct api_client {
	struct vm_api *api;
	int fd;
	ev_io io;
	size_t len;
	bool discard; /* the current line is too long: drop up to its end */
	char buf[API_MAX_LINE + 1];
	struct api_client *next;
};

struct vm_api {
	struct vm *vm;
	int fd;
	ev_io io;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	struct api_client *clients;
	unsigned nr_clients;
};

static void client_close(struct api_client *c)
{
	struct vm_api *api = c->api;

	for (struct api_client **pp = &api->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	api->nr_clients--;
	ev_io_stop(api->vm->loop, &c->io);
	close(c->fd);
	free(c);
}

/* Replies are small and clients read them: a client that does not is
 * dropped rather than waited for. */
static void reply(struct api_client *c, json_t *r)
{
	char *text = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(6));
	size_t len, done = 0;

	json_decref(r);
	if (!text)
		return;
	len = strlen(text);
	text[len++] = '\n'; /* json_dumps leaves room: its NUL */
	while (done < len) {
		ssize_t n = send(c->fd, text + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	free(text);
}

static json_t *error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b,s:s}", "ok", 0, "error", msg);
}

static const char *state_name(struct vm *vm)
{
	if (atomic_load(&vm->stop) != VM_RUNNING)
		return "stopping";
	return vm_is_paused(vm) ? "paused" : "running";
}

static json_t *op_state(struct vm *vm, json_t *req)
{
	json_t *r =
	    json_pack("{s:b,s:s,s:i,s:I}", "ok", 1, "state", state_name(vm), "vcpus", vm->nr_vcpus,
	              "uptime_ms", (json_int_t)((vm_now_ns() - vm->t.start) / 1000000));

	/* How long it has been paused, for idle timeouts. */
	if (vm_is_paused(vm))
		json_object_set_new(
		    r, "paused_ms",
		    json_integer((json_int_t)((vm_now_ns() - vm->pause.since) / 1000000)));
	return r;
}

static json_t *op_pause(struct vm *vm, json_t *req)
{
	char why[320];
	int r = vm_pause(vm, PAUSE_TIMEOUT_MS, why, sizeof(why));

	if (r < 0)
		return error("pause: %s", why);
	return json_pack("{s:b,s:s,s:b,s:I}", "ok", 1, "state", "paused", "already", r == 1,
	                 "pause_us", (json_int_t)(r == 1 ? 0 : vm->pause.last_ns / 1000));
}

static json_t *op_resume(struct vm *vm, json_t *req)
{
	uint64_t t0 = vm_now_ns();
	int r = vm_resume(vm);

	return json_pack("{s:b,s:s,s:b,s:I}", "ok", 1, "state", "running", "already", r == 1,
	                 "resume_us", (json_int_t)((vm_now_ns() - t0) / 1000));
}

static json_t *op_snapshot(struct vm *vm, json_t *req)
{
	struct vm_snapshot_opts o = {0};
	struct snap_write_stats st = {0};
	json_t *jpath = json_object_get(req, "path"), *jdiff = json_object_get(req, "diff");
	json_t *jlevel = json_object_get(req, "level"), *jsync = json_object_get(req, "no_fsync");
	json_t *jresume = json_object_get(req, "resume");
	bool was_paused = vm_is_paused(vm), resume;
	uint64_t t0 = vm_now_ns(), pause_us = 0;
	char why[400];
	int r;

	if (!json_is_string(jpath) || !json_string_length(jpath) ||
	    json_string_length(jpath) >= 4096 ||
	    strlen(json_string_value(jpath)) != json_string_length(jpath))
		return error("snapshot: \"path\" must be a file name");
	if ((jdiff && !json_is_boolean(jdiff)) || (jsync && !json_is_boolean(jsync)) ||
	    (jresume && !json_is_boolean(jresume)))
		return error("snapshot: \"diff\", \"no_fsync\" and \"resume\" are booleans");
	if (jlevel && (!json_is_integer(jlevel) || json_integer_value(jlevel) < -7 ||
	               json_integer_value(jlevel) > 19))
		return error("snapshot: \"level\" is a zstd level from -7 to 19");
	o.path = json_string_value(jpath);
	o.diff = json_is_true(jdiff);
	o.no_fsync = json_is_true(jsync);
	o.level = jlevel ? (int)json_integer_value(jlevel) : 0;
	/* A running VM is paused for it and goes on after, unless told. */
	resume = jresume ? json_is_true(jresume) : !was_paused;
	if (!was_paused) {
		r = vm_pause(vm, PAUSE_TIMEOUT_MS, why, sizeof(why));
		if (r < 0)
			return error("snapshot: pause: %s", why);
		pause_us = vm->pause.last_ns / 1000;
	}
	r = vm_snapshot(vm, &o, &st, why, sizeof(why));
	if (resume)
		vm_resume(vm);
	if (r)
		return error("snapshot: %s", why);
	snprintf(why, sizeof(why), "%016llx", (unsigned long long)st.id);
	return json_pack(
	    "{s:b,s:s,s:s,s:s,s:I,s:I,s:b,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:I,s:I,s:I,s:f,"
	    "s:f,"
	    "s:f}",
	    "ok", 1, "state", resume ? "running" : "paused", "path", o.path, "id", why, "file_size",
	    (json_int_t)st.file_size, "generation", (json_int_t)st.generation, "appended",
	    st.appended, "chunks", "total", (json_int_t)st.nchunks, "zero", (json_int_t)st.nzero,
	    "holes", (json_int_t)st.nholes, "data", (json_int_t)st.ndata, "raw",
	    (json_int_t)st.nraw, "absent", (json_int_t)st.nabsent, "reused", (json_int_t)st.nreused,
	    "unwritten", (json_int_t)st.nunwritten, "kept", (json_int_t)st.nkept, "data_in",
	    (json_int_t)st.data_in, "data_out", (json_int_t)st.data_out, "pause_us",
	    (json_int_t)pause_us, "memory_ms", st.mem_ns / 1e6, "sync_ms", st.sync_ns / 1e6,
	    "total_ms", (vm_now_ns() - t0) / 1e6);
}

static json_t *op_stop(struct vm *vm, json_t *req)
{
	vm_stop(vm, VM_STOP_EXIT, 0, NULL);
	return json_pack("{s:b,s:s}", "ok", 1, "state", "stopping");
}

/* VmRSS split as /proc/self/status has it, in KiB. */
static void rss(json_t *r)
{
	static const char *const keys[] = {"RssAnon", "RssFile", "RssShmem", "VmHWM"};
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t n = strlen(keys[i]);
			long kb;

			if (!strncmp(line, keys[i], n) && line[n] == ':' &&
			    sscanf(line + n + 1, "%ld", &kb) == 1) {
				char name[32];

				snprintf(name, sizeof(name), "%s_kib", keys[i]);
				json_object_set_new(r, name, json_integer(kb));
			}
		}
	if (f)
		fclose(f);
}

static json_t *op_metrics(struct vm *vm, json_t *req)
{
	struct uffd_stats us;
	uint64_t rx, tx;
	json_t *r =
	    json_pack("{s:b,s:s,s:I,s:I,s:I,s:I,s:I}", "ok", 1, "state", state_name(vm), "pauses",
	              (json_int_t)vm->pause.count, "last_pause_us",
	              (json_int_t)(vm->pause.last_ns / 1000), "snapshots",
	              (json_int_t)vm->snap.count, "last_snapshot_ms", (json_int_t)vm->snap.last_ms,
	              "uptime_ms", (json_int_t)((vm_now_ns() - vm->t.start) / 1000000));

	if (vm->cfg.restore_path) {
		static const char *const modes[] = {"eager", "lazy", "template"};

		json_object_set_new(r, "restored_from", json_string(vm->cfg.restore_path));
		json_object_set_new(r, "restore_mode", json_string(modes[vm->cfg.restore_mode]));
		json_object_set_new(r, "restore_ms", json_real(vm->snap.restore_ns / 1e6));
		uffd_stats(vm, &us);
		if (us.chunks)
			json_object_set_new(
			    r, "loading",
			    json_pack("{s:I,s:I,s:I,s:o}", "chunks_filled", (json_int_t)us.filled,
			              "faults", (json_int_t)us.faults, "chunks",
			              (json_int_t)us.chunks, "resident_ms",
			              us.resident_ns ? json_real(us.resident_ns / 1e6)
			                             : json_null()));
	}
	if (vsock_bytes(vm, &rx, &tx))
		json_object_set_new(
		    r, "vsock",
		    json_pack("{s:I,s:I}", "rx_bytes", (json_int_t)rx, "tx_bytes", (json_int_t)tx));
	rss(r);
	return r;
}

static const struct {
	const char *name;
	json_t *(*fn)(struct vm *vm, json_t *req);
} ops[] = {
    {"state", op_state},       {"pause", op_pause}, {"resume", op_resume},
    {"snapshot", op_snapshot}, {"stop", op_stop},   {"metrics", op_metrics},
};

static json_t *handle(struct vm *vm, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr), *op, *r = NULL;

	if (!req)
		return error("bad JSON at column %d: %s", jerr.column, jerr.text);
	op = json_object_get(req, "op");
	if (!json_is_object(req) || !json_is_string(op))
		r = error("a request is an object with a string \"op\"");
	for (size_t i = 0; !r && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(json_string_value(op), ops[i].name))
			r = ops[i].fn(vm, req);
	if (!r)
		r = error("unknown op \"%.64s\" (state, pause, resume, snapshot, stop, metrics)",
		          json_string_value(op));
	json_decref(req);
	return r;
}

static void client_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct api_client *c = w->data;
	ssize_t n = recv(c->fd, c->buf + c->len, API_MAX_LINE - c->len, 0);
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->len += (size_t)n;
	while ((nl = memchr(c->buf, '\n', c->len))) {
		size_t line = (size_t)(nl - c->buf);

		if (c->discard)
			c->discard = false;
		else if (line) {
			reply(c, handle(c->api->vm, c->buf, line));
			vm_snapshot_retire(c->api->vm);
		}
		memmove(c->buf, nl + 1, c->len - line - 1);
		c->len -= line + 1;
		if (atomic_load(&c->api->vm->stop) != VM_RUNNING)
			return;
	}
	if (c->len == API_MAX_LINE) {
		if (!c->discard)
			reply(c, error("request longer than %d bytes", API_MAX_LINE));
		c->discard = true;
		c->len = 0;
	}
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vm_api *api = w->data;
	int fd = accept4(api->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct api_client *c;

	if (fd < 0)
		return;
	if (api->nr_clients >= API_MAX_CLIENTS || !(c = calloc(1, sizeof(*c)))) {
		close(fd);
		return;
	}
	c->api = api;
	c->fd = fd;
	ev_io_init(&c->io, client_cb, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	c->next = api->clients;
	api->clients = c;
	api->nr_clients++;
}

int api_create(struct vm *vm, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct vm_api *api;
	struct stat st;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* Replace a stale socket, nothing else. */
	if (lstat(path, &st) == 0 && (!S_ISSOCK(st.st_mode) || unlink(path) < 0))
		return S_ISSOCK(st.st_mode) ? -errno : -EEXIST;
	api = calloc(1, sizeof(*api));
	if (!api)
		return -ENOMEM;
	api->vm = vm;
	strcpy(api->path, path);
	strcpy(sa.sun_path, path);
	api->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (api->fd < 0 || bind(api->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(api->fd, 16) < 0 || lstat(path, &st) < 0) {
		err = -errno;
		if (api->fd >= 0)
			close(api->fd);
		free(api);
		return err;
	}
	api->dev = st.st_dev;
	api->ino = st.st_ino;
	ev_io_init(&api->io, accept_cb, api->fd, EV_READ);
	api->io.data = api;
	ev_io_start(vm->loop, &api->io);
	vm->api = api;
	return 0;
}

void api_destroy(struct vm *vm)
{
	struct vm_api *api = vm->api;
	struct stat st;

	if (!api)
		return;
	while (api->clients)
		client_close(api->clients);
	ev_io_stop(vm->loop, &api->io);
	close(api->fd);
	if (lstat(api->path, &st) == 0 && st.st_dev == api->dev && st.st_ino == api->ino)
		unlink(api->path);
	free(api);
	vm->api = NULL;
}
