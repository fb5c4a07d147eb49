# shellcheck shell=bash
# apt_need WHO CMD:PACKAGE...: install, from Debian, the packages whose
# command is missing (a bench's peers: bubblewrap, crun, docker.io), once,
# quietly, saying what it installs. Source it; a failed install is said and
# left to the caller's own `command -v` check (the bench then skips the peer).
apt_need() {
	local who=$1 missing= p
	shift
	for p in "$@"; do
		command -v "${p%%:*}" >/dev/null || missing="$missing ${p#*:}"
	done
	[ -n "$missing" ] || return 0
	echo "$who: installing$missing"
	# shellcheck disable=SC2086 # one word per package
	{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing; } >/dev/null 2>&1 ||
		echo "$who: could not install$missing; those peers are left out"
}
