/* SPDX-License-Identifier: MIT */
/* fake-vmm (tests only): the built-in agent, shared with fake_vmm.c. */
#ifndef KILN_FAKE_VMM_H
#define KILN_FAKE_VMM_H

#define MAX_PAYLOAD KILN_FRAME_MAX

int read_full(int fd, void *p, size_t n);
int write_full(int fd, const void *p, size_t n);
/* Serve one agent stream on conn (after the vsock handshake). A command
 * "kiln-fake-exit N" writes N to exit_fd: the VM powers off. */
void serve_builtin(int conn, int exit_fd);

#endif
