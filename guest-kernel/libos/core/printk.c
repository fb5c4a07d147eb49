/* SPDX-License-Identifier: MIT */
/* Formatted output for the library OS: to the console once it runs, to the
 * VMM's log port before that, and always to the log port for panics. */
#include "klib.h"
#include "printk.h"
#include "kiln/boot.h"
#include "sv.h"
#include "console.h"
#include "mm.h"

struct out {
	char *buf;
	size_t size, n;
};

static void put(struct out *o, char c)
{
	if (o->n + 1 < o->size)
		o->buf[o->n] = c;
	o->n++;
}

static void put_num(struct out *o, unsigned long long v, unsigned base, int width, char pad,
                    bool neg, bool upper)
{
	char tmp[24];
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	int n = 0;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	for (; width > n; width--)
		put(o, pad);
	while (n)
		put(o, tmp[--n]);
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};

	for (; *fmt; fmt++) {
		int width = 0, lng = 0, prec = -1;
		char pad = ' ';
		bool left = false, alt = false;
		unsigned long long u;
		long long s;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '0')
				pad = '0';
			else if (*fmt == '-')
				left = true;
			else if (*fmt == '#')
				alt = true;
			else
				break;
		}
		if (*fmt == '*') {
			width = va_arg(ap, int);
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		if (*fmt == '.') {
			fmt++;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			} else {
				for (prec = 0; *fmt >= '0' && *fmt <= '9'; fmt++)
					prec = prec * 10 + (*fmt - '0');
			}
		}
		while (*fmt == 'l' || *fmt == 'z')
			lng++, fmt++;
		switch (*fmt) {
		case 'd':
		case 'i':
			s = lng ? va_arg(ap, long long) : va_arg(ap, int);
			u = s < 0 ? -(unsigned long long)s : (unsigned long long)s;
			put_num(&o, u, 10, width, pad, s < 0, false);
			break;
		case 'u':
		case 'x':
		case 'X':
			u = lng ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned);
			if (alt && *fmt != 'u') {
				put(&o, '0');
				put(&o, 'x');
			}
			put_num(&o, u, *fmt == 'u' ? 10 : 16, width, pad, false, *fmt == 'X');
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uintptr_t)va_arg(ap, void *), 16, width, pad, false, false);
			break;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *str = va_arg(ap, const char *);
			int len;
			if (!str)
				str = "(null)";
			len = (int)strnlen(str, prec >= 0 ? (size_t)prec : (size_t)-1);
			if (!left)
				for (int i = len; i < width; i++)
					put(&o, ' ');
			for (int i = 0; i < len; i++)
				put(&o, str[i]);
			if (left)
				for (int i = len; i < width; i++)
					put(&o, ' ');
			break;
		}
		case '%':
			put(&o, '%');
			break;
		default:
			put(&o, '?');
			break;
		}
	}
	if (size)
		buf[o.n < size ? o.n : size - 1] = 0;
	return (int)o.n;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void klog_port(const char *msg, size_t len)
{
	port_out_regs(KILN_PORT_LOG, virt_to_phys(msg), len);
}

void kprintf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	if (!console_ready() || console_write(buf, (size_t)n) < 0)
		klog_port(buf, (size_t)n);
}

void kpanic(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = ksnprintf(buf, sizeof(buf), "kiln-kernel: panic: ");
	n += kvsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	klog_port(buf, (size_t)n);
	port_out_regs(KILN_PORT_EXIT, KILN_EXIT_GUEST_CRASH, 0);
	for (;;)
		;
}

/* libfdt is built with -fstack-protector (see main.c: boot_tls). */
void __stack_chk_fail(void)
{
	kpanic("stack smashing detected in libfdt");
}
