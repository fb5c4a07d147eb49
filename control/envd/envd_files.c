/* SPDX-License-Identifier: MIT */
/* envd's /files: GET downloads one file (raw bytes, as kiln's own GET
 * /files); POST uploads one or more, either multipart/form-data (each part
 * named "file", its filename the destination unless ?path= is given) or a
 * raw application/octet-stream body for ?path=.
 *
 * Uploads stream: the body is parsed as it arrives and each file's bytes go
 * to an agent WRITE stream in frames, the HTTP side pausing while the agent
 * side is backed up (or while the next file's stream is being set up).
 * Each file's directory is created first; the agent writes a temporary file
 * and renames it into place when its part is complete, so a broken upload
 * never leaves a partial file. The answer lists the files written:
 * [{"name","type":"file","path"}]. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/agent_client.h"
#include "envd.h"
#include "agent/spare.h"
#include "http/jsonutil.h"
#include "api/proxy.h"
#include "util.h"

#define UP_MAX_PARTS    1000
#define UP_MAX_HEADERS  (16u << 10) /* one part's header block */
#define UP_HELD_MAX     (4u << 20)  /* body bytes held while blocked */
#define UP_RESUME_BELOW (256u << 10)
#define BOUNDARY_MAX    200

enum up_state {
	U_PREAMBLE,    /* before the first delimiter */
	U_AFTER_DELIM, /* "--" (the end) or CRLF (a part) follows */
	U_HEADERS,     /* a part's headers */
	U_MKDIR,       /* waiting: the file's directory is being created */
	U_DATA,        /* a file's bytes */
	U_SKIP,        /* a part that is not a file */
	U_COMMIT,      /* waiting: the agent renames the file into place */
	U_END,         /* after the closing delimiter */
	U_FAILED,      /* refused: the rest of the body is read and dropped */
};

/* A refused upload reads up to this much more of its body before it
 * answers, so that the client, still sending, gets the answer rather than
 * a reset (Go's net/http, envd's server, does the same). */
#define UP_DISCARD_MAX (256u << 10)

struct upload {
	struct kilnd *kd;
	struct http_conn *c;
	char id[SB_ID_LEN + 1];
	char *path;            /* ?path=, resolved, or NULL */
	struct envd_user user; /* who writes the files */
	bool multipart, body_done, hello, in_pump;
	bool reuse;                   /* the agent keeps the connection after DONE */
	char delim[BOUNDARY_MAX + 5]; /* "\r\n--" + boundary */
	size_t dlen;
	enum up_state state;
	struct buf in;
	char *cur;          /* the file being written */
	uint64_t cur_start; /* total when it began */
	struct fsop *mk;
	struct agent_conn *a;
	uint64_t total;
	json_t *results;
	bool handling; /* up_ops is the connection's handler */
	/* U_FAILED: the answer, given once the body is read */
	int fail_status;
	uint64_t discarded;
	char fail_msg[512];
};

static void up_free(struct upload *u)
{
	fsop_cancel(u->mk);
	agent_close(u->a);
	buf_free(&u->in);
	json_decref(u->results);
	free(u->path);
	free(u->cur);
	free(u);
}

