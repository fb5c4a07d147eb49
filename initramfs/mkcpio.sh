#!/bin/sh
# mkcpio.sh LIST OUT   build the cpio (newc) archive OUT from the file list LIST
# mkcpio.sh --deps LIST print the files the archive is made from (for make)
#
# A list has one entry per line; '#' starts a comment line, blank lines are
# ignored:
#
#   /DEST SOURCE [MODE]     regular file copied from SOURCE (a path relative to
#                           the repository root, or absolute); MODE defaults to
#                           0755 if SOURCE is executable, else 0644
#   /DEST -> TARGET         symbolic link to TARGET
#   /DEST/ [MODE]           directory (default 0755); parents of every entry are
#                           created as 0755 directories anyway
#   include LIST2           every entry of LIST2 (relative to the repository root)
#
# The archive is reproducible: entries sorted by name (C locale), owned by
# root, mtime 0 (or $SOURCE_DATE_EPOCH), inode numbers assigned in order.
# The data of files of a page or more starts on a page boundary.
set -eu

die() {
	echo "mkcpio: $*" >&2
	exit 1
}

root=$(cd "$(dirname "$0")/.." && pwd)

deps=0
if [ "${1:-}" = --deps ]; then
	deps=1
	shift
fi
[ $# -eq $((2 - deps)) ] || die "usage: mkcpio.sh LIST OUT | mkcpio.sh --deps LIST"
abspath() {
	case $1 in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s/%s\n' "$PWD" "$1" ;;
	esac
}
list=$(abspath "$1")
[ $deps -eq 1 ] || out=$(abspath "$2")
cd "$root"
# Sources and lists are named relative to the repository root (make's view).
case $list in
"$root"/*) list=${list#"$root"/} ;;
esac

stage=
cleanup() {
	[ -z "$stage" ] || rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
if [ $deps -eq 0 ]; then
	stage=$(mktemp -d "${TMPDIR:-/tmp}/kiln-cpio.XXXXXX")
	umask 022
fi

# check_dest FILE:LINE DEST: DEST must be absolute, without . or .. parts.
check_dest() {
	case $2 in
	/*) ;;
	*) die "$1: '$2' must be an absolute path" ;;
	esac
	case $2/ in
	*/./* | */../* | *//*) die "$1: '$2' must not contain '.', '..' or '//'" ;;
	esac
	[ "$2" != / ] || die "$1: '/' cannot be an entry"
}

check_mode() {
	case $2 in
	[0-7][0-7][0-7] | [0-7][0-7][0-7][0-7]) ;;
	*) die "$1: '$2' is not an octal mode" ;;
	esac
}

# add_list LIST: stage (or, with --deps, print the sources of) every entry.
# Errors are checked explicitly: set -e does not reach into `a || b` lists.
add_list() {
	_list=$1
	_n=0
	[ $deps -eq 0 ] || printf '%s\n' "$_list"
	while IFS= read -r line || [ -n "$line" ]; do
		_n=$((_n + 1))
		at="$_list:$_n"
		case $line in
		'' | '#'*) continue ;;
		esac
		set -f
		# shellcheck disable=SC2086 # splitting the line into fields
		set -- $line
		set +f
		[ $# -gt 0 ] || continue
		if [ "$1" = include ]; then
			[ $# -eq 2 ] || die "$at: expected 'include LIST'"
			[ -f "$2" ] || die "$at: included list '$2' not found"
			(add_list "$2") || exit 1 # a subshell keeps _list and _n
		elif [ $# -ge 2 ] && [ "$2" = "->" ]; then
			[ $# -eq 3 ] || die "$at: expected '/DEST -> TARGET'"
			check_dest "$at" "$1"
			[ $deps -eq 1 ] || add_link "$at" "${1#/}" "$3"
		else
			case $1 in
			*/)
				[ $# -le 2 ] || die "$at: expected '/DEST/ [MODE]'"
				check_dest "$at" "${1%/}"
				[ $# -eq 1 ] || check_mode "$at" "$2"
				[ $deps -eq 1 ] || add_dir "$at" "${1#/}" "${2:-}"
				;;
			*)
				case $# in
				2 | 3) ;;
				*) die "$at: expected '/DEST SOURCE [MODE]'" ;;
				esac
				check_dest "$at" "$1"
				[ $# -eq 2 ] || check_mode "$at" "$3"
				if [ $deps -eq 1 ]; then
					printf '%s\n' "$2"
				else
					add_file "$at" "${1#/}" "$2" "${3:-}"
				fi
				;;
			esac
		fi
	done <"$_list"
}

# Nothing may be listed twice, except that a directory may be named again.
check_new() {
	if [ -e "$stage/$2" ] || [ -L "$stage/$2" ]; then
		die "$1: '/$2' is already in the archive"
	fi
	_parent=$stage/$(dirname "$2")
	if [ -L "$_parent" ] || { [ -e "$_parent" ] && [ ! -d "$_parent" ]; }; then
		die "$1: the parent of '/$2' is not a directory"
	fi
	mkdir -p "$_parent" || die "$1: cannot create '$_parent'"
}

add_file() {
	[ -f "$3" ] || die "$1: source '$3' not found in $root (not built yet? try: make initramfs)"
	check_new "$1" "$2"
	cp "$3" "$stage/$2" || die "$1: cannot copy '$3'"
	_mode=$4
	if [ -z "$_mode" ]; then
		_mode=0644
		[ ! -x "$3" ] || _mode=0755
	fi
	chmod "$_mode" "$stage/$2" || die "$1: chmod failed"
}

add_link() {
	check_new "$1" "$2"
	ln -s "$3" "$stage/$2" || die "$1: cannot create the link '/$2'"
}

# add_dir AT DEST [MODE]: naming a directory again without a mode keeps its mode.
add_dir() {
	if [ -L "$stage/$2" ] || { [ -e "$stage/$2" ] && [ ! -d "$stage/$2" ]; }; then
		die "$1: '/$2' is already in the archive and is not a directory"
	fi
	[ -z "$3" ] && [ -d "$stage/$2" ] && return 0
	mkdir -p "$stage/$2" || die "$1: cannot create '/$2'"
	chmod "${3:-0755}" "$stage/$2" || die "$1: chmod failed"
}

[ -f "$list" ] || die "list '$list' not found"
add_list "$list"
[ $deps -eq 0 ] || exit 0

command -v cpio >/dev/null || die "cpio not found (Debian package: cpio)"
# GNU cpio 2.12 and later can number inodes from 1 and zero device numbers.
repro=
if cpio --help 2>/dev/null | grep -q -- --reproducible; then
	repro=--reproducible
fi

mtime=${SOURCE_DATE_EPOCH:-0}
find "$stage" -exec touch -h -d "@$mtime" {} + || die "cannot set timestamps"
mkdir -p "$(dirname "$out")" || die "cannot create the directory of '$out'"
# shellcheck disable=SC2086 # $repro is empty or one option
(cd "$stage" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort |
	cpio -o -H newc -R 0:0 $repro --quiet) >"$out.raw" ||
	die "cpio failed writing '$out'"
# Files of a page or more start on a page boundary: the guest maps their
# pages into programs in place (see pagealign.py).
python3 initramfs/pagealign.py "$out.raw" "$out.tmp" || die "cannot page-align '$out'"
rm -f "$out.raw"
mv -f "$out.tmp" "$out"
