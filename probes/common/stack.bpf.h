/*
 * Stacks stored once each, keyed by a hash of their contents: the hash every probe that
 * aggregates stacks in the kernel uses, so that they name stacks the same way.
 */
#ifndef SCHEDLAB_PROBES_COMMON_STACK_BPF_H
#define SCHEDLAB_PROBES_COMMON_STACK_BPF_H

/* The deepest stack the hash reads (PERF_MAX_STACK_DEPTH). */
#define PROBE__STACK_MAX_DEPTH 127

/* A 64-bit hash of nr and ips[0..nr), never 0 (0 names no stack): a multiply-xorshift
 * step per ip, then murmur3's fmix64 finaliser. Each step is a bijection of the state
 * for a given ip and of the ip for a given state, so two stacks of one length that
 * differ in a single frame always hash apart. A few instructions per frame; the
 * constant bound is what the verifier needs. */
static __always_inline __u64 probe__stack_hash(const __u64 *ips, __u32 nr)
{
	__u64 h = 0x9e3779b97f4a7c15ull ^ nr;

	for (__u32 i = 0; i < PROBE__STACK_MAX_DEPTH; i++) {
		if (i >= nr)
			break;
		h = (h ^ ips[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h ? h : 1;
}

#endif /* SCHEDLAB_PROBES_COMMON_STACK_BPF_H */
