/* SPDX-License-Identifier: MIT */
/* A buffered reader of an agent stream's frames (frame_rd.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/agent.h>

#include "frame_rd.h"

#define FRAME_RD_CAP (AGENT_HDR_LEN + KILN_FRAME_MAX)

int frame_rd_init(struct frame_rd *r, int fd)
{
	r->fd = fd;
	r->at = r->len = 0;
	r->buf = malloc(FRAME_RD_CAP);
	return r->buf ? 0 : -ENOMEM;
}

void frame_rd_free(struct frame_rd *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* At least n bytes (n <= FRAME_RD_CAP) from r->at on: 0 or -errno. */
static int have(struct frame_rd *r, size_t n, int ms)
{
	if (r->at + n > FRAME_RD_CAP) { /* the rest to the front, for room */
		memmove(r->buf, r->buf + r->at, r->len - r->at);
		r->len -= r->at;
		r->at = 0;
	}
	while (r->len - r->at < n) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		ssize_t got;

		if (ms >= 0) {
			int k = poll(&p, 1, ms);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return k ? -errno : -ETIMEDOUT;
		}
		got = read(r->fd, r->buf + r->len, FRAME_RD_CAP - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got ? -errno : -EPIPE;
		r->len += (size_t)got;
	}
	return 0;
}

int frame_rd_next(struct frame_rd *r, struct kiln_frame *f, const uint8_t **payload, int ms)
{
	int err;

	*payload = NULL;
	if (r->at == r->len)
		r->at = r->len = 0;
	if ((err = have(r, AGENT_HDR_LEN, ms)))
		return err;
	if (agent_hdr_decode(r->buf + r->at, f))
		return -EPROTO;
	if ((err = have(r, AGENT_HDR_LEN + f->len, ms)))
		return err;
	*payload = r->buf + r->at + AGENT_HDR_LEN;
	r->at += AGENT_HDR_LEN + f->len;
	return 0;
}
