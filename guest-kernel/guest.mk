# kiln-kernel: a CPL0 supervisor (sv/) and a CPL3 library OS (libos/) linked
# into one ELF image. Included from the top-level Makefile.
#
# The supervisor runs emulated on PVM hosts, so it is built for the plain
# x86-64 baseline with no vector or x87 instructions. The library OS runs
# natively but shares every program's registers: it must not touch vector
# state either (a syscall preserves xmm/ymm), so it uses the same flags.
# libfdt comes from Debian's libfdt-dev (libfdt.a).

GUEST_DIR    := $(BUILD)/guest
GUEST_INC    := -nostdinc -isystem $(shell $(CC) -print-file-name=include) -Iguest-kernel/include -Iinclude \
	-idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu
GUEST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror=implicit-function-declaration \
	-ffreestanding -fno-pic -fno-pie -mcmodel=kernel -fno-stack-protector -fno-builtin-printf \
	-fno-asynchronous-unwind-tables -fno-omit-frame-pointer -fcf-protection=none \
	-mgeneral-regs-only -mno-sse -mno-mmx -mno-80387 -march=x86-64 -mtune=generic \
	$(GUEST_INC) -MMD -MP
SV_CFLAGS    := $(GUEST_CFLAGS) -mno-red-zone -mincoming-stack-boundary=3
# Each function in its own section, so that kernel.ld can put the code a
# boot runs together (hot_text.ld).
LIBOS_CFLAGS := $(GUEST_CFLAGS) -iquote guest-kernel/libos -DKILN_LIBOS -ffunction-sections

SV_SRCS    := $(wildcard guest-kernel/sv/*.c guest-kernel/sv/*.S)
LIBOS_SRCS := $(wildcard guest-kernel/libos/*/*.c guest-kernel/libos/*/*.S)
SV_OBJS    := $(patsubst %,$(GUEST_DIR)/obj/%.o,$(SV_SRCS))
LIBOS_OBJS := $(patsubst %,$(GUEST_DIR)/obj/%.o,$(LIBOS_SRCS))
LIBFDT_A   := /usr/lib/x86_64-linux-gnu/libfdt.a

$(GUEST_DIR)/obj/guest-kernel/sv/%.c.o: guest-kernel/sv/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(SV_CFLAGS) -c $< -o $@
$(GUEST_DIR)/obj/guest-kernel/sv/%.S.o: guest-kernel/sv/%.S | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(SV_CFLAGS) -D__ASSEMBLER__ -c $< -o $@
$(GUEST_DIR)/obj/guest-kernel/libos/%.c.o: guest-kernel/libos/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(LIBOS_CFLAGS) -c $< -o $@
$(GUEST_DIR)/obj/guest-kernel/libos/%.S.o: guest-kernel/libos/%.S | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(V)$(CC) $(LIBOS_CFLAGS) -D__ASSEMBLER__ -c $< -o $@

# libfdt's objects go into the library OS's sections (they only run at boot,
# at CPL3).
$(GUEST_DIR)/kiln-kernel: $(SV_OBJS) $(LIBOS_OBJS) guest-kernel/kernel.ld guest-kernel/hot_text.ld
	$(V)ld -static -nostdlib -z noexecstack -z max-page-size=4096 --no-warn-rwx-segments \
		-T guest-kernel/kernel.ld -o $@ $(SV_OBJS) --start-group $(LIBOS_OBJS) $(LIBFDT_A) --end-group

# Syscall names for kiln.stats=1 output, from the kernel's own UAPI header.
$(GUEST_DIR)/gen/syscall_names.h: /usr/include/x86_64-linux-gnu/asm/unistd_64.h
	@mkdir -p $(dir $@)
	$(V){ echo '/* generated from asm/unistd_64.h */'; \
	  echo 'static const struct { short nr; const char *name; } syscall_names[] = {'; \
	  sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9]*\)$$/\t{\2, "\1"},/p' $<; \
	  echo '};'; } > $@
$(GUEST_DIR)/obj/guest-kernel/libos/core/syscall.c.o: $(GUEST_DIR)/gen/syscall_names.h
LIBOS_CFLAGS += -I$(GUEST_DIR)/gen
