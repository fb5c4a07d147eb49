/* SPDX-License-Identifier: MIT */
/* Error numbers the kernel uses internally and never returns to programs:
 * a syscall interrupted by a signal asks to be restarted (Linux values). */
#ifndef KILN_ERRNO_K_H
#define KILN_ERRNO_K_H

#define ERESTARTSYS           512 /* restart if SA_RESTART, else EINTR */
#define ERESTARTNOINTR        513 /* always restart */
#define ERESTARTNOHAND        514 /* restart if no handler ran */
#define ERESTART_RESTARTBLOCK 516 /* like NOHAND (nanosleep) */

#endif
