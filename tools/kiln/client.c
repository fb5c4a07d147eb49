/* SPDX-License-Identifier: MIT */
/* A small blocking HTTP/1.1 client for kilnd over its unix socket (or TCP
 * with an API key), parsing responses with http_parser. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>

#include "kiln.h"

#define BODY_MAX (256u << 20)

void die_oom(void)
{
	fprintf(stderr, "kiln: out of memory\n");
	exit(KILN_EXIT_FAIL);
}

int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int kc_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool stderr_tty(void)
{
	return isatty(2);
}

const char *kc_where(const struct kc *k)
{
	static char where[300];

	if (k->socket_path)
		return k->socket_path;
	snprintf(where, sizeof(where), "http://%s:%d", k->url_host, k->url_port);
	return where;
}

int kc_connect(struct kc *k)
{
	int fd, err;

	if (k->fd >= 0)
		return k->fd;
	if (k->socket_path) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		if (strlen(k->socket_path) >= sizeof(sa.sun_path)) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		strcpy(sa.sun_path, k->socket_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			goto fail;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			err = errno;
			close(fd);
			errno = err;
			goto fail;
		}
	} else {
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
		char port[16];

		snprintf(port, sizeof(port), "%d", k->url_port);
		if (getaddrinfo(k->url_host, port, &hints, &ai)) {
			errno = EHOSTUNREACH;
			goto fail;
		}
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			err = errno;
			if (fd >= 0)
				close(fd);
			freeaddrinfo(ai);
			errno = err;
			goto fail;
		}
		freeaddrinfo(ai);
	}
	k->fd = fd;
	return fd;
fail:
	if (!k->quiet_errors)
		fprintf(stderr,
		        "kiln: cannot reach kilnd at %s: %s: is it running? try 'kiln up'\n",
		        kc_where(k), strerror(errno));
	return -1;
}

void kc_disconnect(struct kc *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

/* ---------------------------------------------------------------- response parsing */

struct rstate {
	struct kc_resp *r;
	char field[64];
	int field_len;
	int cur; /* 1 X-Kiln-Size, 2 X-Kiln-Mode */
	char val[64];
	int val_len;
	bool headers_done, done, failed;
};

static void commit_header(struct rstate *s)
{
	s->val[s->val_len] = 0;
	if (s->cur == 1)
		s->r->kiln_size = atoll(s->val);
	else if (s->cur == 2)
		s->r->kiln_mode = (unsigned)strtoul(s->val, NULL, 8);
	s->cur = 0;
	s->val_len = 0;
}

static int r_field(http_parser *p, const char *at, size_t n)
{
	struct rstate *s = p->data;

	if (s->cur || s->val_len)
		commit_header(s);
	if (s->field_len + (int)n < (int)sizeof(s->field)) {
		memcpy(s->field + s->field_len, at, n);
		s->field_len += (int)n;
	} else {
		s->field_len = sizeof(s->field) - 1;
	}
	return 0;
}

static int r_value(http_parser *p, const char *at, size_t n)
{
	struct rstate *s = p->data;

	if (s->field_len) {
		s->field[s->field_len] = 0;
		s->cur = !strcasecmp(s->field, "X-Kiln-Size")   ? 1
		         : !strcasecmp(s->field, "X-Kiln-Mode") ? 2
		                                                : 0;
		s->field_len = 0;
		s->val_len = 0;
	}
	if (s->val_len + (int)n < (int)sizeof(s->val)) {
		memcpy(s->val + s->val_len, at, n);
		s->val_len += (int)n;
	}
	return 0;
}

static int r_headers(http_parser *p)
{
	struct rstate *s = p->data;

	commit_header(s);
	s->r->status = p->status_code;
	s->headers_done = true;
	return 0;
}

static int r_body(http_parser *p, const char *at, size_t n)
{
	struct rstate *s = p->data;
	struct kc_resp *r = s->r;

	if (r->on_data && r->status / 100 == 2)
		return r->on_data(r->ctx, at, n) ? (s->failed = true, -1) : 0;
	if (r->body_len + n > BODY_MAX)
		return -1;
	r->body = realloc(r->body, r->body_len + n + 1);
	if (!r->body)
		die_oom();
	memcpy(r->body + r->body_len, at, n);
	r->body_len += n;
	r->body[r->body_len] = 0;
	return 0;
}

