/* SPDX-License-Identifier: MIT */
/*
 * "#!" scripts, as Linux's binfmt_script: a file whose first line is
 * "#!interpreter [argument]" runs as the interpreter with argv
 *   interpreter, [argument,] script path, argv[1], ...
 * The argument is everything after the interpreter's name up to the end of
 * the line, spaces included, trailing blanks dropped.
 */
#include "exec.h"
#include "mm.h"

#define LINE_MAX_ 256 /* Linux's BINPRM_BUF_SIZE */

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static size_t word_len(const char *s)
{
	size_t n = 0;

	while (s[n] && !blank(s[n]))
		n++;
	return n;
}

bool exec_is_script(const void *head, size_t len)
{
	return len >= 2 && !memcmp(head, "#!", 2);
}

int exec_script_args(const void *head, size_t len, struct exec_args *ea, void **owned,
                     const char **why)
{
	char line[LINE_MAX_ + 1], *interp, *arg = NULL, *end, *strs, **argv;
	size_t n = MIN(len, (size_t)LINE_MAX_), interp_len, arg_len = 0, path_len;
	bool whole;
	int argc = 0;

	memcpy(line, head, n);
	end = memchr(line, '\n', n);
	whole = end != NULL;
	if (!end)
		end = line + n;
	*end = 0;
	while (end > line + 2 && blank(end[-1]))
		*--end = 0;
	interp = line + 2;
	while (blank(*interp))
		interp++;
	interp_len = word_len(interp);
	if (!interp_len) {
		*why = "its #! line names no interpreter";
		return -ENOEXEC;
	}
	/* A cut-off line is fine as long as the interpreter's name is whole. */
	if (!whole && interp + interp_len == end) {
		*why = "its #! line is longer than 256 bytes";
		return -ENOEXEC;
	}
	if (interp[interp_len]) {
		interp[interp_len] = 0;
		arg = interp + interp_len + 1;
		while (blank(*arg))
			arg++;
		arg_len = strlen(arg);
		if (!arg_len)
			arg = NULL;
	}

	/* New argv: interpreter, [arg], path, old argv[1..]; strings copied so
	 * they outlive this frame and the caller's previous level. */
	path_len = strlen(ea->path);
	strs = kmalloc(interp_len + 1 + (arg ? arg_len + 1 : 0) + path_len + 1);
	argv = kmalloc(((size_t)ea->argc + 3) * sizeof(char *));
	if (!strs || !argv) {
		kfree(strs);
		kfree(argv);
		return -ENOMEM;
	}
	owned[0] = strs;
	owned[1] = argv;
	argv[argc++] = memcpy(strs, interp, interp_len + 1);
	strs += interp_len + 1;
	if (arg) {
		argv[argc++] = memcpy(strs, arg, arg_len + 1);
		strs += arg_len + 1;
	}
	argv[argc++] = memcpy(strs, ea->path, path_len + 1);
	for (int i = 1; i < ea->argc; i++)
		argv[argc++] = ea->argv[i];
	argv[argc] = NULL;
	ea->path = argv[0];
	ea->argv = argv;
	ea->argc = argc;
	return 0;
}
