/*
 * Shared by the libFuzzer targets in fuzz/: the input as a NUL-terminated string, and
 * the input as a file (a memfd, named by its /proc/self/fd path) for the parsers whose
 * entry point reads a path. Each target is built with -fsanitize=fuzzer,address,undefined
 * (make fuzz) and links the library the schedlab binary is made of.
 */
#ifndef SCHEDLAB_FUZZ_FUZZ_H
#define SCHEDLAB_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A NUL-terminated copy of data (a NUL inside ends the string early); free() it. */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* data in a memfd; its path in path[len]. The fd, to be closed by the caller. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz", 0);
	size_t off = 0;

	if (fd < 0)
		abort();
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);

		if (n <= 0)
			abort();
		off += (size_t)n;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

#endif /* SCHEDLAB_FUZZ_FUZZ_H */
