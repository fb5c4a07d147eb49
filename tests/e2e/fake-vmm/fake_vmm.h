/* SPDX-License-Identifier: MIT */
/* fake-vmm (tests only): the built-in agent, shared with fake_vmm.c. */
#ifndef KILN_FAKE_VMM_H
#define KILN_FAKE_VMM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define MAX_PAYLOAD KILN_FRAME_MAX

/* The VM's configuration, as kiln-vmm's options give it. */
struct fake_cfg {
	const char *kernel, *initrd, *image;
	const char *restore, *restore_mode, *template_dir;
	struct stat kernel_st; /* at start: a snapshot refuses a replaced kernel */
};

int read_full(int fd, void *p, size_t n);
int write_full(int fd, const void *p, size_t n);
/* Serve one agent stream on conn (after the vsock handshake). A command
 * "kiln-fake-exit N" writes N to exit_fd: the VM powers off. */
void serve_builtin(int conn, int exit_fd);

/* fake_snap.c: check cfg->restore like kiln-vmm --restore (exit 1 with a
 * message if it does not fit), and serve one API socket client. */
void fake_restore(const struct fake_cfg *cfg);
void fake_api_serve(int conn, const struct fake_cfg *cfg, bool *paused);

#endif
