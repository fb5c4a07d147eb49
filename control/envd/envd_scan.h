/* SPDX-License-Identifier: MIT */
/* Polling directory scans behind envd's watches: see envd_scan.c. */
#ifndef KILND_ENVD_SCAN_H
#define KILND_ENVD_SCAN_H

#include <stdbool.h>

#include <jansson.h>

#include "envd.h"

#define SCAN_MAX_ENTRIES 10000 /* paths under one watch */

struct scan;

/* Each called from the event loop; after fail() the scan does nothing more
 * and the owner frees it (events() may free it too). */
struct scan_ops {
	/* The first scan is done: the directory exists and is watched. */
	void (*ready)(void *ctx);
	/* A later scan found changes: an array of FilesystemEvent. */
	void (*events)(void *ctx, json_t *evs);
	/* The watch cannot go on (or could not start): a crpc code, why. */
	void (*fail)(void *ctx, int code, const char *msg);
};

/* Scans begin at once (root is an absolute path), listing as user; NULL
 * if out of memory. */
struct scan *scan_start(struct sandbox *sb, const struct envd_user *user, const char *root,
                        bool recursive, bool include_entry, const struct scan_ops *ops, void *ctx);
void scan_free(struct scan *s);

#endif