static void up_fail(struct upload *u, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void up_fail(struct upload *u, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (u->handling && !u->body_done && !http_responded(u->c) && u->state != U_FAILED) {
		fsop_cancel(u->mk);
		u->mk = NULL;
		agent_close(u->a);
		u->a = NULL;
		buf_reset(&u->in);
		u->state = U_FAILED;
		u->fail_status = status;
		snprintf(u->fail_msg, sizeof(u->fail_msg), "%s", msg);
		http_pause_read(u->c, false);
		return;
	}
	if (!http_responded(u->c))
		http_respond_error(u->c, status, "%s", msg);
	else
		http_abort(u->c);
	up_free(u);
}

/* U_FAILED: the refusal goes out now. */
static void up_answer_failed(struct upload *u)
{
	http_respond_error(u->c, u->fail_status, "%s", u->fail_msg);
	up_free(u);
}

static void pump(struct upload *u);

/* The HTTP status of an agent's errno; envd answers 401 for a user the
 * sandbox does not have. */
static int up_status(uint32_t err)
{
	return err == ESRCH ? 401 : proxy_errno_status(err);
}

/* ---------------------------------------------------------------- the agent side */

static void a_frame(void *ctx, uint16_t type, const uint8_t *p, uint32_t n)
{
	struct upload *u = ctx;
	uint32_t v, kind, err, len;
	const char *msg;
	const char *base;

	if (type == KILN_MSG_ERROR) {
		if (agent_parse_error(p, n, &err, &msg, &len)) {
			up_fail(u, 502, "%s: malformed error from the agent", u->cur);
			return;
		}
		if (!len) {
			msg = strerror((int)err);
			len = (uint32_t)strlen(msg);
		}
		up_fail(u, up_status(err), "%s: %.*s", u->cur, (int)(len > 300 ? 300 : len), msg);
		return;
	}
	if (!u->hello) {
		if (type != KILN_MSG_HELLO || agent_parse_hello(p, n, &v, &kind) ||
		    v != KILN_AGENT_VERSION) {
			up_fail(u, 502, "agent protocol mismatch");
			return;
		}
		u->hello = true;
		u->reuse = kind & KILN_HELLO_REUSE; /* the answer's flags */
		return;
	}
	if (type != KILN_MSG_DONE || n || u->state != U_COMMIT) {
		up_fail(u, 502, "%s: agent protocol error", u->cur);
		return;
	}
	/* committed */
	events_add(u->kd, u->id, sb_find(u->kd, u->id), "file.written", "envd",
	           json_pack("{s:o,s:I}", "path", events_text(u->cur), "bytes",
	                     (json_int_t)(u->total - u->cur_start)));
	spare_release(&u->a, u->reuse);
	base = strrchr(u->cur, '/');
	json_array_append_new(u->results, json_pack("{s:s,s:s,s:s}", "name",
	                                            base && base[1] ? base + 1 : u->cur, "type",
	                                            "file", "path", u->cur));
	u->state = u->multipart ? U_AFTER_DELIM : U_END;
	pump(u);
}

static void a_close(void *ctx, int err)
{
	struct upload *u = ctx;

	u->a = NULL;
	up_fail(u, 502, "%s: the agent stream ended early", u->cur ? u->cur : "upload");
}

static void a_drain(void *ctx)
{
	pump(ctx);
}

static const struct agent_conn_ops a_ops = {
    .on_frame = a_frame,
    .on_close = a_close,
    .on_drain = a_drain,
};

static void mkdir_done(void *ctx, int err, const char *msg, const struct fs_ent *ents, size_t n)
{
	struct upload *u = ctx;
	struct sandbox *sb;

	u->mk = NULL;
	if (err) {
		char text[512];

		envd_fs_error(err, msg, u->cur, text, sizeof(text));
		up_fail(u, err > 0 ? up_status((uint32_t)err) : 502, "%s", text);
		return;
	}
	sb = sb_find(u->kd, u->id);
	if (!sb || sb->state != SB_RUNNING) {
		up_fail(u, 502, "sandbox %s is not running", u->id);
		return;
	}
	u->hello = false;
	u->a = spare_take(sb, &a_ops, u);
	if (!u->a) {
		up_fail(u, 503, "cannot reach the agent of sandbox %s", u->id);
		return;
	}
	if (agent_msg_hello(agent_out(u->a), KILN_STREAM_FILE, KILN_FRAME_REUSE) ||
	    agent_msg_file_as(agent_out(u->a), KILN_FILE_WRITE, u->cur, 0644, NULL,
	                      envd_user_name(&u->user),
	                      envd_user_flags(&u->user, KILN_FILE_WRITE))) {
		up_fail(u, 400, "bad file request");
		return;
	}
	agent_flush(u->a);
	u->state = U_DATA;
	pump(u);
}

/* A file begins: create its directory, then open its WRITE stream. */
static int begin_file(struct upload *u, const char *dest)
{
	struct sandbox *sb = sb_find(u->kd, u->id);
	char *dir, *slash;
	size_t i;
	json_t *r;

	if (json_array_size(u->results) >= UP_MAX_PARTS) {
		up_fail(u, 413, "more than %d files in one upload", UP_MAX_PARTS);
		return -1;
	}
	json_array_foreach(u->results, i, r)
	{
		if (!strcmp(json_string_value(json_object_get(r, "path")), dest)) {
			up_fail(u, 400, "cannot upload more than one file to %s", dest);
			return -1;
		}
	}
	free(u->cur);
	u->cur = strdup(dest);
	u->cur_start = u->total;
	dir = u->cur ? strdup(u->cur) : NULL;
	if (!dir) {
		up_fail(u, 500, "out of memory");
		return -1;
	}
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	if (!sb || sb->state != SB_RUNNING) {
		free(dir);
		up_fail(u, 502, "sandbox %s is not running", u->id);
		return -1;
	}
	u->state = U_MKDIR;
	u->mk = fsop_start_as(sb, KILN_FILE_MKDIR, dir, 0755, NULL, &u->user, mkdir_done, u);
	free(dir);
	if (!u->mk) {
		up_fail(u, 503, "cannot reach the agent of sandbox %s", u->id);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- multipart */

static const char *memmem_s(const char *h, size_t hn, const char *n, size_t nn)
{
	return memmem(h, hn, n, nn);
}

/* The value of `param` in a Content-Disposition (quoted or a token),
 * malloc'd; the browser escapes %22 %0D %0A in quoted names are undone. */
static char *disp_param(const char *line, size_t len, const char *param)
{
	size_t pl = strlen(param);
	const char *p = line, *end = line + len;

	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));

		p = semi ? semi + 1 : end;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(end - p) > pl && !strncasecmp(p, param, pl) && p[pl] == '=') {
			const char *v = p + pl + 1, *ve;
			struct buf b = {0};

			if (v >= end)
				return strdup("");
			if (*v == '"') {
				v++;
				ve = memchr(v, '"', (size_t)(end - v));
				if (!ve)
					return NULL;
			} else {
				ve = memchr(v, ';', (size_t)(end - v));
				if (!ve)
					ve = end;
			}
			for (const char *q = v; q < ve; q++) {
				if (*q == '%' && ve - q >= 3 &&
				    (!strncasecmp(q, "%22", 3) || !strncasecmp(q, "%0D", 3) ||
				     !strncasecmp(q, "%0A", 3))) {
					char ch = q[2] == '2'                    ? '"'
					          : (q[2] == 'D' || q[2] == 'd') ? '\r'
					                                         : '\n';

					buf_append(&b, &ch, 1);
					q += 2;
				} else if (*q == '\\' && q + 1 < ve) {
					buf_append(&b, ++q, 1);
				} else {
					buf_append(&b, q, 1);
				}
			}
			buf_append(&b, "", 1);
			return b.data ? b.data : strdup("");
		}
	}
	return NULL;
}

