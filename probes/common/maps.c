/*
 * Emptying the kernel's aggregation maps (maps.h): one walk of get_next_key into a
 * caller's scratch, then the deletes; and the per-CPU counters summed and zeroed.
 */
#include "probes/common/maps.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <string.h>

unsigned probe__map_keys(int fd, void *keys, size_t key_size, unsigned cap)
{
	char *k = keys;
	void *prev = NULL;
	unsigned n = 0;

	while (n < cap && !bpf_map_get_next_key(fd, prev, k + n * key_size)) {
		prev = k + n * key_size;
		n++;
	}
	return n;
}

int probe__map_delete(int fd, const void *keys, size_t key_size, unsigned n)
{
	const char *k = keys;

	for (unsigned i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, k + i * key_size) && errno != ENOENT)
			return -errno;
	return 0;
}

int probe__map_clear(int fd, void *keys, size_t key_size, unsigned cap)
{
	return probe__map_delete(fd, keys, key_size, probe__map_keys(fd, keys, key_size, cap));
}

int probe__take_percpu_sums(int fd, void *pcpu, int ncpus, size_t size, void *sum)
{
	const size_t words = size / sizeof(__u64);
	__u32 zero = 0;

	memset(sum, 0, size);
	if (bpf_map_lookup_elem(fd, &zero, pcpu))
		return -errno;
	for (int i = 0; i < ncpus; i++)
		for (size_t w = 0; w < words; w++)
			((__u64 *)sum)[w] += ((const __u64 *)((const char *)pcpu + i * size))[w];
	memset(pcpu, 0, (size_t)ncpus * size);
	if (bpf_map_update_elem(fd, &zero, pcpu, BPF_ANY))
		return -errno;
	return 0;
}
