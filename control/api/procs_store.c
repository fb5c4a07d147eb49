/* SPDX-License-Identifier: MIT */
/* The process tables of a sandbox kept on disk, SANDBOX_DIR/procs.json:
 * kiln's (api/procs.c) and envd's (envd/envd_proc.c), so that a restarted
 * kilnd (crashed, killed or upgraded) still lists the commands its
 * sandboxes run, kiln attach takes them up again and the SDK's
 * commands.connect() finds them: the agent keeps them (KILN_FRAME_KEEP)
 * whatever happens to kilnd. {"kiln": [...], "envd": [...]}; envd's
 * entries leave the environment out (it may hold secrets). A change
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

#include "envd/envd_proc.h"
#include "procs.h"
#include "sandbox/sandbox.h"
#include "util.h"

#define PROCS_SAVE_DELAY 0.05         /* s */
#define PROCS_FILE_MAX   (128u << 10) /* bytes of procs.json read back */

static bool pid_ok(json_t *j)
{
	return json_is_integer(j) && json_integer_value(j) >= 1 &&
	       json_integer_value(j) <= 2147483647;
}

/* An entry's pid and START tag: a pid, or 0 for one that was starting,
 * which needs a tag (1..2^63-1); a tag is optional otherwise. */
static int pid_tag(json_t *o, const char *tag_key, uint32_t *pid, uint64_t *tag)
{
	json_t *jp = json_object_get(o, "pid"), *jt = json_object_get(o, tag_key);

	if (jt && (!json_is_integer(jt) || json_integer_value(jt) < 1))
		return -EINVAL;
	*tag = jt ? (uint64_t)json_integer_value(jt) : 0;
	if (json_is_integer(jp) && json_integer_value(jp) == 0 && *tag) {
		*pid = 0;
		return 0;
	}
	if (!pid_ok(jp))
		return -EINVAL;
	*pid = (uint32_t)json_integer_value(jp);
	return 0;
}

/* The sandbox's struct procs_sb (kiln's table, and the writer's state for
 * both), made on first use. */
static struct procs_sb *procs_table(struct sandbox *sb)
{
	if (!sb->procs)
		sb->procs = calloc(1, sizeof(*sb->procs));
	return sb->procs;
}

