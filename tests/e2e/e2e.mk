# kilnd end-to-end tests: a fake VMM (tests only), a hostile-client tool and
# the test script. Included from the top-level Makefile.
#
#   make e2e              build kilnd, kiln and the test tools, run the tests
#   KILN_E2E_VMM=build/bin/kiln-vmm make e2e   the same against the real VMM

E2E_BIN := $(BUILD)/tests/e2e

FAKE_VMM_SRCS := tests/e2e/fake-vmm/fake_vmm.c tests/e2e/fake-vmm/fake_agent.c \
	tests/e2e/fake-vmm/fake_snap.c

$(E2E_BIN)/fake-vmm: $(FAKE_VMM_SRCS) tests/e2e/fake-vmm/fake_vmm.h include/kiln/agent.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(HOST_CFLAGS) -o $@ $(FAKE_VMM_SRCS) -lutil

$(E2E_BIN)/kiln-hostile: tests/e2e/hostile.c control/http/ws.c control/http/buf.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(HOST_CFLAGS) -Icontrol -o $@ $^ -lnettle

# The fake VMM relays to the host build of the agent when it exists: keep
# it current.
E2E_PROGS := $(BIN)/kilnd $(BIN)/kiln $(E2E_BIN)/fake-vmm $(E2E_BIN)/kiln-hostile \
	$(BUILD)/tests/agent/kiln-agent-host

.PHONY: e2e e2e-build
e2e-build: $(E2E_PROGS)
e2e: $(E2E_PROGS)
	$(V)bash tests/e2e/run.sh

# Check unit tests of kilnd's codecs, built with ASan+UBSan. (They could move
# to tests/unit: UNIT_SRCS_test_ws := control/http/ws.c control/http/buf.c, and
# UNIT_SRCS_test_agent_proto := control/agent/agent_proto.c control/http/buf.c.)
E2E_UNIT := test_ws test_agent_proto test_ws_scan test_names test_shim_spec test_img_defaults \
	test_metrics_ring test_wh_sign test_events_db test_store_pins test_shim_cache test_store_schema \
	test_shim_rwlayer test_shim_podcg test_shim_dial test_shim_frame_rd test_shim_events
E2E_UNIT_SRCS_test_ws := control/http/ws.c control/http/buf.c
E2E_UNIT_SRCS_test_agent_proto := control/agent/agent_proto.c control/http/buf.c \
	initramfs/agent/proto.c
E2E_UNIT_SRCS_test_ws_scan := control/browser/ws_scan.c control/http/ws.c control/http/buf.c
E2E_UNIT_SRCS_test_names := control/util.c control/http/buf.c
E2E_UNIT_SRCS_test_shim_spec := shim/spec.c shim/spec_res.c shim/spec_mounts.c shim/rlimits.c \
	shim/spec_pod.c shim/podcg_parse.c
E2E_UNIT_SRCS_test_shim_podcg := shim/podcg_parse.c shim/spec_pod.c
E2E_UNIT_SRCS_test_shim_cache := shim/cache.c
# (the shim's generated protobuf code, and a retry bound of 1.5 s, not 30)
E2E_UNIT_SRCS_test_shim_events := shim/events.c $(SHIM_GEN)/events.pb-c.c $(SHIM_GEN)/google.pb-c.c \
	$(SHIM_GEN)/ttrpc.pb-c.c
E2E_UNIT_CFLAGS_test_shim_events := -I$(BUILD)/host/shim -I$(SHIM_GEN) -DEVENTS_RETRY_MS=1500
E2E_UNIT_LIBS_test_shim_events := -lprotobuf-c -lpthread
E2E_UNIT_SRCS_test_shim_rwlayer := shim/rwlayer_apply.c
E2E_UNIT_SRCS_test_shim_dial := shim/vm_dial.c control/agent/agent_proto.c control/http/buf.c
E2E_UNIT_SRCS_test_shim_frame_rd := shim/frame_rd.c control/agent/agent_proto.c control/http/buf.c
E2E_UNIT_SRCS_test_img_defaults := control/sandbox/image_defaults.c control/util.c control/http/buf.c
E2E_UNIT_SRCS_test_metrics_ring := control/api/metrics_ring.c
E2E_UNIT_SRCS_test_wh_sign := control/events/wh_sign.c
E2E_UNIT_SRCS_test_events_db := control/events/events_db.c
E2E_UNIT_LIBS_test_events_db := -lsqlite3
E2E_UNIT_SRCS_test_store_pins := control/sandbox/store.c control/sandbox/store_pins.c control/util.c \
	control/http/buf.c
E2E_UNIT_LIBS_test_store_pins := -lsqlite3
# (store.c itself is #included, for its upgrade steps)
E2E_UNIT_SRCS_test_store_schema := control/sandbox/store_pins.c control/util.c control/http/buf.c
E2E_UNIT_LIBS_test_store_schema := -lsqlite3
E2E_UNIT_FLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter -Iinclude -Icontrol \
	-D_GNU_SOURCE -fsanitize=address,undefined -fno-sanitize-recover=all \
	$(shell pkg-config --cflags check 2>/dev/null)

