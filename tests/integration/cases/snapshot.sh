# Snapshots end to end (tests/integration/snapshot_test.py, which boots and
# restores its own VMs and prints its own ok/FAIL lines): pause/resume,
# ten pause -> snapshot -> kill -> restore cycles, clones of a template,
# diff snapshots, damaged and mismatched files, the API socket, and a
# python3 process when the base image is built. Sourced by
# run.sh: one case, "snapshot", that fails if any of them does. The kernel
# and initramfs are copied first, so a rebuild meanwhile cannot change them
# under the test.

if want_case snapshot; then
	if ! command -v python3 >/dev/null; then
		echo "skip snapshot: no python3"
	else
		# With the base image built (make images), Python too.
		snap_img=
		[ -f build/images/base.erofs ] && snap_img=build/images/base.erofs
		mkdir -p "$T/snap" && cp "$KERNEL" "$T/snap/kernel" && cp "$INITRD" "$T/snap/initrd" &&
			KILN_SNAPSHOT_IMAGE=${KILN_SNAPSHOT_IMAGE:-$snap_img} python3 tests/integration/snapshot_test.py "$VMM" "$T/snap/kernel" \
				"$T/snap/initrd" "${KILN_SNAPSHOT_TOOL:-build/bin/kiln-snapshot}" \
				"$T/snap" >"$T/snapshot.out" 2>&1
		snap_rc=$?
		sed 's/^/    /' "$T/snapshot.out"
		if [ $snap_rc -eq 0 ]; then
			pass snapshot
		else
			fail snapshot "snapshot_test.py exited with status $snap_rc"
		fi
		rm -rf "$T/snap"
	fi
fi
