/*
 * Emptying the kernel's aggregation maps from user space, for every loader's drain, and
 * taking the per-CPU counters the programs keep.
 * Keys are collected first and deleted afterwards: deleting while walking with
 * get_next_key restarts the walk. Internal to probes/ (probe__ prefix).
 */
#ifndef SCHEDLAB_PROBES_COMMON_MAPS_H
#define SCHEDLAB_PROBES_COMMON_MAPS_H

#include <stddef.h>

/* The keys of map fd, up to cap of key_size bytes each, into keys: how many. */
unsigned probe__map_keys(int fd, void *keys, size_t key_size, unsigned cap);
/* Delete keys[0..n) from map fd (a key gone already is no error). 0 or -errno. */
int probe__map_delete(int fd, const void *keys, size_t key_size, unsigned n);
/* Both: empty map fd, keys a scratch of cap keys. 0 or -errno. */
int probe__map_clear(int fd, void *keys, size_t key_size, unsigned cap);

/* Sum slot 0 of the per-CPU array fd, a struct of `size` bytes of __u64 counts on each
 * of ncpus CPUs, into sum, and zero it: pcpu is a scratch of ncpus such structs. 0 or
 * -errno. */
int probe__take_percpu_sums(int fd, void *pcpu, int ncpus, size_t size, void *sum);

#endif /* SCHEDLAB_PROBES_COMMON_MAPS_H */
