/* SPDX-License-Identifier: MIT */
/*
 * The VM's network: the pod's network namespace, as a runc container has
 * it. The guest has no NIC; its sockets reach the host over vsock
 * (include/kiln/net.h), and here the shim answers them with kilnd's own
 * egress code (control/net/net_lib.mk): one thread that has joined the
 * namespace the spec names (linux.namespaces[type=network].path) runs a
 * libev loop with the egress listener at "vsock.sock_1025" in the bundle,
 * so every connect, UDP datagram and DNS lookup of the guest leaves from
 * that namespace. The VMM stays in its jail, in the shim's namespace.
 *
 * A network entry without a path is a new namespace with only loopback
 * (up), as runc makes it; no network entry at all is the shim's own
 * namespace (runc: the host's, `ctr run --net-host`). There is no kiln
 * allow-list (struct net_policy's "any"): the namespace's routes and
 * firewall are the policy, as for runc. Refused: host.kiln.internal (no
 * kiln host here), the resolver stand-in on other ports than 53, more
 * connections or UDP sockets than kilnd allows a sandbox.
 *
 * Inbound: the guest's wildcard TCP listeners, announced on the same
 * listener, are served at the pod's addresses by net_in.c, on this thread.
 *
 * DNS: the resolver stand-in asks the servers of the pod's resolv.conf
 * (the spec's bind at /etc/resolv.conf, which binds.c also copies into the
 * guest; else the host's /etc/resolv.conf), from the namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/net.h>

#include "net/net_int.h"
#include "shim.h"

enum { NETNS_OWN = -2, NETNS_NEW = -1 };

struct shim_net {
	pthread_t thread;
	int nsfd; /* the namespace to join, or NETNS_OWN / NETNS_NEW */
	char *conf, lpath[160], agent[128];
	struct net_in *in; /* inbound ports (net_in.c) */
	struct ev_loop *loop;
	ev_async stop;
	struct net_ctx nc;
	struct net_sb ns;
	struct net_policy pol;
	/* the thread's start: err (0 or -errno) and msg, then ready */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool ready;
	int err;
	char msg[512];
};

/* One network entry of the spec: *fd the namespace it opens, or NETNS_NEW. */
static int netns_entry(void *arg, size_t i, const char *path, char *msg, size_t n)
{
	int *fd = arg;

	if (*fd >= 0)
		close(*fd);
	*fd = NETNS_NEW;
	if (!path)
		return 0;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0 || ioctl(*fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		int err = *fd < 0 ? -errno : -EINVAL;

		snprintf(msg, n, "linux.namespaces[%zu].path %s is not a network namespace%s%s", i,
		         path, *fd < 0 ? ": " : "", *fd < 0 ? strerror(-err) : "");
		if (*fd >= 0)
			close(*fd);
		*fd = NETNS_OWN;
		return err;
	}
	return 0;
}

/* The spec's network namespace: *fd the open namespace, or NETNS_OWN /
 * NETNS_NEW. Anything else than a network namespace is refused. */
static int spec_netns(const char *bundle, int *fd, char *msg, size_t n)
{
	int err;

	*fd = NETNS_OWN;
	err = spec_each_ns(bundle, "network", netns_entry, fd, msg, n);
	if (err && *fd >= 0) {
		close(*fd);
		*fd = NETNS_OWN;
	}
	return err;
}

/* A new namespace's loopback is down; runc brings it up. */
static int lo_up(void)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		err = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!err && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -errno;
	close(fd);
	return err;
}

static void on_stop(struct ev_loop *loop, ev_async *w, int revents)
{
	ev_break(loop, EVBREAK_ALL);
}

static void started(struct shim_net *sn, int err, const char *what)
{
	pthread_mutex_lock(&sn->lock);
	sn->err = err;
	if (err)
		snprintf(sn->msg, sizeof(sn->msg), "the VM's network: %s: %s", what,
		         strerror(-err));
	sn->ready = true;
	pthread_cond_broadcast(&sn->cond);
	pthread_mutex_unlock(&sn->lock);
}

