/* SPDX-License-Identifier: MIT */
/* --webhook: every lifecycle event (sandbox.*, exec.finished) is POSTed as
 * its JSON, signed (wh_sign.h), to one http:// URL, from kilnd's event loop
 * with non-blocking sockets: at most WH_INFLIGHT deliveries at once, each
 * retried with doubling waits up to --webhook-retries times; WH_QUEUE_MAX
 * wait behind them, past that the oldest waiting is given up. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events_int.h"
#include "http/buf.h"
#include "kilnd.h"
#include "util.h"
#include "wh_sign.h"

#define WH_INFLIGHT   8
#define WH_QUEUE_MAX  1000
#define WH_TIMEOUT_S  10.0
#define WH_WAIT_MAX   300.0 /* the longest wait between attempts */
#define WH_SECRET_MIN 16

struct wh_delivery {
	struct wh_delivery *next;
	struct webhook *wh;
	int64_t id;
	char type[32];
	char *body;
	unsigned attempts; /* made so far */
	int fd;
	bool connected;
	ev_io io;
	ev_timer timer; /* the attempt's deadline, or the wait before the next */
	struct buf out;
	char in[32];
	size_t nin;
};

struct webhook {
	struct events *e;
	struct sockaddr_in addr;
	char *host, *path; /* for the request line and Host */
	uint8_t *secret;
	size_t secret_len;
	struct wh_delivery *active, *qhead, *qtail;
	unsigned nactive, nqueued;
	unsigned long long ok, failed, dropped, att_ok, att_err;
};

static void attempt(struct wh_delivery *d);

static void unlink_active(struct wh_delivery *d)
{
	for (struct wh_delivery **pp = &d->wh->active; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			d->wh->nactive--;
			return;
		}
	}
}

static void close_attempt(struct wh_delivery *d)
{
	struct ev_loop *loop = d->wh->e->kd->loop;

	ev_io_stop(loop, &d->io);
	ev_timer_stop(loop, &d->timer);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	buf_free(&d->out);
	d->nin = 0;
}

static void delivery_free(struct wh_delivery *d)
{
	close_attempt(d);
	free(d->body);
	free(d);
}

/* d is done (delivered or given up): the next waiting one goes. */
static void finish(struct wh_delivery *d)
{
	struct webhook *wh = d->wh;
	struct wh_delivery *n;

	unlink_active(d);
	delivery_free(d);
	if ((n = wh->qhead) && wh->nactive < WH_INFLIGHT) {
		wh->qhead = n->next;
		if (!wh->qhead)
			wh->qtail = NULL;
		wh->nqueued--;
		n->next = wh->active;
		wh->active = n;
		wh->nactive++;
		attempt(n);
	}
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	attempt(w->data);
}

static void failed(struct wh_delivery *d, const char *why)
{
	struct webhook *wh = d->wh;
	struct ev_loop *loop = wh->e->kd->loop;
	double wait;

	close_attempt(d);
	wh->att_err++;
	if (d->attempts > wh->e->kd->cfg.webhook_retries) {
		wh->failed++;
		log_warn("webhook: gave up event %lld (%s) after %u attempts: %s", (long long)d->id,
		         d->type, d->attempts, why);
		finish(d);
		return;
	}
	wait = wh->e->kd->cfg.webhook_backoff;
	for (unsigned i = 1; i < d->attempts && wait < WH_WAIT_MAX; i++)
		wait *= 2;
	if (wait > WH_WAIT_MAX)
		wait = WH_WAIT_MAX;
	log_debug("webhook: event %lld: %s; again in %.1f s", (long long)d->id, why, wait);
	ev_timer_stop(loop, &d->timer);
	ev_set_cb(&d->timer, on_retry);
	ev_timer_set(&d->timer, wait, 0);
	ev_timer_start(loop, &d->timer);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	failed(w->data, "no answer in time");
}

