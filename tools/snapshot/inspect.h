/* SPDX-License-Identifier: MIT */
/* The snapshot inspector's command line, shared by kiln-snapshot and
 * `kiln snapshot`. */
#ifndef KILN_SNAP_INSPECT_H
#define KILN_SNAP_INSPECT_H

/* argv[0] is the subcommand ("inspect", or "--help"); prog names the
 * command in messages. Prints to stdout, errors to stderr; returns the exit
 * status: 0, 1 (the file is damaged, truncated or unreadable: the reason is
 * printed) or 2 (usage). */
int snap_inspect_cli(const char *prog, int argc, char **argv);

#endif
