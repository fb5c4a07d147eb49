/* SPDX-License-Identifier: MIT */
/*
 * getsockopt and setsockopt. The socket's family sees every option first;
 * the SOL_SOCKET ones it leaves (-ENOPROTOOPT) are kept here, in struct
 * socket, for every family alike.
 */
#include <asm/socket.h>

#include "proc.h"
#include "socket.h"
#include "syscall.h"
#include "vfs.h"

#define OPT_MAX 256    /* option values are copied in up to this size */
#define BUF_MIN 2304   /* Linux's SOCK_MIN_RCVBUF */
#define BUF_MAX 212992 /* net.core.rmem_max / wmem_max, doubled on set */

struct timeval_k {
	int64_t sec, usec;
};

static int opt_int(const void *val, int len, int *out)
{
	if (len < (int)sizeof(int))
		return -EINVAL;
	memcpy(out, val, sizeof(int));
	return 0;
}

static int set_timeo(uint64_t *timeo, const void *val, int len)
{
	struct timeval_k tv;

	if (len < (int)sizeof(tv))
		return -EINVAL;
	memcpy(&tv, val, sizeof(tv));
	if (tv.usec < 0 || tv.usec >= 1000000)
		return -EDOM;
	if (tv.sec < 0)
		*timeo = 1; /* Linux: already expired */
	else if ((uint64_t)tv.sec > (1ULL << 32))
		*timeo = 0;
	else
		*timeo = (uint64_t)tv.sec * 1000000000ULL + (uint64_t)tv.usec * 1000;
	return 0;
}

static int clamp_buf(int v, int min)
{
	int64_t d = (int64_t)MIN((int64_t)v, (int64_t)BUF_MAX) * 2;

	return (int)MAX(d, (int64_t)min);
}

static int generic_set(struct socket *s, int name, const void *val, int len)
{
	int v = 0, err = 0;

	switch (name) {
	case SO_RCVTIMEO_OLD:
	case SO_RCVTIMEO_NEW:
		return set_timeo(&s->rcvtimeo_ns, val, len);
	case SO_SNDTIMEO_OLD:
	case SO_SNDTIMEO_NEW:
		return set_timeo(&s->sndtimeo_ns, val, len);
	case SO_LINGER:
		if (len < 8)
			return -EINVAL;
		memcpy(&s->linger_onoff, val, 4);
		memcpy(&s->linger_secs, (const char *)val + 4, 4);
		return 0;
	}
	err = opt_int(val, len, &v);
	if (err)
		return err;
	switch (name) {
	case SO_REUSEADDR:
		s->reuseaddr = v;
		break;
	case SO_REUSEPORT:
		s->reuseport = v;
		break;
	case SO_KEEPALIVE:
		s->keepalive = v;
		break;
	case SO_BROADCAST:
		s->broadcast = v;
		break;
	case SO_OOBINLINE:
		s->oobinline = v;
		break;
	case SO_RCVBUF:
	case SO_RCVBUFFORCE:
		s->rcvbuf = clamp_buf(v, BUF_MIN);
		break;
	case SO_SNDBUF:
	case SO_SNDBUFFORCE:
		s->sndbuf = clamp_buf(v, 2 * BUF_MIN);
		break;
	case SO_RCVLOWAT:
		s->rcvlowat = v < 1 ? 1 : v;
		break;
	case SO_DEBUG:
	case SO_DONTROUTE:
	case SO_PRIORITY:
	case SO_SNDLOWAT:
	case SO_PASSCRED:
	case SO_TIMESTAMP_OLD:
	case SO_MARK:
	case SO_ZEROCOPY:
		break; /* accepted, no effect here */
	default:
		err = -ENOPROTOOPT;
	}
	return err;
}

