# shellcheck shell=bash
# kilnd end-to-end tests of the host CPUID file (control/sandbox/host_cpuid.h,
# kiln-vmm --host-cpuid): kilnd writes it at start, every VMM is given it,
# a clone with it boots, one with a damaged file says so and asks KVM, and a
# restart of kilnd writes a damaged file anew. Sourced by run.sh.

# shellcheck disable=SC2034 # run.sh runs them
HOST_CPUID_TESTS="t_host_cpuid"

cpuid_clone_log() { # TEMPLATE: a clone runs echo; prints its console log, deletes it
	local id
	id=$("$KILN" create --template "$1") || return 1
	[ "$("$KILN" exec "$id" -- echo clone-ran)" = clone-ran ] || echo "clone $id did not run"
	"$KILN" logs "$id"
	"$KILN" rm "$id" >/dev/null
}

t_host_cpuid() {
	local f=$DATA/.host-cpuid id pid out
	if [ ! -w /dev/kvm ]; then
		grep -q "cannot read the host's CPUID table" "$T/kilnd.log"
		check $? "without /dev/kvm kilnd says its VMMs ask KVM themselves"
		return
	fi
	[ -f "$f" ] && [ "$(head -c 8 "$f")" = KILNCPUI ] && [ $((($(stat -c %s "$f") - 32) % 40)) = 0 ]
	check $? "kilnd wrote the host's CPUID table to DATA_DIR/.host-cpuid"
	id=$("$KILN" create)
	pid=$(cut -d' ' -f1 "$DATA/sandboxes/$id/run/vmm.pid" 2>/dev/null)
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--host-cpuid $f "
	check $? "a VMM is started with --host-cpuid $f"
	"$KILN" rm "$id" >/dev/null
	out=$("$KILN" template create e2e-hc -- true 2>&1)
	grep -q "built in" <<<"$out"
	check $? "a template builds with the file ($out)"
	out=$(cpuid_clone_log e2e-hc)
	! grep -q "did not run\|host-cpuid" <<<"$out"
	check $? "a clone with the file runs and reads it without complaint ($(tail -c 300 <<<"$out"))"
	cp "$f" "$T/host-cpuid.good"
	printf '\377' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
	if [ $FAKE = 0 ]; then
		out=$(cpuid_clone_log e2e-hc)
		! grep -q "did not run" <<<"$out" &&
			grep -q "host-cpuid '$f': the entries' hash does not match.*asking KVM" <<<"$out"
		check $? "a clone with a damaged file says so, asks KVM and runs ($(tail -c 300 <<<"$out"))"
	fi
	kill "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	start_kilnd
	cmp -s "$f" "$T/host-cpuid.good" && grep -q "host CPUID table .* rewritten in $f" "$T/kilnd.log"
	check $? "a restarted kilnd writes a damaged file anew"
	"$KILN" template rm e2e-hc >/dev/null
}
