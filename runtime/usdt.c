/*
 * The USDT semaphores (see usdt.h): in the .probes section, where tracers expect them,
 * and written only by tracers attaching and detaching.
 */
#include "runtime/usdt.h"

#define RT_USDT_DEFINE(name) unsigned short rt_##name##_semaphore __attribute__((section(".probes")))

RT_USDT_DEFINE(spawn);
RT_USDT_DEFINE(enqueue);
RT_USDT_DEFINE(run_begin);
RT_USDT_DEFINE(run_end);
RT_USDT_DEFINE(steal);
RT_USDT_DEFINE(place);
RT_USDT_DEFINE(park);
RT_USDT_DEFINE(unpark);
RT_USDT_DEFINE(block_begin);
RT_USDT_DEFINE(block_end);
RT_USDT_DEFINE(flush);
RT_USDT_DEFINE(window);
