/* SPDX-License-Identifier: MIT */
/* The web console: a single page (web/index.html, web/console.js,
 * web/console.css) and xterm.js with its fit addon (from npm at build
 * time), embedded in kilnd (webui_assets.c) and served on any listener
 * without the API key: the page asks for the key and sends it as a header
 * with every API request it makes. */
#ifndef KILND_WEBUI_H
#define KILND_WEBUI_H

#include <stdbool.h>

#include "http/http.h"

/* GET or HEAD of / from a browser (Accept: text/html) or of /ui/NAME:
 * answers and returns true; anything else is left to the API (false). */
bool webui_route(struct http_conn *c, const struct http_req *req);

/* The embedded files (webui_assets.c). */
struct webui_asset {
	const char *name; /* "index.html", "console.js", ... */
	const char *ctype;
	const unsigned char *data;
	const unsigned char *end;
};
extern const struct webui_asset webui_assets[];
extern const unsigned webui_nassets;

#endif
