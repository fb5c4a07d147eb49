# initramfs archives: cpio (newc) archives built by initramfs/mkcpio.sh from
# a file list (initramfs/NAME.list -> $(BUILD)/initramfs/NAME.cpio).
# Included from the top-level Makefile.
#
#   test.cpio     integration tests and benchmarks: busybox, the test
#                 programs of tests/integration/progs.mk, test data
#   busybox.cpio  busybox and its applet links (make demo names the program)
#   agent.cpio    kilnd's sandboxes: kiln-agent as /init, plus busybox
#   agent-image.cpio  kilnd's sandboxes of an image: kiln-agent as /init alone
#
# An archive depends on the script, its list, the lists it includes and every
# source file they name (mkcpio.sh --deps prints them), so the test programs
# it holds are built first by their rules in tests/integration/progs.mk.

INITRAMFS_DIR   := $(BUILD)/initramfs
INITRAMFS_NAMES := test busybox agent agent-image

initramfs: $(INITRAMFS_NAMES:%=$(INITRAMFS_DIR)/%.cpio)

define initramfs_rule
$(INITRAMFS_DIR)/$(1).cpio: initramfs/mkcpio.sh initramfs/pagealign.py $(shell sh initramfs/mkcpio.sh --deps initramfs/$(1).list)
	@mkdir -p $$(dir $$@)
	$$(V)sh initramfs/mkcpio.sh initramfs/$(1).list $$@
endef
$(foreach a,$(INITRAMFS_NAMES),$(eval $(call initramfs_rule,$(a))))
