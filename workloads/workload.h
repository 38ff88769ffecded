/*
 * workloads — the benchmarks, one file each, each a registered descriptor.
 *
 * A descriptor names the workload, its typed parameters (with defaults and bounds,
 * so the harness validates -P name=value before anything runs), and four hooks:
 * setup (once per fork, given the scheduler and the parameters; optional), op (one
 * operation, run as a task on the runtime), check (the op's result against the
 * expected one, after every op) and teardown (optional). The op sizes and units are the studies'.
 */
#ifndef SCHEDLAB_WORKLOAD_H
#define SCHEDLAB_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_sched;

enum wl_type {
	WL_INT,    /* a whole number in [min, max] */
	WL_REAL,   /* a real number in [min, max] */
	WL_CHOICE, /* one of the comma-separated words in `choices` */
	WL_POW2,   /* a power of two in [min, max] (a channel's or a ring's capacity) */
};

struct wl_param {
	const char *name;
	enum wl_type type;
	const char *def; /* the default, as a user would type it */
	double min, max; /* WL_INT, WL_POW2 and WL_REAL */
	const char *choices;
	const char *help;
};

union wl_value {
	long i;   /* WL_INT, WL_POW2; WL_CHOICE: the index of the word in `choices` */
	double r; /* WL_REAL */
};

#define WL_MAX_PARAMS 16

/* What a workload's hooks see. */
struct wl_ctx {
	struct rt_sched *sched;
	const struct wl_desc *desc;
	union wl_value values[WL_MAX_PARAMS]; /* parallel to desc->params */
	void *state;                          /* the workload's own, from setup */
};

/* A figure a workload reports about itself (memory in MiB, a mode), once per fork after
 * the measured iterations; the run reports each one's median over the forks. */
struct wl_metric {
	char name[40];
	char unit[16];
	double value;
};

#define WL_MAX_METRICS 16

/* Append a metric to out[*n] and count it, unless out already holds max. */
void wl_metric_add(struct wl_metric *out, size_t *n, size_t max, const char *name,
		   const char *unit, double value);

struct wl_desc {
	const char *name;
	const char *summary; /* what one op does */
	const char *unit;    /* "ops/s" */
	const struct wl_param *params; /* terminated by an entry with name == NULL */
	/* 0, or -errno with a one-line reason in err. */
	int (*setup)(struct wl_ctx *ctx, char *err, size_t errlen);
	/* One operation; runs in a task. Its result goes to check. */
	uint64_t (*op)(struct wl_ctx *ctx);
	/* true when result is right; else a one-line reason in err. */
	bool (*check)(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen);
	void (*teardown)(struct wl_ctx *ctx);
	/* Optional: fill out[0..max) with figures about the fork (its memory, the stack
	 * mode that ran); the count. Runs after the measured iterations, before teardown. */
	size_t (*report)(struct wl_ctx *ctx, struct wl_metric *out, size_t max);
};

/* Every workload, NULL-terminated, in the order `schedlab list` shows them. */
const struct wl_desc *const *wl_all(void);
const struct wl_desc *wl_find(const char *name);

/* The index of a parameter by name, or -1. */
int wl_param_index(const struct wl_desc *d, const char *name);
/* Parse text as parameter i's value. 0, or -EINVAL with a one-line reason in err that
 * names the parameter and what it accepts. */
int wl_param_parse(const struct wl_desc *d, int i, const char *text, union wl_value *out,
		   char *err, size_t errlen);
/* Set every parameter to its default. */
void wl_params_default(const struct wl_desc *d, union wl_value *values);
/* Format parameter i's value as a user would type it. */
void wl_param_format(const struct wl_desc *d, int i, const union wl_value *v, char *buf,
		     size_t len);

/* Typed access for the hooks, by name; the name must exist. */
long wl_int(const struct wl_ctx *ctx, const char *name);
double wl_real(const struct wl_ctx *ctx, const char *name);
/* The index of the chosen word in the parameter's `choices`. */
long wl_choice(const struct wl_ctx *ctx, const char *name);

/* The `workers` arithmetic over values [first, first + count), summed with wrapping:
 * shared with the peers in bench/ so that they do exactly the same work. */
uint64_t wl_workers_mix(uint64_t first, uint64_t count, uint64_t rounds);

/* The tcp workloads' server process (tcp_server.c). It reads a per-run key from `control`
 * (WL_TCP_SERVER_KEY_LEN bytes in hex, then a newline: the one secret between the
 * workload and its server, never on a command line), drops every privilege, writes `hello`
 * and a newline on `control`, and serves connections accepted on listen_fd. Each
 * connection first sends the key, and the server echoes it to admit the connection or
 * closes it (as it does one that does not send it within a few seconds); after `conns`
 * admissions it stops listening. Then it echoes requests of `size` bytes after delay_ns,
 * and returns when `control` reaches end of file. 0, or -errno with the step that failed
 * in *what. */
#define WL_TCP_SERVER_MAX_SIZE	4096
#define WL_TCP_SERVER_MAX_CONNS 4096
#define WL_TCP_SERVER_KEY_LEN	16
int wl_tcp_server_run(int listen_fd, int control, size_t size, uint64_t delay_ns, long conns,
		      const char *hello, const char **what);

#endif /* SCHEDLAB_WORKLOAD_H */
