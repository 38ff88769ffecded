/*
 * Configurations and the named presets that model real runtimes.
 *
 * A preset is a complete vector of knob values; rt_config_preset() overwrites every
 * knob, so the order of -c overrides after a preset never depends on what was set
 * before. The values and their sources are in reference/runtimes.md.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "runtime/rt.h"

struct preset {
	const char *name;
	const char *describe;
	void (*apply)(struct rt_config *c);
};

/* cats-effect's work-stealing pool: spawn to the local ring (256 slots) and wake a
 * parked sibling when none is searching; at most half the workers search; the
 * global queue is checked first every 64 ticks. */
static void preset_ce(struct rt_config *c)
{
	c->workers = 0;
	c->stack_size = 64 * 1024;
	c->local_capacity = 256;
	c->global_interval = 64;
	c->searcher_frac = 2;
	c->search_spin_us = 50;
	c->spawn = RT_SPAWN_LOCAL;
	c->notify = RT_NOTIFY_IF_NO_SEARCHERS;
	c->idle_steal = true;
	c->metrics = true;
}

static const struct preset presets[] = {
	{ "ce", "cats-effect's work-stealing pool: local ring, wake a sibling if none searches",
	  preset_ce },
};

static const char *const preset_names[] = { "ce", NULL };

void rt_config_default(struct rt_config *c)
{
	rt_config_preset(c, "ce");
}

int rt_config_preset(struct rt_config *c, const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		if (!strcmp(presets[i].name, name)) {
			memset(c, 0, sizeof(*c));
			presets[i].apply(c);
			c->preset = presets[i].name;
			return 0;
		}
	}
	return -ENOENT;
}

const char *const *rt_preset_names(void)
{
	return preset_names;
}

const char *rt_preset_describe(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i].name, name))
			return presets[i].describe;
	return NULL;
}
