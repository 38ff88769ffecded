/*
 * procmaps.c — a snapshot of /proc/PID/maps: which file (or pseudo mapping) holds each
 * executable address of a process, and at what file offset.
 *
 * Each line is "START-END PERMS OFFSET MAJ:MIN INODE [PATH]", PATH running to the end of
 * the line (it may hold spaces). Only executable mappings are kept, since only they hold
 * code; the kernel prints them sorted and disjoint, and a parsed text is sorted again so
 * that a lookup can always binary-search. A " (deleted)" suffix is taken off the path and
 * remembered, so that symbolization knows to go through /proc/PID/map_files instead.
 * Any malformed line fails the whole parse: the kernel never writes one, so a malformed
 * text is not a maps file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/sym_internal.h"

#define AN_DELETED_SUFFIX " (deleted)"

static int parse_hex(const char **s, uint64_t *out)
{
	char *end;

	if (!(**s >= '0' && **s <= '9') && !(**s >= 'a' && **s <= 'f') &&
	    !(**s >= 'A' && **s <= 'F'))
		return -EINVAL;
	errno = 0;
	*out = strtoull(*s, &end, 16);
	if (errno)
		return -EINVAL;
	*s = end;
	return 0;
}

static int expect(const char **s, char c)
{
	if (**s != c)
		return -EINVAL;
	(*s)++;
	return 0;
}

static void skip_blanks(const char **s)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
}

/* Parse one line (without its newline) into *m. Returns 1 for an executable mapping,
 * 0 for any other, -EINVAL when the line is not a maps line, -ENOMEM. */
static int parse_line(const char *s, size_t len, struct an__map *m)
{
	uint64_t major, minor, ino;
	const char *end = s + len;
	char perms[4];

	if (parse_hex(&s, &m->start) || expect(&s, '-') || parse_hex(&s, &m->end) ||
	    expect(&s, ' '))
		return -EINVAL;
	if (m->end <= m->start || end - s < 5)
		return -EINVAL;
	memcpy(perms, s, 4);
	s += 4;
	if (expect(&s, ' ') || parse_hex(&s, &m->pgoff) || expect(&s, ' ') ||
	    parse_hex(&s, &major) || expect(&s, ':') || parse_hex(&s, &minor) || expect(&s, ' '))
		return -EINVAL;
	if (!(*s >= '0' && *s <= '9'))
		return -EINVAL;
	char *ino_end;
	errno = 0;
	ino = strtoull(s, &ino_end, 10);
	if (errno)
		return -EINVAL;
	s = ino_end;
	if (s < end && *s != ' ' && *s != '\t')
		return -EINVAL;
	if (perms[2] != 'x')
		return 0;

	skip_blanks(&s);
	size_t plen = s < end ? (size_t)(end - s) : 0;
	size_t slen = sizeof(AN_DELETED_SUFFIX) - 1;
	m->deleted = plen >= slen && memcmp(s + plen - slen, AN_DELETED_SUFFIX, slen) == 0;
	if (m->deleted)
		plen -= slen;
	m->path = strndup(s, plen);
	if (!m->path)
		return -ENOMEM;
	m->dev = makedev(major, minor);
	m->ino = ino;
	return 1;
}

static int map_cmp(const void *pa, const void *pb)
{
	const struct an__map *a = pa, *b = pb;

	return (a->start > b->start) - (a->start < b->start);
}

struct an_procmaps *an_procmaps_parse(const char *text, pid_t pid)
{
	struct an_procmaps *m;
	size_t cap = 0;
	int err;

	if (!text || pid < 0) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->pid = pid;
	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		const char *next = line[len] ? line + len + 1 : line + len;
		struct an__map map = {0};

		if (len == 0) {
			line = next;
			continue;
		}
		if (m->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct an__map *p = realloc(m->maps, ncap * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				goto out_free;
			}
			m->maps = p;
			cap = ncap;
		}
		err = parse_line(line, len, &map);
		if (err < 0)
			goto out_free;
		if (err == 1)
			m->maps[m->n++] = map;
		line = next;
	}
	if (m->n > 1)
		qsort(m->maps, m->n, sizeof(*m->maps), map_cmp);
	for (size_t i = 1; i < m->n; i++) {
		if (m->maps[i].start < m->maps[i - 1].end) {
			err = -EINVAL; /* overlapping mappings: not one process's maps */
			goto out_free;
		}
	}
	return m;

out_free:
	an_procmaps_free(m);
	errno = -err;
	return NULL;
}

/* The whole of a /proc file; its size is unknown until read. */
static char *read_proc_file(const char *path)
{
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap);
	int err;

	if (!buf)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *p = realloc(buf, cap * 2);

			if (!p) {
				err = -ENOMEM;
				goto out_close_fd;
			}
			buf = p;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto out_close_fd;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	close(fd);
	return buf;

out_close_fd:
	close(fd);
out_free:
	free(buf);
	errno = -err;
	return NULL;
}

struct an_procmaps *an_procmaps_read(pid_t pid)
{
	char path[64];

	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	char *text = read_proc_file(path);
	if (!text)
		return NULL;
	struct an_procmaps *m = an_procmaps_parse(text, pid);
	int err = errno;
	free(text);
	errno = err;
	return m;
}

ptrdiff_t an__procmaps_find(const struct an_procmaps *m, uint64_t addr)
{
	if (!m)
		return -1;
	/* lo becomes the number of mappings starting at or below addr. */
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->maps[lo - 1].end)
		return -1;
	return (ptrdiff_t)(lo - 1);
}

size_t an_procmaps_count(const struct an_procmaps *m)
{
	return m ? m->n : 0;
}

void an_procmaps_free(struct an_procmaps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->maps[i].path);
	free(m->maps);
	free(m);
}
