/* SPDX-License-Identifier: MIT */
/* kiln browser ID: the sandbox's CDP endpoint (starting the browser if
 * needed). kiln browser ID screenshot URL FILE: a PNG of URL in one step,
 * speaking just enough CDP over kilnd's /sandboxes/ID/cdp WebSocket:
 * Target.createTarget, attachToTarget (flat sessions), Page.enable,
 * Page.navigate, wait for Page.loadEventFired, Page.captureScreenshot,
 * Target.closeTarget. Progress goes to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nettle/base64.h>

#include "http/ws.h"
#include "kiln.h"

#define CDP_WAIT_MS 30000 /* for each answer and for the page's load */
#define CDP_MSG_MAX (64u << 20)

struct cdp {
	int fd;
	struct ws ws;
	json_t *queue; /* messages received, not read yet (one recv may bring several) */
	json_t *msg;   /* the message cdp_read() returned */
	bool closed;
	uint16_t close_code;
	int next_id;
	double t0;
};

static int cdp_out(void *ctx, const void *p, size_t n)
{
	struct cdp *c = ctx;

	return kc_send_all(c->fd, p, n);
}

static int cdp_msg(void *ctx, int opcode, uint8_t *p, size_t n, bool fin)
{
	struct cdp *c = ctx;

	json_t *m;

	if (opcode != WS_TEXT)
		return 0;
	m = json_loadb((const char *)p, n, 0, NULL);
	return m ? json_array_append_new(c->queue, m) : -1;
}

static void cdp_closed(void *ctx, uint16_t code)
{
	struct cdp *c = ctx;

	c->closed = true;
	c->close_code = code;
}

static const struct ws_ops cdp_ops = {
    .on_message = cdp_msg,
    .on_close = cdp_closed,
    .write = cdp_out,
};

static void step(struct cdp *c, const char *fmt, const char *arg)
{
	fprintf(stderr, "kiln: %6.0f ms  ", (mono_now() - c->t0) * 1e3);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
}

/* The next message (into c->msg), at most ms from now: 0, or -1. */
static int cdp_read(struct cdp *c, int ms)
{
	double end = mono_now() + ms / 1e3;
	uint8_t buf[65536];

	json_decref(c->msg);
	c->msg = NULL;
	while (!json_array_size(c->queue) && !c->closed) {
		struct pollfd pf = {.fd = c->fd, .events = POLLIN};
		int left = (int)((end - mono_now()) * 1e3);
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, left) <= 0)
			return -1;
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || ws_feed(&c->ws, buf, (size_t)n))
			return -1;
	}
	if (!json_array_size(c->queue))
		return -1;
	c->msg = json_incref(json_array_get(c->queue, 0));
	json_array_remove(c->queue, 0);
	return 0;
}

/* Send method (in session sid, if any) and wait for its answer: the
 * result (owned by c->msg), or NULL after printing why. */
static json_t *cdp_call(struct cdp *c, const char *sid, const char *method, json_t *params)
{
	json_t *req = json_pack("{s:i,s:s,s:o}", "id", ++c->next_id, "method", method, "params",
	                        params ? params : json_object());
	char *s;

	if (!req)
		die_oom();
	if (sid)
		json_object_set_new(req, "sessionId", json_string(sid));
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!s || ws_send(&c->ws, WS_TEXT, s, strlen(s))) {
		free(s);
		fprintf(stderr, "kiln: the CDP connection broke sending %s\n", method);
		return NULL;
	}
	free(s);
	while (!cdp_read(c, CDP_WAIT_MS)) {
		json_t *err;

		if (json_integer_value(json_object_get(c->msg, "id")) != c->next_id)
			continue; /* an event */
		err = json_object_get(c->msg, "error");
		if (err) {
			fprintf(stderr, "kiln: %s failed: %s\n", method,
			        json_string_value(json_object_get(err, "message")) ?: "?");
			return NULL;
		}
		return json_object_get(c->msg, "result");
	}
	fprintf(stderr, "kiln: no answer to %s%s\n", method,
	        c->closed ? " (the browser closed the connection)" : "");
	return NULL;
}

/* Wait for event `name` of session sid. */
static int cdp_event(struct cdp *c, const char *sid, const char *name)
{
	while (!cdp_read(c, CDP_WAIT_MS)) {
		const char *m = json_string_value(json_object_get(c->msg, "method"));
		const char *s = json_string_value(json_object_get(c->msg, "sessionId"));

		if (m && !strcmp(m, name) && s && !strcmp(s, sid))
			return 0;
	}
	fprintf(stderr, "kiln: no %s within %d s\n", name, CDP_WAIT_MS / 1000);
	return -1;
}

static int write_png(const char *file, const char *b64)
{
	struct base64_decode_ctx d;
	size_t len = strlen(b64), out_len = BASE64_DECODE_LENGTH(len);
	uint8_t *png = malloc(out_len ? out_len : 1);
	int fd, rc = -1;

	if (!png)
		die_oom();
	base64_decode_init(&d);
	if (!base64_decode_update(&d, &out_len, png, len, b64) || !base64_decode_final(&d)) {
		fprintf(stderr, "kiln: the screenshot is not base64\n");
		goto out;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, png, out_len) || close(fd)) {
		fprintf(stderr, "kiln: cannot write %s: %s\n", file, strerror(errno));
		goto out;
	}
	rc = (int)out_len;
