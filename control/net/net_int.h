/* SPDX-License-Identifier: MIT */
/* Inside control/net/: what net.c, egress.c, dns.c and resolver.c share,
 * and what the containerd shim's shim/net.c uses of them (net_lib.mk). */
#ifndef KILND_NET_INT_H
#define KILND_NET_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

#include "net/net.h"

#define NET_CONNS_MAX       256          /* egress connections per sandbox */
#define NET_BUF             (256u << 10) /* bytes buffered per direction */
#define NET_SPLICE_AFTER    (256u << 10) /* bytes copied before a direction is spliced */
#define RELAY_CACHE         8            /* freed NET_BUF buffers kept for reuse */
#define NET_HELLO_TIMEOUT   10.0         /* s for a guest to send its hello */
#define NET_CONNECT_TIMEOUT 15.0         /* s for the host's connect */
#define DNS_RATE            50.0         /* lookups per second per sandbox ... */
#define DNS_BURST           200.0        /* ... after a burst of this many */
#define DNS_INFLIGHT_MAX    64           /* lookups at the host resolver per sandbox */
#define UDP_RELAYS_MAX      64           /* guest UDP sockets sending off the guest */
#define UDP_PEERS_MAX       64           /* destinations a relay takes answers from */
#define UDP_IDLE_S          120.0        /* s without a datagram before a relay closes */
#define UDP_RATE_PKTS       5000.0       /* datagrams a second per sandbox ... */
#define UDP_RATE_BYTES      (16u << 20)  /* ... and bytes; a second's worth at once */

struct resolver;
struct econn;
struct urelay;
struct net_sb;

struct net_ctx {
	struct ev_loop *loop;
	struct resolver *res;
	uint8_t (*host)[16]; /* the host's own addresses */
	size_t nhost;
	ev_tstamp host_at; /* when they were read */
	int trace_fd;      /* hop timestamps (kiln/trace.h), -1 without KILN_TRACE */
};

/* Where a net_sb's DNS pins are kept besides memory (kilnd: its store). */
struct net_pin_store {
	void (*put)(struct net_sb *ns, const uint8_t a[16], const char *name, int64_t expires_ms,
	            const struct net_pin *old);
	void (*batch)(struct net_sb *ns, bool begin);
};

/* One guest's networking: in kilnd a sandbox's, in the shim a VM's. */
struct net_sb {
	struct sandbox *sb; /* kilnd's, or NULL */
	struct net_ctx *nc;
	struct ev_loop *loop;
	const char *id;                    /* for the log lines */
	const char *console;               /* the guest's log file, for refusals */
	const struct net_policy *policy;   /* judges every destination */
	const struct net_pin_store *store; /* or NULL: pins in memory only */
	/* Or NULL (kilnd): a guest's wildcard TCP listener on port (family 4
	 * or 6) announced itself on the stream gfd (KILN_NET_F_LISTEN), which
	 * is the callee's from here on, the reply too. */
	void (*listen)(struct net_sb *ns, int gfd, int family, uint16_t port);
	void *listen_ctx;
	int lfd;
	ev_io lw;
	char *lpath;
	struct econn *conns;
	unsigned nconns;
	unsigned dns_inflight;
	struct net_pins pins;
	/* counters, for metrics */
	uint64_t bytes_out, bytes_in, connections, refused, dns_lookups, dns_refused;
	double dns_tokens;
	ev_tstamp dns_at;
	/* UDP (udp.c): relays, counters, the token buckets */
	struct urelay *udp;
	unsigned nudp;
	uint64_t udp_dgrams_out, udp_dgrams_in, udp_bytes_out, udp_bytes_in, udp_refused,
	    udp_dropped;
	double udp_pkts, udp_bytes;
	ev_tstamp udp_at, udp_rate_logged;
	/* the sandbox's log: at most a few lines a second */
	ev_tstamp log_at;
	unsigned log_lines, log_dropped;
};

/* net_lib.c: what a guest's networking needs from its host, kilnd's or the
 * shim's (control/net/net_lib.mk lists the files both link). */
const struct net_policy *net_sb_policy(const struct net_sb *ns);
/* A line in the guest's log (ns->console), rate-limited. */
void net_log(struct net_sb *ns, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Listen on path for the VMM's egress connections (0666: a jailed VMM
 * connects as its own uid); 0 or -errno. */
