/* SPDX-License-Identifier: MIT */
/* Randomness: a ChaCha20 generator keyed from the VMM's boot seed and
 * reseeded from virtio-rng. */
#ifndef KILN_RNG_H
#define KILN_RNG_H

#include "klib.h"

struct bootinfo;
void rng_init(const struct bootinfo *bi);
/* Fill buf (kernel or program memory) with n random bytes; returns n or
 * -EFAULT. Never blocks. */
long rng_read(void *buf, size_t n);
/* Mix fresh bytes from the host's virtio-rng device into the key (the
 * device is set up on first use; bytes arrive asynchronously). Called every
 * megabyte of output and after a snapshot is restored. */
void rng_reseed(void);
/* Rekey from the VMM's entropy if the VM was paused or restored since the
 * last call (see rng.c); rng_read() calls it too. */
void rng_resumed(void);

#endif
