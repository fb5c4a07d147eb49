/* SPDX-License-Identifier: MIT */
/*
 * Random numbers for getrandom(), /dev/urandom and AT_RANDOM: ChaCha20 in
 * counter mode with fast key erasure (the key is replaced after every
 * request), keyed from the 32-byte seed the VMM puts in the FDT and mixed
 * with bytes from virtio-rng as they arrive. Never blocks.
 */
#include "bootinfo.h"
#include "kcpu.h"
#include "mm.h"
#include "printk.h"
#include "rng.h"
#include "ktime.h"
#include "uaccess.h"
#include "virtio.h"

#define VIRTIO_ID_RNG 4
#define RESEED_BYTES  (1UL << 20)

static uint32_t key[8];
static uint64_t counter;
static struct vio_dev dev;
static struct vio_queue vq;
static uint64_t seed_page;
static bool have_dev, probed, request_out;
static const struct bootinfo *boot;
static uint64_t since_reseed; /* bytes handed out since the last reseed */
static uint64_t resume_seq;   /* kcpu0.resume_seq at the last rekey */

#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                                                    \
	a += b, d ^= a, d = ROTL(d, 16), c += d, b ^= c, b = ROTL(b, 12), a += b, d ^= a, \
	                d = ROTL(d, 8), c += d, b ^= c, b = ROTL(b, 7)

static void chacha_block(uint32_t out[16])
{
	uint32_t x[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};

	for (int i = 0; i < 8; i++)
		x[4 + i] = key[i];
	x[12] = (uint32_t)counter;
	x[13] = (uint32_t)(counter >> 32);
	x[14] = x[15] = 0;
	counter++;
	memcpy(out, x, sizeof(x));
	for (int i = 0; i < 10; i++) {
		QR(out[0], out[4], out[8], out[12]);
		QR(out[1], out[5], out[9], out[13]);
		QR(out[2], out[6], out[10], out[14]);
		QR(out[3], out[7], out[11], out[15]);
		QR(out[0], out[5], out[10], out[15]);
		QR(out[1], out[6], out[11], out[12]);
		QR(out[2], out[7], out[8], out[13]);
		QR(out[3], out[4], out[9], out[14]);
	}
	for (int i = 0; i < 16; i++)
		out[i] += x[i];
}

static void request_entropy(void)
{
	uint32_t len = 32;

	if (!have_dev || request_out)
		return;
	if (vio_add(&vq, &seed_page, &len, 0, 1) >= 0) {
		request_out = true;
		vio_kick(&vq);
	}
}

static void mix_in_entropy(void)
{
	uint32_t id, len;
	const uint32_t *fresh = phys_to_virt(seed_page);

	if (!have_dev || !vio_get_used(&vq, &id, &len))
		return;
	for (unsigned i = 0; i < 8 && i * 4 < len; i++)
		key[i] ^= fresh[i];
	request_out = false;
}

/* The FDT seed is fresh host entropy for every boot, so the generator is
 * ready at once; virtio-rng is brought up only when fresh bytes are wanted
 * (its setup costs dozens of device-register exits at boot). */
void rng_init(const struct bootinfo *bi)
{
	uint64_t t = rdtsc();

	boot = bi;
	if (bi->has_rng_seed)
		memcpy(key, bi->rng_seed, sizeof(key));
	key[0] ^= (uint32_t)t;
	key[1] ^= (uint32_t)(t >> 32);
	resume_seq = kcpu0.resume_seq;
}

void rng_reseed(void)
{
	if (!have_dev && !probed) {
		probed = true;
		if (vio_probe(boot, VIRTIO_ID_RNG, 0, 1, 8, &dev, &vq) == 0 &&
		    (seed_page = pmem_alloc(true))) {
			have_dev = true;
			vio_want_irq(&vq, false);
		}
	}
	mix_in_entropy();
	request_entropy();
}

/* After a pause or a snapshot restore: clones of one snapshot share this
 * generator's whole state, so the VMM's fresh host entropy (kiln/boot.h,
 * KILN_PORT_QUIESCE) replaces it before anything else is handed out. Those
 * bytes come from the same source as virtio-rng's, so they are a complete
 * reseed; the device is asked for more only if it is already up (setting it
 * up would put dozens of register exits on the resume path). */
static void rekey_resumed(void)
{
	uint64_t seq, flags, seed[4];
	uint32_t block[16];
	uint64_t tsc = rdtsc();

	do {
		seq = kcpu0.resume_seq;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		flags = kcpu0.resume_flags;
		for (unsigned i = 0; i < 4; i++)
			seed[i] = kcpu0.resume_seed[i];
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	} while (seq != kcpu0.resume_seq);
	resume_seq = seq;
	if (!(flags & (KILN_RESUME_PAUSED | KILN_RESUME_RESTORED)))
		return;
	for (unsigned i = 0; i < 4; i++) {
		key[2 * i] ^= (uint32_t)seed[i];
		key[2 * i + 1] ^= (uint32_t)(seed[i] >> 32);
	}
	key[0] ^= (uint32_t)tsc;
	key[1] ^= (uint32_t)(tsc >> 32);
	memset(seed, 0, sizeof(seed));
	chacha_block(block);
	memcpy(key, block, sizeof(key));
	memset(block, 0, sizeof(block));
	since_reseed = 0;
	if (have_dev) {
		mix_in_entropy();
		request_entropy();
	}
}

/* Rekey if the VM went through the quiesce point since we last looked;
 * every read checks, so nothing is handed out from the shared state. */
void rng_resumed(void)
{
	if (kcpu0.resume_seq != resume_seq)
		rekey_resumed();
}

long rng_read(void *buf, size_t n)
{
	uint32_t block[16];
	size_t done = 0;

	rng_resumed();
	if (since_reseed > RESEED_BYTES) {
		since_reseed = 0;
		rng_reseed();
	}
	since_reseed += n;
	mix_in_entropy();
	while (done < n) {
		size_t take = MIN(n - done, sizeof(block));
		chacha_block(block);
		if ((uint64_t)buf < USER_TOP) {
			if (copy_to_user((char *)buf + done, block, take))
				return -EFAULT;
		} else {
			memcpy((char *)buf + done, block, take);
		}
		done += take;
	}
	/* Fast key erasure: the output above cannot be recomputed later. */
	chacha_block(block);
	memcpy(key, block, sizeof(key));
	memset(block, 0, sizeof(block));
	return (long)n;
}
