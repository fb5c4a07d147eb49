/* SPDX-License-Identifier: MIT */
/*
 * AF_UNIX sockets: SOCK_STREAM, SOCK_SEQPACKET and SOCK_DGRAM, with the
 * bytes moved by sockpair.c. This file keeps the addresses: a path name is
 * a socket node in the file system (bind creates it, connect looks it up,
 * the table below maps the node to its socket); an abstract name (one
 * starting with a NUL byte) lives only in the table; an unbound socket
 * that must have a name gets an abstract "\0xxxxx" one (autobind).
 *
 * SCM_RIGHTS and SCM_CREDENTIALS ride on the messages; SO_PASSCRED,
 * SO_PEERCRED (the peer's pid and effective ids when it connected).
 */
#include <asm/ioctls.h>
#include <asm/socket.h>
#include <linux/stat.h>

#include "errno_k.h"
#include "mm.h"
#include "pidns.h"
#include "printk.h"
#include "proc.h"
#include "sock_unix.h"
#include "uaccess.h"
#include "vfs.h"

#define UNIX_PATH_MAX 108
#define UNIX_ADDR_MAX (2 + UNIX_PATH_MAX) /* sizeof(struct sockaddr_un) */

struct sockaddr_un_k {
	uint16_t sun_family;
	char sun_path[UNIX_PATH_MAX];
};

/* A parsed address: a path (NUL-terminated) or an abstract name. */
struct unix_name {
	struct sockaddr_un_k sa;
	char nul;      /* ends a path of UNIX_PATH_MAX bytes */
	int len;       /* the canonical sockaddr length (a path's NUL included) */
	bool abstract; /* else sa.sun_path is a path */
	bool autobind; /* only the family was given (bind) */
};

static const struct sock_ops unix_ops;

struct unix_sk *unix_all;
static struct unix_sk *bound; /* bound, not yet closed */
static unsigned int autobind_next;

/* ---------------------------------------------------------------- lifetime */

static void unix_destroy(struct sp_end *e)
{
	struct unix_sk *u = container_of(e, struct unix_sk, e);

	if (u->aprev)
		u->aprev->anext = u->anext;
	else
		unix_all = u->anext;
	if (u->anext)
		u->anext->aprev = u->aprev;
	sp_addr_put(u->addr);
	kfree(u);
}

static struct unix_sk *unix_alloc(int type)
{
	struct unix_sk *u = kzalloc(sizeof(*u));

	if (!u)
		return NULL;
	sp_init(&u->e, type, unix_destroy);
	u->anext = unix_all;
	if (unix_all)
		unix_all->aprev = u;
	unix_all = u;
	return u;
}

static void attach(struct socket *s, struct unix_sk *u)
{
	s->ops = &unix_ops;
	s->priv = u;
	u->sock = s;
}

struct unix_sk *unix_sk_of_file(struct file *f)
{
	struct socket *s;

	if (f->ops != &sock_file_ops)
		return NULL;
	s = f->priv;
	return s->ops == &unix_ops ? s->priv : NULL;
}

static struct sock_ucred my_cred(void)
{
	const struct cred *c = cur_cred();

	return (struct sock_ucred){.pid = cur_proc()->pid, .uid = c->u.eff, .gid = c->g.eff};
}

static struct unix_sk *peer_of(const struct unix_sk *u)
{
	return u->e.peer ? container_of(u->e.peer, struct unix_sk, e) : NULL;
}

/* ---------------------------------------------------------------- names */

static int name_parse(const void *addr, int len, struct unix_name *n)
{
	const struct sockaddr_un_k *a = addr;

	memset(n, 0, sizeof(*n));
	if (len < 2 || len > UNIX_ADDR_MAX || a->sun_family != AF_UNIX)
		return -EINVAL;
	n->sa.sun_family = AF_UNIX;
	if (len == 2) {
		n->autobind = true;
		return 0;
	}
	memcpy(n->sa.sun_path, a->sun_path, (size_t)len - 2);
	if (!a->sun_path[0]) {
		n->abstract = true;
		n->len = len;
		return 0;
	}
	/* A path ends at its first NUL, or at the end of the address. */
	n->len = 2 + (int)strnlen(n->sa.sun_path, (size_t)len - 2) + 1;
	return 0;
}

