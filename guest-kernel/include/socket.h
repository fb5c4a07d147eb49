/* SPDX-License-Identifier: MIT */
/*
 * Sockets: the syscalls (socket.c, socket_msg.c, socket_opt.c) and the
 * address families behind them.
 *
 * The layer owns what every socket has: the open file (an anonymous
 * S_IFSOCK inode, so fstat says socket and /proc says socket:[ino]), the
 * descriptor, the copying of addresses, msghdrs and option values between
 * the program and the kernel, the generic SOL_SOCKET options, SIGPIPE. An
 * address family supplies two tables:
 *
 *   struct sock_family  found by domain in socket.c's families[]; to add a
 *                       family, declare its table at the end of this file
 *                       and add a line there. create() fills in a fresh
 *                       struct socket: s->ops and s->priv.
 *   struct sock_ops     the socket's operations. Every one may be NULL: the
 *                       layer answers -EOPNOTSUPP (or the errno noted).
 *
 * Calls into sock_ops run with a reference on the socket's file held, so a
 * socket is never released under a call blocked in it (a close() from
 * another thread only drops the descriptor, as in Linux); but other calls
 * on the same socket may run while one sleeps, so state is re-checked after
 * every wait. Blocking ops wait on their own wait queues and return
 * -ERESTARTSYS when a signal interrupts them before any byte moved; -EAGAIN
 * where they would block and the socket or the call is non-blocking, or a
 * SO_RCVTIMEO/SO_SNDTIMEO ran out. Data moves through a struct sock_iter,
 * which may point at program or kernel memory.
 *
 * Families not in the table get -EAFNOSUPPORT from socket() and
 * socketpair().
 */
#ifndef KILN_SOCKET_H
#define KILN_SOCKET_H

#include <linux/uio.h>

#include "klib.h"

/* The Linux ABI's constants (glibc's, which the guest kernel cannot include). */
#define AF_UNSPEC 0
#define AF_UNIX   1
#define AF_INET   2
#define AF_INET6  10
#define AF_VSOCK  40
#define AF_MAX    46

#define SOCK_STREAM    1
#define SOCK_DGRAM     2
#define SOCK_RAW       3
#define SOCK_SEQPACKET 5
#define SOCK_TYPE_MASK 0xf
#define SOCK_NONBLOCK  00004000
#define SOCK_CLOEXEC   02000000

#define MSG_OOB          0x1
#define MSG_PEEK         0x2
#define MSG_CTRUNC       0x8
#define MSG_TRUNC        0x20
#define MSG_DONTWAIT     0x40
#define MSG_EOR          0x80
#define MSG_WAITALL      0x100
#define MSG_ERRQUEUE     0x2000
#define MSG_NOSIGNAL     0x4000
#define MSG_MORE         0x8000
#define MSG_WAITFORONE   0x10000
#define MSG_CMSG_CLOEXEC 0x40000000

#define SHUT_RD   0
#define SHUT_WR   1
#define SHUT_RDWR 2

#define SOCK_ADDR_MAX 128 /* sizeof(struct sockaddr_storage) */

struct file;
struct poll_table;
struct socket;

/* Ancillary data of one sendmsg or recvmsg (SCM_RIGHTS, SCM_CREDENTIALS),
 * for the families whose sock_ops set .scm; socket_scm.c moves it between
 * this and the program's msg_control. On send, fp holds references on the
 * files to pass: sendmsg takes those it queues (sets fp NULL, nfp 0), the
 * layer drops the rest after the call. On receive, recvmsg puts references
 * in fp (kmalloc'd) and the sender's creds (has_creds) for the layer to
 * install and copy out. */
#define SCM_MAX_FD 253 /* files in one message, as Linux */

struct sock_ucred {
	int32_t pid;
	uint32_t uid, gid;
};

struct sock_scm {
	struct file **fp;
	int nfp;
	bool has_creds;
	struct sock_ucred creds;
};

/* Where a send takes its bytes or a receive puts them: segments of program
 * (user) or kernel memory, consumed front to back. */
struct sock_iter {
	const struct iovec *iov;
	unsigned long nr_segs;
	bool user;
	unsigned long seg;    /* current segment ... */
	size_t off;           /* ... and the offset in it */
	size_t left;          /* bytes not yet consumed */
	struct sock_scm *scm; /* ancillary data, or NULL (read, write, sendto ...) */
};

void sock_iter_init(struct sock_iter *it, const struct iovec *iov, unsigned long nr, bool user);
/* Move n bytes (n <= it->left) out of / into the iterator and advance it.
 * 0 or -EFAULT (then nothing is known about how much moved). */
int sock_iter_from(struct sock_iter *it, void *dst, size_t n);
int sock_iter_to(struct sock_iter *it, const void *src, size_t n);

/* The address-family side of one socket. Addresses are kernel copies of at
 * most SOCK_ADDR_MAX bytes; len is what the program passed. */
