/* SPDX-License-Identifier: MIT */
/* Serving the web console's files (webui.h). They are public (the page
 * holds no secret: the API key is typed in and kept in the browser's
 * sessionStorage), so no key is asked; what they do with the API is
 * authenticated request by request. The headers forbid what the page
 * does not need: scripts from elsewhere or inline (a name that slipped
 * into the DOM as markup still could not run), framing (clickjacking),
 * sniffing and referrers. */
#include <stdio.h>
#include <string.h>

#include "webui.h"

#define UI_PREFIX "/ui/"

/* xterm.js sets styles inline and adds <style> elements: style-src
 * needs 'unsafe-inline'; images are the browser view's frames (data:). */
#define SECURITY_HEADERS                                                                     \
	"Content-Security-Policy: default-src 'none'; script-src 'self'; "                   \
	"style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; " \
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"   \
	"X-Content-Type-Options: nosniff\r\n"                                                \
	"X-Frame-Options: DENY\r\n"                                                          \
	"Referrer-Policy: no-referrer\r\n"                                                   \
	"Cache-Control: no-cache\r\n"

static bool wants_html(const struct http_req *req)
{
	const char *accept = http_header(req, "Accept");

	return accept && strstr(accept, "text/html");
}

static const struct webui_asset *find(const char *name)
{
	for (unsigned i = 0; i < webui_nassets; i++)
		if (!strcmp(webui_assets[i].name, name))
			return &webui_assets[i];
	return NULL;
}

bool webui_route(struct http_conn *c, const struct http_req *req)
{
	const struct webui_asset *a;
	bool ui = !strncmp(req->path, UI_PREFIX, strlen(UI_PREFIX));

	if (req->envd)
		return false; /* the envd listener serves E2B's in-sandbox API only */
	/* GET / stays the API's JSON for API clients */
	if (!ui && !(!strcmp(req->path, "/") && wants_html(req)))
		return false;
	if (req->method != HTTP_GET && req->method != HTTP_HEAD) {
		static const char body[] =
		    "{\"code\":405,\"message\":\"the console's files are GET only\"}";

		http_respond(c, 405, "application/json", "Allow: GET, HEAD\r\n", body,
		             sizeof(body) - 1);
		return true;
	}
	a = find(ui ? req->path + strlen(UI_PREFIX) : "index.html");
	if (!a) {
		http_respond_error(c, 404, "no console file %.64s (the console is at /)",
		                   req->path);
		return true;
	}
	/* http_respond sends the head only for HEAD (http.c) */
	http_respond(c, 200, a->ctype, SECURITY_HEADERS, a->data, (size_t)(a->end - a->data));
	return true;
}
