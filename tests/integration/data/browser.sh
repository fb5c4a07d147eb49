# Chromium (chromium-headless-shell) renders a local page three ways:
# --dump-dom, --screenshot and --print-to-pdf; prints the DOM after its
# scripts ran, the screenshot's size and the PDF's pages. Run by
# tests/integration/cases/browser.sh in the browser image and on the host,
# which must print the same. $1: a directory to work in; $2: the page.
set -u
d=$1
cr=/usr/lib/chromium/chromium-headless-shell
printf '%s' "$2" >"$d/page.html"
url=file://$d/page.html
"$cr" --no-sandbox --dump-dom "$url" 2>"$d/err.txt" || echo "dump-dom: status $?"
"$cr" --no-sandbox --window-size=800,600 --screenshot="$d/shot.png" "$url" 2>>"$d/err.txt" >/dev/null ||
	echo "screenshot: status $?"
# The PNG's IHDR: width and height, big-endian, at bytes 16 and 20.
set -- $(busybox od -A n -t u1 -j 16 -N 8 "$d/shot.png")
echo "screenshot: $(($1 << 24 | $2 << 16 | $3 << 8 | $4))x$(($5 << 24 | $6 << 16 | $7 << 8 | $8))"
# A blank page's PNG is a few hundred bytes; this one has text and a canvas.
[ "$(busybox wc -c <"$d/shot.png")" -gt 4000 ] && echo "screenshot: not blank"
"$cr" --no-sandbox --print-to-pdf="$d/page.pdf" "$url" 2>>"$d/err.txt" >/dev/null ||
	echo "print-to-pdf: status $?"
busybox head -c 5 "$d/page.pdf"
echo
busybox strings "$d/page.pdf" | busybox grep -E '^/(MediaBox|Count) '
