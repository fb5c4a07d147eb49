/* SPDX-License-Identifier: MIT */
/* Task events to containerd: Forward calls of its ttrpc Events service on
 * $TTRPC_ADDRESS (what containerd gives its shims), over one connection
 * kept open, or, without that address, the binary it names with
 * -publish-binary (`BIN --address ADDR publish --topic T --namespace NS`,
 * the event on stdin; tens of ms each). A thread of their own publishes
 * them in order, so that no request waits for one; at most EVENTS_MAX wait
 * (further ones are dropped with a log line). A containerd that is away
 * (restarting) is waited for, EVENTS_RETRY_MS at most. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen/events.pb-c.h"
#include "gen/ttrpc.pb-c.h"
#include "shim.h"

#define EVENTS_SERVICE "containerd.services.events.ttrpc.v1.Events"
#define EVENTS_MAX     1024

struct event {
	struct event *next;
	char *topic;
	uint8_t *any; /* the event as a packed Any */
	size_t len;
	int64_t ns;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct event *head, **tail;
	unsigned n;
	bool started;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &q.head, 0, false};

static void publish_binary(const struct event *e)
{
	struct shim *s = &g_shim;
	int in[2], st;
	pid_t pid;

	if (!s->publish_binary || pipe2(in, O_CLOEXEC))
		return;
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		execl(s->publish_binary, s->publish_binary, "--address", s->address, "publish",
		      "--topic", e->topic, "--namespace", s->ns, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	if (pid > 0 && write(in[1], e->any, e->len) != (ssize_t)e->len)
		shim_log("event %s: writing it to %s failed", e->topic, s->publish_binary);
	close(in[1]);
	if (pid > 0 && waitpid(pid, &st, 0) == pid && (!WIFEXITED(st) || WEXITSTATUS(st)))
		shim_log("event %s: %s publish failed (status %d)", e->topic, s->publish_binary,
		         WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static int ttrpc_dial(const char *addr)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (!strncmp(addr, "unix://", 7))
		addr += 7;
	if (strlen(addr) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, addr);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r <= 0 && !(r < 0 && errno == EINTR))
			return -1;
		if (r > 0) {
			c += r;
			n -= (size_t)r;
		}
	}
	return 0;
}

/* One Forward call on fd; 0 if containerd took it. */
static int forward(int fd, uint32_t stream, const struct event *e)
{
	Containerd__Events__ForwardRequest fr = CONTAINERD__EVENTS__FORWARD_REQUEST__INIT;
	Containerd__Events__Envelope env = CONTAINERD__EVENTS__ENVELOPE__INIT;
	Google__Protobuf__Timestamp t = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	Ttrpc__Request rq = TTRPC__REQUEST__INIT;
	Google__Protobuf__Any *any = google__protobuf__any__unpack(NULL, e->len, e->any);
	uint8_t hdr[10], *body = NULL, *reply = NULL;
	Ttrpc__Response *rs = NULL;
	size_t n;
	int err = -1;

	if (!any)
		return -1;
	t.seconds = e->ns / 1000000000;
	t.nanos = (int32_t)(e->ns % 1000000000);
	env.timestamp = &t;
	env.namespace_ = g_shim.ns;
	env.topic = e->topic;
	env.event = any;
	fr.envelope = &env;
	rq.service = EVENTS_SERVICE;
	rq.method = "Forward";
	rq.payload.len = containerd__events__forward_request__get_packed_size(&fr);
	rq.payload.data = malloc(rq.payload.len + 1);
	if (!rq.payload.data)
		goto out;
	containerd__events__forward_request__pack(&fr, rq.payload.data);
	n = ttrpc__request__get_packed_size(&rq);
	body = malloc(n + 1);
	if (!body)
		goto out;
	ttrpc__request__pack(&rq, body);
	*(uint32_t *)hdr = htonl((uint32_t)n);
	*(uint32_t *)(hdr + 4) = htonl(stream);
	hdr[8] = 1; /* request */
	hdr[9] = 0;
	if (send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) != sizeof(hdr) ||
	    send(fd, body, n, MSG_NOSIGNAL) != (ssize_t)n || read_all(fd, hdr, sizeof(hdr)))
		goto out;
	n = ntohl(*(uint32_t *)hdr);
	if (n > (1u << 20) || !(reply = malloc(n + 1)) || read_all(fd, reply, n))
		goto out;
	rs = ttrpc__response__unpack(NULL, n, reply);
	if (rs && rs->status && rs->status->code)
		shim_log("event %s: containerd refused it: %s", e->topic, rs->status->message);
	err = rs ? 0 : -1;
