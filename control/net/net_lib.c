/* SPDX-License-Identifier: MIT */
/* The part of a guest's networking that kilnd and the containerd shim
 * share (net_lib.mk): its listener, log lines, the host's addresses and
 * DNS pins. kilnd's sandbox glue is net.c; the shim's is shim/net.c. */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/net_int.h"
#include "util.h"

#define LOG_LINES_PER_S 20
#define HOST_ADDRS_MAX  256

void net_host_addrs(struct net_ctx *nc, const uint8_t (**v)[16], size_t *n)
{
	ev_tstamp now = ev_now(nc->loop);
	struct ifaddrs *ifa, *i;

	if (nc->host_at && now - nc->host_at < 10) {
		*v = (const uint8_t(*)[16])nc->host;
		*n = nc->nhost;
		return;
	}
	nc->host_at = now;
	if (!getifaddrs(&ifa)) {
		uint8_t(*h)[16] = calloc(HOST_ADDRS_MAX, 16);
		size_t k = 0;

		for (i = ifa; h && i && k < HOST_ADDRS_MAX; i = i->ifa_next) {
			if (!i->ifa_addr)
				continue;
			if (i->ifa_addr->sa_family == AF_INET) {
				h[k][10] = h[k][11] = 0xff;
				memcpy(h[k++] + 12, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				       4);
			} else if (i->ifa_addr->sa_family == AF_INET6) {
				memcpy(h[k++], &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
				       16);
			}
		}
		freeifaddrs(ifa);
		if (h) {
			free(nc->host);
			nc->host = h;
			nc->nhost = k;
		}
	}
	*v = (const uint8_t(*)[16])nc->host;
	*n = nc->nhost;
}

bool net_host_has_v6(struct net_ctx *nc)
{
	const uint8_t(*v)[16];
	size_t n;
	int prefix;

	net_host_addrs(nc, &v, &n);
	for (size_t i = 0; i < n; i++)
		if (!net_addr_is_v4(v[i]) && !net_addr_special(v[i], NULL, 0, &prefix))
			return true;
	return false;
}

const struct net_policy *net_sb_policy(const struct net_sb *ns)
{
	return ns->policy;
}

void net_log(struct net_sb *ns, const char *fmt, ...)
{
	ev_tstamp now = ev_now(ns->loop);
	char line[1024];
	size_t n = 0;
	va_list ap;
	int fd;

	if (now - ns->log_at >= 1) {
		ns->log_at = now;
		ns->log_lines = 0;
		if (ns->log_dropped)
			n = (size_t)snprintf(
			    line, sizeof(line),
			    "kiln-net: %u more lines about the network not logged\n",
			    ns->log_dropped);
		ns->log_dropped = 0;
	}
	if (++ns->log_lines > LOG_LINES_PER_S) {
		ns->log_dropped++;
		return;
	}
	n += (size_t)snprintf(line + n, sizeof(line) - n, "kiln-net: ");
	va_start(ap, fmt);
	if (n < sizeof(line))
		n += (size_t)vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	log_info("sandbox %s: %.*s", ns->id, (int)n - 1, line);
	fd = open(ns->console, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, n) < 0) {
		/* the log is best effort */
	}
	close(fd);
}

void net_pin(struct net_sb *ns, const uint8_t a[16], const char *name, int64_t expires_ms)
{
	struct net_pin old;

	if (net_pins_add(&ns->pins, a, name, expires_ms, &old) && ns->store)
		ns->store->put(ns, a, name, expires_ms, &old);
}

void net_pins_batch(struct net_sb *ns, bool begin)
{
	if (ns->store)
		ns->store->batch(ns, begin);
}

static void on_listen(struct ev_loop *loop, ev_io *w, int revents)
{
	egress_accept(w->data);
}

int net_listen(struct net_sb *ns, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	unlink(path);
	ns->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ns->lfd < 0 || bind(ns->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(ns->lfd, 128) || chmod(path, 0666)) {
		err = -errno;
		if (ns->lfd >= 0)
			close(ns->lfd);
		ns->lfd = -1;
		return err;
	}
	ev_io_init(&ns->lw, on_listen, ns->lfd, EV_READ);
	ns->lw.data = ns;
	ev_io_start(ns->loop, &ns->lw);
	return 0;
}

void net_unlisten(struct net_sb *ns)
{
	egress_close_all(ns);
	udp_close_all(ns);
	if (ns->lfd < 0)
		return;
	ev_io_stop(ns->loop, &ns->lw);
	close(ns->lfd);
	ns->lfd = -1;
}
