/* SPDX-License-Identifier: MIT */
/* Between sandbox.c (objects, processes, the boot probe, lifetimes),
 * restart.c (taking sandboxes back after a kilnd restart) and pause.c
 * (pause, resume, snapshots): not for other subsystems. */
#ifndef KILND_SANDBOX_INT_H
#define KILND_SANDBOX_INT_H

#include "sandbox.h"

/* sandbox.c */
struct sandbox *sb_alloc(struct kilnd *kd, const char *id);
void sb_link(struct kilnd *kd, struct sandbox *sb);
int sb_state_from_name(const char *s);
/* Watch the VMM pid through a pidfd. 0, or -errno. */
int sb_watch_pid(struct sandbox *sb, int pid);
void sb_set_reason(struct sandbox *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "<what>; last console output: <its last lines>" as the reason. */
void sb_set_reason_console(struct sandbox *sb, const char *what);
/* Start the sandbox's VMM: a boot, or a restore of `restore` in `mode`
 * ("eager", "lazy", "template" with its memory in template_dir). 0, or
 * -errno with msg filled in. */
int sb_spawn(struct sandbox *sb, const char *restore, const char *mode, const char *template_dir,
             char *msg, size_t msglen);
/* Wait for the agent to answer (state starting or resuming). */
void sb_start_probe(struct sandbox *sb, double delay);
/* Find out whether the agent takes the user trailer (users_probe.c). */
void sb_users_probe(struct sandbox *sb);
void sb_kill_vmm(struct sandbox *sb);
void sb_arm_lifetime(struct sandbox *sb);
/* What the VMM wrote to its console since it was last started (its last
 * lines), malloc'd, or NULL. */
char *sb_console_since_mark(struct sandbox *sb);

/* pause.c, called by sandbox.c */
/* A resuming sandbox's agent answered. */
void pause_resumed(struct sandbox *sb);
/* The VMM exited while pausing or resuming: what says how. */
void pause_vmm_exited(struct sandbox *sb, const char *what);
/* A resuming sandbox's agent did not answer in time. */
void pause_probe_timeout(struct sandbox *sb, const char *what);
/* Ask the VMM to let the VM run, in case it is paused (after a restart). */
void pause_unfreeze(struct sandbox *sb);
/* A transition ended (or none was under way): decide the waiting requests. */
void sb_settle(struct sandbox *sb);
/* The sandbox is being deleted: answer every waiting request. */
void sb_waiters_deleted(struct sandbox *sb);

#endif
