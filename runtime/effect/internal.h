/*
 * The layout of an IO value, shared by the constructors (value.c) and the interpreters
 * (interp.c) only.
 *
 * Every node has at most one child (the IO it goes on from), so a value is a list, and
 * freeing one is a loop, never a recursion as deep as the chain.
 */
#ifndef SCHEDLAB_FX_INTERNAL_H
#define SCHEDLAB_FX_INTERNAL_H

#include "runtime/effect/effect.h"

enum fx__tag {
	FX_PURE,
	FX_DELAY,
	FX_MAP,
	FX_FLAT_MAP,
	FX_ATTEMPT,
	FX_RAISE,
	FX_ASYNC,
};

struct fx_io {
	uint32_t refs;     /* atomic; see unref() in value.c */
	uint8_t tag;       /* enum fx__tag */
	bool trace;        /* FX_RAISE */
	int32_t code;      /* FX_RAISE */
	struct fx_io *io;  /* the child: FX_MAP, FX_FLAT_MAP, FX_ATTEMPT, FX_ASYNC */
	union {
		uint64_t value;
		fx_thunk thunk;
		fx_map_fn map;
		fx_bind_fn bind;
		fx_attempt_fn attempt;
		const char *msg; /* FX_RAISE */
	} u;
	void *env;
};

#endif /* SCHEDLAB_FX_INTERNAL_H */
