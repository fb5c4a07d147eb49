/* SPDX-License-Identifier: MIT */
/* The host's CPUID table for the VMMs: asked of KVM once when kilnd starts
 * and kept in DATA_DIR/.host-cpuid (format in include/kiln/host_cpuid.h),
 * which every VMM is given with --host-cpuid instead of asking KVM itself. */
#ifndef KILND_HOST_CPUID_H
#define KILND_HOST_CPUID_H

struct kilnd;

/* Write the file if it is missing or differs from what KVM says now (a
 * new host, kernel or KVM), and set kd->host_cpuid_path. Without KVM or on
 * an error the path stays NULL (logged): the VMMs then ask KVM. */
void host_cpuid_publish(struct kilnd *kd);

#endif
