/* SPDX-License-Identifier: MIT */
/* The host's resolver for the sandboxes' lookups: c-ares (Debian's
 * libc-ares-dev) driven by kilnd's libev loop, never blocking it. c-ares
 * tells which sockets it wants watched (ARES_OPT_SOCK_STATE_CB); a timer
 * follows ares_timeout(). Only DNS is asked (ares_query): the host's
 * /etc/hosts is none of a sandbox's business. */
#include <ares.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_int.h"
#include "util.h"

#define RES_FDS 16

struct resolver {
	struct ev_loop *loop;
	ares_channel ch;
	ev_timer timer;
	struct {
		ev_io w;
		int fd; /* -1: free */
	} io[RES_FDS];
};

static void rearm(struct resolver *r)
{
	struct timeval tv, *t = ares_timeout(r->ch, NULL, &tv);

	ev_timer_stop(r->loop, &r->timer);
	if (t) {
		ev_timer_set(&r->timer, (double)t->tv_sec + (double)t->tv_usec / 1e6 + 0.001, 0);
		ev_timer_start(r->loop, &r->timer);
	}
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct resolver *r = w->data;

	ares_process_fd(r->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rearm(r);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct resolver *r = w->data;

	ares_process_fd(r->ch, revents & EV_READ ? w->fd : ARES_SOCKET_BAD,
	                revents & EV_WRITE ? w->fd : ARES_SOCKET_BAD);
	rearm(r);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct resolver *r = data;
	int i, events = (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0);

	for (i = 0; i < RES_FDS && r->io[i].fd != fd; i++)
		;
	if (i == RES_FDS) {
		if (!events)
			return;
		for (i = 0; i < RES_FDS && r->io[i].fd != -1; i++)
			;
		if (i == RES_FDS) {
			log_warn("net: the resolver wants more than %d sockets watched", RES_FDS);
			return;
		}
		r->io[i].fd = fd;
	}
	ev_io_stop(r->loop, &r->io[i].w);
	if (!events) {
		r->io[i].fd = -1;
		return;
	}
	ev_io_set(&r->io[i].w, fd, events);
	ev_io_start(r->loop, &r->io[i].w);
}

int resolver_new(struct ev_loop *loop, const char *servers, const char *conf, struct resolver **out)
{
	struct resolver *r = calloc(1, sizeof(*r));
	struct ares_options o = {0};
	int rc;

	if (!r)
		return -ENOMEM;
	rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS) {
		free(r);
		return -EIO;
	}
	r->loop = loop;
	for (int i = 0; i < RES_FDS; i++) {
		r->io[i].fd = -1;
		ev_init(&r->io[i].w, on_io);
		r->io[i].w.data = r;
	}
	ev_init(&r->timer, on_timer);
	r->timer.data = r;
	o.sock_state_cb = sock_state;
	o.sock_state_cb_data = r;
	o.timeout = 2000; /* ms per try */
	o.tries = 2;
	o.resolvconf_path = (char *)conf;
	rc = ares_init_options(&r->ch, &o,
	                       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
	                           (conf ? ARES_OPT_RESOLVCONF : 0));
	if (rc == ARES_SUCCESS && servers)
		rc = ares_set_servers_ports_csv(r->ch, servers);
	if (rc != ARES_SUCCESS) {
		log_err("net: resolver: %s%s%s", ares_strerror(rc),
		        servers ? " in --dns-server " : "", servers ? servers : "");
		if (r->ch)
			ares_destroy(r->ch);
		free(r);
		return -EINVAL;
	}
	*out = r;
	return 0;
}

void resolver_free(struct resolver *r)
{
	if (!r)
		return;
	ares_destroy(r->ch); /* every callback runs, with ARES_EDESTRUCTION */
	for (int i = 0; i < RES_FDS; i++)
		ev_io_stop(r->loop, &r->io[i].w);
	ev_timer_stop(r->loop, &r->timer);
	free(r);
	ares_library_cleanup();
}

struct query {
	resolver_cb cb;
	void *arg;
};

static void on_answer(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct query *q = arg;

	q->cb(q->arg, status, status == ARES_SUCCESS ? abuf : NULL, alen);
	free(q);
}

void resolver_query(struct resolver *r, const char *name, int type, resolver_cb cb, void *arg)
{
	struct query *q = malloc(sizeof(*q));

	if (!q) {
		cb(arg, ARES_ENOMEM, NULL, 0);
		return;
	}
	q->cb = cb;
	q->arg = arg;
	ares_query(r->ch, name, 1 /* C_IN */, type, on_answer, q);
	rearm(r);
}
