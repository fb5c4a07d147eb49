/* SPDX-License-Identifier: MIT */
/* The console's files, embedded with the assembler's .incbin: the page's
 * own (control/webui/web/) and the npm packages' (build/webui/node_modules,
 * control.mk installs them). WEBUI_SRC and WEBUI_NPM are the two folders,
 * given by control.mk; the object depends on every file named here. */
#include "webui.h"

/* Symbols NAME and NAME_end around the file's bytes, NUL-terminated (the
 * NUL is not served). */
#define EMBED(sym, path)                                \
	extern const unsigned char sym[], sym##_end[];  \
	__asm__(".pushsection .rodata\n"                \
	        ".balign 16\n" #sym ":\n"               \
	        ".incbin \"" path "\"\n" #sym "_end:\n" \
	        ".byte 0\n"                             \
	        ".popsection\n")

EMBED(webui_index_html, WEBUI_SRC "/index.html");
EMBED(webui_console_js, WEBUI_SRC "/console.js");
EMBED(webui_api_js, WEBUI_SRC "/api.js");
EMBED(webui_dom_js, WEBUI_SRC "/dom.js");
EMBED(webui_metrics_js, WEBUI_SRC "/metrics.js");
EMBED(webui_sandbox_js, WEBUI_SRC "/sandbox.js");
EMBED(webui_files_js, WEBUI_SRC "/files.js");
EMBED(webui_terminal_js, WEBUI_SRC "/terminal.js");
EMBED(webui_screencast_js, WEBUI_SRC "/screencast.js");
EMBED(webui_console_css, WEBUI_SRC "/console.css");
EMBED(webui_xterm_js, WEBUI_NPM "/@xterm/xterm/lib/xterm.mjs");
EMBED(webui_xterm_css, WEBUI_NPM "/@xterm/xterm/css/xterm.css");
EMBED(webui_fit_js, WEBUI_NPM "/@xterm/addon-fit/lib/addon-fit.mjs");

#define JS  "text/javascript; charset=utf-8"
#define CSS "text/css; charset=utf-8"

const struct webui_asset webui_assets[] = {
    {"index.html", "text/html; charset=utf-8", webui_index_html, webui_index_html_end},
    {"console.js", JS, webui_console_js, webui_console_js_end},
    {"api.js", JS, webui_api_js, webui_api_js_end},
    {"dom.js", JS, webui_dom_js, webui_dom_js_end},
    {"metrics.js", JS, webui_metrics_js, webui_metrics_js_end},
    {"sandbox.js", JS, webui_sandbox_js, webui_sandbox_js_end},
    {"files.js", JS, webui_files_js, webui_files_js_end},
    {"terminal.js", JS, webui_terminal_js, webui_terminal_js_end},
    {"screencast.js", JS, webui_screencast_js, webui_screencast_js_end},
    {"console.css", CSS, webui_console_css, webui_console_css_end},
    {"xterm.mjs", JS, webui_xterm_js, webui_xterm_js_end},
    {"xterm.css", CSS, webui_xterm_css, webui_xterm_css_end},
    {"addon-fit.mjs", JS, webui_fit_js, webui_fit_js_end},
};
const unsigned webui_nassets = sizeof(webui_assets) / sizeof(webui_assets[0]);
