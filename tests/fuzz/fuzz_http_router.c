/* SPDX-License-Identifier: MIT */
/* libFuzzer: kilnd's HTTP server and request router, whole, on what a
 * hostile client sends: the input is the bytes of one connection (any
 * number of pipelined requests), to the unix socket or, if its first byte
 * is odd, to a listener flagged TCP (where the API key counts; the input may
 * carry it: "X-API-Key: e2b_fuzz"). Behind the router is a fake sandbox
 * layer: a kilnd on a scratch data directory with one paused and one killed
 * sandbox in its store and --max-sandboxes 0, so every route runs its real
 * checks and handlers and whatever would start a VM (create, resume, exec,
 * files, fork, templates) ends in kilnd's own 429, without a VMM. After an
 * input that deleted them the sandboxes are restored from their records.
 * Each input gets at most ROUNDS turns of the event loop. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/api.h"
#include "auth/auth.h"
#include "envd/envd.h"
#include "kilnd.h"
#include "net/net.h"
#include "sandbox/console.h"
#include "sandbox/sandbox.h"
#include "events/events.h"
#include "sandbox/store.h"
#include "sandbox/template.h"
#include "util.h"

#define ROUNDS 400

static struct kilnd kd;
static char dir[64], unix_path[128], tcp_path[128];

static const char *const fake_ids[] = {"fuzzpaused0001", "fuzzkilled0001"};

static void remove_dir(void)
{
	rm_tree("/tmp", dir + 5);
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16))
		abort();
	return fd;
}

/* The fake sandboxes' records and directories, as a kilnd left them. */
static void put_fakes(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(fake_ids); i++) {
		char path[256];
		int fd;
		struct sb_record r = {
		    .template_id = "base",
		    .state = i ? "killed" : "paused",
		    .reason = i ? "fuzz" : NULL,
		    .created_ms = now_ms(),
		    .end_ms = now_ms() + 3600000,
		    .memory_mb = 256,
		    .cpu_count = 1,
		    .env_json = "{\"A\":\"b\"}",
		    .metadata_json = "{\"k\":\"v\"}",
		    .kernel = "/nonexistent/kernel",
		    .initrd = "/nonexistent/initrd",
		    .flags = SB_F_API,
		    .paused_ms = now_ms(),
		    .snap_bytes = 4096,
		    .timeout_s = 3600,
		};

		strcpy(r.id, fake_ids[i]);
		snprintf(path, sizeof(path), "%s/sandboxes/%s", dir, fake_ids[i]);
		mkdir(path, 0700);
		/* a paused sandbox's snapshot: never read (nothing resumes) */
		snprintf(path, sizeof(path), "%s/sandboxes/%s/snapshot", dir, fake_ids[i]);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			close(fd);
		snprintf(path, sizeof(path), "%s/sandboxes/%s/console.log", dir, fake_ids[i]);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			if (write(fd, "boot\nconsole line\n", 18) < 0)
				abort();
			close(fd);
		}
		if (store_put(kd.store, &r))
			abort();
	}
}

static void setup(void)
{
	char db[128];

	signal(SIGPIPE, SIG_IGN);
	kd_log_level = LOG_ERR; /* kilnd's info and warnings about each input */
	snprintf(dir, sizeof(dir), "/tmp/kiln-fuzz-router.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(remove_dir);
	kd.cfg = (struct kilnd_cfg){
	    .data_dir = dir,
	    .api_key = "e2b_fuzz",
	    .domain = "localhost",
	    .browser_launcher = "/nonexistent/kiln-browser",
	    .browser_port = 9222,
	    .vmm = "/nonexistent/kiln-vmm",
	    .kernel = "/nonexistent/kernel",
	    .initrd = "/nonexistent/initrd",
	    .images_dir = dir,
	    .image_initrd = "/nonexistent/initrd",
	    .resume_mode = "eager",
	    .max_sandboxes = 0, /* nothing ever starts a VMM */
	    .boot_timeout = 1,
	    .default_timeout = 300,
	    .max_timeout = 3600,
	    .retain_dead = 3600,
	    .max_upload = 1 << 20,
	    .console_max = 1 << 20,
	    .events_keep_s = 86400,
	    .events_max = 1000,
	    .sse_max_buf = 64 << 10,
	    .sse_heartbeat = 15,
	    .http = {.max_conns = 64,
	             .max_untrusted = 16,
	             .unix_reserve = 8,
	             .untrusted_idle = 5,
	             .header_timeout = 5,
	             .idle_timeout = 5,
	             .body_timeout = 5,
	             .write_timeout = 5,
	             .max_out = 1 << 20},
	};
	if (asprintf(&kd.sandboxes_dir, "%s/sandboxes", dir) < 0 || mkdir(kd.sandboxes_dir, 0700))
		abort();
	snprintf(db, sizeof(db), "%s/kilnd.db", dir);
	snprintf(unix_path, sizeof(unix_path), "%s/unix.sock", dir);
	snprintf(tcp_path, sizeof(tcp_path), "%s/tcp.sock", dir);
	kd.loop = ev_loop_new(EVFLAG_AUTO);
	if (!kd.loop || envd_load_secret(&kd) || net_init(&kd, "127.0.0.1:53") ||
	    store_open(&kd.store, db) || events_init(&kd) || console_init(&kd))
		abort();
	put_fakes();
	if (sb_restore_all(&kd) || tmpl_load_all(&kd) || auth_load(&kd))
		abort();
	kd.http = http_server_new(kd.loop, &kd.cfg.http, api_route, &kd);
	if (!kd.http)
		abort();
	http_server_add_listener(kd.http, listen_at(unix_path), 0);
	http_server_add_listener(kd.http, listen_at(tcp_path), HTTP_LISTEN_TCP);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		abort();
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	size_t sent = 0;
	char sink[16384];
	bool shut = false;
	int fd;

	if (!ready) {
		setup();
		ready = true;
	}
	if (!size)
		return 0;
	fd = connect_to(data[0] & 1 ? tcp_path : unix_path);
	data++;
	size--;
	for (int round = 0; round < ROUNDS; round++) {
		ssize_t n;

		if (sent < size) {
			n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN)
				break;
		} else if (!shut) {
			shutdown(fd, SHUT_WR);
			shut = true;
		}
		ev_run(kd.loop, EVRUN_NOWAIT);
		n = recv(fd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			break; /* kilnd closed the connection */
	}
	close(fd);
	/* kilnd sees the close, its handlers abort */
	for (int round = 0; round < 8; round++)
		ev_run(kd.loop, EVRUN_NOWAIT);
	for (size_t i = 0; i < ARRAY_SIZE(fake_ids); i++)
		if (!sb_find(&kd, fake_ids[i])) {
			/* deleted: back from its record, as after a restart */
			sb_free_all(&kd);
			put_fakes();
			if (sb_restore_all(&kd))
				abort();
			break;
		}
	return 0;
}
