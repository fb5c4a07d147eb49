/* SPDX-License-Identifier: MIT */
/* Browser sessions: Chromium's DevTools protocol (CDP) of a sandbox,
 * through kilnd.
 *
 *   GET /sandboxes/ID/cdp                 WebSocket: the browser target
 *   GET /sandboxes/ID/cdp/json/version    Chromium's /json/version, its
 *                                         webSocketDebuggerUrl pointing at
 *                                         the WebSocket above
 *
 * The bytes go over the agent's port streams to Chromium's DevTools port
 * in the guest (127.0.0.1:--browser-port, 9222): a port stream rather than
 * --remote-debugging-pipe, so that the browser outlives any one client and
 * a pause, and any number of clients can connect to it. On first use the
 * sandbox's launcher (--browser-launcher, /usr/local/bin/kiln-browser, the
 * browser image's) is started as a kept process (KILN_FRAME_KEEP) and
 * waited for, bounded; it stays for the sandbox's life, and one that died
 * is started again by the next connection. Both need the API key. */
#ifndef KILND_CDP_H
#define KILND_CDP_H

#include <stdbool.h>

#include <jansson.h>

#include "http/http.h"
#include "kilnd.h"
#include "sandbox/sandbox.h"

#define CDP_DEFAULT_PORT     9222
#define CDP_DEFAULT_LAUNCHER "/usr/local/bin/kiln-browser"
#define CDP_START_TIMEOUT    30.0 /* seconds for a cold start */

/* At headers time: true if the request is one of the above (then it is answered). */
bool cdp_route(struct kilnd *kd, struct http_conn *c, struct http_req *req);

/* cdp_start.c: Chromium's /json/version in sb, starting the browser first
 * if nothing listens. fn gets 200 and the JSON (borrowed), or an HTTP
 * status and a message for the user. */
typedef void (*cdp_ready_fn)(void *ctx, int status, const char *msg, json_t *version);
struct cdp_waiter;
struct cdp_waiter *cdp_browser(struct kilnd *kd, struct sandbox *sb, cdp_ready_fn fn, void *ctx);
/* The client went away: fn will not be called. */
void cdp_cancel(struct cdp_waiter *w);

#endif
