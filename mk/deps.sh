#!/bin/sh
# Install the Debian packages kiln needs to build and test, if any are missing.
# Idempotent and quiet when everything is present. chromium-headless-shell
# is the host reference of the browser image's tests (the same Debian build)
# and the browser the web console's test drives.
set -e
PKGS="gcc make binutils pkg-config libc6-dev libfdt-dev libzstd-dev libev-dev check libsubunit-dev
 busybox-static cpio musl-tools clang-format clang libclang-rt-14-dev mmdebstrap erofs-utils
 libhttp-parser-dev libjansson-dev libc-ares-dev iproute2 libsqlite3-dev nettle-dev libarchive-dev libseccomp-dev curl tmux python3
 prometheus chromium-headless-shell containerd protobuf-c-compiler libprotobuf-c-dev bsdutils docker.io"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing="$missing $p"
done
# node and npm: the web console's xterm.js is installed with npm at build
# time; the SDK and browser tests run on node (a node from elsewhere that
# brings its npm is fine)
command -v npm >/dev/null || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0
echo "kiln: installing missing packages:$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