/* The status line came (or enough of it): 2xx is delivered. */
static void answered(struct wh_delivery *d)
{
	char why[64];
	int status = 0;

	d->in[d->nin] = 0;
	if (sscanf(d->in, "HTTP/1.%*1[01] %3d", &status) != 1 || status < 100 || status > 599) {
		failed(d, "not an HTTP answer");
		return;
	}
	if (status < 200 || status > 299) {
		snprintf(why, sizeof(why), "answered %d", status);
		failed(d, why);
		return;
	}
	d->wh->att_ok++;
	d->wh->ok++;
	log_debug("webhook: event %lld delivered (%d)", (long long)d->id, status);
	finish(d);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct wh_delivery *d = w->data;
	char why[96];
	ssize_t n;

	if (!d->connected) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			snprintf(why, sizeof(why), "cannot connect: %s",
			         strerror(err ? err : errno));
			failed(d, why);
			return;
		}
		d->connected = true;
	}
	if (buf_avail(&d->out)) {
		n = send(d->fd, buf_head(&d->out), buf_avail(&d->out), MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(why, sizeof(why), "cannot send: %s", strerror(errno));
			failed(d, why);
			return;
		}
		if (n > 0)
			buf_consume(&d->out, (size_t)n);
		if (!buf_avail(&d->out)) {
			ev_io_stop(loop, &d->io);
			ev_io_set(&d->io, d->fd, EV_READ);
			ev_io_start(loop, &d->io);
		}
		return;
	}
	n = recv(d->fd, d->in + d->nin, sizeof(d->in) - 1 - d->nin, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (d->nin >= 12)
			answered(d);
		else
			failed(d, n ? strerror(errno) : "closed without an answer");
		return;
	}
	d->nin += (size_t)n;
	if (d->nin >= 12)
		answered(d); /* "HTTP/1.1 200" is all it takes */
}

static int build_request(struct wh_delivery *d)
{
	struct webhook *wh = d->wh;
	char sig[128];
	size_t blen = strlen(d->body);

	if (wh_signature(wh->secret, wh->secret_len, now_ms() / 1000, d->body, blen, sig,
	                 sizeof(sig)) < 0)
		return -1;
	buf_reset(&d->out);
	buf_printf(&d->out,
	           "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kilnd/" KILN_VERSION
	           "\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
	           "Kiln-Event-Id: %lld\r\nKiln-Event-Type: %s\r\nKiln-Signature: %s\r\n"
	           "Connection: close\r\n\r\n",
	           wh->path, wh->host, blen, (long long)d->id, d->type, sig);
	return buf_append(&d->out, d->body, blen);
}

static void attempt(struct wh_delivery *d)
{
	struct ev_loop *loop = d->wh->e->kd->loop;
	char why[96];

	d->attempts++;
	d->connected = false;
	if (build_request(d)) {
		failed(d, "out of memory");
		return;
	}
	d->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->fd < 0 || (connect(d->fd, (struct sockaddr *)&d->wh->addr, sizeof(d->wh->addr)) &&
	                  errno != EINPROGRESS)) {
		snprintf(why, sizeof(why), "cannot connect: %s", strerror(errno));
		failed(d, why);
		return;
	}
	ev_io_init(&d->io, on_io, d->fd, EV_WRITE);
	d->io.data = d;
	ev_io_start(loop, &d->io);
	ev_timer_stop(loop, &d->timer);
	ev_set_cb(&d->timer, on_deadline);
	ev_timer_set(&d->timer, WH_TIMEOUT_S, 0);
	ev_timer_start(loop, &d->timer);
}

void webhook_push(struct events *e, const struct ev_item *it)
{
	struct webhook *wh = e->wh;
	struct wh_delivery *d;

	if (!wh || (strncmp(it->type, "sandbox.", 8) && strcmp(it->type, "exec.finished")))
		return;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->body = strdup(it->body))) {
		free(d);
		wh->dropped++;
		return;
	}
	d->wh = wh;
	d->id = it->id;
	d->fd = -1;
	snprintf(d->type, sizeof(d->type), "%s", it->type);
	ev_init(&d->timer, on_deadline);
	d->timer.data = d;
	if (wh->nactive < WH_INFLIGHT) {
		d->next = wh->active;
		wh->active = d;
		wh->nactive++;
		attempt(d);
		return;
	}
	if (wh->nqueued >= WH_QUEUE_MAX) {
		struct wh_delivery *old = wh->qhead;

		wh->qhead = old->next;
		wh->nqueued--;
		wh->dropped++;
		log_warn("webhook: %d deliveries waiting: event %lld (%s) given up", WH_QUEUE_MAX,
		         (long long)old->id, old->type);
		delivery_free(old);
		if (!wh->qhead)
			wh->qtail = NULL;
	}
	if (wh->qtail)
		wh->qtail->next = d;
	else
		wh->qhead = d;
	wh->qtail = d;
	wh->nqueued++;
}

