/* SPDX-License-Identifier: MIT */
/*
 * kiln-agent: a PID namespace per container root (include/kiln/pidns.h).
 * The processes a START with a root trailer runs under the same root (a
 * container of the shim's: "/" for the one whose rootfs is the VM's, else
 * a pod's app container's, shim/ctr_root.c; its init, then its execs)
 * share one namespace, where the first of them is pid 1; the agent keeps
 * which namespace each root has. A START without one (kilnd's) runs in
 * the agent's namespace, which sees all. A root whose namespace's pid 1 has ended gets a new one (a
 * container id that comes back after its delete). On a kernel without
 * them (Linux, agent-test's host agent) the prctl is EINVAL and commands
 * run in the agent's namespace, as before.
 * A START with a pidns trailer joins the namespace of another root (a
 * pod's app container that shares its sandbox's, shareProcessNamespace):
 * that one must be alive, as a Linux namespace a process joins.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "agent.h"
#include "kiln/pidns.h"

struct root_ns {
	char *root;
	int ns;
};

static struct root_ns roots[KILN_PIDNS_MAX];

static struct root_ns *find(const char *root)
{
	for (size_t i = 0; i < KILN_PIDNS_MAX; i++)
		if (roots[i].root && !strcmp(roots[i].root, root))
			return &roots[i];
	return NULL;
}

/* A slot for root: a free one, else one whose namespace is gone. */
static struct root_ns *slot(void)
{
	for (size_t i = 0; i < KILN_PIDNS_MAX; i++)
		if (!roots[i].root)
			return &roots[i];
	for (size_t i = 0; i < KILN_PIDNS_MAX; i++) {
		if (prctl(KILN_PR_PIDNS, roots[i].ns, 0, 0, 0) > 0) {
			prctl(KILN_PR_PIDNS, 0, 0, 0, 0); /* (only asked) */
			continue;
		}
		free(roots[i].root);
		roots[i].root = NULL;
		return &roots[i];
	}
	return NULL;
}

int pidns_enter(const char *root)
{
	struct root_ns *e;
	int ns;

	if (!root)
		return 0;
	e = find(root);
	if (e && (ns = prctl(KILN_PR_PIDNS, e->ns, 0, 0, 0)) > 0)
		return ns;
	if (e && errno != ESRCH)
		return 0;
	ns = prctl(KILN_PR_PIDNS, KILN_PIDNS_NEW, 0, 0, 0);
	if (ns <= 0)
		return 0;
	if (!e && (e = slot()) && !(e->root = strdup(root)))
		e = NULL;
	if (!e) {
		/* nowhere to keep it: the namespace serves this command alone */
		return ns;
	}
	e->ns = ns;
	return ns;
}

int pidns_join(const char *root)
{
	struct root_ns *e = find(root);
	int ns;

	if (!e)
		return prctl(KILN_PR_PIDNS, 0, 0, 0, 0) < 0 && errno == EINVAL ? 0 : -ESRCH;
	ns = prctl(KILN_PR_PIDNS, e->ns, 0, 0, 0);
	if (ns > 0)
		return ns;
	return errno == EINVAL ? 0 : -ESRCH;
}

/* prctl op on root's namespace, with arg. */
static int on_root(const char *root, int op, unsigned long arg)
{
	struct root_ns *e = find(root);

	if (!e)
		return -ESRCH;
	return prctl(op, e->ns, arg, 0, 0) < 0 ? -errno : 0;
}

int pidns_freeze(const char *root, bool on)
{
	return on_root(root, KILN_PR_PIDNS_FREEZE, on ? 1 : 0);
}

int pidns_limit(const char *root, uint32_t mib)
{
	return on_root(root, KILN_PR_PIDNS_MEMORY, mib);
}

int pidns_cpu(const char *root, uint32_t millicpus)
{
	return on_root(root, KILN_PR_PIDNS_CPU, millicpus);
}

int pidns_shares(const char *root, uint32_t shares)
{
	return on_root(root, KILN_PR_PIDNS_SHARES, shares);
}

void pidns_leave(int ns)
{
	if (ns > 0)
		prctl(KILN_PR_PIDNS, 0, 0, 0, 0);
}
