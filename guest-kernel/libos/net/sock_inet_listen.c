/* SPDX-License-Identifier: MIT */
/*
 * A TCP listener on the wildcard address (0.0.0.0, ::), the one kind the
 * world outside the guest could reach on Linux, is announced to the host:
 * a vsock stream to the egress port whose hello has KILN_NET_F_LISTEN and
 * names the family and the port (include/kiln/net.h). The stream stays
 * open while the socket listens; closing the socket closes it, which is
 * how the host learns the port is gone. A host that has no use for it
 * (kilnd) refuses the hello and closes; the listener is no different for
 * that. Listeners on loopback (bind() allows no other address) stay
 * private. Nothing is read from the stream: the host's reply waits in it.
 */
#include <kiln/net.h>

#include "mm.h"
#include "sock_inet.h"
#include "drivers/vsock.h"

void listen_announce(struct inet_sk *is, bool any)
{
	struct kiln_net_hello h = {
	    .magic = KILN_NET_MAGIC,
	    .version = KILN_NET_VERSION,
	    .flags = KILN_NET_F_LISTEN,
	    .port = (uint16_t)(is->lport >> 8 | is->lport << 8),
	};
	struct vsock_sk *vs;

	if (is->announce || !any || vsock_dev_up())
		return;
	vs = vsock_sk_alloc();
	if (!vs)
		return;
	vs->sock = is->sock;
	/* addr stays zero: the wildcard of the family; a dual-stack :: is 6 */
	h.family = is->family == AF_INET6 ? KILN_NET_IPV6 : KILN_NET_IPV4;
	if (vsock_stream_connect_with(vs, KILN_NET_PORT, &h, sizeof(h)) != sizeof(h)) {
		vsock_stream_close(vs);
		return;
	}
	is->announce = vs;
}

void listen_release(struct inet_sk *is)
{
	if (!is->announce)
		return;
	vsock_stream_close(is->announce);
	is->announce = NULL;
}
