// SPDX-License-Identifier: GPL-2.0
/*
 * A program every kernel's verifier refuses, for the test that a probe whose program is
 * refused is named with the verifier's reason and the fix (tests/probes/test_env.c): it
 * reads through a random number as if it were a pointer. Loaded only, never attached.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("raw_tp/sched_switch")
int refused_deref(void *ctx)
{
	return *(volatile int *)(unsigned long)bpf_get_prandom_u32();
}
