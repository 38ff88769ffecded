/*
 * A program with a known split of its CPU time between three functions, for the tests of
 * `schedlab profile`: split_a, split_b and split_c spin on the thread's own CPU clock for
 * 5, 3 and 2 ms in turn until SECONDS of CPU time are spent, then the program prints the
 * CPU time each function took by that clock ("split_a 0.501"), the share a profile of it
 * must find.
 *
 *   three_split SECONDS [--fork]   (--fork: the work runs in a child process, which
 *                                   prints; the parent waits for it)
 *   three_split --wait             (says "waiting", then sleeps until SIGUSR1 starts
 *                                   60 s of the split: a process to attach to)
 *   three_split --dlopen SECONDS   (after 0.6 s asleep, so that a profiler has read its
 *                                   mappings without it, opens libm with dlopen and
 *                                   spends SECONDS calling its cos)
 *   three_split --jit SECONDS      (copies a spin loop into an executable mapping of
 *                                   its own, names it jitted_spin in /tmp/perf-PID.map
 *                                   as a JIT does, and spends SECONDS in it; prints
 *                                   "pid N", whose map the caller removes)
 *   three_split --libc SECONDS     (SECONDS of CPU time split between glibc's malloc and
 *                                   free, its backtrace() and a spin of its own, each
 *                                   timed by the thread's CPU clock: prints
 *                                   "libc_alloc 0.31", "libc_capture", "libc_work")
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

/* Spin for ms of this thread's CPU time; the time it took by the clock. Not inlined, so
 * that each is a frame of its own. */
#define SPIN(name)                                                                        \
	__attribute__((noinline)) static double name(double ms)                         \
	{                                                                                 \
		double t0 = cpu_now(), t;                                                 \
		do {                                                                      \
			for (int i = 0; i < 200000; i++)                                  \
				sink += (unsigned long)i * 2654435761u;                   \
			t = cpu_now();                                                    \
		} while (t - t0 < ms / 1e3);                                              \
		return t - t0;                                                            \
	}
SPIN(split_a)
SPIN(split_b)
SPIN(split_c)

static void work(double seconds)
{
	double a = 0, b = 0, c = 0, t0 = cpu_now();

	while (cpu_now() - t0 < seconds) {
		a += split_a(5);
		b += split_b(3);
		c += split_c(2);
	}
	printf("split_a %.4f\nsplit_b %.4f\nsplit_c %.4f\n", a, b, c);
	fflush(stdout);
}

/* SECONDS of CPU time in libm's cos, opened with dlopen while the program runs. */
static int in_dlopened(double seconds)
{
	struct timespec nap = { 0, 600 * 1000000L };
	double (*fn)(double), t0, x = 0;
	void *lib;

	nanosleep(&nap, NULL);
	lib = dlopen("libm.so.6", RTLD_NOW);
	fn = lib ? (double (*)(double))dlsym(lib, "cos") : NULL;
	if (!fn)
		return 1;
	t0 = cpu_now();
	while (cpu_now() - t0 < seconds)
		for (int i = 0; i < 100000; i++)
			x += fn(x + i);
	printf("cos %g\n", x);
	return 0;
}

/* SECONDS of CPU time in generated code: `mov %rdi,%rax; 1: dec %rax; jnz 1b; ret`,
 * named in the perf map a JIT writes. */
static int in_jitted(double seconds)
{
	static const unsigned char code[] = { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8,
					      0x75, 0xfb, 0xc3 };
	char path[64];
	uint64_t (*fn)(uint64_t);
	double t0;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			  0);
	FILE *map;

	if (page == MAP_FAILED)
		return 1;
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	map = fopen(path, "w");
	if (!map)
		return 1;
	fprintf(map, "%lx %zx jitted_spin\n", (unsigned long)(uintptr_t)page, sizeof(code));
	fclose(map);
	fn = (uint64_t (*)(uint64_t))page;
	t0 = cpu_now();
	while (cpu_now() - t0 < seconds)
		sink += fn(1000000);
	/* the map stays, as a JIT's does, for the profiler to read after the exit */
	printf("pid %d\n", (int)getpid());
	return 0;
}

/* 64 rounds of 256 blocks of 32 B to 8 KiB, most past the thread cache, freed in
 * another order: time in malloc and free, the loop around them a few instructions. */
__attribute__((noinline)) static double libc_alloc(void)
{
	static void *blocks[256];
	double t0 = cpu_now();

	for (int r = 0; r < 64; r++) {
		for (unsigned i = 0; i < 256; i++)
			blocks[i] = malloc(32 + (((i + (unsigned)r) * 2654435761u >> 7) & 8191));
		for (unsigned i = 0; i < 256; i++)
			free(blocks[(i * 97) & 255]);
	}
	return cpu_now() - t0;
}

/* 400 backtraces of a stack a few frames deep. */
__attribute__((noinline)) static double libc_capture_at(int depth)
{
	void *ips[64];
	double t0, t;

	if (depth > 0) {
		t = libc_capture_at(depth - 1);
		__asm__ volatile("" ::: "memory"); /* no tail call */
		return t;
	}
	t0 = cpu_now();
	for (int i = 0; i < 400; i++)
		sink += (unsigned long)backtrace(ips, 64);
	return cpu_now() - t0;
}

/* SECONDS of CPU time in turns of malloc and free, backtrace and a spin. */
static int in_libc(double seconds)
{
	double alloc = 0, capture = 0, own = 0, t0;
	void *ips[4];

	backtrace(ips, 4); /* its first call loads the unwinder: not a turn's time */
	t0 = cpu_now();
	while (cpu_now() - t0 < seconds) {
		alloc += libc_alloc();
		capture += libc_capture_at(6);
		own += split_a(1);
	}
	printf("libc_alloc %.4f\nlibc_capture %.4f\nlibc_work %.4f\n", alloc, capture, own);
	return 0;
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

int main(int argc, char **argv)
{
	double seconds;

	if (argc == 2 && !strcmp(argv[1], "--wait")) {
		sigset_t usr1, others;

		/* blocked until sigsuspend takes it: a SIGUSR1 between the test of go and a
		 * pause() would be handled there and leave pause() waiting for another, and
		 * the process asleep through its profile */
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, &others);
		signal(SIGUSR1, on_usr1);
		printf("waiting\n"); /* for SIGUSR1 from now on */
		fflush(stdout);
		sigdelset(&others, SIGUSR1);
		while (!go)
			sigsuspend(&others);
		work(60);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--dlopen"))
		return in_dlopened(atof(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "--jit"))
		return in_jitted(atof(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "--libc"))
		return in_libc(atof(argv[2]));
	if (argc < 2 || (seconds = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: three_split SECONDS [--fork] | --wait | --dlopen SECONDS | "
			"--jit SECONDS | --libc SECONDS\n");
		return 2;
	}
	if (argc == 3 && !strcmp(argv[2], "--fork")) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			work(seconds);
			_exit(0);
		}
		return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status)
									      : 1;
	}
	work(seconds);
	return 0;
}