/* The path of n, NUL-terminated, in buf (UNIX_PATH_MAX + 1 bytes). */
static const char *name_path(const struct unix_name *n, char *buf)
{
	memcpy(buf, n->sa.sun_path, UNIX_PATH_MAX);
	buf[UNIX_PATH_MAX] = 0;
	return buf;
}

/* Abstract names are per socket type, as Linux hashes them. */
static struct unix_sk *find_abstract(const void *sa, int len, int type)
{
	for (struct unix_sk *u = bound; u; u = u->bnext)
		if (!u->ip && u->e.type == type && u->addr->len == len &&
		    !memcmp(u->addr->bytes, sa, (size_t)len))
			return u;
	return NULL;
}

/* The socket of this type a name leads to: -ENOENT and the like for a
 * path that is not there, -ECONNREFUSED when nothing is bound to it (any
 * more), -EPROTOTYPE for a path socket of another type. */
static int lookup(const struct unix_name *n, int type, struct unix_sk **out)
{
	char path[UNIX_PATH_MAX + 1];
	struct inode *ip;
	int err;

	if (n->autobind)
		return -EINVAL;
	if (n->abstract) {
		*out = find_abstract(&n->sa, n->len, type);
		return *out ? 0 : -ECONNREFUSED;
	}
	err = vfs_lookup(name_path(n, path), true, &ip);
	if (err)
		return err;
	*out = NULL;
	if ((vfs_inode_mode(ip) & S_IFMT) == S_IFSOCK)
		for (struct unix_sk *u = bound; u; u = u->bnext)
			if (u->ip == ip)
				*out = u;
	inode_put(ip);
	if (!*out)
		return -ECONNREFUSED;
	return (*out)->e.type == type ? 0 : -EPROTOTYPE;
}

static int bind_name(struct unix_sk *u, struct unix_name *n)
{
	char path[UNIX_PATH_MAX + 1];
	struct sp_addr *a;
	int err;

	if (n->autobind) {
		/* Linux's autobind: "\0" and five hex digits, the first free. */
		for (unsigned int tries = 0;; tries++) {
			if (tries > 0xfffff)
				return -ENOSPC;
			n->sa.sun_path[0] = 0;
			ksnprintf(n->sa.sun_path + 1, 6, "%05x", autobind_next++ & 0xfffff);
			n->len = 2 + 6;
			if (!find_abstract(&n->sa, n->len, u->e.type))
				break;
		}
		n->abstract = true;
	}
	a = sp_addr_new(&n->sa, n->len);
	if (!a)
		return -ENOMEM;
	if (n->abstract) {
		if (find_abstract(&n->sa, n->len, u->e.type)) {
			sp_addr_put(a);
			return -EADDRINUSE;
		}
	} else {
		err = vfs_mknod(name_path(n, path), S_IFSOCK | 0777, &u->ip);
		if (err) {
			sp_addr_put(a);
			return err == -EEXIST ? -EADDRINUSE : err;
		}
	}
	u->addr = a;
	u->bnext = bound;
	bound = u;
	return 0;
}

static int autobind(struct unix_sk *u)
{
	struct unix_name n = {.autobind = true};

	n.sa.sun_family = AF_UNIX;
	return u->addr ? 0 : bind_name(u, &n);
}

static void unbind(struct unix_sk *u)
{
	for (struct unix_sk **pp = &bound; *pp; pp = &(*pp)->bnext) {
		if (*pp == u) {
			*pp = u->bnext;
			break;
		}
	}
	if (u->ip) {
		inode_put(u->ip);
		u->ip = NULL;
	}
}

