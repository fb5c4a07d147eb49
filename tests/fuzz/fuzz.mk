# libFuzzer targets (clang): the parsers a hostile guest, client or file
# reaches. Included from the top-level Makefile.
#
#   make fuzz                        build every target, run each FUZZ_SECONDS
#                                    (default 600) on its corpus
#   make fuzz-smoke                  the same for FUZZ_SMOKE_SECONDS (default 3):
#                                    what make test runs
#
# A target tests/fuzz/fuzz_NAME.c links with FUZZ_SRCS_fuzz_NAME, built with
# ASan and UBSan; its seeds are tests/fuzz/corpus/fuzz_NAME/ (in the tree),
# and what a run finds goes to build/fuzz/corpus/fuzz_NAME/ (a crash, to
# build/fuzz/crash-*: add the input to the seeds once it is fixed).

FUZZ_CC      := clang
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CFLAGS  := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Wall -Wno-unused-parameter \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -DKILN_HOSTED -Iinclude -iquote vmm -iquote control -iquote snapshot -iquote initramfs/agent \
	-iquote guest-kernel/include -iquote guest-kernel/libos/fs -iquote guest-kernel/libos/proc
FUZZ_SECONDS       ?= 600
FUZZ_SMOKE_SECONDS ?= 3

FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SRCS_fuzz_virtq       := vmm/virtio/virtq.c vmm/mem.c
FUZZ_SRCS_fuzz_cpio        := guest-kernel/libos/fs/cpio.c
FUZZ_SRCS_fuzz_elf         := guest-kernel/libos/proc/elf.c
FUZZ_SRCS_fuzz_erofs       := guest-kernel/libos/fs/erofs.c
FUZZ_SRCS_fuzz_fdt         := guest-kernel/libos/core/bootinfo.c
FUZZ_LIBS_fuzz_fdt         := -lfdt
FUZZ_SRCS_fuzz_snapshot    := $(wildcard snapshot/*.c)
FUZZ_LIBS_fuzz_snapshot    := -lzstd -lpthread
FUZZ_SRCS_fuzz_agent_host  := control/agent/agent_proto.c control/http/buf.c
FUZZ_SRCS_fuzz_agent_guest := initramfs/agent/proto.c
FUZZ_SRCS_fuzz_rpc_json    := control/http/connectrpc.c control/http/jsonutil.c control/http/http.c control/http/http_server.c \
	control/http/http_parse.c control/http/buf.c control/util.c
FUZZ_LIBS_fuzz_rpc_json    := -ljansson -lev -lhttp_parser -lnettle
FUZZ_SRCS_fuzz_virtio_dev  := vmm/virtio/mmio.c vmm/virtio/virtq.c vmm/virtio/console.c vmm/virtio/rng.c \
	vmm/virtio/vsock.c vmm/virtio/vsock_conn.c vmm/virtio/blk.c vmm/virtio/pmem.c vmm/mem.c \
	snapshot/hash.c
FUZZ_LIBS_fuzz_virtio_dev  := -lev -lpthread
FUZZ_SRCS_fuzz_ws          := control/http/ws.c control/http/buf.c
FUZZ_LIBS_fuzz_ws          := -lnettle
FUZZ_SRCS_fuzz_net_policy  := control/net/policy.c
FUZZ_SRCS_fuzz_dns_msg     := control/net/dns_msg.c control/net/policy.c
FUZZ_SRCS_fuzz_udp_frame   := control/net/udp_frame.c
FUZZ_SRCS_fuzz_host_cpuid  := vmm/host_cpuid.c snapshot/hash.c
# kilnd whole but its main(), behind the router (the generated code
# interpreter kernel comes from control.mk's rule), with the snapshot
# library it reads pauses with (sandbox/pause_base.c) built in
FUZZ_SRCS_fuzz_http_router := $(filter-out control/main.c,$(KILND_SRCS)) $(wildcard snapshot/*.c)
FUZZ_LIBS_fuzz_http_router := $(KILND_LDLIBS)
FUZZ_XFLAGS_fuzz_http_router := -I$(BUILD)/host/control/gen
$(FUZZ_DIR)/fuzz_http_router: $(CODEINT_KERNEL_H)
# and the web console's files, embedded (control.mk)
FUZZ_XFLAGS_fuzz_http_router += $(WEBUI_ASSET_FLAGS)
$(FUZZ_DIR)/fuzz_http_router: $(WEBUI_FILES)

FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/%)

define fuzz_rule
$(FUZZ_DIR)/$(1): tests/fuzz/$(1).c $$(FUZZ_SRCS_$(1)) tests/fuzz/fuzz.mk | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(V)$$(FUZZ_CC) $$(FUZZ_CFLAGS) $$(FUZZ_XFLAGS_$(1)) -MMD -MP -MF $$@.d -o $$@ tests/fuzz/$(1).c $$(FUZZ_SRCS_$(1)) $$(FUZZ_LIBS_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_rule,$(t))))

.PHONY: fuzz fuzz-smoke fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: $(FUZZ_BINS)
	$(V)sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)
fuzz-smoke: $(FUZZ_BINS)
	$(V)sh tests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)
