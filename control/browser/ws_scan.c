/* SPDX-License-Identifier: MIT */
/* WebSocket frame checks in passing (ws_scan.h). */
#include "ws_scan.h"
#include "http/ws.h"

void ws_scan_init(struct ws_scan *s, bool from_client, uint64_t max)
{
	*s = (struct ws_scan){.from_client = from_client, .max = max};
}

/* Bytes of the header so far: how many it has in all, or 0 if unknown yet. */
static unsigned hdr_need(const struct ws_scan *s)
{
	unsigned n = 2, len7;

	if (s->hlen < 2)
		return 0;
	len7 = s->hdr[1] & 0x7f;
	n += len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
	return n + ((s->hdr[1] & 0x80) ? 4 : 0);
}

/* A complete header: check it and start its payload. */
static int hdr_done(struct ws_scan *s)
{
	unsigned op = s->hdr[0] & 0x0f, len7 = s->hdr[1] & 0x7f;
	bool fin = s->hdr[0] & 0x80, masked = s->hdr[1] & 0x80;
	uint64_t len = len7;

	if (len7 == 126)
		len = (uint64_t)s->hdr[2] << 8 | s->hdr[3];
	else if (len7 == 127)
		for (int i = 0; i < 8; i++)
			len = len << 8 | s->hdr[2 + i];
	if ((s->hdr[0] & 0x70) || masked != s->from_client || (op > WS_BINARY && op < WS_CLOSE) ||
	    op > WS_PONG)
		return WS_CLOSE_PROTOCOL;
	if (op >= WS_CLOSE && (!fin || len > 125))
		return WS_CLOSE_PROTOCOL;
	if (len > s->max)
		return WS_CLOSE_TOO_BIG;
	if (op == WS_CLOSE)
		s->closed = true;
	s->left = len;
	s->hlen = 0;
	return 0;
}

int ws_scan_feed(struct ws_scan *s, const uint8_t *p, size_t n)
{
	while (n) {
		if (s->left) {
			size_t k = s->left < n ? (size_t)s->left : n;

			s->left -= k;
			p += k;
			n -= k;
			continue;
		}
		s->hdr[s->hlen++] = *p++;
		n--;
		if (s->hlen >= 2 && s->hlen == hdr_need(s)) {
			int rc = hdr_done(s);

			if (rc)
				return rc;
		}
	}
	return 0;
}
