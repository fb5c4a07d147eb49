/* SPDX-License-Identifier: MIT */
/* A process's I/O: the agent stream's STDOUT and STDERR frames into the
 * fifos containerd gave (its reader opened them already; an empty path
 * discards; what comes while the reader is away waits there, struct out),
 * the stdin fifo into STDIN frames, and the EXIT frame into the process's
 * exit status. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_proto.h"
#include "shim.h"

/* The fifo for writing once its reader has it open. A reader that does
 * not come within OPEN_WAIT_MS (ctr run -d exits without reading) gets
 * nothing: the output is dropped rather than the exit status held up. */
#define OPEN_WAIT_MS 2000

static int open_out(const char *path)
{
	struct timespec tick = {0, 10 * 1000 * 1000};
	int fd = -1;

	if (!path || !*path)
		return -1;
	for (int waited = 0; waited <= OPEN_WAIT_MS; waited += 10) {
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 || (errno != ENXIO && errno != EINTR))
			break;
		nanosleep(&tick, NULL);
	}
	if (fd < 0) {
		shim_log("%s: %s; the process's output there is dropped", path,
		         errno == ENXIO ? "nobody reads it" : strerror(errno));
		return -1;
	}
	/* from now on the reader's pace is ours (as with runc) */
	fcntl(fd, F_SETFL, 0);
	return fd;
}

/* A fifo of a process's output. Its reader may go for a while
 * (containerd restarting, ctr run -d until ctr task attach): what comes
 * meanwhile is kept in the fifo for the reader that opens it again, as far
 * as the fifo holds (64 KiB), the rest dropped. The shim holds a read end of
 * its own then (the fifo's data lives on), writes without blocking (the
 * process's exit must not wait for a reader), and lets go of it once
 * somebody else reads (the fifo holds less than we put in). */
struct out {
	const char *path;
	int fd;     /* -1: discarded */
	int hold;   /* our read end while nobody else reads, else -1 */
	int queued; /* what the fifo held after our last write, while held */
};

static void out_open(struct out *o, const char *path)
{
	o->path = path;
	o->fd = open_out(path);
	o->hold = -1;
}

