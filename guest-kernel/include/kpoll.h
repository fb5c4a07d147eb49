/* SPDX-License-Identifier: MIT */
/*
 * Waiting for several files at once (poll.c), for poll, select, epoll and
 * the files that can be polled.
 *
 * A waiter first asks every file for its mask (file_poll). If nothing is
 * ready it builds a poll table: poll_add_file() for each file, which holds
 * a reference on it and lets its poll_wait op name its wait queues with
 * poll_add_wait(); the waiter sleeps (wait_sleep) with one wait entry on
 * each queue, asks again when woken, and at the end poll_table_free()
 * takes the entries out and drops the references. No event can slip in
 * between asking and sleeping: the library OS is not preempted.
 */
#ifndef KILN_KPOLL_H
#define KILN_KPOLL_H

#include "sched.h"

struct file;

#define POLL_CHUNK_SLOTS 15

struct poll_slot {
	struct wait_entry e; /* on a queue, or e.wq NULL */
	struct file *f;      /* a reference held, or NULL */
};

struct poll_chunk {
	struct poll_chunk *next;
	int n;
	struct poll_slot slot[POLL_CHUNK_SLOTS];
};

struct poll_table {
	struct poll_chunk first; /* more are allocated as needed */
	struct poll_chunk *last;
	int err;   /* -ENOMEM: something could not be waited on */
	int depth; /* epoll sets inside epoll sets */
};

void poll_table_init(struct poll_table *pt);
void poll_table_free(struct poll_table *pt);
/* For a file's poll_wait op: sleep on wq too. */
void poll_add_wait(struct poll_table *pt, struct waitq *wq);
/* Hold f until poll_table_free() and sleep on its queues. */
void poll_add_file(struct poll_table *pt, struct file *f);

/* Timeouts: a monotonic deadline, POLL_FOREVER, or POLL_NOW (do not wait). */
#define POLL_FOREVER 0
#define POLL_NOW     ((uint64_t)-1)
/* A deadline from a relative time in ns; never POLL_FOREVER or POLL_NOW
 * unless rel_ns is 0 (then POLL_NOW). */
uint64_t poll_deadline(uint64_t rel_ns);

/* ppoll, pselect6, epoll_pwait: the temporary signal mask (usigmask NULL:
 * none). 0 or -EINVAL/-EFAULT. poll_sigmask_end() takes the result of the
 * wait: an interrupted wait (-ERESTARTNOHAND, -EINTR) keeps the temporary
 * mask until the handler has run (like sigsuspend); any other result puts
 * the old mask back now. Returns ret. */
long poll_sigmask_begin(const void *usigmask, size_t size);
long poll_sigmask_end(long ret);

#endif