define e2e_unit_rule
$(E2E_BIN)/unit/$(1): tests/e2e/unit/$(1).c $$(E2E_UNIT_SRCS_$(1)) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(V)$$(CC) $$(E2E_UNIT_FLAGS) $$(E2E_UNIT_CFLAGS_$(1)) -Ishim -o $$@ $$^ $$(shell pkg-config --libs check 2>/dev/null) -lnettle -ljansson \
		$$(E2E_UNIT_LIBS_$(1))
endef
$(foreach t,$(E2E_UNIT),$(eval $(call e2e_unit_rule,$(t))))

.PHONY: e2e-unit
e2e-unit: $(E2E_UNIT:%=$(E2E_BIN)/unit/%)
	$(V)set -e; for t in $^; do echo "unit (asan+ubsan): $$t"; CK_FORK=no $$t; done

e2e: e2e-unit

# The official E2B JS SDK against kilnd (tests/e2e/e2b). Needs node and npm;
# the pinned SDK is installed into tests/e2e/e2b/node_modules on first use.
#   KILN_E2E_VMM=build/bin/kiln-vmm make e2e-e2b    on real VMs
.PHONY: e2e-e2b
e2e-e2b: $(BIN)/kilnd $(E2E_BIN)/fake-vmm
	$(V)bash tests/e2e/e2b/run.sh

# Playwright (playwright-core, connectOverCDP) through kilnd's CDP endpoint
# (tests/e2e/browser): against the host's chromium-headless-shell with the
# fake VMM, then against the browser image on real VMs; a part that cannot
# run says NOT RUN.
.PHONY: e2e-browser
e2e-browser: $(BIN)/kilnd $(E2E_BIN)/fake-vmm $(BUILD)/tests/agent/kiln-agent-host
	$(V)bash tests/e2e/browser/run.sh

# Sandbox networking on real VMs (tests/e2e/net.sh): egress policies, DNS,
# host.kiln.internal, refusals and bypass forms, inside a network namespace
# of the test's own. Needs the images (make images).
.PHONY: e2e-net
e2e-net: $(BIN)/kilnd $(BIN)/kiln $(BIN)/kiln-vmm $(BUILD)/guest/kiln-kernel \
		$(BUILD)/initramfs/agent.cpio $(BUILD)/initramfs/agent-image.cpio
	$(V)bash tests/e2e/net.sh

# containerd-shim-kiln-v2 under Debian's containerd on real VMs
# (tests/e2e/containerd.sh): a containerd of the test's own, an image the
# test builds, ctr run/exec/kill/pause/resume/metrics, a terminal, a VM and
# a shim that die; then pods (tests/e2e/containerd_pod.sh): a sandbox and app
# containers in one VM; then networking (tests/e2e/containerd_net.sh): a
# task in a network namespace with a veth pair, and one without; then the
# container's writes reaching its snapshot (tests/e2e/containerd_rwlayer.sh),
# tasks across containerd's restart and a VMM or shim killed under them
# (tests/e2e/containerd_restart.sh), and CRI (tests/e2e/containerd_cri.sh):
# containerd's CRI plugin with a runtime handler "kiln", driven as the
# kubelet drives it (a gRPC client on node, @grpc/grpc-js installed with npm
# into tests/e2e/cri), with the streams of Exec, Attach and PortForward
# (WebSocket, npm's ws), and a pod across containerd's restart. Needs root
# and /dev/kvm (and iproute2, node and npm).
.PHONY: e2e-containerd
e2e-containerd: $(BIN)/containerd-shim-kiln-v2 $(BIN)/kiln-vmm $(BUILD)/guest/kiln-kernel \
		$(BUILD)/initramfs/agent-image.cpio
	$(V)bash tests/e2e/containerd.sh
	$(V)bash tests/e2e/containerd_pod.sh
	$(V)bash tests/e2e/containerd_net.sh
	$(V)bash tests/e2e/containerd_rwlayer.sh
	$(V)bash tests/e2e/containerd_restart.sh
	$(V)bash tests/e2e/containerd_cri.sh

# kiln image import --docker against a dockerd of the test's own
# (tests/e2e/docker_import.sh). Needs root and Debian's docker.io.
.PHONY: e2e-docker-import
e2e-docker-import: $(BIN)/kiln $(BIN)/kiln-image-import $(BIN)/kiln-vmm $(BUILD)/guest/kiln-kernel
	$(V)bash tests/e2e/docker_import.sh

# The web console (control/webui) in a real browser: Playwright with the
# host's chromium-headless-shell against kilnd on real VMs
# (tests/e2e/console); screenshots in build/tests/console/.
.PHONY: e2e-console
e2e-console: $(BIN)/kilnd $(BIN)/kiln-vmm $(BUILD)/guest/kiln-kernel \
		$(BUILD)/initramfs/agent.cpio $(BUILD)/initramfs/agent-image.cpio
	$(V)bash tests/e2e/console/run.sh