static void *net_thread(void *arg)
{
	struct shim_net *sn = arg;
	int err = 0;

	if (sn->nsfd >= 0 && setns(sn->nsfd, CLONE_NEWNET)) {
		started(sn, -errno, "setns into the pod's network namespace");
		return NULL;
	}
	if (sn->nsfd == NETNS_NEW && unshare(CLONE_NEWNET)) {
		started(sn, -errno, "a new network namespace");
		return NULL;
	}
	if (sn->nsfd == NETNS_NEW && (err = lo_up())) {
		started(sn, err, "the new network namespace's loopback");
		return NULL;
	}
	sn->loop = ev_loop_new(EVFLAG_AUTO);
	if (!sn->loop) {
		started(sn, -ENOMEM, "its event loop");
		return NULL;
	}
	sn->nc.loop = sn->ns.loop = sn->loop;
	if ((err = resolver_new(sn->loop, NULL, sn->conf, &sn->nc.res))) {
		started(sn, err, sn->conf ? sn->conf : "the resolver");
		goto out;
	}
	if (!(sn->in = net_in_new(&sn->ns, sn->agent))) {
		started(sn, -ENOMEM, "inbound ports");
		goto out;
	}
	if ((err = net_listen(&sn->ns, sn->lpath))) {
		started(sn, err, sn->lpath);
		goto out;
	}
	ev_async_init(&sn->stop, on_stop);
	ev_async_start(sn->loop, &sn->stop);
	started(sn, 0, NULL);
	ev_run(sn->loop, 0);
	net_unlisten(&sn->ns);
	unlink(sn->lpath);
out:
	net_in_free(sn->in);
	sn->in = NULL;
	resolver_free(sn->nc.res);
	sn->nc.res = NULL;
	free(sn->nc.host);
	sn->nc.host = NULL;
	ev_loop_destroy(sn->loop);
	sn->loop = NULL;
	return NULL;
}

static void net_free(struct shim_net *sn)
{
	if (sn->nsfd >= 0)
		close(sn->nsfd);
	net_pins_free(&sn->ns.pins);
	pthread_mutex_destroy(&sn->lock);
	pthread_cond_destroy(&sn->cond);
	free(sn->conf);
	free(sn);
}

int net_start(struct shim *s, const char *bundle, const struct spec_binds *b, char *msg, size_t n)
{
	struct shim_net *sn = calloc(1, sizeof(*sn));
	int err;

	if (!sn)
		return -ENOMEM;
	pthread_mutex_init(&sn->lock, NULL);
	pthread_cond_init(&sn->cond, NULL);
	if ((err = spec_netns(bundle, &sn->nsfd, msg, n))) {
		net_free(sn);
		return err;
	}
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->v[i].dst, "/etc/resolv.conf") && !(sn->conf = strdup(b->v[i].src))) {
			net_free(sn);
			return -ENOMEM;
		}
	snprintf(sn->lpath, sizeof(sn->lpath), "%s_%u", s->vm.vsock, KILN_NET_PORT);
	snprintf(sn->agent, sizeof(sn->agent), "%s", s->vm.vsock);
	sn->pol.internet = sn->pol.any = true;
	sn->ns.nc = &sn->nc;
	sn->ns.id = s->id;
	sn->ns.console = s->vm.console;
	sn->ns.policy = &sn->pol;
	sn->ns.lfd = -1;
	if ((err = -pthread_create(&sn->thread, NULL, net_thread, sn))) {
		snprintf(msg, n, "the VM's network: cannot start its thread: %s", strerror(-err));
		net_free(sn);
		return err;
	}
	pthread_mutex_lock(&sn->lock);
	while (!sn->ready)
		pthread_cond_wait(&sn->cond, &sn->lock);
	err = sn->err;
	pthread_mutex_unlock(&sn->lock);
	if (err) {
		snprintf(msg, n, "%s", sn->msg);
		pthread_join(sn->thread, NULL);
		net_free(sn);
		return err;
	}
	s->net = sn;
	return 0;
}

void net_stop(struct shim *s)
{
	struct shim_net *sn = s->net;

	if (!sn)
		return;
	s->net = NULL;
	ev_async_send(sn->loop, &sn->stop);
	pthread_join(sn->thread, NULL);
	net_free(sn);
}