out:
	if (rs)
		ttrpc__response__free_unpacked(rs, NULL);
	google__protobuf__any__free_unpacked(any, NULL);
	free(rq.payload.data);
	free(body);
	free(reply);
	return err;
}

/* A containerd that restarts is gone for a while (seconds): an event waits
 * for it, dialled again after 50 ms, then twice as long each time up to
 * 2 s, for at most EVENTS_RETRY_MS in all (runc's shim, too, retries its
 * events for seconds), the events after it in the queue behind it. */
#ifndef EVENTS_RETRY_MS /* (tests/e2e/unit/test_shim_events.c has a shorter one) */
#define EVENTS_RETRY_MS 30000
#endif

static void publish(const struct event *e)
{
	static int fd = -1;
	static uint32_t stream = 1;
	const char *addr = getenv("TTRPC_ADDRESS");
	unsigned waited = 0, pause = 50;

	if (!addr || !*addr) {
		publish_binary(e);
		return;
	}
	for (;;) {
		struct timespec t = {pause / 1000, (long)(pause % 1000) * 1000000};
		bool kept = fd >= 0; /* the connection of earlier events */

		if (fd < 0)
			fd = ttrpc_dial(addr);
		if (fd >= 0 && !forward(fd, stream, e)) {
			stream += 2;
			if (waited)
				shim_log("event %s: containerd took it after %u ms", e->topic,
				         waited);
			return;
		}
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (kept)
			continue; /* it broke (containerd went): dialled again at once */
		if (waited >= EVENTS_RETRY_MS)
			break;
		nanosleep(&t, NULL);
		waited += pause;
		pause = pause * 2 > 2000 ? 2000 : pause * 2;
	}
	shim_log("event %s dropped: containerd's ttrpc socket %s has not taken it in %u s "
	         "(the task's State still says how it ended)",
	         e->topic, addr, waited / 1000);
}

static void *publisher(void *unused)
{
	(void)unused;
	for (;;) {
		struct event *e;

		pthread_mutex_lock(&q.lock);
		while (!q.head)
			pthread_cond_wait(&q.more, &q.lock);
		e = q.head;
		q.head = e->next;
		if (!q.head)
			q.tail = &q.head;
		q.n--;
		pthread_mutex_unlock(&q.lock);
		publish(e);
		free(e->topic);
		free(e->any);
		free(e);
	}
	return NULL;
}

/* Queue topic with the packed event msg of type_name. */
static void queue(const char *topic, const char *type_name, const ProtobufCMessage *msg)
{
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	struct event *e;
	uint8_t *packed;
	size_t n = protobuf_c_message_get_packed_size(msg);
	pthread_t t;

	if (!g_shim.ns || !g_shim.address)
		return;
	packed = malloc(n + 1);
	e = calloc(1, sizeof(*e));
	if (!packed || !e)
		goto drop;
	protobuf_c_message_pack(msg, packed);
	any.type_url = (char *)type_name;
	any.value.data = packed;
	any.value.len = n;
	e->len = google__protobuf__any__get_packed_size(&any);
	e->any = malloc(e->len + 1);
	e->topic = strdup(topic);
	e->ns = now_ns();
	if (!e->any || !e->topic)
		goto drop;
	google__protobuf__any__pack(&any, e->any);
	free(packed);
	pthread_mutex_lock(&q.lock);
	if (q.n >= EVENTS_MAX) {
		pthread_mutex_unlock(&q.lock);
		shim_log("event %s dropped: %u events wait already", topic, q.n);
		packed = NULL;
		goto drop;
	}
	if (!q.started && !pthread_create(&t, NULL, publisher, NULL)) {
		pthread_detach(t);
		q.started = true;
	}
	*q.tail = e;
	q.tail = &e->next;
	q.n++;
	pthread_cond_signal(&q.more);
	pthread_mutex_unlock(&q.lock);
	return;
drop:
	free(packed);
	if (e) {
		free(e->any);
		free(e->topic);
	}
	free(e);
}