static int procs_path(const struct sandbox *sb, char *out, size_t n, const char *suffix)
{
	int w = snprintf(out, n, "%s/procs.json%s", sb->dir, suffix);

	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static json_t *kiln_json(const struct procs_sb *ps)
{
	json_t *arr = json_array();

	for (const struct kproc *p = ps ? ps->head : NULL; arr && p; p = p->next) {
		json_t *o = json_pack("{s:I,s:b,s:s,s:I}", "pid", (json_int_t)p->pid, "pty", p->pty,
		                      "cmd", p->cmd, "startedMs", (json_int_t)p->started_ms);

		if (o && p->tag)
			json_object_set_new(o, "tag", json_integer((json_int_t)p->tag));

		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *envd_json(const struct envd_sb *es)
{
	json_t *arr = json_array();

	for (const struct envd_proc *p = es ? es->procs : NULL; arr && p; p = p->next) {
		json_t *cfg, *o;

		if (!p->started && !p->htag)
			continue; /* no pid yet, and no way to find it */
		cfg = json_copy(p->config);
		if (cfg)
			json_object_del(cfg, "envs");
		/* pid 0 with an htag: starting (START sent, STARTED not read) */
		o = cfg ? json_pack("{s:I,s:b,s:b,s:s?,s:o}", "pid",
		                    (json_int_t)(p->started ? p->pid : 0), "pty", p->pty, "stdin",
		                    p->stdin_open, "tag", p->tag, "config", cfg)
		        : NULL;
		if (o && p->htag)
			json_object_set_new(o, "htag", json_integer((json_int_t)p->htag));
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *procs_json(const struct sandbox *sb)
{
	json_t *k = kiln_json(sb->procs), *e = envd_json(sb->envd);

	if (!k || !e) {
		json_decref(k);
		json_decref(e);
		return NULL;
	}
	return json_pack("{s:o,s:o}", "kiln", k, "envd", e);
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
	arr = procs_json(sb);
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
	struct procs_sb *ps;

	/* Stopping (kilnd or the sandbox): what is left was written at the end. */
	if (sb->procs_closed || sb->kd->stopping || !(ps = procs_table(sb)))
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
	sb->procs_closed = true;
	if (!sb->procs)
		return;
	ev_timer_stop(sb->kd->loop, &sb->procs->save);
	procs_flush(sb);
}

/* One entry of kiln's table, if it is one kilnd could have written. */
static int kiln_entry(json_t *o, uint32_t *pid, bool *pty, const char **cmd, int64_t *started,
                      uint64_t *tag)
{
	json_t *jt = json_object_get(o, "pty"), *jc = json_object_get(o, "cmd"),
	       *js = json_object_get(o, "startedMs");

	if (pid_tag(o, "tag", pid, tag) || !json_is_boolean(jt) || !json_is_string(jc) ||
	    json_string_length(jc) >= PROCS_CMD_MAX || !json_is_integer(js) ||
	    json_integer_value(js) < 0)
		return -EINVAL;
	*pty = json_is_true(jt);
	*cmd = json_string_value(jc);
	*started = json_integer_value(js);
	return 0;
}

static int load_kiln(struct sandbox *sb, json_t *arr, size_t *n)
{
	size_t i, bad = 0;
	json_t *o;

	json_array_foreach(arr, i, o)
	{
		uint32_t pid;
		bool pty;
		const char *cmd;
		int64_t started;
		uint64_t tag;

		if (kiln_entry(o, &pid, &pty, &cmd, &started, &tag) ||
		    procs_restore(sb, pid, pty, cmd, started, tag))
			bad++;
		else
			(*n)++;
	}
	return (int)bad;
}

static int load_envd(struct sandbox *sb, json_t *arr, size_t *n)
{
	size_t i, bad = 0;
	json_t *o;

	json_array_foreach(arr, i, o)
	{
		json_t *jt = json_object_get(o, "pty"), *ji = json_object_get(o, "stdin"),
		       *jg = json_object_get(o, "tag");
		uint32_t pid;
		uint64_t htag;

		if (pid_tag(o, "htag", &pid, &htag) || !json_is_boolean(jt) ||
		    !json_is_boolean(ji) || (jg && !json_is_string(jg) && !json_is_null(jg)) ||
		    envd_proc_restore(sb, pid, json_is_true(jt), json_is_true(ji),
		                      json_string_value(jg), json_object_get(o, "config"), htag))
			bad++;
		else
			(*n)++;
	}
	return (int)bad;
}

void procs_load(struct sandbox *sb)
{
	char path[4200];
	json_error_t je;
	size_t len, n = 0;
	json_t *j, *k, *e;
	char *text;
	int bad = 0;

	if (procs_path(sb, path, sizeof(path), ""))
		return;
	text = read_small_file(path, PROCS_FILE_MAX, &len);
	if (!text) {
		if (errno != ENOENT)
			log_warn("sandbox %s: cannot read %s (%s): its commands are not listed",
			         sb->rec.id, path, strerror(errno));
		return;
	}
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	k = json_object_get(j, "kiln");
	e = json_object_get(j, "envd");
	if (!json_is_object(j) || (k && !json_is_array(k)) || (e && !json_is_array(e))) {
		log_warn("sandbox %s: %s is not a process table (%s): its commands are not listed",
		         sb->rec.id, path, j ? "not {\"kiln\": [...], \"envd\": [...]}" : je.text);
		json_decref(j);
		return;
	}
	bad += load_kiln(sb, k, &n);
	bad += load_envd(sb, e, &n);
	json_decref(j);
	if (bad)
		log_warn("sandbox %s: %d entries of %s skipped (bad or too many)", sb->rec.id, bad,
		         path);
	if (n)
		log_info("sandbox %s: %zu processes listed again, detached", sb->rec.id, n);
}