/* A part's header block [p, p+n): start the file, or skip a non-file part. */
static int part_headers(struct upload *u, const char *p, size_t n)
{
	const char *line = p, *end = p + n;
	char *name = NULL, *filename = NULL, *dest;
	int rc = 0;

	while (line < end) {
		const char *eol = memmem_s(line, (size_t)(end - line), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - line) : (size_t)(end - line);

		if (ll > 20 && !strncasecmp(line, "Content-Disposition:", 20)) {
			free(name);
			free(filename);
			name = disp_param(line + 20, ll - 20, "name");
			filename = disp_param(line + 20, ll - 20, "filename");
		}
		line += ll + 2;
	}
	if (!name || strcmp(name, "file")) {
		u->state = U_SKIP; /* another form field: not a file */
		goto out;
	}
	if (u->path) {
		dest = strdup(u->path);
	} else if (filename && *filename) {
		dest = envd_resolve_path_as(filename, &u->user);
	} else {
		up_fail(u, 400, "a file part without a filename needs ?path=");
		rc = -1;
		goto out;
	}
	if (!dest) {
		up_fail(u, 400, "bad destination path");
		rc = -1;
		goto out;
	}
	rc = begin_file(u, dest);
	free(dest);
out:
	free(name);
	free(filename);
	return rc;
}

/* Send file bytes to the agent. */
static int send_data(struct upload *u, const char *p, size_t n)
{
	if (!n)
		return 0;
	u->total += n;
	if (u->total > u->kd->cfg.max_upload) {
		up_fail(u, 413, "upload larger than %llu bytes", u->kd->cfg.max_upload);
		return -1;
	}
	if (agent_msg_data(agent_out(u->a), KILN_MSG_DATA, p, n)) {
		up_fail(u, 500, "out of memory");
		return -1;
	}
	agent_flush(u->a);
	return 0;
}

static int end_file(struct upload *u)
{
	/* Only a complete part is committed: DONE makes the agent rename. */
	if (agent_msg_empty(agent_out(u->a), KILN_MSG_DONE)) {
		up_fail(u, 500, "out of memory");
		return -1;
	}
	agent_flush(u->a);
	u->state = U_COMMIT;
	return 0;
}

