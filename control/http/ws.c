/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "ws.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

void ws_init(struct ws *ws, bool client, const struct ws_ops *ops, void *ctx)
{
	memset(ws, 0, sizeof(*ws));
	ws->client = client;
	ws->ops = ops;
	ws->ctx = ctx;
	ws->max_frame = 1u << 20;
	ws->max_text = 64u << 10;
	ws->hdr_need = 2;
}

void ws_free(struct ws *ws)
{
	buf_free(&ws->text);
}

bool utf8_valid(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = p[i];
		unsigned need;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (n - i <= need)
			return false;
		for (unsigned k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		i += need + 1;
	}
	return true;
}

int ws_send(struct ws *ws, int opcode, const void *p, size_t n)
{
	uint8_t hdr[14];
	size_t h = 0;
	uint8_t mask[4];
	int rc;

	if (ws->close_sent)
		return -EPIPE;
	hdr[h++] = 0x80 | (uint8_t)opcode;
	if (n < 126) {
		hdr[h++] = (uint8_t)n;
	} else if (n <= 0xffff) {
		hdr[h++] = 126;
		hdr[h++] = (uint8_t)(n >> 8);
		hdr[h++] = (uint8_t)n;
	} else {
		hdr[h++] = 127;
		for (int i = 7; i >= 0; i--)
			hdr[h++] = (uint8_t)((uint64_t)n >> (8 * i));
	}
	if (!ws->client) {
		rc = ws->ops->write(ws->ctx, hdr, h);
		if (!rc && n)
			rc = ws->ops->write(ws->ctx, p, n);
		return rc;
	}
	hdr[1] |= 0x80;
	if (getrandom(mask, 4, 0) != 4)
		return -EIO;
	memcpy(hdr + h, mask, 4);
	h += 4;
	rc = ws->ops->write(ws->ctx, hdr, h);
	/* Mask in bounded pieces to avoid copying whole messages. */
	for (size_t off = 0; !rc && off < n;) {
		uint8_t tmp[4096];
		size_t k = n - off < sizeof(tmp) ? n - off : sizeof(tmp);

		for (size_t i = 0; i < k; i++)
			tmp[i] = ((const uint8_t *)p)[off + i] ^ mask[(off + i) & 3];
		rc = ws->ops->write(ws->ctx, tmp, k);
		off += k;
	}
	return rc;
}

int ws_send_close(struct ws *ws, uint16_t code, const char *reason)
{
	uint8_t body[125];
	size_t n = reason ? strlen(reason) : 0;
	int rc;

	if (ws->close_sent)
		return 0;
	if (n > sizeof(body) - 2)
		n = sizeof(body) - 2;
	body[0] = (uint8_t)(code >> 8);
	body[1] = (uint8_t)code;
	if (n)
		memcpy(body + 2, reason, n);
	rc = ws_send(ws, WS_CLOSE, body, n + 2);
	ws->close_sent = true;
	return rc;
}

static int fail(struct ws *ws, uint16_t code, const char *why)
{
	ws_send_close(ws, code, why);
	return -EPROTO;
}

static bool close_code_ok(uint16_t c)
{
	return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1011) || (c >= 3000 && c <= 4999);
}

static int control_done(struct ws *ws)
{
	switch (ws->opcode) {
	case WS_PING:
		return ws->close_sent ? 0 : ws_send(ws, WS_PONG, ws->ctl, ws->ctl_len);
	case WS_PONG:
		return 0;
	case WS_CLOSE: {
		uint16_t code = WS_CLOSE_NORMAL;

		if (ws->ctl_len == 1)
			return fail(ws, WS_CLOSE_PROTOCOL, "bad close frame");
		if (ws->ctl_len >= 2) {
			code = (uint16_t)(ws->ctl[0] << 8 | ws->ctl[1]);
			if (!close_code_ok(code) || !utf8_valid(ws->ctl + 2, ws->ctl_len - 2))
				return fail(ws, WS_CLOSE_PROTOCOL, "bad close frame");
		}
		ws->close_received = true;
		ws_send_close(ws, code, NULL);
		if (ws->ops->on_close)
			ws->ops->on_close(ws->ctx, code);
		return 0;
	}
	}
	return 0;
}

/* Parse a complete header in ws->hdr. */
static int header_done(struct ws *ws)
{
	uint8_t b0 = ws->hdr[0], b1 = ws->hdr[1];
	unsigned pos = 2;
	uint64_t len = b1 & 0x7f;
	bool control;

	if (len == 126) {
		len = (uint64_t)ws->hdr[2] << 8 | ws->hdr[3];
		pos = 4;
		if (len < 126)
			return fail(ws, WS_CLOSE_PROTOCOL, "non-minimal length");
	} else if (len == 127) {
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | ws->hdr[2 + i];
		pos = 10;
		if (len >> 63)
			return fail(ws, WS_CLOSE_PROTOCOL, "bad length");
		if (len <= 0xffff)
			return fail(ws, WS_CLOSE_PROTOCOL, "non-minimal length");
	}
	if (ws->masked)
		memcpy(ws->mask, ws->hdr + pos, 4);
	ws->mask_pos = 0;
	ws->fin = b0 & 0x80;
	ws->opcode = b0 & 0x0f;
	ws->left = len;
	control = ws->opcode & 0x8;
	if (control) {
		if (ws->opcode > WS_PONG)
			return fail(ws, WS_CLOSE_PROTOCOL, "unknown opcode");
		if (!ws->fin || len > 125)
			return fail(ws, WS_CLOSE_PROTOCOL, "bad control frame");
		ws->ctl_len = 0;
	} else {
		if (ws->opcode > WS_BINARY)
			return fail(ws, WS_CLOSE_PROTOCOL, "unknown opcode");
		if (len > ws->max_frame)
			return fail(ws, WS_CLOSE_TOO_BIG, "frame too big");
		if (ws->opcode == WS_CONT) {
			if (!ws->msg_opcode)
				return fail(ws, WS_CLOSE_PROTOCOL, "unexpected continuation");
		} else {
			if (ws->msg_opcode)
				return fail(ws, WS_CLOSE_PROTOCOL, "expected continuation");
			ws->msg_opcode = ws->opcode;
			buf_reset(&ws->text);
		}
	}
	return 0;
}

