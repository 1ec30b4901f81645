/* SPDX-License-Identifier: MIT */
#pragma once
/* The synthetic host the engine tests decide on: the mTHP sizes and knobs
 * of a 6.18 kernel, its boot knob values and the decisions applied to
 * them (engine-caps.c), shared by the engine tests and test-record. */
#include "mthp/engine.h"
#include "mthp/types.h"

/* Appends a knob allowing the NULL-terminated values; returns its index. */
int add_knob(struct mthp_caps *c, enum mthp_knob_type type, unsigned kb, const char *id, const char *path,
             const char *const *values);
/* Sizes are orders 1..PMD of the base page (arm64 also has 16K and 64K). */
void caps_init_base(struct mthp_caps *c, unsigned page_kb, unsigned pmd_kb);
/* x86-64: 4K pages, 8K..2M, 8K without an anon knob. */
void caps_init(struct mthp_caps *c);

/* The boot state into orig and knob: global enabled and defrag madvise,
 * shmem_enabled never, the PMD size inherit, every other size never. */
void caps_boot_knobs(const struct mthp_caps *c, char orig[][MTHP_VALUE_MAX], char knob[][MTHP_VALUE_MAX]);
/* What the kernel holds after the n decisions: each one's value, or the
 * knob's orig for a restore (an empty value). */
void apply_decisions(const struct mthp_decision *dec, int n, char knob[][MTHP_VALUE_MAX],
                     const char orig[][MTHP_VALUE_MAX]);
/* A host whose anon faults (pages, 4K pages/s, over s->dt) are each served
 * by the largest anon size at "always" in knob, without fallback: every
 * size's stats present, that size's anon_fault_alloc and pgfault at the
 * fault rate, PSI present, total_kb of memory half available. Returns the
 * fault rate (0 on a snapshot without rates). */
double snap_anon_faults(const struct mthp_caps *c, const char knob[][MTHP_VALUE_MAX], struct mthp_snapshot *s,
                        double pages, uint64_t total_kb);
/* The reason of the decision for knob among the n, NULL if none. */
const char *decision_reason(const struct mthp_decision *dec, int n, int knob);
/* A synthetic host's engine side: config, caps, state, this tick's
 * snapshot, the knobs (boot values in orig) and the last decisions. */
struct engine_host {
        struct mthp_engine_config cfg;
        struct mthp_caps caps;
        struct mthp_engine_state st;
        struct mthp_snapshot snap;
        char orig[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        char knob[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n_dec;
        uint64_t tick;
};
/* One engine tick on e->snap: decide (at least one decision, else the
 * running test fails), apply the decisions to e->knob, move to the next
 * state and tick. */
void engine_host_decide(struct engine_host *e);
/* The reason of the last tick's decision for 16K/anon (the first anon
 * rung); fails the running test if there is none. */
const char *anon16_reason(const struct engine_host *e);
/* The last tick's decision for 16K/anon; fails the running test if none. */
const struct mthp_decision *anon16_decision(const struct engine_host *e);
/* Tests match what a decision says by its rule (either rule or size_rule
 * is rule) and the numbers and names it quotes, never its wording, so
 * that a reason can be reworded: tokens is a space-separated list of
 * words each of which the reason must hold whole ("30000 25000 2" does
 * not match 300001). NULL or "": the rule only. */
void assert_rule(const struct mthp_decision *d, enum mthp_rule rule, const char *tokens);
/* The same for a text: each token of tokens appears in it whole. */
void assert_tokens(const char *text, const char *tokens);