static void finish(struct upload *u)
{
	if (!json_array_size(u->results)) {
		up_fail(u, 400, "the upload holds no file (multipart parts named \"file\")");
		return;
	}
	http_respond_json(u->c, 200, json_incref(u->results));
	up_free(u);
}

/* Move as far as the input and the agent allow. Returns with u freed (if
 * it ended) or with reading paused/resumed to match. */
static void pump(struct upload *u)
{
	bool blocked = false, starved = false; /* starved: blocked for want of input */

	if (u->in_pump)
		return;
	u->in_pump = true;
	while (!blocked) {
		const char *h = buf_head(&u->in), *hit;
		size_t n = buf_avail(&u->in);

		switch (u->state) {
		case U_PREAMBLE:
			hit = memmem_s(h, n, u->delim, u->dlen);
			if (hit) {
				buf_consume(&u->in, (size_t)(hit - h) + u->dlen);
				u->state = U_AFTER_DELIM;
				continue;
			}
			if (n >= u->dlen)
				buf_consume(&u->in, n - (u->dlen - 1));
			blocked = starved = true;
			break;
		case U_AFTER_DELIM:
			if (n < 2) {
				blocked = starved = true;
				break;
			}
			if (h[0] == '-' && h[1] == '-') {
				u->state = U_END;
				continue;
			}
			hit = memmem_s(h, n < 256 ? n : 256, "\r\n", 2);
			if (!hit) {
				if (n >= 256)
					goto bad;
				blocked = starved = true;
				break;
			}
			buf_consume(&u->in, (size_t)(hit - h) + 2);
			u->state = U_HEADERS;
			continue;
		case U_HEADERS:
			if (n >= 2 && h[0] == '\r' && h[1] == '\n') {
				/* no headers at all */
				buf_consume(&u->in, 2);
				if (part_headers(u, "", 0))
					return;
				continue;
			}
			hit = memmem_s(h, n, "\r\n\r\n", 4);
			if (!hit) {
				if (n > UP_MAX_HEADERS) {
					up_fail(u, 431, "multipart part headers too large");
					return;
				}
				blocked = starved = true;
				break;
			}
			{
				size_t hl = (size_t)(hit - h);
				char *copy = malloc(hl + 1);

				if (!copy) {
					up_fail(u, 500, "out of memory");
					return;
				}
				memcpy(copy, h, hl);
				buf_consume(&u->in, hl + 4);
				if (part_headers(u, copy, hl)) {
					free(copy);
					return;
				}
				free(copy);
			}
			continue;
		case U_MKDIR:
		case U_COMMIT:
		case U_FAILED: /* (on_body and on_complete serve it) */
			blocked = true;
			break;
		case U_DATA:
		case U_SKIP:
			if (u->state == U_DATA && agent_pending(u->a) > AGENT_OUT_HIGH) {
				blocked = true;
				break;
			}
			if (!u->multipart) {
				if (u->state == U_DATA && send_data(u, h, n))
					return;
				buf_consume(&u->in, n);
				if (u->body_done) {
					if (end_file(u))
						return;
					continue;
				}
				blocked = starved = true;
				break;
			}
			hit = memmem_s(h, n, u->delim, u->dlen);
			if (hit) {
				size_t dn = (size_t)(hit - h);

				if (u->state == U_DATA && send_data(u, h, dn))
					return;
				buf_consume(&u->in, dn + u->dlen);
				if (u->state == U_DATA) {
					if (end_file(u))
						return;
				} else {
					u->state = U_AFTER_DELIM;
				}
				continue;
			}
			/* keep what could be the start of a delimiter */
			if (n >= u->dlen) {
				size_t dn = n - (u->dlen - 1);

				if (u->state == U_DATA && send_data(u, h, dn))
					return;
				buf_consume(&u->in, dn);
			}
			blocked = starved = true;
			break;
		case U_END:
			buf_reset(&u->in); /* the epilogue is ignored */
			if (u->body_done) {
				finish(u);
				return;
			}
			blocked = true;
			break;
		}
	}
	if (u->body_done && starved) {
		up_fail(u, 400, "the multipart body ends before its closing boundary");
		return;
	}
	u->in_pump = false;
	/* Read more only when it can go somewhere. */
	http_pause_read(u->c, u->state == U_MKDIR || u->state == U_COMMIT ||
	                          (u->state == U_DATA && agent_pending(u->a) > AGENT_OUT_HIGH) ||
	                          buf_avail(&u->in) > UP_RESUME_BELOW);
	return;
bad:
	up_fail(u, 400, "malformed multipart body");
}