int net_listen(struct net_sb *ns, const char *path);
void net_unlisten(struct net_sb *ns);
/* The host's own addresses, refreshed now and then. */
void net_host_addrs(struct net_ctx *nc, const uint8_t (**v)[16], size_t *n);
/* Has the host a public IPv6 address? Without one, IPv6 answers would only
 * send clients that try them first (busybox wget) into ENETUNREACH. */
bool net_host_has_v6(struct net_ctx *nc);

/* net_lib.c: pin a lookup's answer (in memory and in ns->store). */
void net_pin(struct net_sb *ns, const uint8_t a[16], const char *name, int64_t expires_ms);
/* Around the pins of one answer: one write to the store for them all. */
void net_pins_batch(struct net_sb *ns, bool begin);
/* pins.c (kilnd): the store's pins, loaded when the sandbox's networking
 * is set up (also on re-adopt). */
extern const struct net_pin_store net_store_pins;
void net_pins_restore(struct net_sb *ns);

/* relay.c: one direction of an egress connection, at most NET_BUF bytes
 * from a source to a destination: in buf (off, len) and, once it has a
 * pipe (relay_splice(), then NET_SPLICE_AFTER bytes), in the pipe (spl). */
struct relay {
	uint8_t *buf;
	size_t off, len, spl;
	uint64_t total;  /* bytes taken into buf */
	bool may_splice; /* a pipe is to be tried once total is past NET_SPLICE_AFTER */
	int pr, pw;      /* the pipe's ends, -1 without one */
	bool full;       /* the pipe refused bytes: no room until some go */
	bool eof;        /* the source ended */
	bool shut;       /* and the destination was told (shutdown SHUT_WR) */
};
void relay_init(struct relay *r);
/* The buffer: 0, or -1 out of memory. */
int relay_alloc(struct relay *r);
/* Carry bytes through a pipe from NET_SPLICE_AFTER on, if one can be had. */
void relay_splice(struct relay *r);
void relay_free(struct relay *r);
/* Buffers waiting for reuse (at most RELAY_CACHE), for the tests. */
unsigned relay_cached(void);
size_t relay_held(const struct relay *r);
/* Bytes the source may send now (0 after its end). */
size_t relay_room(const struct relay *r);
/* Take what fits from fd; drain to fd what it takes (counted in *count),
 * then pass the source's end on: a shutdown(SHUT_WR) of fd, or nothing if
 * closing (fd is closed as soon as this direction ends). 0, or -1 when the
 * connection is broken. */
int relay_fill(struct relay *r, int fd);
int relay_drain(struct relay *r, int fd, bool closing, uint64_t *count);

/* egress.c: a connection on the sandbox's listener. */
void egress_accept(struct net_sb *ns);
void egress_close_all(struct net_sb *ns);
/* The sandbox's policy changed: end the connections it now refuses. */
void egress_recheck(struct net_sb *ns);

/* udp.c: a KILN_NET_F_UDP stream whose hello was read (egress.c): the
 * relay replies and takes gfd over. */
void udp_relay_start(struct net_sb *ns, int gfd);
void udp_close_all(struct net_sb *ns);

/* dns.c: one stream of DNS messages (2-byte length prefixed) from the
 * guest. out gets every answer, whole, with its length prefix. */
struct dns_stream;
typedef void (*dns_out_fn)(void *ctx, const uint8_t *frame, size_t n);
struct dns_stream *dns_stream_new(struct net_sb *ns, bool datagram, dns_out_fn out, void *ctx);
/* Takes every whole message at p; returns the bytes taken, or -1 if the
 * stream is no DNS (a length of 0 or past the limit). */
long dns_stream_input(struct dns_stream *ds, const uint8_t *p, size_t n);
void dns_stream_free(struct dns_stream *ds);

/* resolver.c: c-ares on kilnd's loop. cb gets ARES_SUCCESS and the
 * answer, or an ARES_ error (then abuf is NULL); always exactly once. */
typedef void (*resolver_cb)(void *arg, int status, const uint8_t *abuf, int alen);
/* servers: "ADDR:PORT,..." or NULL; conf: a resolv.conf to read them from
 * instead of /etc/resolv.conf, or NULL. */
int resolver_new(struct ev_loop *loop, const char *servers, const char *conf,
                 struct resolver **out);
void resolver_free(struct resolver *r);
void resolver_query(struct resolver *r, const char *name, int type, resolver_cb cb, void *arg);

#endif
