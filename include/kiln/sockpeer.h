/* SPDX-License-Identifier: MIT */
/*
 * kiln guest ABI: the peer address a connection forwarded into the guest
 * shows its server. The agent carries an inbound connection (a port stream,
 * include/kiln/agent.h) to the guest's loopback; with this option its
 * server's accept() and getpeername() report the client that connected to
 * kilnd or to the shim (as Docker's port publishing and a pod's IP do), not
 * the agent's 127.0.0.1.
 *
 * Version 1. Included by the guest kernel and by the agent, which runs on
 * Linux too: there the level is unknown (ENOPROTOOPT) and the server sees
 * the loopback address.
 *
 * setsockopt(fd, KILN_SOL_PEER, KILN_SO_PEER, &sa, len) on a TCP socket
 * that has not connected yet: sa is a struct sockaddr_in (len >= 16) or
 * sockaddr_in6 (len >= 24) of either family, whatever the socket's; an
 * AF_UNSPEC (len >= 2) forgets it. When the socket then connects to a
 * listener of the guest's loopback, the connection the listener accepts
 * has that address and port as its peer; an IPv4 address is ::ffff:a.b.c.d
 * to an IPv6 listener, and an IPv6 one (not v4-mapped) cannot be told to
 * an IPv4 listener, which sees the real (loopback) peer. The connecting
 * socket's own addresses are unchanged. Only root of PID namespace 0 (the
 * agent) may set it (else EPERM): a program of the guest cannot pass for
 * another client. A connected or listening socket is EISCONN, another
 * length or family EINVAL. It cannot be read back (getsockopt:
 * EOPNOTSUPP).
 */
#ifndef KILN_SOCKPEER_H
#define KILN_SOCKPEER_H

#define KILN_SOCKPEER_VERSION 1
#define KILN_SOL_PEER         0x4b50 /* a socket option level Linux does not have */
#define KILN_SO_PEER          1

#endif
