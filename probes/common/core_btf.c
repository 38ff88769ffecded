/*
 * CO-RE without parsing the kernel's BTF. libbpf resolves a program's relocations
 * against /sys/kernel/btf/vmlinux, which it parses whole (5.5 MB, 127,000 types here)
 * into fresh memory for every object: a third of oncpu's attach here. The build extracts
 * the few types each object's relocations name (`bpftool gen min_core_btf`, under 1 KiB)
 * from the build machine's kernel and compiles them in with that kernel's notes
 * (core_btf_blobs.S). On the kernel whose notes match, GNU build ID included, the
 * extract resolves every relocation as the full BTF would, and libbpf is given it
 * through a memfd; on any other kernel, or where the build could not extract, libbpf
 * reads the kernel's BTF as usual and nothing changes but the time it takes.
 */
#include "probes/common/env.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOTES_PATH	  "/sys/kernel/notes"
#define NOTES_MAX	  4096
#define NT_GNU_BUILD_ID_T 3

struct probe__core_blob {
	const char *name;
	const unsigned char *start, *end;
};

extern const struct probe__core_blob probe__core_blobs[];

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

bool probe__notes_build_id(const void *notes, size_t len)
{
	const unsigned char *p = notes;
	size_t off = 0;

	/* Elf64_Nhdr: namesz, descsz, type, then the name and the descriptor, each padded
	 * to 4 bytes */
	while (len - off >= 12) {
		size_t namesz = get32(p + off), descsz = get32(p + off + 4);
		uint32_t type = get32(p + off + 8);
		size_t body = 12 + pad4(namesz);

		if (namesz > len || descsz > len || body > len - off ||
		    pad4(descsz) > len - off - body)
			return false;
		if (type == NT_GNU_BUILD_ID_T && namesz == 4 && !memcmp(p + off + 12, "GNU", 4) &&
		    descsz > 0)
			return true;
		off += body + pad4(descsz);
	}
	return false;
}

bool probe__core_notes_match(const void *built, size_t built_len, const void *running,
			     size_t running_len)
{
	return built_len == running_len && !memcmp(built, running, built_len) &&
	       probe__notes_build_id(running, running_len);
}

static bool notes_match;

static void read_notes(void)
{
	const struct probe__core_blob *b = &probe__core_blobs[0];
	unsigned char buf[NOTES_MAX];
	ssize_t n = 0, len = 0;
	int fd = open(NOTES_PATH, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (len < (ssize_t)sizeof(buf) &&
	       (n = read(fd, buf + len, sizeof(buf) - (size_t)len)) > 0)
		len += n;
	close(fd);
	/* a read error, or notes that fill the buffer: no match */
	if (n >= 0 && len < (ssize_t)sizeof(buf))
		notes_match = probe__core_notes_match(b->start, (size_t)(b->end - b->start), buf,
						      (size_t)len);
}

/* One memfd per extract, made on first use and open for the process's life. */
#define MAX_BLOBS 8

static struct {
	pthread_mutex_t lock;
	char paths[MAX_BLOBS][32];
	bool tried[MAX_BLOBS];
} memfds = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool blob_to_memfd(const struct probe__core_blob *b, char *path, size_t len)
{
	size_t size = (size_t)(b->end - b->start), off = 0;
	int fd = memfd_create(b->name, MFD_CLOEXEC);

	if (fd < 0)
		return false;
	while (off < size) {
		ssize_t n = write(fd, b->start + off, size - off);

		if (n <= 0) {
			close(fd);
			return false;
		}
		off += (size_t)n;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	if (access(path, R_OK)) { /* no /proc: libbpf could not open it either */
		close(fd);
		return false;
	}
	return true;
}

const char *probe__core_btf(const char *probe)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *path = NULL;

	pthread_once(&once, read_notes);
	if (!notes_match)
		return NULL;
	for (int i = 1; i < MAX_BLOBS && probe__core_blobs[i].name; i++) {
		const struct probe__core_blob *b = &probe__core_blobs[i];

		if (strcmp(b->name, probe))
			continue;
		if (b->end == b->start) /* the build could not extract it */
			return NULL;
		pthread_mutex_lock(&memfds.lock);
		if (!memfds.tried[i]) {
			memfds.tried[i] = true;
			if (!blob_to_memfd(b, memfds.paths[i], sizeof(memfds.paths[i])))
				memfds.paths[i][0] = '\0';
		}
		if (memfds.paths[i][0])
			path = memfds.paths[i];
		pthread_mutex_unlock(&memfds.lock);
		break;
	}
	return path;
}
