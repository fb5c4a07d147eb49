# shellcheck shell=bash
# kilnd end-to-end tests of an imported image's config defaults (sourced by
# run.sh, whose helpers and variables they use): its WorkingDir and User
# are its commands' cwd and uid, its Entrypoint and Cmd what `kiln run
# --image` runs without a command. The archive is built here
# (tests/e2e/images/mkarchive.py) and imported with kiln-image-import into
# the test's images directory. With the fake VMM the commands run on the
# host (the working directory is made there), on real VMs in the image.

# shellcheck disable=SC2034 # run.sh runs them
IMAGE_DEFAULT_TESTS="t_image_defaults"

# import NAME ARGS...: build an archive with mkarchive.py ARGS, import it
import_image() {
	local name=$1
	shift
	python3 tests/e2e/images/mkarchive.py "$T/$name.tar" --tag "$name:1" "$@" &&
		"$ROOT/build/bin/kiln-image-import" --cache "$T/cache" --out "$IMAGES" "$T/$name.tar" \
			>"$T/import.log" 2>&1
}

t_image_defaults() {
	local out rc wd
	# The guest's /tmp is a tmpfs over the image's: the real image's
	# directory lies elsewhere.
	if [ $FAKE = 1 ]; then wd=$G/w; else wd=/srv/w; fi
	mkdir -p "$G/w" && chmod 777 "$G/w"
	import_image kdef --workdir "$wd" --entrypoint '["/bin/sh","-c"]' \
		--cmd '["echo entry-$((6*7)); pwd"]' --dir "$wd"
	check $? "an archive with WorkingDir, Entrypoint and Cmd imports ($(tail -1 "$T/import.log"))"
	out=$("$KILN" run --image kdef 2>&1)
	rc=$?
	[ $rc = 0 ] && [ "$(printf 'entry-42\n%s' "$wd")" = "$out" ]
	check $? "kiln run --image without a command runs Entrypoint+Cmd in WorkingDir (rc $rc: $out)"
	out=$("$KILN" run --image kdef -- sh -c 'pwd; id -u' 2>&1)
	[ "$(printf '%s\n0' "$wd")" = "$out" ]
	check $? "a command given runs instead, in the image's WorkingDir ($out)"
	out=$("$KILN" run --image kdef -w / -- pwd 2>&1)
	[ "$out" = / ]
	check $? "--workdir overrides the image's WorkingDir ($out)"
	out=$("$KILN" run 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "image has no Entrypoint or Cmd" <<<"$out"
	check $? "without a command an image with none is refused, saying why (rc $rc: $out)"

	import_image kusr --user app:staff
	grep -q '"defaultUser": "app"' "$IMAGES/kusr.json" && grep -q '"gid": 50' "$IMAGES/kusr.json"
	check $? "an archive with User app:staff imports (uid of app, gid of staff, defaultUser app)"
	out=$("$KILN" run --image kusr -- id -u 2>&1)
	[ "$out" = 1000 ]
	check $? "the image's User (a name in its /etc/passwd) is its commands' uid ($out)"
	import_image knum --user 1234:50
	out=$(sed -n 's/.*"uid": \([0-9]*\).*/\1/p; s/.*"gid": \([0-9]*\).*/\1/p' "$IMAGES/knum.json" | tr '\n' :)
	[ "$out" = 1234:50: ]
	check $? "a numeric User uid:gid is taken as is ($out)"

	import_image kbad --user nobody
	rc=$?
	[ $rc = 1 ] && grep -q "User 'nobody' is not in the image's /etc/passwd" "$T/import.log" &&
		[ ! -e "$IMAGES/kbad.erofs" ]
	check $? "a User that is not in the image's /etc/passwd is refused at import ($(tail -1 "$T/import.log"))"
}
