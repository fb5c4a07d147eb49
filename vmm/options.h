/* SPDX-License-Identifier: MIT */
/* kiln-vmm's command line (options.c). */
#ifndef KILN_VMM_OPTIONS_H
#define KILN_VMM_OPTIONS_H

#include "vm.h"

/* Fill cfg from argv (defaults first); --help prints the usage and exits 0,
 * bad usage exits 2 with a message that says what to give instead. */
void options_parse(int argc, char **argv, struct vm_config *cfg);

#endif
