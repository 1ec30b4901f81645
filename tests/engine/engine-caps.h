/* SPDX-License-Identifier: MIT */
#pragma once
/* The synthetic host the engine tests decide on: the mTHP sizes and knobs
 * of a 6.18 kernel (engine-caps.c), shared by test-engine.c and
 * test-engine-faultcost.c. */
#include "mthp/types.h"

/* Appends a knob allowing the NULL-terminated values; returns its index. */
int add_knob(struct mthp_caps *c, enum mthp_knob_type type, unsigned kb, const char *id, const char *path,
             const char *const *values);
/* Sizes are orders 1..PMD of the base page (arm64 also has 16K and 64K). */
void caps_init_base(struct mthp_caps *c, unsigned page_kb, unsigned pmd_kb);
/* x86-64: 4K pages, 8K..2M, 8K without an anon knob. */
void caps_init(struct mthp_caps *c);
