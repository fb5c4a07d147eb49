/* SPDX-License-Identifier: MIT */
/* The image's self-description for the VMM (kiln/boot.h: struct
 * kiln_boot_image), as an ELF note. */
#include <stdint.h>

#include "kcpu.h"
#include "kiln/boot.h"

extern char sv_entry[], sv_exc_stubs[], sv_bp_entry[], sv_irq_stubs[], sv_timer_entry[];
extern char sv_spurious_entry[], sv_syscall_entry[], sv_quiesce_entry[];
extern char sv_ist1_top[], sv_ist2_top[], sv_boot_stack_top[], libos_rsp0_top[];
extern char lstar_entry[];

#define EXC(n)  [n] = (uint64_t)(sv_exc_stubs + 16 * (n))
#define IRQ(n)  [KILN_VEC_DEVICE0 + (n)] = (uint64_t)(sv_irq_stubs + SV_IRQ_STUB_SIZE * (n))
#define IRQ4(n) IRQ(n), IRQ(n + 1), IRQ(n + 2), IRQ(n + 3)
#define IST1    1
#define IST2    2

struct kiln_note {
	uint32_t namesz, descsz, type;
	char name[8];
	struct kiln_boot_image desc;
} __attribute__((packed));

__attribute__((section(".note.kiln"), used, aligned(4))) static const struct kiln_note
    note =
        {
            .namesz = sizeof(KILN_NOTE_NAME),
            .descsz = sizeof(struct kiln_boot_image),
            .type = KILN_NOTE_BOOT,
            .name = KILN_NOTE_NAME,
            .desc =
                {
                    .magic = KILN_BOOT_IMAGE_MAGIC,
                    .version = KILN_BOOT_VERSION,
                    .entry = (uint64_t)sv_entry,
                    .boot_stack = (uint64_t)sv_boot_stack_top,
                    .syscall_entry = (uint64_t)sv_syscall_entry,
                    .syscall_entry_cpl3 = (uint64_t)lstar_entry,
                    .rsp0 = (uint64_t)libos_rsp0_top,
                    .ist = {(uint64_t)sv_ist1_top, (uint64_t)sv_ist2_top},
                    .vector =
                        {
                            EXC(0),
                            EXC(1),
                            EXC(2),
                            [3] = (uint64_t)sv_bp_entry,
                            EXC(4),
                            EXC(5),
                            EXC(6),
                            EXC(7),
                            EXC(8),
                            EXC(9),
                            EXC(10),
                            EXC(11),
                            EXC(12),
                            EXC(13),
                            EXC(14),
                            EXC(15),
                            EXC(16),
                            EXC(17),
                            EXC(18),
                            EXC(19),
                            EXC(20),
                            EXC(21),
                            EXC(22),
                            EXC(23),
                            EXC(24),
                            EXC(25),
                            EXC(26),
                            EXC(27),
                            EXC(28),
                            EXC(29),
                            EXC(30),
                            EXC(31),
                            IRQ4(0),
                            IRQ4(4),
                            IRQ4(8),
                            IRQ4(12),
                            IRQ4(16),
                            IRQ4(20),
                            IRQ4(24),
                            IRQ4(28),
                            [KILN_VEC_TIMER] = (uint64_t)sv_timer_entry,
                            [KILN_VEC_QUIESCE] = (uint64_t)sv_quiesce_entry,
                            [KILN_VEC_SPURIOUS] = (uint64_t)sv_spurious_entry,
                        },
                    .vector_flags =
                        {
                            [2] = IST1,
                            [3] = KILN_VF_DPL3,
                            [8] = IST1,
                            [18] = IST1,
#define F(n)  [KILN_VEC_DEVICE0 + (n)] = IST2
#define F4(n) F(n), F(n + 1), F(n + 2), F(n + 3)
                            F4(0),
                            F4(4),
                            F4(8),
                            F4(12),
                            F4(16),
                            F4(20),
                            F4(24),
                            F4(28),
                            [KILN_VEC_TIMER] = IST2,
                            [KILN_VEC_QUIESCE] = IST2,
                            [KILN_VEC_SPURIOUS] = IST2,
                        },
                },
};
