/*
 * What the workloads that report their memory share: the process's RSS and PSS from
 * /proc/self/smaps_rollup (the kernel sums every mapping, shared pages split among
 * their users for PSS).
 */
#include <errno.h>
#include <stdio.h>

#include "workloads/internal.h"

int wl__smaps_rollup(double *rss, double *pss)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "re");
	unsigned long long kb;
	char line[256];
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Rss: %llu kB", &kb) == 1) {
			*rss = (double)kb * 1024;
			found |= 1;
		} else if (sscanf(line, "Pss: %llu kB", &kb) == 1) {
			*pss = (double)kb * 1024;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -ENODATA;
}