/* ---------------------------------------------------------------- setup */

static int unix_bind(struct socket *s, const void *addr, int len)
{
	struct unix_sk *u = s->priv;
	struct unix_name n;
	int err = name_parse(addr, len, &n);

	if (err)
		return err;
	if (u->addr)
		return -EINVAL;
	return bind_name(u, &n);
}

static int unix_listen(struct socket *s, int backlog)
{
	struct unix_sk *u = s->priv;

	if (u->e.type == SOCK_DGRAM)
		return -EOPNOTSUPP;
	if (!u->addr || u->e.state == SP_CONNECTED)
		return -EINVAL;
	sp_listen(&u->e, backlog);
	u->peercred = my_cred();
	u->has_peercred = true;
	return 0;
}

/* In Linux's order: the listener, its backlog, then our own state. */
static int stream_connect(struct socket *s, struct unix_sk *u, const struct unix_name *n,
                          bool nonblock)
{
	struct unix_sk *l, *c;
	int err;

	if (u->passcred && (err = autobind(u)))
		return err;
	for (;;) {
		err = lookup(n, u->e.type, &l);
		if (err)
			return err;
		if (l->e.state != SP_LISTEN || (l->e.shut & SP_SHUT_RD))
			return -ECONNREFUSED;
		if (!sp_acc_full(&l->e))
			break;
		/* Wait for room, then look again: the listener may be gone. */
		err = sp_connect_wait(&l->e, s, nonblock);
		if (err)
			return err;
	}
	if (u->e.state == SP_CONNECTED)
		return -EISCONN;
	if (u->e.state != SP_OPEN)
		return -EINVAL;
	c = unix_alloc(u->e.type);
	if (!c)
		return -ENOMEM;
	if (l->addr) {
		sp_addr_get(l->addr);
		c->addr = l->addr;
	}
	c->passcred = l->passcred;
	c->peercred = my_cred();
	c->has_peercred = true;
	u->peercred = l->peercred;
	u->has_peercred = true;
	sp_link(&u->e, &c->e);
	sp_enqueue(&l->e, &c->e);
	return 0;
}

static int dgram_connect(struct unix_sk *u, const void *addr, int len)
{
	struct unix_name n;
	struct unix_sk *t;
	int err;

	if (len >= 2 && ((const uint16_t *)addr)[0] == AF_UNSPEC) {
		sp_set_peer(&u->e, NULL);
		return 0;
	}
	err = name_parse(addr, len, &n);
	if (!err)
		err = lookup(&n, SOCK_DGRAM, &t);
	if (err)
		return err;
	if (t != u && t->e.peer && t->e.peer != &u->e)
		return -EPERM;
	if (u->passcred && (err = autobind(u)))
		return err;
	sp_set_peer(&u->e, &t->e);
	return 0;
}

static int unix_connect(struct socket *s, const void *addr, int len, bool nonblock)
{
	struct unix_sk *u = s->priv;
	struct unix_name n;
	int err;

	if (u->e.type == SOCK_DGRAM)
		return dgram_connect(u, addr, len);
	err = name_parse(addr, len, &n);
	return err ? err : stream_connect(s, u, &n, nonblock);
}

static int unix_accept(struct socket *s, struct socket *ns, bool nonblock)
{
	struct unix_sk *u = s->priv;
	struct sp_end *c;
	int err;

	if (u->e.type == SOCK_DGRAM)
		return -EOPNOTSUPP;
	err = sp_accept(&u->e, s, nonblock, &c);
	if (err)
		return err;
	attach(ns, container_of(c, struct unix_sk, e));
	return 0;
}

