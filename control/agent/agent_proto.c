/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "agent_proto.h"

int agent_hdr_decode(const void *p, struct kiln_frame *f)
{
	const uint8_t *b = p;

	f->len = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	f->type = (uint16_t)(b[4] | b[5] << 8);
	f->flags = (uint16_t)(b[6] | b[7] << 8);
	if (f->len > KILN_FRAME_MAX || f->type == KILN_MSG_INVALID || f->type >= KILN_MSG_MAX ||
	    f->flags)
		return -EPROTO;
	return 0;
}

void agent_begin(struct agent_wr *w, struct buf *b, uint16_t type)
{
	uint8_t hdr[AGENT_HDR_LEN] = {0, 0, 0, 0, (uint8_t)type, (uint8_t)(type >> 8), 0, 0};

	w->b = b;
	/* Relative to the unconsumed data: buf_reserve() may slide it down. */
	w->start = b->len - b->off;
	w->err = buf_append(b, hdr, sizeof(hdr));
}

void agent_put_bytes(struct agent_wr *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (buf_avail(w->b) - w->start - AGENT_HDR_LEN + n > KILN_FRAME_MAX) {
		w->err = -E2BIG;
		return;
	}
	w->err = buf_append(w->b, p, n);
}

void agent_put_u16(struct agent_wr *w, uint16_t v)
{
	uint16_t le = htole16(v);

	agent_put_bytes(w, &le, 2);
}

void agent_put_u32(struct agent_wr *w, uint32_t v)
{
	uint32_t le = htole32(v);

	agent_put_bytes(w, &le, 4);
}

void agent_put_u64(struct agent_wr *w, uint64_t v)
{
	uint64_t le = htole64(v);

	agent_put_bytes(w, &le, 8);
}

void agent_put_str(struct agent_wr *w, const char *s, size_t n)
{
	if (!w->err && (n > KILN_MAX_STRING || memchr(s, 0, n)))
		w->err = -EINVAL;
	agent_put_u32(w, (uint32_t)n);
	agent_put_bytes(w, s, n);
}

int agent_end(struct agent_wr *w)
{
	uint32_t len;

	if (w->err) {
		if (buf_avail(w->b) >= w->start)
			w->b->len = w->b->off + w->start;
		return w->err;
	}
	len = htole32((uint32_t)(buf_avail(w->b) - w->start - AGENT_HDR_LEN));
	memcpy(buf_head(w->b) + w->start, &len, 4);
	return 0;
}

void agent_rd_init(struct agent_rd *r, const void *p, uint32_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->err = 0;
}

static const uint8_t *take(struct agent_rd *r, uint32_t n)
{
	const uint8_t *p;

	if (r->err || n > r->len - r->off) {
		r->err = -EPROTO;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

uint16_t agent_get_u16(struct agent_rd *r)
{
	const uint8_t *p = take(r, 2);

	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}

uint32_t agent_get_u32(struct agent_rd *r)
{
	const uint8_t *p = take(r, 4);

	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	               (uint32_t)p[3] << 24
	         : 0;
}

uint64_t agent_get_u64(struct agent_rd *r)
{
	uint64_t lo = agent_get_u32(r);

	return lo | (uint64_t)agent_get_u32(r) << 32;
}

void agent_get_str(struct agent_rd *r, const char **s, uint32_t *n)
{
	uint32_t len = agent_get_u32(r);
	const uint8_t *p;

	*s = "";
	*n = 0;
	if (!r->err && len > KILN_MAX_STRING)
		r->err = -EPROTO;
	p = take(r, len);
	if (!p)
		return;
	if (memchr(p, 0, len)) {
		r->err = -EPROTO;
		return;
	}
	*s = (const char *)p;
	*n = len;
}

int agent_rd_done(struct agent_rd *r)
{
	if (r->err)
		return r->err;
	return r->off == r->len ? 0 : -EPROTO;
}

int agent_msg_hello(struct buf *b, uint32_t kind, uint16_t flags)
{
	struct agent_wr w;

	agent_begin(&w, b, KILN_MSG_HELLO);
	agent_put_u32(&w, KILN_AGENT_VERSION);
	agent_put_u32(&w, kind);
	if (agent_end(&w))
		return w.err;
	((uint8_t *)buf_head(b))[w.start + 6] = (uint8_t)flags;
	((uint8_t *)buf_head(b))[w.start + 7] = (uint8_t)(flags >> 8);
	return 0;
}

int agent_msg_empty(struct buf *b, uint16_t type)
{
	struct agent_wr w;

	agent_begin(&w, b, type);
	return agent_end(&w);
}

int agent_msg_u32(struct buf *b, uint16_t type, uint32_t v)
{
	struct agent_wr w;

	agent_begin(&w, b, type);
	agent_put_u32(&w, v);
	return agent_end(&w);
}

int agent_msg_data(struct buf *b, uint16_t type, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		size_t k = n < KILN_DATA_CHUNK ? n : KILN_DATA_CHUNK;
		struct agent_wr w;
		int rc;

		agent_begin(&w, b, type);
		agent_put_bytes(&w, c, k);
		rc = agent_end(&w);
		if (rc)
			return rc;
		c += k;
		n -= k;
	}
	return 0;
}

int agent_msg_resize(struct buf *b, uint16_t cols, uint16_t rows)
{
	struct agent_wr w;

	agent_begin(&w, b, KILN_MSG_RESIZE);
	agent_put_u16(&w, cols);
	agent_put_u16(&w, rows);
	return agent_end(&w);
}

int agent_msg_connect(struct buf *b, uint32_t port, uint32_t family,
                      const struct sockaddr_storage *peer)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint8_t addr[16] = {0};
	uint32_t pfam = 0, pport = 0;
	struct agent_wr w;

	if (peer && peer->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)peer;

		pfam = 4;
		memcpy(addr, &sin->sin_addr, 4);
		pport = ntohs(sin->sin_port);
	} else if (peer && peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)peer;
		const uint8_t *a = sin6->sin6_addr.s6_addr;

		/* a dual-stack listener's IPv4 client is one to the guest too */
		pfam = memcmp(a, mapped, sizeof(mapped)) ? 6 : 4;
		memcpy(addr, pfam == 4 ? a + 12 : a, pfam == 4 ? 4 : 16);
		pport = ntohs(sin6->sin6_port);
	}
	agent_begin(&w, b, KILN_MSG_CONNECT);
	agent_put_u32(&w, port);
	agent_put_u32(&w, family);
	if (pfam && pport) {
		agent_put_u32(&w, KILN_PEER_V1);
		agent_put_u32(&w, pfam);
		agent_put_bytes(&w, addr, sizeof(addr));
		agent_put_u32(&w, pport);
	}
	return agent_end(&w);
}

