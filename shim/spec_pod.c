/* SPDX-License-Identifier: MIT */
/* What the pod's first container's spec says of its VMM on the host (the
 * VM's processes are the guest's): linux.cgroupsPath, the cgroup the VMM
 * joins (podcg_parse.c, podcg.c), and process.oomScoreAdj, its OOM score
 * (clamped to the kernel's -1000..1000, as the kernel would not take more). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "shim.h"

int spec_parse_pod(json_t *spec, struct spec_pod *pod, char *msg, size_t n)
{
	json_t *cg = json_object_get(json_object_get(spec, "linux"), "cgroupsPath");
	json_t *oom = json_object_get(json_object_get(spec, "process"), "oomScoreAdj");
	json_int_t v;

	memset(pod, 0, sizeof(*pod));
	if (cg && !json_is_null(cg) && !json_is_string(cg)) {
		snprintf(msg, n, "linux.cgroupsPath is not a string");
		return -EINVAL;
	}
	if (cg && json_is_string(cg) && json_string_length(cg) &&
	    podcg_parse(json_string_value(cg), json_string_length(cg), pod->cgroup,
	                sizeof(pod->cgroup), msg, n))
		return -EINVAL;
	if (!oom || json_is_null(oom))
		return 0;
	if (!json_is_integer(oom)) {
		snprintf(msg, n, "process.oomScoreAdj is not a whole number (-1000 to 1000)");
		return -EINVAL;
	}
	v = json_integer_value(oom);
	pod->oom_score_adj = v < -1000 ? -1000 : v > 1000 ? 1000 : (int)v;
	pod->has_oom = true;
	return 0;
}
