#!/bin/bash
# Browser sessions on real VMs (make bench runs this): headless Chromium of
# the browser image behind kilnd's CDP endpoint.
#   - cold: POST /sandboxes of the browser image to the first answer of
#     GET /sandboxes/ID/cdp/json/version (which starts Chromium)
#   - clone: the same from a template whose warm-up started Chromium, so the
#     clone resumes a live browser; and from that template's warm pool
#   - a heavy local page (5,000 table cells, 200 inline SVG images, a script
#     that builds 2,000 more nodes) loaded and screenshot through CDP by the
#     same client (browser_page.mjs) in a browser that runs already: the
#     sandbox's through kilnd, and the host's (the same Debian build); and by
#     a one-shot chromium-headless-shell --screenshot (browser start-up
#     included), in the guest and on the host, timed where it runs
#   - PSS of the VMM of an idle browser sandbox, cold and as a clone (from
#     GET /metrics), and how many idle clones fit in 20 GiB at that PSS
# Medians of KILN_BROWSER_RUNS (default 5).
#
#   bash tools/bench/browser_bench.sh
set -u
cd "$(dirname "$0")/../.." || exit 1

KILND=build/bin/kilnd
VMM=build/bin/kiln-vmm
KERNEL=${KILND_BENCH_KERNEL:-build/guest/kiln-kernel}
INITRD=${KILND_BENCH_INITRD:-build/initramfs/agent.cpio}
IMAGES=${KILND_BENCH_IMAGES:-build/images}
RUNS=${KILN_BROWSER_RUNS:-5}
HOST_CHROME=/usr/lib/chromium/chromium-headless-shell

for f in "$KILND" "$VMM" "$KERNEL" "$INITRD"; do
	[ -e "$f" ] || { echo "browser bench: missing $f (make)"; exit 1; }
done
[ -e "$IMAGES/browser.erofs" ] || { echo "browser bench: skipped: no $IMAGES/browser.erofs (make images)"; exit 0; }
[ -w /dev/kvm ] || { echo "browser bench: skipped: /dev/kvm not available"; exit 0; }

TCP=$((20000 + RANDOM % 10000))
KEY=e2b_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
# shellcheck source=tools/bench/kilnd_start.sh
. tools/bench/kilnd_start.sh --images "$IMAGES" --image-initrd "$(dirname "$INITRD")/agent-image.cpio" \
	--listen-tcp "127.0.0.1:$TCP" --api-key "$KEY"

