# Chromium in the guest (browser-image/, make images): the Debian
# chromium-headless-shell in its multi-process mode (zygote, GPU and
# renderer processes, shared memory, fds over SEQPACKET sockets) renders a
# local page with --dump-dom, --screenshot and --print-to-pdf. The host's
# chromium-headless-shell (mk/deps.sh installs the same Debian build) runs
# the same script: the DOM after its scripts, the screenshot's size and
# the PDF's pages and page size must be the same. Sourced by run.sh.

IMG_BROWSER=build/images/browser.erofs
HOST_CHROMIUM=/usr/lib/chromium/chromium-headless-shell

if [ ! -f "$IMG_BROWSER" ]; then
	echo "skip browser-*: $IMG_BROWSER missing — run make images"
elif [ ! -x "$HOST_CHROMIUM" ]; then
	echo "skip browser-*: no host reference $HOST_CHROMIUM (apt-get install chromium-headless-shell)"
elif want_case browser-render; then
	mkdir -p "$T/browser"
	sh "$DATA/browser.sh" "$T/browser" "$(cat "$DATA/browser.html")" >"$T/browser.host" 2>&1
	vmm_case browser-render 0 --out-is "$T/browser.host" -- --kernel "$KERNEL" \
		--image "$IMG_BROWSER" --mem 2G -- /bin/sh -c "$(cat "$DATA/browser.sh")" sh /tmp \
		"$(cat "$DATA/browser.html")"
fi

# The launcher kilnd's CDP endpoint starts: DevTools answers on
# 127.0.0.1:9222 (the client retries until Chromium is up; bounded).
# shellcheck disable=SC2016 # the guest's shell expands these
if [ -f "$IMG_BROWSER" ] && want_case browser-launcher; then
	vmm_case browser-launcher 0 --out '"Browser": "HeadlessChrome/[0-9.]+"' \
		--out '"webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/browser/' -- \
		--kernel "$KERNEL" --image "$IMG_BROWSER" --mem 2G -- /bin/sh -c \
		'/usr/local/bin/kiln-browser >/tmp/b.log 2>&1 & i=0
		until busybox wget -q -O - http://127.0.0.1:9222/json/version 2>/dev/null; do
			i=$((i + 1)); [ $i -lt 100 ] || break; busybox sleep 0.1; done'
fi
