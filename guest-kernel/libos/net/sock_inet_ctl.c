/* SPDX-License-Identifier: MIT */
/*
 * AF_INET/AF_INET6 options and ioctls. There is no TCP or IP underneath,
 * so the TCP and IP options change nothing: they are accepted, kept and
 * read back (defaults as Linux's over loopback).
 */
#include <asm/ioctls.h>
#include <asm/socket.h>

#include <kiln/sockpeer.h>

#include "errno_k.h"
#include "proc.h"
#include "sock_inet.h"
#include "uaccess.h"

#define IP_TOS            1
#define IP_TTL            2
#define IPV6_UNICAST_HOPS 16
#define IPV6_V6ONLY       26
#define TCP_NODELAY       1
#define TCP_MAXSEG        2
#define TCP_KEEPIDLE      4
#define TCP_KEEPINTVL     5
#define TCP_KEEPCNT       6
#define TCP_INFO          11
#define TCP_CONGESTION    13

/* ---------------------------------------------------------------- options */

static int put_int(void *val, int *len, int v)
{
	if (*len < 0)
		return -EINVAL;
	*len = MIN(*len, (int)sizeof(v));
	memcpy(val, &v, (size_t)*len);
	return 0;
}

static struct inet_opt *opt_find(struct inet_sk *is, int level, int name)
{
	for (int i = 0; i < is->nopts; i++)
		if (is->opts[i].level == level && is->opts[i].name == name)
			return &is->opts[i];
	return NULL;
}

static int opt_default(int level, int name)
{
	if (level == IPPROTO_TCP) {
		switch (name) {
		case TCP_MAXSEG:
			return 65483; /* the loopback MSS */
		case TCP_KEEPIDLE:
			return 7200;
		case TCP_KEEPINTVL:
			return 75;
		case TCP_KEEPCNT:
			return 9;
		}
	}
	if ((level == IPPROTO_IP && name == IP_TTL) ||
	    (level == IPPROTO_IPV6 && name == IPV6_UNICAST_HOPS))
		return 64;
	return 0;
}

int inet_getsockopt(struct socket *s, int level, int name, void *val, int *len)
{
	struct inet_sk *is = s->priv;
	struct inet_opt *o;
	static const char cong[] = "cubic";
	int v;

	switch (level) {
	case SOL_SOCKET:
		if (name == SO_ERROR) {
			if (is->eg)
				egress_update(is);
			v = is->e.err;
			is->e.err = 0;
			return put_int(val, len, v);
		}
		if (name == SO_PEERCRED) { /* none over IP: Linux's overflow ids */
			static const int nobody[3] = {0, 65534, 65534};

			*len = MIN(*len, (int)sizeof(nobody));
			memcpy(val, nobody, (size_t)*len);
			return 0;
		}
		return -ENOPROTOOPT;
	case IPPROTO_IPV6:
		if (is->family != AF_INET6)
			return -ENOPROTOOPT;
		if (name == IPV6_V6ONLY)
			return put_int(val, len, is->v6only);
		break;
	case IPPROTO_TCP:
		if (is->e.type != SOCK_STREAM)
			return -EOPNOTSUPP;
		if (name == TCP_CONGESTION) {
			*len = MIN(*len, (int)sizeof(cong));
			memcpy(val, cong, (size_t)*len);
			return 0;
		}
		if (name == TCP_INFO) {
			*len = 0; /* nothing to tell: no segments ever flew */
			return 0;
		}
		break;
	case IPPROTO_IP:
		break;
	default:
		return -EOPNOTSUPP;
	}
	o = opt_find(is, level, name);
	return put_int(val, len, o ? o->val : opt_default(level, name));
}

/* KILN_SO_PEER (include/kiln/sockpeer.h): the agent's, for a connection
 * it forwards. */
static int set_peer(struct inet_sk *is, int name, const void *val, int len)
{
	const struct proc *p = cur_proc();
	struct inet_addr a;
	uint16_t port;

	if (name != KILN_SO_PEER || is->e.type != SOCK_STREAM)
		return -ENOPROTOOPT;
	if (p->pidns || p->cred.u.eff != 0)
		return -EPERM;
	if (is->e.state != SP_OPEN || is->eg)
		return -EISCONN;
	if (len >= 2 && *(const uint16_t *)val == AF_UNSPEC) {
		is->as_peer = false;
		return 0;
	}
	if (inet_addr_in_any(val, len, &a, &port))
		return -EINVAL;
	is->as_peer = true;
	is->as_addr = a;
	is->as_port = port;
	return 0;
}

int inet_setsockopt(struct socket *s, int level, int name, const void *val, int len)
{
	struct inet_sk *is = s->priv;
	struct inet_opt *o;
	int v = 0;

	if (level == KILN_SOL_PEER)
		return set_peer(is, name, val, len);
	if (level == SOL_SOCKET)
		return -ENOPROTOOPT; /* all the generic code's */
	if (level != IPPROTO_IP && level != IPPROTO_IPV6 && level != IPPROTO_TCP)
		return -EOPNOTSUPP;
	if (level == IPPROTO_TCP && is->e.type != SOCK_STREAM)
		return -EOPNOTSUPP;
	if (level == IPPROTO_IPV6 && is->family != AF_INET6)
		return -ENOPROTOOPT;
	if (level == IPPROTO_TCP && name == TCP_CONGESTION)
		return 0;
	if (len >= (int)sizeof(int))
		memcpy(&v, val, sizeof(v));
	else if (len >= 1)
		v = *(const uint8_t *)val; /* Linux takes a byte for the IP ones */
	else
		return -EINVAL;
	if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) {
		if (is->bound)
			return -EINVAL;
		is->v6only = v != 0;
		return 0;
	}
	o = opt_find(is, level, name);
	if (!o) {
		if (is->nopts == INET_NOPTS)
			return 0; /* accepted, not kept */
		o = &is->opts[is->nopts++];
		o->level = level;
		o->name = name;
	}
	o->val = v;
	return 0;
}

/* ---------------------------------------------------------------- ioctls */

long inet_ioctl(struct socket *s, unsigned int cmd, unsigned long arg)
{
	struct inet_sk *is = s->priv;
	int v;

	switch (cmd) {
	case FIONREAD: /* SIOCINQ */
		if (is->e.state == SP_LISTEN)
			return -EINVAL;
		v = is->eg ? egress_inq(is) : sp_inq(&is->e);
		return copy_to_user((void *)arg, &v, sizeof(v));
	case TIOCOUTQ: /* SIOCOUTQ: for egress, nothing waits in the guest */
		if (is->e.state == SP_LISTEN)
			return -EINVAL;
		v = is->eg ? 0 : sp_outq(&is->e);
		return copy_to_user((void *)arg, &v, sizeof(v));
	}
	return netdev_ioctl(cmd, arg);
}