static int r_complete(http_parser *p)
{
	struct rstate *s = p->data;

	s->done = true;
	s->r->complete = true;
	http_parser_pause(p, 1);
	return 0;
}

/* quiet: say nothing when there is no response (the caller reports why). */
static int read_response(struct kc *k, struct kc_resp *r, bool quiet)
{
	static http_parser_settings settings;
	struct rstate s = {.r = r};
	http_parser parser;
	char buf[64 << 10];
	bool keep;

	settings.on_header_field = r_field;
	settings.on_header_value = r_value;
	settings.on_headers_complete = r_headers;
	settings.on_body = r_body;
	settings.on_message_complete = r_complete;
	r->kiln_size = -1;
	http_parser_init(&parser, HTTP_RESPONSE);
	parser.data = &s;
	while (!s.done) {
		ssize_t n = recv(k->fd, buf, sizeof(buf), 0);
		size_t used;

		if (n < 0 && errno == EINTR)
			return -EINTR;
		if (n < 0) {
			if (!quiet)
				fprintf(stderr, "kiln: reading from kilnd: %s\n", strerror(errno));
			return -1;
		}
		used = http_parser_execute(&parser, &settings, buf, (size_t)n);
		if (s.failed)
			return -1;
		if (n == 0) {
			if (s.done)
				break;
			if (!quiet)
				fprintf(stderr, "kiln: kilnd closed the connection%s\n",
				        s.headers_done ? " before the response was complete" : "");
			return -1;
		}
		if (HTTP_PARSER_ERRNO(&parser) != HPE_OK &&
		    HTTP_PARSER_ERRNO(&parser) != HPE_PAUSED) {
			fprintf(stderr, "kiln: bad response from kilnd: %s\n",
			        http_errno_description(HTTP_PARSER_ERRNO(&parser)));
			return -1;
		}
		(void)used;
	}
	keep = http_should_keep_alive(&parser);
	if (!keep)
		kc_disconnect(k);
	return 0;
}

/* ---------------------------------------------------------------- requests */

static int send_head(struct kc *k, const char *method, const char *path, const char *ctype,
                     long long len)
{
	char head[8192];
	int n = snprintf(head, sizeof(head),
	                 "%s %s HTTP/1.1\r\nHost: kilnd\r\nUser-Agent: kiln\r\n", method, path);

	if (k->api_key)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "X-API-Key: %s\r\n", k->api_key);
	if (ctype)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Type: %s\r\n", ctype);
	if (len >= 0)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %lld\r\n", len);
	n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
	if (n >= (int)sizeof(head))
		return -1;
	return kc_send_all(k->fd, head, (size_t)n);
}

int kc_request(struct kc *k, const char *method, const char *path, const char *ctype,
               const void *body, size_t len, struct kc_resp *r)
{
	bool fresh = k->fd < 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		int rc;

		if (kc_connect(k) < 0)
			return -1;
		if (send_head(k, method, path, ctype,
		              body || !strcmp(method, "POST") || !strcmp(method, "PUT")
		                  ? (long long)len
		                  : -1) ||
		    (len && kc_send_all(k->fd, body, len))) {
			int err = errno;

			/* kilnd answers some requests (404, 413) before reading
			 * their body, then closes: show its answer. */
			if (!read_response(k, r, true) && r->status)
				return 0;
			kc_disconnect(k);
			if (!fresh && attempt == 0) {
				fresh = true;
				continue; /* a kept-alive connection went stale */
			}
			fprintf(stderr, "kiln: sending to kilnd: %s\n", strerror(err));
			return -1;
		}
		rc = read_response(k, r, false);
		if (rc == -1 && !fresh && attempt == 0 && !r->status) {
			kc_disconnect(k);
			fresh = true;
			continue;
		}
		if (rc)
			kc_disconnect(k);
		return rc ? -1 : 0;
	}
	return -1;
}