static int unix_getname(struct socket *s, void *addr, bool peer)
{
	struct unix_sk *u = s->priv, *p = peer_of(u);
	struct sp_addr *a = u->addr;

	if (peer) {
		if (!p || (u->e.type != SOCK_DGRAM && u->e.state != SP_CONNECTED))
			return -ENOTCONN;
		a = p->addr;
	}
	if (!a) {
		*(uint16_t *)addr = AF_UNIX;
		return 2;
	}
	memcpy(addr, a->bytes, (size_t)a->len);
	return a->len;
}

/* ---------------------------------------------------------------- data */

static long dgram_send(struct socket *s, struct unix_sk *u, struct sock_iter *it, const void *addr,
                       int addrlen, int flags)
{
	struct unix_sk *t = peer_of(u);
	struct unix_name n;
	long r;

	if (addr) {
		r = name_parse(addr, addrlen, &n);
		if (!r)
			r = lookup(&n, SOCK_DGRAM, &t);
		if (r)
			return r;
	} else if (!t) {
		return -ENOTCONN;
	}
	if (t != u && t->e.peer && t->e.peer != &u->e && !t->e.dead)
		return -EPERM;
	if (u->passcred && (r = autobind(u)))
		return r;
	sp_get(&t->e);
	r = sp_send_to(&u->e, &t->e, s, it, flags, u->addr, t->e.peer != &u->e);
	/* A send to a default peer that is gone disconnects, as in Linux. */
	if (r == -ECONNREFUSED && &t->e == u->e.peer)
		sp_set_peer(&u->e, NULL);
	sp_put(&t->e);
	return r;
}

static long unix_sendmsg(struct socket *s, struct sock_iter *it, const void *addr, int addrlen,
                         int flags)
{
	struct unix_sk *u = s->priv;

	switch (u->e.type) {
	case SOCK_DGRAM:
		return dgram_send(s, u, it, addr, addrlen, flags);
	case SOCK_STREAM:
		if (addr)
			return u->e.state == SP_CONNECTED ? -EISCONN : -EOPNOTSUPP;
		break;
	default: /* SOCK_SEQPACKET: an address is ignored */
		if (u->e.state != SP_CONNECTED)
			return -ENOTCONN;
	}
	return sp_send(&u->e, s, it, flags, u->addr);
}

static long unix_recvmsg(struct socket *s, struct sock_iter *it, void *addr, int *addrlen,
                         int flags, int *msg_flags)
{
	struct unix_sk *u = s->priv;

	if (u->e.type == SOCK_STREAM && u->e.state != SP_CONNECTED)
		return -EINVAL;
	if (u->e.type == SOCK_SEQPACKET && u->e.state != SP_CONNECTED)
		return -ENOTCONN;
	return sp_recv(&u->e, s, it, flags, msg_flags, addr, addrlen, u->passcred);
}

static int unix_shutdown(struct socket *s, int how)
{
	struct unix_sk *u = s->priv;

	return sp_shutdown(&u->e, how);
}

/* ---------------------------------------------------------------- options, poll */

static int put_opt(void *val, int *len, const void *v, int n)
{
	*len = MIN(*len, n);
	memcpy(val, v, (size_t)*len);
	return 0;
}

static int unix_getsockopt(struct socket *s, int level, int name, void *val, int *len)
{
	struct unix_sk *u = s->priv;
	struct sock_ucred c = {0, 65534, 65534}; /* no peer: the overflow ids */
	int v;

	if (level != SOL_SOCKET)
		return -EOPNOTSUPP;
	switch (name) {
	case SO_PEERCRED:
		if (u->has_peercred)
			c = u->peercred;
		c.pid = pid_to_user(cur_proc(), c.pid);
		return put_opt(val, len, &c, sizeof(c));
	case SO_PASSCRED:
		v = u->passcred;
		return put_opt(val, len, &v, sizeof(v));
	case SO_ERROR:
		v = u->e.err;
		u->e.err = 0;
		return put_opt(val, len, &v, sizeof(v));
	}
	return -ENOPROTOOPT;
}