/* ---------------------------------------------------------------- HTTP side */

static int on_body(void *ctx, const char *p, size_t n)
{
	struct upload *u = ctx;

	if (u->state == U_FAILED) {
		u->discarded += n;
		if (u->discarded > UP_DISCARD_MAX)
			up_answer_failed(u);
		return 0;
	}
	if (buf_avail(&u->in) + n > UP_HELD_MAX) {
		up_fail(u, 500, "upload: input backed up");
		return 0;
	}
	if (buf_append(&u->in, p, n)) {
		up_fail(u, 500, "out of memory");
		return 0;
	}
	pump(u);
	return 0;
}

static void on_complete(void *ctx)
{
	struct upload *u = ctx;

	u->body_done = true;
	if (u->state == U_FAILED)
		up_answer_failed(u);
	else
		pump(u);
}

static void on_abort(void *ctx)
{
	/* Closing the WRITE stream without DONE drops the partial file. */
	up_free(ctx);
}

static const struct http_handler up_ops = {
    .on_body = on_body,
    .on_complete = on_complete,
    .on_abort = on_abort,
};

static int parse_boundary(const char *ctype, char *out, size_t outlen)
{
	const char *b = strcasestr(ctype, "boundary=");
	size_t n = 0;

	if (!b)
		return -1;
	b += 9;
	if (*b == '"') {
		const char *e = strchr(++b, '"');

		if (!e)
			return -1;
		n = (size_t)(e - b);
	} else {
		while (b[n] && b[n] != ';' && b[n] != ' ')
			n++;
	}
	if (!n || n > BOUNDARY_MAX || n + 5 > outlen)
		return -1;
	memcpy(out, "\r\n--", 4);
	memcpy(out + 4, b, n);
	out[n + 4] = 0;
	return (int)n + 4;
}

void envd_files_post(struct kilnd *kd, struct http_conn *c, struct http_req *req,
                     struct sandbox *sb, const char *path, const struct envd_user *user)
{
	const char *ctype = http_header(req, "Content-Type");
	const char *enc = http_header(req, "Content-Encoding");
	struct upload *u;
	int dl = 0;

	if (enc && strcasecmp(enc, "identity")) {
		http_respond_error(c, 415,
		                   "Content-Encoding %.40s is not supported (send identity)", enc);
		return;
	}
	if (req->has_content_length && req->content_length > kd->cfg.max_upload) {
		http_respond_error(c, 413, "upload larger than %llu bytes", kd->cfg.max_upload);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u || !(u->results = json_array())) {
		free(u);
		http_respond_error(c, 500, "out of memory");
		return;
	}
	u->kd = kd;
	u->c = c;
	u->user = *user;
	snprintf(u->id, sizeof(u->id), "%s", sb->rec.id);
	if (path && !(u->path = strdup(path))) {
		up_free(u);
		http_respond_error(c, 500, "out of memory");
		return;
	}
	if (ctype && !strncasecmp(ctype, "multipart/form-data", 19)) {
		u->multipart = true;
		dl = parse_boundary(ctype, u->delim, sizeof(u->delim));
		if (dl < 0) {
			up_free(u);
			http_respond_error(c, 400, "multipart/form-data without a usable boundary");
			return;
		}
		u->dlen = (size_t)dl;
		/* The first delimiter may open the body without a CRLF before
		 * it: with one added, every delimiter is CRLF--boundary. */
		buf_append(&u->in, "\r\n", 2);
		u->state = U_PREAMBLE;
	} else {
		if (!u->path) {
			up_free(u);
			http_respond_error(c, 400, "a raw upload needs ?path=");
			return;
		}
		if (begin_file(u, u->path))
			return; /* answered, freed */
	}
	http_set_handler(c, &up_ops, u, 0);
	u->handling = true;
}

void envd_files_get(struct kilnd *kd, struct http_conn *c, struct http_req *req, struct sandbox *sb,
                    const char *path, const struct envd_user *u)
{
	files_read_as(kd, c, sb, path, envd_user_name(u), u->flags);
}