/* http://HOST[:PORT][/PATH], HOST resolved now (IPv4). */
static int parse_url(struct webhook *wh, const char *url, char *msg, size_t n)
{
	const char *p = url + 7, *slash, *colon;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	char host[256], port[8] = "80";
	size_t hlen;
	int rc;

	if (strncmp(url, "http://", 7)) {
		snprintf(msg, n,
		         "%s: only http:// URLs (put a TLS proxy on this host in front of "
		         "an https:// one)",
		         url);
		return -1;
	}
	slash = strchr(p, '/');
	hlen = slash ? (size_t)(slash - p) : strlen(p);
	colon = memchr(p, ':', hlen);
	if (colon) {
		size_t plen = hlen - (size_t)(colon - p) - 1;

		if (!plen || plen >= sizeof(port) || strspn(colon + 1, "0123456789") < plen) {
			snprintf(msg, n, "%s: bad port", url);
			return -1;
		}
		memcpy(port, colon + 1, plen);
		port[plen] = 0;
		hlen = (size_t)(colon - p);
	}
	if (!hlen || hlen >= sizeof(host) || strpbrk(slash ? slash : "", " \t\r\n")) {
		snprintf(msg, n, "%s: expected http://HOST[:PORT][/PATH]", url);
		return -1;
	}
	memcpy(host, p, hlen);
	host[hlen] = 0;
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(msg, n, "%s: cannot resolve %s: %s", url, host, gai_strerror(rc));
		return -1;
	}
	memcpy(&wh->addr, ai->ai_addr, sizeof(wh->addr));
	freeaddrinfo(ai);
	wh->path = strdup(slash ? slash : "/");
	wh->host = strndup(p, colon ? (size_t)(colon - p) + 1 + strlen(port) : hlen);
	return wh->path && wh->host ? 0 : -1;
}

static int load_secret(struct webhook *wh, const char *path, char *msg, size_t n)
{
	struct stat st;
	size_t len;
	char *s = read_small_file(path, 4096, &len), *nl;

	if (!s) {
		snprintf(msg, n, "--webhook-secret %s: %s", path, strerror(errno));
		return -1;
	}
	if ((nl = memchr(s, '\n', len)))
		len = (size_t)(nl - s);
	if (len < WH_SECRET_MIN) {
		snprintf(msg, n,
		         "--webhook-secret %s: at least %d bytes before the first newline "
		         "(e.g. head -c 32 /dev/urandom | base64 > FILE)",
		         path, WH_SECRET_MIN);
		free(s);
		return -1;
	}
	if (!stat(path, &st) && st.st_mode & 077)
		log_warn("--webhook-secret %s is readable by others (mode %04o): chmod 600 it",
		         path, (unsigned)(st.st_mode & 07777));
	wh->secret = (uint8_t *)s;
	wh->secret_len = len;
	return 0;
}

int webhook_init(struct events *e)
{
	const struct kilnd_cfg *cfg = &e->kd->cfg;
	struct webhook *wh;
	char msg[512];

	if (!cfg->webhook_url)
		return 0;
	wh = calloc(1, sizeof(*wh));
	if (!wh)
		return -ENOMEM;
	wh->e = e;
	if (parse_url(wh, cfg->webhook_url, msg, sizeof(msg)) ||
	    load_secret(wh, cfg->webhook_secret_file, msg, sizeof(msg))) {
		log_err("%s", msg);
		free(wh->host);
		free(wh->path);
		free(wh->secret);
		free(wh);
		return -EINVAL;
	}
	e->wh = wh;
	log_info("webhook: lifecycle events go to %s", cfg->webhook_url);
	return 0;
}

void webhook_free(struct events *e)
{
	struct webhook *wh = e->wh;

	if (!wh)
		return;
	while (wh->active) {
		struct wh_delivery *d = wh->active;

		wh->active = d->next;
		delivery_free(d);
	}
	while (wh->qhead) {
		struct wh_delivery *d = wh->qhead;

		wh->qhead = d->next;
		delivery_free(d);
	}
	explicit_bzero(wh->secret, wh->secret_len);
	free(wh->secret);
	free(wh->host);
	free(wh->path);
	free(wh);
	e->wh = NULL;
}

void webhook_metrics(struct events *e, struct buf *b)
{
	struct webhook *wh = e->wh;

	if (!wh)
		return;
	buf_printf(b,
	           "# HELP kiln_webhook_deliveries_total Events given to --webhook, by outcome.\n"
	           "# TYPE kiln_webhook_deliveries_total counter\n"
	           "kiln_webhook_deliveries_total{result=\"ok\"} %llu\n"
	           "kiln_webhook_deliveries_total{result=\"failed\"} %llu\n"
	           "kiln_webhook_deliveries_total{result=\"dropped\"} %llu\n"
	           "# HELP kiln_webhook_attempts_total POSTs to --webhook, by outcome.\n"
	           "# TYPE kiln_webhook_attempts_total counter\n"
	           "kiln_webhook_attempts_total{result=\"ok\"} %llu\n"
	           "kiln_webhook_attempts_total{result=\"error\"} %llu\n"
	           "# HELP kiln_webhook_queued Deliveries under way or waiting.\n"
	           "# TYPE kiln_webhook_queued gauge\n"
	           "kiln_webhook_queued %u\n",
	           wh->ok, wh->failed, wh->dropped, wh->att_ok, wh->att_err,
	           wh->nactive + wh->nqueued);
}
