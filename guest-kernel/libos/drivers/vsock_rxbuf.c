/* SPDX-License-Identifier: MIT */
/*
 * A vsock connection's receive buffer (struct vsock_rxbuf in vsock.h): a
 * ring of at most VSOCK_RX_PAGES pages taken as bytes arrive and given back
 * as the program reads them, so an idle connection holds no memory and the
 * device's receive buffers go straight back to the host.
 */
#include "mm.h"
#include "socket.h"
#include "vsock.h"

static char *rx_at(const struct vsock_rxbuf *rb, uint32_t pos)
{
	uint32_t abs = rb->off + pos;

	return (char *)phys_to_virt(rb->page[(rb->first + abs / PAGE_SIZE) % VSOCK_RX_PAGES]) +
	       abs % PAGE_SIZE;
}

/* Append n bytes; the caller has checked them against our credit. */
int vsock_rx_append(struct vsock_rxbuf *rb, const char *src, uint32_t n)
{
	while (n) {
		uint32_t end = rb->off + rb->len, in = end % PAGE_SIZE;
		uint32_t chunk = MIN(n, (uint32_t)PAGE_SIZE - in);

		if (end / PAGE_SIZE == rb->npages) {
			uint64_t pa;

			if (rb->npages == VSOCK_RX_PAGES || !(pa = pmem_alloc(false)))
				return -ENOMEM;
			rb->page[(rb->first + rb->npages++) % VSOCK_RX_PAGES] = pa;
		}
		memcpy(rx_at(rb, rb->len), src, chunk);
		rb->len += chunk;
		src += chunk;
		n -= chunk;
	}
	return 0;
}

static void rx_drop(struct vsock_rxbuf *rb, uint32_t n)
{
	rb->off += n;
	rb->len -= n;
	while (rb->npages && (rb->off >= PAGE_SIZE || !rb->len)) {
		pmem_free(rb->page[rb->first]);
		rb->first = (rb->first + 1) % VSOCK_RX_PAGES;
		rb->npages--;
		rb->off = rb->off >= PAGE_SIZE ? rb->off - PAGE_SIZE : 0;
	}
	if (!rb->len)
		rb->off = 0;
}

int vsock_rx_copy(struct vsock_sk *vs, struct sock_iter *it, uint32_t n, bool peek)
{
	struct vsock_rxbuf *rb = &vs->rx;

	for (uint32_t done = 0; done < n;) {
		uint32_t in = (rb->off + done) % PAGE_SIZE;
		uint32_t chunk = MIN(n - done, (uint32_t)PAGE_SIZE - in);

		if (sock_iter_to(it, rx_at(rb, done), chunk))
			return -EFAULT;
		done += chunk;
	}
	if (!peek)
		rx_drop(rb, n);
	return 0;
}

void vsock_rx_free(struct vsock_sk *vs)
{
	if (vs->rx.len)
		rx_drop(&vs->rx, vs->rx.len);
}