# create JSON: the new sandbox's id
create() {
	curl -s --unix-socket "$SOCK" -d "$1" http://k/sandboxes |
		sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p'
}
cdp_version() {
	curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
		"http://k/sandboxes/$1/cdp/json/version"
}
delete() { curl -s -o /dev/null --unix-socket "$SOCK" -X DELETE "http://k/sandboxes/$1"; }
# session JSON OUT WHAT: creates a sandbox ($id) and asks its CDP version;
# appends the two requests' own time (curl's, so no process start-up of the
# shell's tools is counted: a CDP client makes no processes) to OUT.
session() {
	local tc v
	tc=$(curl -s -o "$T/created" -w '%{time_total}' --unix-socket "$SOCK" -d "$1" http://k/sandboxes)
	id=$(sed -n 's/.*"sandboxID":"\([a-z0-9]*\)".*/\1/p' "$T/created")
	v=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --unix-socket "$SOCK" \
		"http://k/sandboxes/$id/cdp/json/version")
	[ -n "$id" ] && [ "${v%% *}" = 200 ] || { echo "browser bench: $3 did not answer"; exit 1; }
	awk -v a="$tc" -v b="${v#* }" 'BEGIN { print a + b }' >>"$2"
}
pss_mib() {
	curl -s --unix-socket "$SOCK" http://k/metrics |
		awk -v k="kiln_sandbox_memory_pss_bytes{sandbox=\"$1\"}" '$1 == k { printf "%.1f", $2 / 1048576 }'
}
run() { # ID SHELL-COMMAND: its output
	curl -s --unix-socket "$SOCK" -d "$(printf '{"cmd":%s}' "$(printf '%s' "$2" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")" \
		"http://k/sandboxes/$1/exec" | python3 -c '
import json, sys, base64
for l in sys.stdin:
    e = json.loads(l)
    if e.get("type") == "stdout": sys.stdout.write(base64.b64decode(e["data"]).decode())' 2>/dev/null
}

echo "  browser sessions (tools/bench/browser_bench.sh), medians of $RUNS"
: >"$T/cold" >"$T/clone" >"$T/pss_cold" >"$T/pss_clone"
for _ in $(seq "$RUNS"); do
	session '{"image":"browser","timeout":300}' "$T/cold" "a cold browser"
	sleep 1
	pss_mib "$id" >>"$T/pss_cold"
	echo >>"$T/pss_cold"
	delete "$id"
done

# A template whose warm-up leaves Chromium running (it writes
# DevToolsActivePort once it listens), settled for 2 s.
warm='/usr/local/bin/kiln-browser >/dev/null 2>&1 & for i in $(seq 100); do [ -e /tmp/kiln-browser/DevToolsActivePort ] && sleep 2 && exit 0; sleep 0.1; done; exit 1'
st=$(curl -s -o "$T/tmpl" -w '%{http_code}' --unix-socket "$SOCK" \
	-d "$(printf '{"name":"brbench","image":"browser","warmup":["sh","-c",%s]}' \
		"$(printf '%s' "$warm" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")" \
	http://k/templates)
[ "$st" = 201 ] || { echo "browser bench: template build failed ($st): $(head -c 300 "$T/tmpl")"; exit 1; }
for _ in $(seq $((RUNS * 2))); do
	session '{"templateID":"brbench","timeout":300}' "$T/clone" "a clone's browser"
	pss_mib "$id" >>"$T/pss_clone"
	echo >>"$T/pss_clone"
	delete "$id"
done
# The same template with a warm pool: the create takes a clone started
# ahead (and primed), as a session service would keep them.
st=$(curl -s -o "$T/tmpl" -w '%{http_code}' --unix-socket "$SOCK" \
	-d "$(printf '{"name":"brpool","image":"browser","pool":2,"warmup":["sh","-c",%s]}' \
		"$(printf '%s' "$warm" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")" \
	http://k/templates)
[ "$st" = 201 ] || { echo "browser bench: pool template build failed ($st): $(head -c 300 "$T/tmpl")"; exit 1; }
: >"$T/pool"
for _ in $(seq $((RUNS * 2))); do
	for _ in $(seq 100); do # a ready clone, at most 10 s
		curl -s --unix-socket "$SOCK" http://k/templates/brpool | grep -q '"poolReady":[1-9]' && break
		sleep 0.1
	done
	session '{"templateID":"brpool","timeout":300}' "$T/pool" "a pool clone's browser"
	delete "$id"
done
curl -s -o /dev/null --unix-socket "$SOCK" -X DELETE http://k/templates/brpool
line "create -> first CDP answer, cold" "$T/cold"
echo
line "create -> first CDP answer, template clone" "$T/clone"
echo "   (goal under 50 ms)"
line "  the same from the template's warm pool" "$T/pool"
echo

# The heavy page, the same bytes in the guest and on the host.
python3 - "$T/heavy.html" <<'EOF'
import sys
cells = "".join("<tr>" + "".join("<td>r%dc%d</td>" % (r, c) for c in range(10)) + "</tr>" for r in range(500))
svg = "".join('<img src="data:image/svg+xml,%%3Csvg xmlns=%%27http://www.w3.org/2000/svg%%27 width=%%2740%%27 height=%%2740%%27%%3E%%3Ccircle cx=%%2720%%27 cy=%%2720%%27 r=%%27%d%%27 fill=%%27%%23%06x%%27/%%3E%%3C/svg%%3E">' % (5 + i % 15, i * 9973 % 0xffffff) for i in range(200))
js = "<script>const d=document.getElementById('gen');for(let i=0;i<2000;i++){const e=document.createElement('span');e.textContent=' n'+i;d.appendChild(e);}</script>"
open(sys.argv[1], "w").write("<html><body><h1>heavy</h1>%s<table>%s</table><div id=gen></div>%s</body></html>" % (svg, cells, js))
EOF
id=$(create '{"image":"browser","timeout":300}')
curl -s --unix-socket "$SOCK" -X PUT --data-binary @"$T/heavy.html" \
	"http://k/sandboxes/$id/files?path=/tmp/heavy.html" >/dev/null
shot='--no-sandbox --disable-gpu --window-size=1280,800 --screenshot=/tmp/heavy.png file:///tmp/heavy.html'
: >"$T/page_guest" >"$T/page_host"
for _ in $(seq "$RUNS"); do
	run "$id" "a=\$(date +%s%N); /usr/lib/chromium/chromium-headless-shell $shot >/dev/null 2>&1; b=\$(date +%s%N); echo \$(( (b - a) / 1000 ))" |
		awk '{ print $1 / 1000000 }' >>"$T/page_guest"
	if [ -x "$HOST_CHROME" ]; then
		a=$(date +%s%N)
		(cd "$T" && "$HOST_CHROME" ${shot//\/tmp\//$T/} >/dev/null 2>&1)
		b=$(date +%s%N)
		awk -v d="$(((b - a) / 1000))" 'BEGIN { print d / 1000000 }' >>"$T/page_host"
	fi
done
# The same page through CDP into a browser that runs already, the sandbox's
# (through kilnd) and the host's, with the same client (browser_page.mjs).
pw=tests/e2e/browser/node_modules/playwright-core
cdp_guest= cdp_host=
if [ -d "$pw" ] && command -v node >/dev/null && [ "$(cdp_version "$id")" = 200 ]; then
	cdp_guest=$(node tools/bench/browser_page.mjs "http://127.0.0.1:$TCP/sandboxes/$id/cdp" \
		file:///tmp/heavy.html $((RUNS * 2)) "$KEY" 2>&1 | awk '$1 == "median" { print $2 }')
	if [ -x "$HOST_CHROME" ]; then
		HP=$((TCP + 1))
		setsid "$HOST_CHROME" --no-sandbox --disable-gpu --remote-debugging-port="$HP" \
			--user-data-dir="$T/host-profile" about:blank >/dev/null 2>&1 &
		hc=$!
		for _ in $(seq 100); do
			curl -s "http://127.0.0.1:$HP/json/version" >/dev/null && break
			sleep 0.1
		done
		cdp_host=$(node tools/bench/browser_page.mjs "http://127.0.0.1:$HP" "file://$T/heavy.html" \
			$((RUNS * 2)) 2>&1 | awk '$1 == "median" { print $2 }')
		kill -- "-$hc" 2>/dev/null
	fi
fi
delete "$id"
if [ -n "$cdp_guest" ] && [ -n "$cdp_host" ]; then
	printf '%-44s %s ms in the sandbox through kilnd, %s ms on the host (medians of %d)\n' \
		"heavy page + screenshot, running browser, CDP" "$cdp_guest" "$cdp_host" $((RUNS * 2))
	awk -v g="$cdp_guest" -v h="$cdp_host" 'BEGIN { printf "   ratio %.2f   goal under 1.5: %s\n", g / h, g / h < 1.5 ? "meets goal" : "MISSES goal" }'
else
	echo "heavy page through CDP: not measured (needs node, playwright-core from make e2e-browser, and the host's chromium-headless-shell)"
fi
line "heavy page + screenshot, one-shot, in a VM" "$T/page_guest"
echo
if [ -s "$T/page_host" ]; then
	line "the same on the host" "$T/page_host"
	echo
	g=$(sort -g "$T/page_guest" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	h=$(sort -g "$T/page_host" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	awk -v g="$g" -v h="$h" 'BEGIN { printf "   ratio %.2f   goal under 1.5: %s\n", g / h, g / h < 1.5 ? "meets goal" : "MISSES goal" }'
fi
pc=$(sort -g "$T/pss_cold" | awk 'NF { v[++n] = $1 } END { print v[int((n + 1) / 2)] }')
pk=$(sort -g "$T/pss_clone" | awk 'NF { v[++n] = $1 } END { print v[int((n + 1) / 2)] }')
printf '%-44s %s MiB PSS cold, %s MiB as a template clone\n' "idle browser sandbox, the VMM" "$pc" "$pk"
awk -v p="$pk" 'BEGIN { if (p > 0) printf "   idle browser clones in 20 GiB at that PSS: %d\n", 20480 / p }'
