# Container image archives into kiln images (tools/image-import,
# tests/integration/image_import_test.py, which builds its own archives,
# imports them and boots them, and prints its own ok/FAIL lines): docker
# save's layout and OCI's, whiteouts and opaque directories, the image
# config, the cache, and hostile archives refused without a write outside
# the image cache. Sourced by run.sh: one case, "image-import".

if want_case image-import; then
	mkdir -p "$T/import" &&
		python3 tests/integration/image_import_test.py build/bin/kiln-image-import "$VMM" \
			"$KERNEL" "$T/import" >"$T/import.out" 2>&1
	imp_rc=$?
	grep -E '^(ok|FAIL) ' "$T/import.out" | sed 's/^/    /'
	if [ $imp_rc -eq 0 ]; then
		pass image-import
	else
		grep -v -E '^(ok|FAIL) ' "$T/import.out" | tail -n 20 | sed 's/^/    | /'
		fail image-import "image_import_test.py exited with status $imp_rc"
	fi
	rm -rf "$T/import"
fi
