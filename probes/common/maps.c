/*
 * Emptying the kernel's aggregation maps (maps.h): one walk of get_next_key into a
 * caller's scratch, then the deletes.
 */
#include "probes/common/maps.h"

#include <bpf/bpf.h>
#include <errno.h>

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
