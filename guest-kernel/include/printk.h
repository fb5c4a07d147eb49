/* SPDX-License-Identifier: MIT */
#ifndef KILN_PRINTK_H
#define KILN_PRINTK_H

#include "klib.h"

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* To the console (or the VMM's log port before the console runs). */
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Report through the VMM's log port and stop the VM with status 125. */
void kpanic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void klog_port(const char *msg, size_t len);

#endif
