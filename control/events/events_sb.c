/* SPDX-License-Identifier: MIT */
/* What goes into events: who asked, command lines, and the sandbox state
 * changes that are events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "http/buf.h"
#include "http/http.h"
#include "sandbox/sandbox.h"
#include "util.h"

void events_who(struct kilnd *kd, const struct http_req *req, char out[EVENTS_WHO_LEN])
{
	if (req->who.known)
		snprintf(out, EVENTS_WHO_LEN, "%s", req->who.key_id);
	else
		snprintf(out, EVENTS_WHO_LEN, "envd"); /* envd: the sandbox's own token */
}

/* An argument as sh reads it: bare when it is plain, else in '...'. */
static void quote(struct buf *b, const char *a)
{
	bool plain = *a != 0;

	for (const char *p = a; *p && plain; p++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		               "-_./=:,+@%",
		               *p) != NULL;
	if (plain) {
		buf_puts(b, a);
		return;
	}
	buf_puts(b, "'");
	for (const char *p = a; *p; p++) {
		if (*p == '\'')
			buf_puts(b, "'\\''");
		else
			buf_append(b, p, 1);
	}
	buf_puts(b, "'");
}

/* Cut s (a malloc'd string) at EVENTS_TEXT_MAX bytes, not inside a UTF-8
 * sequence, marked with "...". */
static char *cut(char *s)
{
	size_t n;

	if (!s || strlen(s) <= EVENTS_TEXT_MAX)
		return s;
	n = EVENTS_TEXT_MAX - 3;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(s + n, "...", 4);
	return s;
}

char *events_cmdline(const char *const *argv)
{
	struct buf b = {0};
	char *s;

	for (size_t i = 0; argv && argv[i] && buf_avail(&b) <= EVENTS_TEXT_MAX; i++) {
		if (i)
			buf_puts(&b, " ");
		quote(&b, argv[i]);
	}
	s = buf_strdup(&b);
	buf_free(&b);
	return cut(s ? s : strdup(""));
}

json_t *events_text(const char *s)
{
	char *c = cut(strdup(s ? s : ""));
	json_t *j = c ? json_string(c) : NULL;

	/* jansson refuses invalid UTF-8: such a text is kept as \xNN escapes */
	if (c && !j) {
		struct buf b = {0};

		for (const unsigned char *p = (const unsigned char *)c; *p; p++)
			if (*p < 0x80 && *p >= 0x20)
				buf_append(&b, p, 1);
			else
				buf_printf(&b, "\\x%02x", *p);
		free(c);
		c = buf_strdup(&b);
		buf_free(&b);
		j = c ? json_string(c) : NULL;
	}
	free(c);
	return j ? j : json_string("");
}

void events_sb(struct sandbox *sb, const char *type, json_t *details)
{
	events_add(sb->kd, sb->rec.id, sb, type, sb->actor[0] ? sb->actor : "kilnd", details);
}

void events_sb_saved(struct sandbox *sb)
{
	enum sb_state old = sb->ev_state, now = sb->state;
	int64_t t = now_ms(), took = t - sb->ev_since;

	if (old != now) {
		sb->ev_state = now;
		sb->ev_since = t;
	}
	switch (now) {
	case SB_RUNNING:
		/* a pool clone is created when it is claimed (sb_claim) */
		if (!sb->ev_created && !(sb->rec.flags & SB_F_POOL)) {
			sb->ev_created = true;
			events_sb(sb, "sandbox.created",
			          json_pack("{s:s,s:i,s:i}", "template", sb->rec.template_id,
			                    "memoryMB", sb->rec.memory_mb, "cpuCount",
			                    sb->rec.cpu_count));
		} else if (old == SB_RESUMING) {
			events_sb(sb, "sandbox.resumed", json_pack("{s:I}", "durationMs", took));
		}
		break;
	case SB_PAUSED:
		if (old == SB_PAUSING)
			events_sb(sb, "sandbox.paused",
			          json_pack("{s:I,s:I}", "snapshotBytes",
			                    (json_int_t)sb->rec.snap_bytes, "durationMs", took));
		break;
	case SB_ERROR:
		/* what kilnd saw happen, whoever asked last */
		if (old != SB_ERROR)
			events_add(
			    sb->kd, sb->rec.id, sb, "sandbox.error", "kilnd",
			    json_pack("{s:o}", "reason",
			              events_text(sb->rec.reason ? sb->rec.reason : "unknown")));
		break;
	default:
		break;
	}
}
