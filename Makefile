# kiln — one entry point: make, make test, make bench, make demo, make clean.
#
# Host programs land in build/bin, the guest kernel in build/guest/kiln-kernel,
# cpio archives in build/initramfs. Missing Debian packages are installed first
# (see mk/deps.sh), so a fresh Debian 12 machine needs nothing else.

BUILD   := build
BIN     := $(BUILD)/bin
CC      := gcc
V       ?= @

HOST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror=implicit-function-declaration \
	-Iinclude -D_GNU_SOURCE -MMD -MP
HOST_LDLIBS := -lfdt -lev -lpthread

DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: all deps test unit integration bench demo clean format format-check initramfs images
all: $(BIN)/kiln-vmm $(BUILD)/guest/kiln-kernel initramfs

deps: $(DEPS_STAMP)
$(DEPS_STAMP): mk/deps.sh
	$(V)sh mk/deps.sh
	$(V)mkdir -p $(BUILD) && touch $@

# ---------------------------------------------------------------- kiln-vmm
# The guest's cpio parser too: the VMM builds the initramfs index with it.
VMM_SRCS := $(wildcard vmm/*.c vmm/virtio/*.c vmm/jail/*.c) guest-kernel/libos/fs/cpio.c
VMM_OBJS := $(VMM_SRCS:%.c=$(BUILD)/host/%.o)
$(BUILD)/host/guest-kernel/libos/fs/cpio.o: HOST_CFLAGS += -iquote guest-kernel/include -DKILN_HOSTED
$(BUILD)/host/vmm/initrd_index.o: HOST_CFLAGS += -iquote guest-kernel/libos/fs -iquote guest-kernel/include -DKILN_HOSTED

$(BUILD)/host/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(HOST_CFLAGS) -c $< -o $@

include snapshot/snapshot.mk

# The snapshot library and libjansson (the API socket) besides the rest.
# Linked static-pie: no dynamic loader and no shared libraries to map at
# each start, ~0.6 ms off every boot (the address space stays randomized).
$(BIN)/kiln-vmm: $(VMM_OBJS) $(SNAP_LIB)
	@mkdir -p $(dir $@)
	$(V)$(CC) -static-pie -o $@ $(VMM_OBJS) $(SNAP_LIB) $(HOST_LDLIBS) $(SNAP_LDLIBS) -ljansson -lseccomp

# ---------------------------------------------------------------- kilnd, kiln CLI, e2e
include control/control.mk
include tools/kiln/kiln.mk
include tools/image-import/image-import.mk
include control/net/net_lib.mk
include shim/shim.mk
include tests/e2e/e2e.mk

# ---------------------------------------------------------------- kiln-kernel
include guest-kernel/guest.mk

# ---------------------------------------------------------------- initramfs
include initramfs/agent/agent.mk
-include initramfs/initramfs.mk

# ---------------------------------------------------------------- tests
include tests/tests.mk
include tests/fuzz/fuzz.mk

# ---------------------------------------------------------------- images
# Debian-based erofs images, cached outside the clone ($$KILN_CACHE, default
# ~/.cache/kiln) under a key of their recipe; build/images links to them.
IMAGE_RECIPES := $(wildcard tools/mkimage/recipes/*.recipe browser-image/*.recipe)
images: $(DEPS_STAMP)
	$(V)for r in $(IMAGE_RECIPES); do tools/mkimage/mkimage --out $(BUILD)/images $$r || exit 1; done

# ---------------------------------------------------------------- bench / demo
bench: all $(TEST_PROGS) images
	$(V)sh tools/bench/bench.sh

demo: all images
	$(V)sh tools/demo.sh

format-check:
	$(V)clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

format:
	$(V)clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