static void put_strv(struct agent_wr *w, const char *const *v)
{
	uint32_t n = 0;

	while (v && v[n])
		n++;
	if (n > KILN_MAX_ARGS && !w->err)
		w->err = -E2BIG;
	agent_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		agent_put_str(w, v[i], strlen(v[i]));
}

int agent_msg_start(struct buf *b, const struct agent_start *s)
{
	struct agent_wr w;
	const char *cwd = s->cwd ? s->cwd : "";

	if (!s->argv || !s->argv[0])
		return -EINVAL;
	agent_begin(&w, b, KILN_MSG_START);
	put_strv(&w, s->argv);
	put_strv(&w, s->env);
	agent_put_str(&w, cwd, strlen(cwd));
	agent_put_u32(&w, s->uid);
	agent_put_u32(&w, s->timeout_ms);
	agent_put_u16(&w, s->cols);
	agent_put_u16(&w, s->rows);
	if (s->n_rlimits > KILN_MAX_RLIMITS)
		return -E2BIG;
	if (s->user || s->n_rlimits || s->root || s->tag || s->pidns) {
		const char *user = s->user ? s->user : "";

		agent_put_str(&w, user, strlen(user));
		agent_put_u32(&w, s->user ? s->user_flags : 0);
	}
	if (s->n_rlimits || s->root || s->tag || s->pidns) {
		agent_put_u32(&w, s->n_rlimits);
		for (uint32_t i = 0; i < s->n_rlimits; i++) {
			agent_put_u32(&w, s->rlimits[i].resource);
			agent_put_u64(&w, s->rlimits[i].soft);
			agent_put_u64(&w, s->rlimits[i].hard);
		}
	}
	if (s->root || s->tag || s->pidns)
		agent_put_str(&w, s->root ? s->root : "", s->root ? strlen(s->root) : 0);
	if (s->tag || s->pidns)
		agent_put_u64(&w, s->tag);
	if (s->pidns)
		agent_put_str(&w, s->pidns, strlen(s->pidns));
	if (agent_end(&w))
		return w.err;
	if (s->keep)
		((uint8_t *)buf_head(b))[w.start + 6] = KILN_FRAME_KEEP;
	return 0;
}

bool agent_user_valid(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > AGENT_USER_MAX || name[0] == '-')
		return false;
	for (; *name; name++)
		if (!isalnum((unsigned char)*name) && !strchr("._-", *name))
			return false;
	return true;
}

int agent_msg_file(struct buf *b, uint32_t op, const char *path, uint32_t arg, const char *path2)
{
	return agent_msg_file_as(b, op, path, arg, path2, NULL, 0);
}