static bool out_hold(struct out *o)
{
	o->hold = open(o->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (o->hold < 0)
		return false;
	fcntl(o->fd, F_SETFL, O_NONBLOCK);
	if (ioctl(o->hold, FIONREAD, &o->queued))
		o->queued = 0;
	return true;
}

static void out_close(struct out *o)
{
	if (o->hold >= 0)
		close(o->hold);
	if (o->fd >= 0)
		close(o->fd);
	o->hold = o->fd = -1;
}

/* Is somebody else reading? (while held: the fifo holds less than we put in) */
static bool out_read_by_other(struct out *o, int expect)
{
	int q;

	return !ioctl(o->hold, FIONREAD, &q) && q < expect;
}

static void out_unhold(struct out *o)
{
	close(o->hold); /* a reader is back: its pace is ours again */
	o->hold = -1;
	fcntl(o->fd, F_SETFL, 0);
}

static void put(struct out *o, const uint8_t *p, size_t n)
{
	while (o->fd >= 0 && n) {
		ssize_t w;

		if (o->hold >= 0 && out_read_by_other(o, o->queued))
			out_unhold(o);
		w = write(o->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE && o->hold < 0 && out_hold(o))
			continue; /* the reader went: kept for the next */
		if (w <= 0)
			return; /* the fifo is full and nobody reads, or it broke: dropped */
		if (o->hold >= 0 && out_read_by_other(o, o->queued + (int)w))
			out_unhold(o);
		else if (o->hold >= 0 && ioctl(o->hold, FIONREAD, &o->queued))
			o->queued = 0;
		p += w;
		n -= (size_t)w;
	}
}

void *io_reader(void *arg)
{
	struct proc *p = arg;
	struct shim *s = &g_shim;
	struct out out, err_out = {.fd = -1, .hold = -1}, *err;
	uint32_t status = 255;
	bool exited = false;
	char msg[1600]; /* the root saved to, then why not */

	out_open(&out, p->stdout_path);
	if (!p->spec.terminal)
		out_open(&err_out, p->stderr_path);
	err = err_out.fd >= 0 ? &err_out : &out;
	for (;;) {
		struct kiln_frame f;
		uint8_t *pl;
		int32_t code;
		uint32_t sig, flags;

		if (agent_read_frame(p->fd, &f, &pl, -1)) {
			shim_log("process %s: the agent stream ended without an exit status",
			         p->exec_id[0] ? p->exec_id : p->ctr->id);
			break;
		}
		if (f.type == KILN_MSG_STDOUT)
			put(&out, pl, f.len);
		else if (f.type == KILN_MSG_STDERR)
			put(err, pl, f.len);
		else if (f.type == KILN_MSG_EXIT &&
		         !agent_parse_exit(pl, f.len, &code, &sig, &flags)) {
			/* as a shell reports it: 128+N for a signal */
			status = sig ? 128 + sig : (uint32_t)code & 0xff;
			exited = true;
			free(pl);
			break;
		}
		free(pl);
	}
	/* the container's root is the VM's: its writes to its snapshot, before
	 * containerd hears of the exit (rwlayer.c) */

	if (exited && !p->exec_id[0] && rwlayer_root(p->ctr, msg, sizeof(msg))) {
		bool save;

		pthread_mutex_lock(&s->lock);
		save = !s->vm.dead && p->state != P_STOPPED;
		p->ctr->rw_saving = save; /* a SIGKILL's Kill waits for it */
		pthread_mutex_unlock(&s->lock);
		if (save && rwlayer_save(s, p->ctr, msg, sizeof(msg) - 8)) {
			strcat(msg, "\n");
			put(err, (const uint8_t *)"kiln: ", 6);
			put(err, (const uint8_t *)msg, strlen(msg));
		}
	}
	out_close(&out);
	out_close(&err_out);
	pthread_mutex_lock(&p->wlock);
	close(p->fd);
	p->fd = -1;
	pthread_mutex_unlock(&p->wlock);
	/* the stdin pump ends too (Delete joins it) */
	if (p->has_pump && write(p->wake[1], "", 1) < 0)
		shim_log("cannot wake the stdin pump: %s", strerror(errno));
	pthread_mutex_lock(&s->lock);
	p->ctr->rw_saving = false;
	proc_exited(s, p, status);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Until the client's end of the fifo closes (its input ended), or CloseIO
 * wakes us: then what the fifo still holds goes first, and the EOF after
 * it. (A client may close stdin and call CloseIO before we read what it
 * wrote: the EOF must not overtake its last bytes.) */
void *io_stdin(void *arg)
{
	struct proc *p = arg;
	uint8_t chunk[32 << 10];
	bool asked = false;
	int fd;

	/* non-blocking: no writer yet is no EOF for a fifo, just no POLLIN */
	fd = open(p->stdin_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		shim_log("cannot open %s: %s", p->stdin_path, strerror(errno));
		vm_proc_close_stdin(p);
		return NULL;
	}
	for (;;) {
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN},
		                       {.fd = p->wake[0], .events = POLLIN}};
		ssize_t r;

		if (!asked && poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!asked && (pf[1].revents & POLLIN))
			asked = true; /* drain, then EOF */
		if (!asked && !(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN && !asked)
			continue;
		if (r <= 0 || vm_proc_stdin(p, chunk, (size_t)r))
			break;
	}
	close(fd);
	/* In a terminal the end of our input is not the end of the session
	 * (ctr's own stdin may be a tty that stays); CloseIO says so then. */
	if (!p->spec.terminal || asked)
		vm_proc_close_stdin(p);
	return NULL;
}

void io_stdin_close(struct proc *p)
{
	if (p->has_pump && p->wake[1] >= 0) {
		if (write(p->wake[1], "", 1) < 0 && errno != EAGAIN)
			vm_proc_close_stdin(p);
	} else {
		vm_proc_close_stdin(p);
	}
}
