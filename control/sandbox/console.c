/* SPDX-License-Identifier: MIT */
/* Console logs capped and rotated. A VMM appends its console (the guest's
 * output, its own messages) to DATA_DIR/sandboxes/ID/console.log through
 * an O_APPEND descriptor it keeps after kilnd is gone; a guest that
 * prints without end would fill the disk. kilnd watches every live
 * sandbox's log with inotify, and once it grows past --console-max it
 * copies the last --console-max bytes to console.log.1 and truncates
 * console.log (the VMM's next write lands at offset 0): at most about
 * twice --console-max on disk, whatever the guest prints. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "console.h"
#include "sandbox_int.h"
#include "util.h"

/* Copy the last max bytes of the open log into path.1 (replaced whole). */
static int keep_tail(int fd, const char *path, off_t size, off_t max)
{
	char *tmp = NULL, *old = NULL;
	off_t off = size > max ? size - max : 0;
	int out = -1, rc = -ENOMEM;

	if (asprintf(&tmp, "%s.1.tmp", path) < 0 || asprintf(&old, "%s.1", path) < 0)
		goto out;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	while (off < size) {
		ssize_t n = copy_file_range(fd, &off, out, NULL, (size_t)(size - off), 0);

		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			goto out;
		}
	}
	rc = rename(tmp, old) ? -errno : 0;
out:
	if (out >= 0)
		close(out);
	if (rc && tmp)
		unlink(tmp);
	free(tmp);
	free(old);
	return rc;
}

void console_check(struct sandbox *sb)
{
	off_t max = (off_t)sb->kd->cfg.console_max;
	struct stat st;
	int fd, rc;

	if (!max)
		return;
	fd = open(sb->console_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size <= max) {
		close(fd);
		return;
	}
	rc = keep_tail(fd, sb->console_path, st.st_size, max);
	if (rc)
		log_warn("sandbox %s: keeping the end of %s: %s", sb->rec.id, sb->console_path,
		         strerror(-rc));
	/* Truncated even so: the cap holds whatever else failed. */
	if (ftruncate(fd, 0))
		log_warn("sandbox %s: truncating %s: %s", sb->rec.id, sb->console_path,
		         strerror(errno));
	else
		log_debug("sandbox %s: console log rotated at %lld bytes", sb->rec.id,
		          (long long)st.st_size);
	sb->console_mark = 0;
	close(fd);
}

static void on_events(struct ev_loop *loop, ev_io *w, int revents)
{
	struct kilnd *kd = w->data;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while ((n = read(kd->console_ifd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			for (struct sandbox *sb = kd->sandboxes; sb; sb = sb->next)
				if (sb->console_wd == e->wd) {
					console_check(sb);
					break;
				}
			p += sizeof(*e) + e->len;
		}
	}
}

int console_init(struct kilnd *kd)
{
	kd->console_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (kd->console_ifd < 0)
		return -errno;
	ev_io_init(&kd->console_w, on_events, kd->console_ifd, EV_READ);
	kd->console_w.data = kd;
	ev_io_start(kd->loop, &kd->console_w);
	return 0;
}

void console_watch(struct sandbox *sb)
{
	struct kilnd *kd = sb->kd;

	if (kd->console_ifd < 0 || sb->console_wd >= 0)
		return;
	sb->console_wd = inotify_add_watch(kd->console_ifd, sb->console_path, IN_MODIFY);
	if (sb->console_wd < 0)
		log_warn("sandbox %s: cannot watch %s: %s", sb->rec.id, sb->console_path,
		         strerror(errno));
	console_check(sb); /* what it wrote while nobody watched */
}

void console_unwatch(struct sandbox *sb)
{
	if (sb->console_wd < 0)
		return;
	inotify_rm_watch(sb->kd->console_ifd, sb->console_wd);
	sb->console_wd = -1;
}

void console_free(struct kilnd *kd)
{
	if (kd->console_ifd < 0)
		return;
	ev_io_stop(kd->loop, &kd->console_w);
	close(kd->console_ifd);
	kd->console_ifd = -1;
}
