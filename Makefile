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

.PHONY: all deps test unit integration bench demo clean format format-check initramfs
all: $(BIN)/kiln-vmm $(BUILD)/guest/kiln-kernel initramfs

deps: $(DEPS_STAMP)
$(DEPS_STAMP): mk/deps.sh
	$(V)sh mk/deps.sh
	$(V)mkdir -p $(BUILD) && touch $@

# ---------------------------------------------------------------- kiln-vmm
VMM_SRCS := $(wildcard vmm/*.c vmm/virtio/*.c)
VMM_OBJS := $(VMM_SRCS:%.c=$(BUILD)/host/%.o)

$(BUILD)/host/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(HOST_CFLAGS) -c $< -o $@

$(BIN)/kiln-vmm: $(VMM_OBJS)
	@mkdir -p $(dir $@)
	$(V)$(CC) -o $@ $^ $(HOST_LDLIBS)

# ---------------------------------------------------------------- kiln-kernel
include guest-kernel/guest.mk

# ---------------------------------------------------------------- initramfs
-include initramfs/initramfs.mk

# ---------------------------------------------------------------- tests
include tests/tests.mk

# ---------------------------------------------------------------- bench / demo
bench: all $(TEST_PROGS)
	$(V)sh tools/bench/bench.sh

demo: all
	$(V)sh tools/demo.sh

format-check:
	$(V)clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

format:
	$(V)clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
