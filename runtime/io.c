/*
 * Timers and the I/O reactor: one thread per scheduler, started on first use, that
 * sleeps in epoll_wait until the next timer or a registered file descriptor is
 * ready, and makes the waiting tasks runnable.
 */
#include <stdlib.h>

#include "runtime/internal.h"

void rt__io_stop(struct rt_sched *s)
{
	if (!s->io)
		return;
	free(s->io);
	s->io = NULL;
}