static int frame_done(struct ws *ws)
{
	int rc = 0;

	if (ws->opcode & 0x8) {
		rc = control_done(ws);
	} else if (ws->fin) {
		if (ws->msg_opcode == WS_TEXT) {
			uint8_t *p = (uint8_t *)buf_head(&ws->text);
			size_t n = buf_avail(&ws->text);

			if (!utf8_valid(p, n))
				return fail(ws, WS_CLOSE_BAD_DATA, "invalid UTF-8");
			rc = ws->ops->on_message(ws->ctx, WS_TEXT, p, n, true);
			buf_reset(&ws->text);
		} else {
			/* Binary pieces went out as they came; this marks the end. */
			rc = ws->ops->on_message(ws->ctx, WS_BINARY, NULL, 0, true);
		}
		ws->msg_opcode = 0;
	}
	ws->hdr_len = 0;
	ws->hdr_need = 2;
	return rc;
}

static int payload(struct ws *ws, uint8_t *p, size_t k)
{
	for (size_t i = 0; ws->masked && i < k; i++)
		p[i] ^= ws->mask[ws->mask_pos++ & 3];
	if (ws->opcode & 0x8) {
		memcpy(ws->ctl + ws->ctl_len, p, k);
		ws->ctl_len += (unsigned)k;
		return 0;
	}
	if (ws->msg_opcode == WS_TEXT) {
		if (buf_avail(&ws->text) + k > ws->max_text)
			return fail(ws, WS_CLOSE_TOO_BIG, "message too big");
		return buf_append(&ws->text, p, k);
	}
	return k ? ws->ops->on_message(ws->ctx, WS_BINARY, p, k, false) : 0;
}

int ws_feed(struct ws *ws, uint8_t *p, size_t n)
{
	while (n) {
		int rc;

		if (ws->close_received)
			return 0; /* nothing may follow a close */
		if (ws->hdr_len < ws->hdr_need) {
			ws->hdr[ws->hdr_len++] = *p++;
			n--;
			if (ws->hdr_len == 2) {
				uint8_t len7 = ws->hdr[1] & 0x7f;

				if (ws->hdr[0] & 0x70)
					return fail(ws, WS_CLOSE_PROTOCOL, "reserved bits set");
				ws->masked = ws->hdr[1] & 0x80;
				if (ws->masked == ws->client)
					return fail(ws, WS_CLOSE_PROTOCOL,
					            ws->client ? "masked frame" : "unmasked frame");
				ws->hdr_need = 2 +
				               (len7 == 126   ? 2
				                : len7 == 127 ? 8
				                              : 0) +
				               (ws->masked ? 4 : 0);
			}
			if (ws->hdr_len < ws->hdr_need)
				continue;
			rc = header_done(ws);
			if (rc)
				return rc;
			if (ws->left == 0) {
				rc = frame_done(ws);
				if (rc)
					return rc;
			}
			continue;
		}
		size_t k = n < ws->left ? n : (size_t)ws->left;

		rc = payload(ws, p, k);
		if (rc)
			return rc;
		p += k;
		n -= k;
		ws->left -= k;
		if (ws->left == 0) {
			rc = frame_done(ws);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int ws_accept_key(const char *key, char out[29])
{
	struct base64_decode_ctx d;
	uint8_t raw[24], digest[SHA1_DIGEST_SIZE];
	size_t rawlen = sizeof(raw), klen = key ? strlen(key) : 0;
	struct sha1_ctx sha;

	if (klen != 24)
		return -EINVAL;
	base64_decode_init(&d);
	if (!base64_decode_update(&d, &rawlen, raw, klen, key) || !base64_decode_final(&d) ||
	    rawlen != 16)
		return -EINVAL;
	sha1_init(&sha);
	sha1_update(&sha, klen, (const uint8_t *)key);
	sha1_update(&sha, strlen(WS_GUID), (const uint8_t *)WS_GUID);
	sha1_digest(&sha, sizeof(digest), digest);
	base64_encode_raw(out, sizeof(digest), digest);
	out[28] = 0;
	return 0;
}

int ws_client_key(char out[25])
{
	uint8_t raw[16];

	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		return -EIO;
	base64_encode_raw(out, sizeof(raw), raw);
	out[24] = 0;
	return 0;
}