static Google__Protobuf__Timestamp ts(int64_t ns)
{
	Google__Protobuf__Timestamp t = GOOGLE__PROTOBUF__TIMESTAMP__INIT;

	t.seconds = ns / 1000000000;
	t.nanos = (int32_t)(ns % 1000000000);
	return t;
}

void event_task(enum shim_event ev, const struct proc *p, uint32_t pid)
{
	struct shim *s = &g_shim;
	char *cid = p ? p->ctr->id : s->id, *eid = p ? p->exec_id : "";
	Google__Protobuf__Timestamp t = ts(p && p->exited_ns ? p->exited_ns : now_ns());

	switch (ev) {
	case EV_CREATE: {
		Containerd__Events__TaskCreate m = CONTAINERD__EVENTS__TASK_CREATE__INIT;

		m.container_id = cid;
		m.bundle = p ? p->ctr->bundle : s->bundle;
		m.pid = pid;
		queue("/tasks/create", "containerd.events.TaskCreate", &m.base);
		break;
	}
	case EV_START: {
		if (eid[0]) {
			Containerd__Events__TaskExecStarted m =
			    CONTAINERD__EVENTS__TASK_EXEC_STARTED__INIT;

			m.container_id = cid;
			m.exec_id = eid;
			m.pid = pid;
			queue("/tasks/exec-started", "containerd.events.TaskExecStarted", &m.base);
		} else {
			Containerd__Events__TaskStart m = CONTAINERD__EVENTS__TASK_START__INIT;

			m.container_id = cid;
			m.pid = pid;
			queue("/tasks/start", "containerd.events.TaskStart", &m.base);
		}
		break;
	}
	case EV_EXEC_ADDED: {
		Containerd__Events__TaskExecAdded m = CONTAINERD__EVENTS__TASK_EXEC_ADDED__INIT;

		m.container_id = cid;
		m.exec_id = eid;
		queue("/tasks/exec-added", "containerd.events.TaskExecAdded", &m.base);
		break;
	}
	case EV_EXIT: {
		Containerd__Events__TaskExit m = CONTAINERD__EVENTS__TASK_EXIT__INIT;

		m.container_id = cid;
		m.id = eid[0] ? eid : cid;
		m.pid = pid;
		m.exit_status = p->exit_status;
		m.exited_at = &t;
		queue("/tasks/exit", "containerd.events.TaskExit", &m.base);
		break;
	}
	case EV_DELETE: {
		Containerd__Events__TaskDelete m = CONTAINERD__EVENTS__TASK_DELETE__INIT;

		m.container_id = cid;
		m.id = eid;
		m.pid = pid;
		m.exit_status = p->exit_status;
		m.exited_at = &t;
		queue("/tasks/delete", "containerd.events.TaskDelete", &m.base);
		break;
	}
	case EV_PAUSED: {
		Containerd__Events__TaskPaused m = CONTAINERD__EVENTS__TASK_PAUSED__INIT;

		m.container_id = cid;
		queue("/tasks/paused", "containerd.events.TaskPaused", &m.base);
		break;
	}
	case EV_RESUMED: {
		Containerd__Events__TaskResumed m = CONTAINERD__EVENTS__TASK_RESUMED__INIT;

		m.container_id = cid;
		queue("/tasks/resumed", "containerd.events.TaskResumed", &m.base);
		break;
	}
	}
}

/* Events still queued go out before the shim exits (bounded: 5 s). */
void events_flush(void)
{
	for (int i = 0; i < 500; i++) {
		bool empty;
		struct timespec t = {0, 10 * 1000 * 1000};

		pthread_mutex_lock(&q.lock);
		empty = !q.head;
		pthread_mutex_unlock(&q.lock);
		if (empty)
			return;
		nanosleep(&t, NULL);
	}
}
