/* SPDX-License-Identifier: MIT */
/* kiln-agent: the info stream — INFO right after the HELLO answer, then close. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

static uint64_t uptime_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0 && clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The start of a getdents64 record (struct linux_dirent64). */
struct dent64 {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
	uint8_t type;
	char name[];
};

/* Best effort: the numeric entries of /proc, 0 without procfs. Read with
 * getdents64 into a stack buffer: opendir() would allocate a DIR that
 * musl's allocator maps and unmaps around every request (~90 us in a
 * guest). */
static uint32_t count_procs(void)
{
	char buf[4096] __attribute__((aligned(8)));
	uint32_t n = 0;
	long len;
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((len = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off + (long)offsetof(struct dent64, name) < len;) {
			const struct dent64 *e = (const struct dent64 *)(buf + off);

			if (e->reclen <= offsetof(struct dent64, name) || e->reclen > len - off)
				break;
			if (isdigit((unsigned char)e->name[0]))
				n++;
			off += e->reclen;
		}
	}
	close(fd);
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
