/* SPDX-License-Identifier: MIT */
/* kiln-agent: the info stream — INFO right after the HELLO answer, then close. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "agent.h"

static uint64_t uptime_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0 && clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Best effort: the numeric entries of /proc, 0 without procfs. */
static uint32_t count_procs(void)
{
	uint32_t n = 0;
	struct dirent *e;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]))
			n++;
	closedir(d);
	return n;
}

static void info_open(struct conn *c)
{
	uint64_t total_kb = 0, free_kb = 0;
	struct frame_mark m;
	struct sysinfo si;

	if (sysinfo(&si) == 0) {
		uint64_t unit = si.mem_unit ? si.mem_unit : 1;
		total_kb = (uint64_t)si.totalram * unit / 1024;
		free_kb = (uint64_t)si.freeram * unit / 1024;
	}
	frame_begin(&c->out, &m, KILN_MSG_INFO);
	put_str(&c->out, &m, AGENT_VERSION_STRING);
	put_u64(&c->out, &m, uptime_ms());
	put_u64(&c->out, &m, total_kb);
	put_u64(&c->out, &m, free_kb);
	put_u32(&c->out, &m, count_procs());
	if (frame_end(&c->out, &m))
		conn_nomem(c);
	else
		conn_finish(c);
}

static void info_frame(struct conn *c, uint16_t type, const uint8_t *p, uint32_t len)
{
	conn_fail(c, EPROTO, "unexpected message type %u on an info stream", type);
}

const struct stream_ops info_ops = {
    .open = info_open,
    .frame = info_frame,
};
