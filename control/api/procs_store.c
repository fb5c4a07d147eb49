/* SPDX-License-Identifier: MIT */
/* kiln's process table of a sandbox kept on disk, SANDBOX_DIR/procs.json,
 * so that a restarted kilnd (crashed, killed or upgraded) still lists the
 * commands its sandboxes run and kiln attach takes them up again: the
 * agent keeps them (KILN_FRAME_KEEP) whatever happens to kilnd. A change
 * is written PROCS_SAVE_DELAY later, in one write for a burst of changes
 * (off every request's path); a kilnd killed within that window forgets
 * the commands started or ended in it. The file is kilnd's own, but read
 * back as if hostile: bounded, every field checked, bad entries skipped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procs.h"
#include "sandbox/sandbox.h"
#include "util.h"

#define PROCS_SAVE_DELAY 0.05         /* s */
#define PROCS_FILE_MAX   (128u << 10) /* bytes of procs.json read back */

static int procs_path(const struct sandbox *sb, char *out, size_t n, const char *suffix)
{
	int w = snprintf(out, n, "%s/procs.json%s", sb->dir, suffix);

	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static json_t *procs_json(const struct procs_sb *ps)
{
	json_t *arr = json_array();

	for (const struct kproc *p = ps->head; arr && p; p = p->next) {
		json_t *o = json_pack("{s:I,s:b,s:s,s:I}", "pid", (json_int_t)p->pid, "pty", p->pty,
		                      "cmd", p->cmd, "startedMs", (json_int_t)p->started_ms);

		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* Written whole to a new file and renamed over the old one: a kilnd that
 * dies in the middle leaves the previous table, never half of one. */
static int procs_write(struct sandbox *sb)
{
	char path[4200], tmp[4210];
	json_t *arr;
	int rc;

	if (procs_path(sb, path, sizeof(path), "") || procs_path(sb, tmp, sizeof(tmp), ".new"))
		return -ENAMETOOLONG;
	arr = procs_json(sb->procs);
	if (!arr)
		return -ENOMEM;
	rc = json_dump_file(arr, tmp, JSON_COMPACT) ? -EIO : 0;
	json_decref(arr);
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static void procs_flush(struct sandbox *sb)
{
	int rc;

	if (!sb->procs || !sb->procs->dirty)
		return;
	sb->procs->dirty = false;
	rc = procs_write(sb);
	if (rc)
		log_warn("sandbox %s: cannot write its process table (%s): a restarted kilnd "
		         "will not list its commands",
		         sb->rec.id, strerror(-rc));
}

static void on_save(struct ev_loop *loop, ev_timer *w, int revents)
{
	procs_flush(w->data);
}

void procs_changed(struct sandbox *sb)
{
	struct procs_sb *ps = sb->procs;

	if (!ps)
		return;
	ps->dirty = true;
	if (ev_is_active(&ps->save))
		return;
	ev_timer_init(&ps->save, on_save, PROCS_SAVE_DELAY, 0);
	ps->save.data = sb;
	ev_timer_start(sb->kd->loop, &ps->save);
}

void procs_store_close(struct sandbox *sb)
{
	if (!sb->procs)
		return;
	ev_timer_stop(sb->kd->loop, &sb->procs->save);
	procs_flush(sb);
}

/* One entry of the file, if it is one kilnd could have written. */
static int procs_entry(json_t *o, uint32_t *pid, bool *pty, const char **cmd, int64_t *started)
{
	json_t *jp = json_object_get(o, "pid"), *jt = json_object_get(o, "pty"),
	       *jc = json_object_get(o, "cmd"), *js = json_object_get(o, "startedMs");

	if (!json_is_integer(jp) || json_integer_value(jp) < 1 ||
	    json_integer_value(jp) > 2147483647 || !json_is_boolean(jt) || !json_is_string(jc) ||
	    json_string_length(jc) >= PROCS_CMD_MAX || !json_is_integer(js) ||
	    json_integer_value(js) < 0)
		return -EINVAL;
	*pid = (uint32_t)json_integer_value(jp);
	*pty = json_is_true(jt);
	*cmd = json_string_value(jc);
	*started = json_integer_value(js);
	return 0;
}

void procs_load(struct sandbox *sb)
{
	char path[4200];
	json_error_t je;
	size_t len, i, bad = 0, n = 0;
	json_t *arr, *o;
	char *text;

	if (procs_path(sb, path, sizeof(path), ""))
		return;
	text = read_small_file(path, PROCS_FILE_MAX, &len);
	if (!text) {
		if (errno != ENOENT)
			log_warn("sandbox %s: cannot read %s (%s): its commands are not listed",
			         sb->rec.id, path, strerror(errno));
		return;
	}
	arr = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!json_is_array(arr)) {
		log_warn("sandbox %s: %s is not a process table (%s): its commands are not listed",
		         sb->rec.id, path, arr ? "not an array" : je.text);
		json_decref(arr);
		return;
	}
	json_array_foreach(arr, i, o)
	{
		uint32_t pid;
		bool pty;
		const char *cmd;
		int64_t started;

		if (procs_entry(o, &pid, &pty, &cmd, &started) ||
		    procs_restore(sb, pid, pty, cmd, started))
			bad++;
		else
			n++;
	}
	json_decref(arr);
	if (bad)
		log_warn("sandbox %s: %zu entries of %s skipped (bad or too many)", sb->rec.id, bad,
		         path);
	if (n)
		log_info("sandbox %s: %zu of kiln's processes listed again, detached", sb->rec.id,
		         n);
}
