/* SPDX-License-Identifier: MIT */
/* libFuzzer: request bodies as kilnd reads them: a Connect-RPC envelope (a
 * streaming call's message) and a JSON object read with the getters every
 * route uses (bounded strings, integers, booleans, string maps), and the
 * lossy UTF-8 repair of names and paths, on what a hostile client sends. */
#include <stdlib.h>
#include <string.h>

#include "http/connectrpc.h"
#include "http/jsonutil.h"

static void getters(json_t *o)
{
	char err[JSON_ERR_LEN];
	unsigned long long u;
	const char *s;
	long long i;
	json_t *map;
	bool b;

	json_get_int(o, "timeout", 0, 86400, 300, &i, err);
	json_get_str(o, "templateID", 64, &s, err);
	json_get_bool(o, "autoPause", false, &b, err);
	if (json_get_str_map(o, "envVars", 1024, 256u << 10, &map, err) == 0)
		json_decref(map);
	crpc_get_u32(o, "pid", 0xffffffffu, 0, &u);
	crpc_field(o, "processConfig", "process_config");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	json_error_t je;
	json_t *j;

	if ((j = crpc_parse_envelope((const char *)data, size, err, sizeof(err)))) {
		getters(j);
		json_decref(j);
	}
	if ((j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je))) {
		if (json_is_object(j))
			getters(j);
		json_decref(j);
	}
	if ((j = json_lossy((const char *)data, size)))
		json_decref(j);
	return 0;
}