out:
	free(png);
	return rc;
}

static int screenshot(struct kc *k, const char *id, const char *url, const char *file)
{
	struct cdp c = {.t0 = mono_now(), .queue = json_array()};
	char path[128], *target = NULL, *sid = NULL;
	json_t *r;
	int rc = KILN_EXIT_FAIL, n;

	if (!c.queue)
		die_oom();
	if (kc_connect(k) < 0)
		return KILN_EXIT_FAIL;
	c.fd = k->fd;
	k->fd = -1;
	ws_init(&c.ws, true, &cdp_ops, &c);
	c.ws.max_frame = c.ws.max_text = CDP_MSG_MAX;
	step(&c, "connecting to the browser of %s (a cold start launches it)", id);
	snprintf(path, sizeof(path), "/sandboxes/%.64s/cdp", id);
	if (kc_ws_handshake(k, c.fd, &c.ws, path, "kilnd refused the CDP session"))
		goto out;
	step(&c, "%s", "connected; opening a page");
	r = cdp_call(&c, NULL, "Target.createTarget", json_pack("{s:s}", "url", "about:blank"));
	if (!r || !(target = strdup(json_string_value(json_object_get(r, "targetId")) ?: "")))
		goto out;
	r = cdp_call(&c, NULL, "Target.attachToTarget",
	             json_pack("{s:s,s:b}", "targetId", target, "flatten", 1));
	if (!r || !(sid = strdup(json_string_value(json_object_get(r, "sessionId")) ?: "")) ||
	    !cdp_call(&c, sid, "Page.enable", NULL))
		goto out;
	step(&c, "navigating to %s", url);
	r = cdp_call(&c, sid, "Page.navigate", json_pack("{s:s}", "url", url));
	if (!r)
		goto out;
	if (json_string_value(json_object_get(r, "errorText"))) {
		fprintf(stderr, "kiln: cannot load %s: %s\n", url,
		        json_string_value(json_object_get(r, "errorText")));
		goto out;
	}
	if (cdp_event(&c, sid, "Page.loadEventFired"))
		goto out;
	step(&c, "%s", "loaded; taking the screenshot");
	r = cdp_call(&c, sid, "Page.captureScreenshot", json_pack("{s:s}", "format", "png"));
	if (!r || !json_is_string(json_object_get(r, "data")))
		goto out;
	n = write_png(file, json_string_value(json_object_get(r, "data")));
	if (n < 0)
		goto out;
	fprintf(stderr, "kiln: %6.0f ms  wrote %s (%d bytes)\n", (mono_now() - c.t0) * 1e3, file,
	        n);
	cdp_call(&c, NULL, "Target.closeTarget", json_pack("{s:s}", "targetId", target));
	rc = 0;
out:
	free(target);
	free(sid);
	json_decref(c.msg);
	json_decref(c.queue);
	ws_free(&c.ws);
	close(c.fd);
	return rc;
}

static int endpoint(struct kc *k, const char *id)
{
	double t0 = mono_now();
	char path[128];
	json_t *v = NULL;

	snprintf(path, sizeof(path), "/sandboxes/%.64s/cdp/json/version", id);
	if (stderr_tty())
		fprintf(stderr, "kiln: asking the browser of %s (a cold start launches it)\n", id);
	if (kc_json(k, "GET", path, NULL, &v) != 200)
		return KILN_EXIT_FAIL;
	fprintf(stderr, "kiln: %s answered in %.0f ms\n",
	        json_string_value(json_object_get(v, "Browser")) ?: "the browser",
	        (mono_now() - t0) * 1e3);
	if (k->url_host)
		printf("ws://%s:%d/sandboxes/%s/cdp\nhttp://%s:%d/sandboxes/%s/cdp\n", k->url_host,
		       k->url_port, id, k->url_host, k->url_port, id);
	else
		printf(
		    "/sandboxes/%s/cdp (on kilnd's socket %s; for Playwright give kilnd "
		    "--listen-tcp and use connectOverCDP('http://HOST:PORT/sandboxes/%s/cdp'))\n",
		    id, kc_where(k), id);
	json_decref(v);
	return 0;
}

int cmd_browser(struct kc *k, int argc, char **argv)
{
	if (want_help(argc, argv) || (argc != 2 && (argc != 5 || strcmp(argv[2], "screenshot")))) {
		printf("usage: kiln browser ID\n"
		       "       kiln browser ID screenshot URL FILE\n\n"
		       "Print the CDP endpoint of sandbox ID's browser (the WebSocket, and the\n"
		       "HTTP URL for Playwright's connectOverCDP), starting the browser if it\n"
		       "does not run; or load URL in a new page and write a PNG of it to FILE.\n"
		       "The sandbox's image needs the browser (kiln create --image browser).\n");
		return want_help(argc, argv) ? 0 : 2;
	}
	return argc == 2 ? endpoint(k, argv[1]) : screenshot(k, argv[1], argv[3], argv[4]);
}