static int unix_setsockopt(struct socket *s, int level, int name, const void *val, int len)
{
	struct unix_sk *u = s->priv;
	int v;

	if (level != SOL_SOCKET)
		return -EOPNOTSUPP;
	if (name != SO_PASSCRED)
		return -ENOPROTOOPT;
	if (len < (int)sizeof(int))
		return -EINVAL;
	memcpy(&v, val, sizeof(v));
	u->passcred = v != 0;
	return 0;
}

static unsigned int unix_poll(struct socket *s)
{
	struct unix_sk *u = s->priv;

	return sp_poll(&u->e, s);
}

static void unix_poll_wait(struct socket *s, struct poll_table *pt)
{
	struct unix_sk *u = s->priv;

	sp_poll_wait(&u->e, pt);
}

static long unix_ioctl(struct socket *s, unsigned int cmd, unsigned long arg)
{
	struct unix_sk *u = s->priv;
	int v;

	switch (cmd) {
	case FIONREAD: /* SIOCINQ */
		if (u->e.state == SP_LISTEN)
			return -EINVAL;
		v = sp_inq(&u->e);
		break;
	case TIOCOUTQ: /* SIOCOUTQ */
		if (u->e.state == SP_LISTEN)
			return -EINVAL;
		v = sp_outq(&u->e);
		break;
	default:
		return netdev_ioctl(cmd, arg);
	}
	return copy_to_user((void *)arg, &v, sizeof(v));
}

static void unix_release(struct socket *s)
{
	struct unix_sk *u = s->priv;

	if (!u)
		return;
	u->sock = NULL;
	unbind(u);
	sp_release(&u->e, false);
	unix_gc();
}

static const struct sock_ops unix_ops = {
    .bind = unix_bind,
    .connect = unix_connect,
    .listen = unix_listen,
    .accept = unix_accept,
    .getname = unix_getname,
    .shutdown = unix_shutdown,
    .sendmsg = unix_sendmsg,
    .recvmsg = unix_recvmsg,
    .getsockopt = unix_getsockopt,
    .setsockopt = unix_setsockopt,
    .poll = unix_poll,
    .poll_wait = unix_poll_wait,
    .ioctl = unix_ioctl,
    .release = unix_release,
    .scm = true,
};

/* ---------------------------------------------------------------- the family */

/* Linux takes SOCK_RAW for SOCK_DGRAM here. */
static int check_type(struct socket *s, int protocol)
{
	if (protocol && protocol != AF_UNIX)
		return -EPROTONOSUPPORT;
	if (s->type == SOCK_RAW)
		s->type = SOCK_DGRAM;
	if (s->type != SOCK_STREAM && s->type != SOCK_DGRAM && s->type != SOCK_SEQPACKET)
		return -ESOCKTNOSUPPORT;
	return 0;
}

static int unix_create(struct socket *s, int protocol)
{
	struct unix_sk *u;
	int err = check_type(s, protocol);

	if (err)
		return err;
	u = unix_alloc(s->type);
	if (!u)
		return -ENOMEM;
	attach(s, u);
	return 0;
}

static int unix_pair(struct socket *a, struct socket *b, int protocol)
{
	struct unix_sk *ua, *ub;
	int err = check_type(a, protocol);

	if (err)
		return err;
	b->type = a->type;
	ua = unix_alloc(a->type);
	ub = ua ? unix_alloc(a->type) : NULL;
	if (!ub) {
		if (ua)
			sp_put(&ua->e);
		return -ENOMEM;
	}
	ua->peercred = ub->peercred = my_cred();
	ua->has_peercred = ub->has_peercred = true;
	sp_link(&ua->e, &ub->e);
	attach(a, ua);
	attach(b, ub);
	return 0;
}

const struct sock_family unix_family = {
    .family = AF_UNIX,
    .create = unix_create,
    .pair = unix_pair,
};
