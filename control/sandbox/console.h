/* SPDX-License-Identifier: MIT */
/* Console logs capped at --console-max and rotated to console.log.1
 * (console.c). */
#ifndef KILND_CONSOLE_H
#define KILND_CONSOLE_H

#include "kilnd.h"
#include "sandbox.h"

int console_init(struct kilnd *kd);
void console_free(struct kilnd *kd);
/* Watch (and check now) a live sandbox's console.log; unwatch at its end. */
void console_watch(struct sandbox *sb);
void console_unwatch(struct sandbox *sb);
/* Rotate sb's console.log now if it is past the cap. */
void console_check(struct sandbox *sb);

#endif
