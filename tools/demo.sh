#!/bin/sh
# make demo: start kilnd, then run real kiln sandboxes through the kiln CLI:
# a one-shot command, a sandbox that keeps its files between commands, a
# file round trip, Python's data stack from the base image, a pause and a
# resume that keep a running process, a web server in a sandbox reached
# from the host (kiln port-forward), a server on the host reached from a
# sandbox under a network policy, and headless Chromium in a sandbox
# taking a screenshot through kilnd's CDP endpoint. Exits with the status of the first
# step that fails.
set -u

BIN=${KILN_BIN:-build/bin}
KILN_DATA_DIR=${KILN_DATA_DIR:-build/demo}
export KILN_DATA_DIR

if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
	if [ -e /dev/kvm ]; then
		echo "demo: skipped: /dev/kvm is not readable and writable by $(id -un) (join its group: sudo usermod -aG $(stat -c %G /dev/kvm) $(id -un), then log in again)"
	else
		echo "demo: skipped: this machine has no /dev/kvm (KVM is off, or this is a VM without nested virtualization)"
	fi
	exit 0
fi

# The command line as a shell would take it (words with spaces or quotes
# in single quotes), so a step can be copied and run by hand.
quoted() {
	for w in "$@"; do
		case $w in
		*[!A-Za-z0-9_./:=@%+-]* | '') printf " '%s'" "$(printf '%s' "$w" | sed "s/'/'\\\\''/g")" ;;
		*) printf ' %s' "$w" ;;
		esac
	done
}

bold='' plain=''
[ -t 1 ] && bold=$(printf '\033[1m') plain=$(printf '\033[0m')
id=
step() {
	printf '\n%s$%s%s\n' "$bold" "$(quoted "$@")" "$plain"
	"$@"
	rc=$?
	[ $rc -eq 0 ] || {
		echo "demo: failed with status $rc:$(quoted "$@")" >&2
		echo "demo: kilnd's log is $KILN_DATA_DIR/kilnd.log" >&2
		[ -n "$id" ] && "$BIN/kiln" rm "$id" >/dev/null 2>&1
		"$BIN/kiln" down >/dev/null 2>&1
		exit $rc
	}
}

ms() { date +%s%N | cut -c1-13; }

echo "kiln demo: kilnd in $KILN_DATA_DIR, sandboxes are kiln-vmm + kiln-kernel + kiln-agent"
step "$BIN/kiln" up

t0=$(ms)
step "$BIN/kiln" run -- sh -c 'echo "hello from a kiln sandbox"; uname -sm; cat /proc/cpuinfo | grep -m1 "model name"'
echo "(create, boot, run, delete: $(($(ms) - t0)) ms)"

id=$("$BIN/kiln" create | tail -n 1)
[ -n "$id" ] || step false "kiln create printed no id"
echo "created sandbox $id"
step "$BIN/kiln" exec "$id" -- sh -c 'echo "state kept between commands" > /tmp/note; ls -l /tmp'
step "$BIN/kiln" exec "$id" -- cat /tmp/note
printf 'a file from the host\n' >"$KILN_DATA_DIR/demo-upload.txt"
step "$BIN/kiln" cp "$KILN_DATA_DIR/demo-upload.txt" "$id:/tmp/upload.txt"
step "$BIN/kiln" exec "$id" -- sh -c 'wc -c /tmp/upload.txt; ps'
step "$BIN/kiln" ls
step "$BIN/kiln" rm "$id"
id=

if "$BIN/kiln" images | grep -qw base; then
	t0=$(ms)
	step "$BIN/kiln" run --image base -- python3 -c 'import numpy, pandas
df = pandas.DataFrame({"x": numpy.arange(6), "y": numpy.arange(6) ** 2})
print(df.describe().loc[["mean", "max"]])'
	echo "(python3 with numpy and pandas in a fresh VM: $(($(ms) - t0)) ms)"
	id=$("$BIN/kiln" create --image base | tail -n 1)
	[ -n "$id" ] || step false "kiln create printed no id"
	step "$BIN/kiln" exec "$id" -- sh -c 'python3 -c "import time
n = 0
while True:
    n += 1; open(\"/tmp/count\", \"w\").write(str(n)); time.sleep(0.05)" >/dev/null 2>&1 &
sleep 0.5; echo "counting: $(cat /tmp/count)"'
	step "$BIN/kiln" pause "$id"
	step "$BIN/kiln" resume "$id"
	step "$BIN/kiln" exec "$id" -- sh -c 'a=$(cat /tmp/count); sleep 0.3; echo "after the resume the same process counts on: $a -> $(cat /tmp/count)"'
	# A web server in the sandbox, reached from the host.
	step "$BIN/kiln" exec "$id" -- sh -c 'mkdir -p /tmp/site && echo "served from inside sandbox $(hostname)" >/tmp/site/index.html &&
		cd /tmp/site && python3 -m http.server 8000 >/dev/null 2>&1 & sleep 1'
	"$BIN/kiln" port-forward "$id" 8000 0 >"$KILN_DATA_DIR/demo-pf.out" 2>&1 &
	pf=$!
	for _ in 1 2 3 4 5 6 7 8 9 10; do grep -q '127.0.0.1:' "$KILN_DATA_DIR/demo-pf.out" && break; sleep 0.2; done
	addr=$(grep -o '127\.0\.0\.1:[0-9]*' "$KILN_DATA_DIR/demo-pf.out" | head -n 1)
	step curl -sS "http://$addr/"
	kill "$pf" 2>/dev/null
	step "$BIN/kiln" rm "$id"
	id=
else
	echo
	echo "demo: no base image (make images builds it): the Python steps are left out"
fi

# The network under a policy: a server on the host's loopback, which a
# sandbox reaches as host.kiln.internal only when a rule names it.
mkdir -p "$KILN_DATA_DIR/site" && echo "hello from a server on the host" >"$KILN_DATA_DIR/site/index.html"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$KILN_DATA_DIR/site" >/dev/null 2>&1 &
srv=$!
sleep 0.5
step "$BIN/kiln" run --allow-out host.kiln.internal -- busybox wget -qO- "http://host.kiln.internal:$port/"
printf '\n%s$ %s run -- busybox wget -qO- http://host.kiln.internal:%s/%s   (no rule names the host)\n' \
	"$bold" "$BIN/kiln" "$port" "$plain"
"$BIN/kiln" run -- busybox wget -qO- "http://host.kiln.internal:$port/"
echo "(refused: status $?)"
kill "$srv" 2>/dev/null

if "$BIN/kiln" images | grep -qw browser; then
	id=$("$BIN/kiln" create --image browser | tail -n 1)
	[ -n "$id" ] || step false "kiln create printed no id"
	step "$BIN/kiln" exec "$id" -- sh -c 'cat >/tmp/hello.html <<EOF
<html><body style="font-family: sans-serif; background: #fdf6e3">
<h1>Hello from Chromium in a kiln sandbox</h1><p id="t"></p><p>漢字も表示できます</p>
<script>document.getElementById("t").textContent = "rendered by JavaScript at " + new Date().toISOString()</script>
</body></html>
EOF'
	step "$BIN/kiln" browser "$id" screenshot file:///tmp/hello.html "$KILN_DATA_DIR/screenshot.png"
	step "$BIN/kiln" browser "$id"
	step "$BIN/kiln" rm "$id"
	id=
	echo "(the screenshot is $KILN_DATA_DIR/screenshot.png)"
else
	echo
	echo "demo: no browser image (make images builds it): the browser step is left out"
fi
step "$BIN/kiln" down
echo
echo "demo: done"