struct sock_ops {
	int (*bind)(struct socket *s, const void *addr, int len);
	/* nonblock: O_NONBLOCK of the file (then -EINPROGRESS). */
	int (*connect)(struct socket *s, const void *addr, int len, bool nonblock);
	int (*listen)(struct socket *s, int backlog);
	/* Wait for a connection and attach it to newsock (already allocated,
	 * family/type/protocol copied): set newsock->ops and ->priv. */
	int (*accept)(struct socket *s, struct socket *newsock, bool nonblock);
	/* The local (peer false) or peer address into addr (SOCK_ADDR_MAX
	 * bytes); returns its length or -errno (-ENOTCONN). */
	int (*getname)(struct socket *s, void *addr, bool peer);
	int (*shutdown)(struct socket *s, int how); /* SHUT_RD/WR/RDWR, checked */
	/* flags: MSG_*; nonblock already folded into MSG_DONTWAIT. addr NULL
	 * when the program gave none. Return bytes moved or -errno; -EPIPE
	 * makes the layer raise SIGPIPE unless MSG_NOSIGNAL. */
	long (*sendmsg)(struct socket *s, struct sock_iter *it, const void *addr, int addrlen,
	                int flags);
	/* *addrlen: 0 on entry; set it and fill addr (SOCK_ADDR_MAX bytes) to
	 * report the sender. *msg_flags: MSG_TRUNC and the like, out. */
	long (*recvmsg)(struct socket *s, struct sock_iter *it, void *addr, int *addrlen, int flags,
	                int *msg_flags);
	/* Options at any level, on kernel copies (optlen <= 256). For
	 * SOL_SOCKET, -ENOPROTOOPT hands the option to the generic code. get
	 * writes at most *optlen bytes and sets *optlen. */
	int (*getsockopt)(struct socket *s, int level, int name, void *val, int *optlen);
	int (*setsockopt)(struct socket *s, int level, int name, const void *val, int optlen);
	unsigned int (*poll)(struct socket *s);                               /* NULL: 0 */
	void (*poll_wait)(struct socket *s, struct poll_table *pt);           /* as file_ops */
	long (*ioctl)(struct socket *s, unsigned int cmd, unsigned long arg); /* -ENOTTY */
	/* The file is gone: start closing. s is freed on return. */
	void (*release)(struct socket *s);
	bool scm; /* takes ancillary data (sock_iter.scm); else msg_control is ignored */
};

struct bootinfo;

struct sock_family {
	int family;
	/* At boot, before any process (NULL: nothing to do). Must be cheap. */
	void (*init)(const struct bootinfo *bi);
	/* type: SOCK_STREAM ... (flags removed). -ESOCKTNOSUPPORT,
	 * -EPROTONOSUPPORT or -ENOMEM for what it cannot make. */
	int (*create)(struct socket *s, int protocol);
	/* NULL: -EOPNOTSUPP. */
	int (*pair)(struct socket *a, struct socket *b, int protocol);
};

struct socket {
	const struct sock_ops *ops;
	void *priv;        /* the family's */
	struct file *file; /* its open file; no reference */
	int family, type, protocol;
	bool listening; /* listen() succeeded: SO_ACCEPTCONN */
	/* SOL_SOCKET options kept by the layer for every family. */
	uint64_t rcvtimeo_ns, sndtimeo_ns; /* 0: wait forever */
	int rcvbuf, sndbuf, rcvlowat;
	bool reuseaddr, reuseport, keepalive, broadcast, oobinline;
	int linger_onoff, linger_secs;
};

/* Boot: every family's init. */
void socket_init(const struct bootinfo *bi);

/* Send or receive on a socket file as the syscalls do (O_NONBLOCK folds
 * into MSG_DONTWAIT, -EPIPE raises SIGPIPE unless MSG_NOSIGNAL); a
 * reference on f is held for the call. recv sets *addrlen (0: no address)
 * and *msg_flags. For sendfile and the like, with a kernel sock_iter. */
struct file;
long sock_send(struct file *f, struct sock_iter *it, const void *addr, int addrlen, int flags);
long sock_recv(struct file *f, struct sock_iter *it, void *addr, int *addrlen, int flags,
               int *msg_flags);

/* For the syscall files socket.c, socket_msg.c, socket_opt.c: the socket
 * at fd with a reference on its file (file_put it), or NULL and *err
 * (-EBADF, -ENOTSOCK); an address from the program (len checked: -EINVAL,
 * -EFAULT); an address to it, as Linux's move_addr_to_user. */
struct socket *sock_lookup(long fd, struct file **fp, long *err);
int sock_addr_in(void *kaddr, const void *uaddr, long len);
int sock_addr_out(const void *kaddr, int klen, void *uaddr, int *ulen);

#define SOCK_BUF_DEFAULT 212992 /* SO_RCVBUF/SO_SNDBUF: net.core.rmem_default */

/* A deadline for a blocking call from SO_RCVTIMEO/SO_SNDTIMEO: 0 for none. */
uint64_t sock_deadline(uint64_t timeo_ns);

/* Every socket file's ops (for "is this a socket": f->ops == &sock_file_ops). */
struct file_ops;
extern const struct file_ops sock_file_ops;

/* socket_scm.c, for socket_msg.c: the program's msg_control into scm
 * (references on the files; 0 or -EINVAL, -EBADF, -EFAULT, -ENOBUFS); scm
 * out to the program's msg_control: creds, then the files installed as
 * descriptors (MSG_CMSG_CLOEXEC in flags), MSG_CTRUNC into *msg_flags for
 * what does not fit. Returns the control bytes written or -EFAULT. Drop
 * releases what is left in scm. */
int sock_scm_in(struct sock_scm *scm, const void *uctl, size_t len);
long sock_scm_out(struct sock_scm *scm, void *uctl, size_t len, int flags, int *msg_flags);
void sock_scm_drop(struct sock_scm *scm);

extern const struct sock_family vsock_family; /* sock_vsock.c */
extern const struct sock_family unix_family;  /* sock_unix.c */
extern const struct sock_family inet_family;  /* sock_inet.c */
extern const struct sock_family inet6_family; /* sock_inet.c */

#endif