int kc_upload(struct kc *k, const char *method, const char *path, int fd, off_t size,
              const char *label, struct kc_resp *r)
{
	struct progress pr;
	char buf[256 << 10];
	off_t left = size;
	int err;

	kc_disconnect(k); /* a fresh connection: a stale one would lose the body */
	if (kc_connect(k) < 0)
		return -1;
	if (send_head(k, method, path, "application/octet-stream", (long long)size))
		goto broken;
	progress_init(&pr, label, (long long)size);
	while (left > 0) {
		ssize_t n = read(fd, buf, left < (off_t)sizeof(buf) ? (size_t)left : sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			progress_done(&pr);
			fprintf(stderr, "kiln: %s: %s\n", label,
			        n ? strerror(errno) : "file shrank while reading");
			kc_disconnect(k);
			return -1;
		}
		if (kc_send_all(k->fd, buf, (size_t)n)) {
			progress_done(&pr);
			goto broken;
		}
		left -= n;
		progress_add(&pr, n);
	}
	progress_done(&pr);
	if (read_response(k, r, false)) {
		kc_disconnect(k);
		return -1;
	}
	return 0;
broken:
	err = errno;
	/* kilnd may have refused early (404, 413): show its answer if any. */
	if (!read_response(k, r, true) && r->status)
		return 0;
	fprintf(stderr, "kiln: sending to kilnd: %s\n", strerror(err));
	kc_disconnect(k);
	return -1;
}

void kc_resp_free(struct kc_resp *r)
{
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
}

int kc_json(struct kc *k, const char *method, const char *path, json_t *body, json_t **out)
{
	struct kc_resp r = {0};
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc;

	if (body && !s)
		die_oom();
	rc = kc_request(k, method, path, s ? "application/json" : NULL, s, s ? strlen(s) : 0, &r);
	free(s);
	if (out)
		*out = NULL;
	if (rc) {
		kc_resp_free(&r);
		return -1;
	}
	if (out && r.body_len && r.status / 100 == 2)
		*out = json_loadb(r.body, r.body_len, 0, NULL);
	if (r.status / 100 != 2)
		kc_print_error(path, &r);
	kc_resp_free(&r);
	return r.status;
}

void kc_print_error(const char *what, const struct kc_resp *r)
{
	json_t *j = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(j, "message"));

	if (msg)
		fprintf(stderr, "kiln: %s\n", msg);
	else
		fprintf(stderr, "kiln: %s: HTTP %d\n", what, r->status);
	json_decref(j);
}

char *url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		die_oom();
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~/", c)) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = 0;
	return out;
}

/* ---------------------------------------------------------------- progress */

static void human(char *out, size_t n, long long v)
{
	if (v >= 1 << 30)
		snprintf(out, n, "%.1f GiB", (double)v / (1 << 30));
	else if (v >= 1 << 20)
		snprintf(out, n, "%.1f MiB", (double)v / (1 << 20));
	else if (v >= 1 << 10)
		snprintf(out, n, "%.1f KiB", (double)v / (1 << 10));
	else
		snprintf(out, n, "%lld B", v);
}

void progress_init(struct progress *p, const char *label, long long total)
{
	p->on = stderr_tty() && total >= (1 << 20);
	p->label = label;
	p->total = total;
	p->done = 0;
	p->last = 0;
}

void progress_add(struct progress *p, long long n)
{
	char a[32], b[32];
	double t;

	p->done += n;
	if (!p->on)
		return;
	t = mono_now();
	if (t - p->last < 0.1 && p->done != p->total)
		return;
	p->last = t;
	human(a, sizeof(a), p->done);
	if (p->total >= 0) {
		human(b, sizeof(b), p->total);
		fprintf(stderr, "\r\033[K%s: %s / %s (%d%%)", p->label, a, b,
		        p->total ? (int)(p->done * 100 / p->total) : 100);
	} else {
		fprintf(stderr, "\r\033[K%s: %s", p->label, a);
	}
}

void progress_done(struct progress *p)
{
	if (p->on)
		fprintf(stderr, "\r\033[K");
}

char *split_remote(const char *s, const char **path)
{
	const char *colon = strchr(s, ':');
	char *id;

	/* "ID:/path": an id has no '/' and the path is absolute */
	if (!colon || colon == s || colon[1] != '/' || memchr(s, '/', (size_t)(colon - s)))
		return NULL;
	id = strndup(s, (size_t)(colon - s));
	if (!id)
		die_oom();
	*path = colon + 1;
	return id;
}
