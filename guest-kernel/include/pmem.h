/* SPDX-License-Identifier: MIT */
#ifndef KILN_PMEM_H
#define KILN_PMEM_H

struct bootinfo;
void pmem_init(const struct bootinfo *bi);

#endif