static int generic_get(struct socket *s, int name, void *val, int *len)
{
	struct timeval_k tv;
	uint64_t t;
	int v;

	switch (name) {
	case SO_RCVTIMEO_OLD:
	case SO_RCVTIMEO_NEW:
	case SO_SNDTIMEO_OLD:
	case SO_SNDTIMEO_NEW:
		t = (name == SO_RCVTIMEO_OLD || name == SO_RCVTIMEO_NEW) ? s->rcvtimeo_ns
		                                                         : s->sndtimeo_ns;
		tv.sec = (int64_t)(t / 1000000000ULL);
		tv.usec = (int64_t)(t % 1000000000ULL / 1000);
		*len = MIN(*len, (int)sizeof(tv));
		memcpy(val, &tv, (size_t)*len);
		return 0;
	case SO_LINGER:
		*len = MIN(*len, 8);
		memcpy(val, (int[2]){s->linger_onoff, s->linger_secs}, (size_t)*len);
		return 0;
	case SO_TYPE:
		v = s->type;
		break;
	case SO_DOMAIN:
		v = s->family;
		break;
	case SO_PROTOCOL:
		v = s->protocol;
		break;
	case SO_ACCEPTCONN:
		v = s->listening;
		break;
	case SO_ERROR:
		v = 0;
		break;
	case SO_REUSEADDR:
		v = s->reuseaddr;
		break;
	case SO_REUSEPORT:
		v = s->reuseport;
		break;
	case SO_KEEPALIVE:
		v = s->keepalive;
		break;
	case SO_BROADCAST:
		v = s->broadcast;
		break;
	case SO_OOBINLINE:
		v = s->oobinline;
		break;
	case SO_RCVBUF:
		v = s->rcvbuf;
		break;
	case SO_SNDBUF:
		v = s->sndbuf;
		break;
	case SO_RCVLOWAT:
		v = s->rcvlowat;
		break;
	case SO_SNDLOWAT:
		v = 1;
		break;
	case SO_DEBUG:
	case SO_DONTROUTE:
	case SO_PRIORITY:
		v = 0;
		break;
	default:
		return -ENOPROTOOPT;
	}
	*len = MIN(*len, (int)sizeof(v));
	memcpy(val, &v, (size_t)*len);
	return 0;
}

SYSCALL_DEFINE(setsockopt)
{
	int level = (int)a1, name = (int)a2, len = (int)a4;
	char val[OPT_MAX];
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	if (len < 0) {
		err = -EINVAL;
		goto out;
	}
	len = MIN(len, OPT_MAX);
	if (len && copy_from_user(val, (const void *)a3, (size_t)len)) {
		err = -EFAULT;
		goto out;
	}
	err = s->ops->setsockopt ? s->ops->setsockopt(s, level, name, val, len) : -ENOPROTOOPT;
	if (err == -ENOPROTOOPT && level == SOL_SOCKET)
		err = generic_set(s, name, val, len);
out:
	file_put(f);
	return err;
}

SYSCALL_DEFINE(getsockopt)
{
	int level = (int)a1, name = (int)a2, len, ulen;
	char val[OPT_MAX];
	struct socket *s;
	struct file *f;
	long err;

	if (!(s = sock_lookup(a0, &f, &err)))
		return err;
	if (copy_from_user(&ulen, (const void *)a4, sizeof(ulen))) {
		err = -EFAULT;
		goto out;
	}
	if (ulen < 0) {
		err = -EINVAL;
		goto out;
	}
	len = MIN(ulen, OPT_MAX);
	err = s->ops->getsockopt ? s->ops->getsockopt(s, level, name, val, &len) : -ENOPROTOOPT;
	if (err == -ENOPROTOOPT && level == SOL_SOCKET) {
		len = MIN(ulen, OPT_MAX);
		err = generic_get(s, name, val, &len);
	}
	if (!err && len && copy_to_user((void *)a3, val, (size_t)len))
		err = -EFAULT;
	if (!err && copy_to_user((void *)a4, &len, sizeof(len)))
		err = -EFAULT;
out:
	file_put(f);
	return err;
}
