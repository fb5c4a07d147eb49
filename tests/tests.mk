# Tests: Check unit tests (plain and under ASan+UBSan), integration tests that
# boot real VMs on /dev/kvm. Included from the top-level Makefile.
#
# A unit test tests/unit/test_NAME.c is linked with the sources listed in
# UNIT_SRCS_test_NAME (host builds of VMM or guest modules; guest modules are
# compiled with -DKILN_HOSTED).

UNIT_TESTS :=
include tests/unit/unit.mk

UNIT_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter -Iinclude -iquote guest-kernel/include -iquote guest-kernel/libos \
	-D_GNU_SOURCE -DKILN_HOSTED $(shell pkg-config --cflags check 2>/dev/null)
UNIT_LDLIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread) -lfdt -lev -lpthread
SAN_FLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

UNIT_BINS     := $(UNIT_TESTS:%=$(BUILD)/tests/unit/%)
UNIT_SAN_BINS := $(UNIT_TESTS:%=$(BUILD)/tests/unit-san/%)

define unit_rules
$(BUILD)/tests/unit/$(1): tests/unit/$(1).c $$(UNIT_SRCS_$(1)) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(V)$$(CC) $$(UNIT_CFLAGS) -o $$@ $$^ $$(UNIT_LDLIBS)
$(BUILD)/tests/unit-san/$(1): tests/unit/$(1).c $$(UNIT_SRCS_$(1)) | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(V)$$(CC) $$(UNIT_CFLAGS) $$(SAN_FLAGS) -o $$@ $$^ $$(UNIT_LDLIBS)
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_rules,$(t))))

# e2e-unit too: kilnd's and the shim's codec tests (tests/e2e/unit), so a
# signature they follow cannot change under them unseen until make e2e.
unit: $(UNIT_BINS) $(UNIT_SAN_BINS) $(BUILD)/guest/kiln-kernel e2e-unit
	$(V)set -e; for t in $(UNIT_BINS); do echo "unit: $$t"; CK_FORK=yes $$t; done
	$(V)set -e; for t in $(UNIT_SAN_BINS); do echo "unit (asan+ubsan): $$t"; \
		ASAN_OPTIONS=detect_leaks=1 CK_FORK=no $$t; done

# ---------------------------------------------------------------- guest test programs
-include tests/integration/progs.mk

# Every snapshot the tests take checks that the chunks the dirty log says
# nobody wrote are the older file's (vmm/API.md, chunks.unwritten).
integration e2e e2e-e2b: export KILN_SNAP_CHECK_WRITTEN = 1

integration: all $(TEST_PROGS) $(BUILD)/initramfs/test.cpio
	$(V)sh tests/integration/run.sh
	$(V)sh tests/integration/tmux_console.sh

test: deps
	$(V)$(MAKE) --no-print-directory format-check
	$(V)$(MAKE) --no-print-directory all
	$(V)$(MAKE) --no-print-directory unit
	$(V)$(MAKE) --no-print-directory fuzz-smoke
	$(V)$(MAKE) --no-print-directory images
	$(V)$(MAKE) --no-print-directory integration
	$(V)$(MAKE) --no-print-directory agent-test
	$(V)$(MAKE) --no-print-directory $(KILND_SAN)
	$(V)KILN_E2E_VMM=$(BIN)/kiln-vmm KILN_E2E_KERNEL=$(BUILD)/guest/kiln-kernel \
		KILN_E2E_INITRD=$(BUILD)/initramfs/agent.cpio KILN_E2E_KILND=$(KILND_SAN) \
		ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=8 \
		$(MAKE) --no-print-directory e2e
	$(V)KILN_E2E_VMM=$(BIN)/kiln-vmm KILN_E2E_KERNEL=$(BUILD)/guest/kiln-kernel \
		KILN_E2E_INITRD=$(BUILD)/initramfs/agent.cpio $(MAKE) --no-print-directory e2e-e2b
	$(V)KILN_E2E_VMM=$(BIN)/kiln-vmm KILN_E2E_KERNEL=$(BUILD)/guest/kiln-kernel \
		KILN_E2E_INITRD=$(BUILD)/initramfs/agent.cpio $(MAKE) --no-print-directory e2e-browser
	$(V)KILN_E2E_KILND=$(KILND_SAN) ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=8 \
		$(MAKE) --no-print-directory e2e-console
	$(V)$(MAKE) --no-print-directory e2e-net
	$(V)$(MAKE) --no-print-directory e2e-containerd
	$(V)$(MAKE) --no-print-directory e2e-docker-import
