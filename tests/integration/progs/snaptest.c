// SPDX-License-Identifier: MIT
/*
 * snaptest: guest side of the snapshot tests and benchmarks
 * (tests/integration/snapshot_test.py, tools/bench/snapshot_bench.sh).
 *
 *   snaptest rand        one line: "rand getrandom=<32 hex> urandom=<32 hex>"
 *   snaptest touch MIB   fill MIB MiB with guest-like data (text, code-like
 *                        bytes, pointers, zero runs, some random), print
 *                        "touched MIB", then answer each line of stdin with
 *                        "echo <line>" until end of input; the memory stays
 *                        in use all along (a warm process to snapshot). The
 *                        line "sum" is answered "sum <hash of the memory>".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

static void hex(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static int cmd_rand(void)
{
	unsigned char a[16], b[16];
	char ha[33], hb[33];
	FILE *f = fopen("/dev/urandom", "rb");

	if (getrandom(a, sizeof(a), 0) != (ssize_t)sizeof(a) || !f || fread(b, 1, 16, f) != 16) {
		puts("rand FAIL");
		return 1;
	}
	fclose(f);
	hex(a, 16, ha);
	hex(b, 16, hb);
	printf("rand getrandom=%s urandom=%s\n", ha, hb);
	return 0;
}

static const char *const words[] = {"the",    "import", "return", "self",  "def",  "value",
                                    "kiln",   "buffer", "while",  "class", "data", "index",
                                    "string", "None",   "print",  "len",   "for",  "in"};

/* One 4 KiB page of a kind picked by its number: text 40%, code-like 20%,
 * pointers 20%, random 10%, zero 10% -- roughly what an interpreter's heap
 * and mapped files hold. */
static void fill_page(unsigned char *p, uint64_t n, uint64_t *rng)
{
	unsigned kind = (unsigned)(n * 2654435761u >> 7) % 10;

	for (size_t i = 0; i < 4096;) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		if (kind < 4) {
			const char *w = words[*rng % (sizeof(words) / sizeof(words[0]))];
			size_t l = strlen(w);

			for (size_t j = 0; j < l && i < 4096; j++)
				p[i++] = (unsigned char)w[j];
			if (i < 4096)
				p[i++] = (*rng >> 20) % 7 ? ' ' : '\n';
		} else if (kind < 6) {
			p[i++] = (unsigned char)((*rng % 16) | 0x40);
		} else if (kind < 8) {
			uint64_t ptr = 0x7f0000000000ULL + (*rng % (1 << 20)) * 16;

			memcpy(p + i, &ptr, i + 8 <= 4096 ? 8 : 4096 - i);
			i += 8;
		} else if (kind < 9) {
			p[i++] = (unsigned char)*rng;
		} else {
			return; /* zero page */
		}
	}
}

/* A hash of all of the memory, to see that it came back from a snapshot
 * byte for byte. */
static uint64_t sum(const unsigned char *m, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, m + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

static int cmd_touch(long mib)
{
	size_t len = (size_t)mib << 20;
	unsigned char *m =
	    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	char line[256];

	if (m == MAP_FAILED) {
		puts("touch FAIL");
		return 1;
	}
	for (size_t off = 0; off < len; off += 4096)
		fill_page(m + off, off / 4096, &rng);
	printf("touched %ld\n", mib);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "sum\n")) {
			printf("sum %016llx\n", (unsigned long long)sum(m, len));
			fflush(stdout);
			continue;
		}
		printf("echo %s", line);
		fflush(stdout);
	}
	return m[len / 2] == 0xff; /* keep it live */
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "rand"))
		return cmd_rand();
	if (argc >= 3 && !strcmp(argv[1], "touch"))
		return cmd_touch(atol(argv[2]));
	fputs("usage: snaptest rand | touch MIB\n", stderr);
	return 2;
}