int agent_msg_file_as(struct buf *b, uint32_t op, const char *path, uint32_t arg, const char *path2,
                      const char *user, uint32_t user_flags)
{
	struct agent_wr w;

	if (op == KILN_FILE_INVALID || op >= KILN_FILE_MAX)
		return -EINVAL;
	agent_begin(&w, b, KILN_MSG_FILE_REQUEST);
	agent_put_u32(&w, op);
	agent_put_str(&w, path, strlen(path));
	switch (op) {
	case KILN_FILE_WRITE:
	case KILN_FILE_MKDIR:
	case KILN_FILE_REMOVE:
	case KILN_FILE_UNTAR:
	case KILN_FILE_FREEZE:
	case KILN_FILE_LIMIT:
	case KILN_FILE_CPU:
	case KILN_FILE_SHARES:
		agent_put_u32(&w, arg);
		break;
	case KILN_FILE_RENAME:
		if (!path2) {
			w.err = -EINVAL;
			break;
		}
		agent_put_str(&w, path2, strlen(path2));
		break;
	default:
		break;
	}
	if (user) {
		agent_put_str(&w, user, strlen(user));
		agent_put_u32(&w, user_flags);
	}
	return agent_end(&w);
}

int agent_parse_hello(const void *p, uint32_t n, uint32_t *version, uint32_t *kind)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	*version = agent_get_u32(&r);
	*kind = agent_get_u32(&r);
	return agent_rd_done(&r);
}

int agent_parse_error(const void *p, uint32_t n, uint32_t *err, const char **msg, uint32_t *len)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	*err = agent_get_u32(&r);
	agent_get_str(&r, msg, len);
	return agent_rd_done(&r);
}

int agent_parse_u32(const void *p, uint32_t n, uint32_t *v)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	*v = agent_get_u32(&r);
	return agent_rd_done(&r);
}

int agent_parse_exit(const void *p, uint32_t n, int32_t *code, uint32_t *sig, uint32_t *flags)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	*code = (int32_t)agent_get_u32(&r);
	*sig = agent_get_u32(&r);
	*flags = agent_get_u32(&r);
	return agent_rd_done(&r);
}

int agent_parse_stat(const void *p, uint32_t n, struct agent_stat *st)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	st->mode = agent_get_u32(&r);
	st->size = agent_get_u64(&r);
	st->mtime = (int64_t)agent_get_u64(&r);
	agent_get_str(&r, &st->name, &st->name_len);
	agent_get_str(&r, &st->target, &st->target_len);
	st->mtime_ns = r.off < r.len ? agent_get_u32(&r) : 0;
	if (st->mtime_ns > 999999999)
		return -EPROTO;
	return agent_rd_done(&r);
}

int agent_parse_info(const void *p, uint32_t n, struct agent_info *info)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	agent_get_str(&r, &info->version, &info->version_len);
	info->uptime_ms = agent_get_u64(&r);
	info->mem_total_kb = agent_get_u64(&r);
	info->mem_free_kb = agent_get_u64(&r);
	info->nr_procs = agent_get_u32(&r);
	return agent_rd_done(&r);
}

int agent_parse_proc(const void *p, uint32_t n, struct agent_proc *pr)
{
	struct agent_rd r;

	agent_rd_init(&r, p, n);
	pr->pid = agent_get_u32(&r);
	pr->tag = agent_get_u64(&r);
	pr->kind = agent_get_u32(&r);
	pr->state = agent_get_u32(&r);
	pr->flags = agent_get_u32(&r);
	if (agent_rd_done(&r))
		return -EPROTO;
	if (!pr->pid || pr->pid > INT32_MAX ||
	    (pr->kind != KILN_STREAM_EXEC && pr->kind != KILN_STREAM_PTY) ||
	    pr->state < KILN_PROC_STARTING || pr->state > KILN_PROC_EXITED ||
	    (pr->flags & ~(uint32_t)KILN_PROC_DETACHED))
		return -EPROTO;
	return 0;
}

const char *agent_msg_name(uint16_t type)
{
	static const char *const names[KILN_MSG_MAX] = {
	    [KILN_MSG_HELLO] = "HELLO",     [KILN_MSG_ERROR] = "ERROR",
	    [KILN_MSG_START] = "START",     [KILN_MSG_STARTED] = "STARTED",
	    [KILN_MSG_STDIN] = "STDIN",     [KILN_MSG_STDIN_EOF] = "STDIN_EOF",
	    [KILN_MSG_STDOUT] = "STDOUT",   [KILN_MSG_STDERR] = "STDERR",
	    [KILN_MSG_SIGNAL] = "SIGNAL",   [KILN_MSG_RESIZE] = "RESIZE",
	    [KILN_MSG_EXIT] = "EXIT",       [KILN_MSG_FILE_REQUEST] = "FILE_REQUEST",
	    [KILN_MSG_DATA] = "DATA",       [KILN_MSG_DONE] = "DONE",
	    [KILN_MSG_STAT] = "STAT",       [KILN_MSG_ENTRY] = "ENTRY",
	    [KILN_MSG_INFO] = "INFO",       [KILN_MSG_ATTACH] = "ATTACH",
	    [KILN_MSG_CONNECT] = "CONNECT", [KILN_MSG_CONNECTED] = "CONNECTED",
	    [KILN_MSG_PROC] = "PROC",       [KILN_MSG_CHANGE] = "CHANGE",
	};

	return type < KILN_MSG_MAX && names[type] ? names[type] : "?";
}
