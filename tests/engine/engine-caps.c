/* SPDX-License-Identifier: MIT */
/* The synthetic host the engine tests decide on (engine-caps.h). */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mthp/sample.h"
#include "mthp/types.h"

#include "engine-caps.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- a 6.18 x86-64 host: 8K..2M, 8K without an anon knob ---- */

static const char *const anon_values[] = { "always", "inherit", "madvise", "never", NULL };
static const char *const shmem_values[] = { "always", "inherit", "within_size", "advise", "never", NULL };
static const char *const enabled_values[] = { "always", "madvise", "never", NULL };
static const char *const defrag_values[] = { "always", "defer", "defer+madvise", "madvise", "never", NULL };
static const char *const shmem_global_values[] = { "always", "within_size", "advise", "never", "deny", "force", NULL };
static const char *const stat_names[] = {
        "anon_fault_alloc", "anon_fault_fallback", "anon_fault_fallback_charge", "nr_anon",
        "nr_anon_partially_mapped", "shmem_alloc", "shmem_fallback", "shmem_fallback_charge",
        "split", "split_deferred", "split_failed", "swpin", "swpin_fallback",
        "swpin_fallback_charge", "swpout", "swpout_fallback", "zswpout",
};

int add_knob(struct mthp_caps *c, enum mthp_knob_type type, unsigned kb, const char *id, const char *path,
             const char *const *values) {
        struct mthp_knob *k = &c->knobs[c->n_knobs];
        k->type = type;
        k->size_kb = kb;
        snprintf(k->id, sizeof(k->id), "%s", id);
        snprintf(k->path, sizeof(k->path), "%s", path);
        for (k->n_allowed = 0; values[k->n_allowed]; k->n_allowed++)
                snprintf(k->allowed[k->n_allowed], MTHP_VALUE_MAX, "%s", values[k->n_allowed]);
        return (int) c->n_knobs++;
}

/* Sizes are orders 1..PMD of the base page (arm64 also has 16K and 64K). */
void caps_init_base(struct mthp_caps *c, unsigned page_kb, unsigned pmd_kb) {
        memset(c, 0, sizeof(*c));
        c->pmd_kb = pmd_kb;
        c->page_kb = page_kb;
        c->psi = true;
        c->cg_layout = MTHP_CG_HYBRID;
        for (unsigned kb = 2 * page_kb; kb <= pmd_kb; kb *= 2) {
                struct mthp_size *sz = &c->sizes[c->n_sizes];
                char name[16], id[32], path[MTHP_PATH_MAX];
                sz->kb = kb;
                sz->order = __builtin_ctz(kb / page_kb);
                mthp_format_size(kb, name, sizeof(name));
                sz->knob[MTHP_ANON] = -1;
                if (sz->order > 1) { /* orders 2..PMD only */
                        snprintf(id, sizeof(id), "%s/anon", name);
                        snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/enabled", kb);
                        sz->knob[MTHP_ANON] = add_knob(c, MTHP_KNOB_SIZE_ANON, kb, id, path, anon_values);
                }
                snprintf(id, sizeof(id), "%s/shmem", name);
                snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/shmem_enabled", kb);
                sz->knob[MTHP_SHMEM] = add_knob(c, MTHP_KNOB_SIZE_SHMEM, kb, id, path, shmem_values);
                /* a different order per size, as readdir gives: stats must be
                 * found by name, never by position */
                sz->n_stats = ELEMENTSOF(stat_names);
                for (unsigned j = 0; j < sz->n_stats; j++)
                        snprintf(sz->stats[j], MTHP_STAT_NAME_MAX, "%s",
                                 stat_names[(j + 5 * c->n_sizes) % ELEMENTSOF(stat_names)]);
                c->n_sizes++;
        }
        add_knob(c, MTHP_KNOB_ENABLED, 0, "global/enabled", MTHP_THP_DIR "/enabled", enabled_values);
        add_knob(c, MTHP_KNOB_DEFRAG, 0, "global/defrag", MTHP_THP_DIR "/defrag", defrag_values);
        add_knob(c, MTHP_KNOB_SHMEM_ENABLED, 0, "global/shmem_enabled", MTHP_THP_DIR "/shmem_enabled",
                 shmem_global_values);
}

void caps_init(struct mthp_caps *c) {
        caps_init_base(c, 4, 2048);
}

void caps_boot_knobs(const struct mthp_caps *c, char orig[][MTHP_VALUE_MAX], char knob[][MTHP_VALUE_MAX]) {
        for (unsigned i = 0; i < c->n_knobs; i++) {
                const struct mthp_knob *k = &c->knobs[i];
                const char *v = k->type == MTHP_KNOB_ENABLED || k->type == MTHP_KNOB_DEFRAG ? "madvise"
                                : k->type == MTHP_KNOB_SHMEM_ENABLED                          ? "never"
                                : k->size_kb == c->pmd_kb                                     ? "inherit"
                                                                                              : "never";
                snprintf(orig[i], MTHP_VALUE_MAX, "%s", v);
                snprintf(knob[i], MTHP_VALUE_MAX, "%s", v);
        }
}

void apply_decisions(const struct mthp_decision *dec, int n, char knob[][MTHP_VALUE_MAX],
                     const char orig[][MTHP_VALUE_MAX]) {
        for (int i = 0; i < n; i++)
                snprintf(knob[dec[i].knob], MTHP_VALUE_MAX, "%s", dec[i].value[0] ? dec[i].value : orig[dec[i].knob]);
}

const char *decision_reason(const struct mthp_decision *dec, int n, int knob) {
        for (int i = 0; i < n; i++)
                if (dec[i].knob == knob)
                        return dec[i].reason;
        return NULL;
}

void engine_host_decide(struct engine_host *e) {
        struct mthp_engine_state next;
        e->n_dec = mthp_engine_decide(&e->cfg, &e->caps, &e->snap, &e->st, &next, e->dec, MTHP_KNOBS_MAX);
        assert_true(e->n_dec > 0);
        apply_decisions(e->dec, e->n_dec, e->knob, e->orig);
        e->st = next;
        e->tick++;
}

const char *anon16_reason(const struct engine_host *e) {
        int knob = e->caps.sizes[1].knob[MTHP_ANON];
        assert_int_equal(e->caps.sizes[1].kb, 16);
        const char *why = decision_reason(e->dec, e->n_dec, knob);
        if (!why)
                fail_msg("no decision for 16K/anon");
        return why;
}

double snap_anon_faults(const struct mthp_caps *c, const char knob[][MTHP_VALUE_MAX], struct mthp_snapshot *s,
                        double pages, uint64_t total_kb) {
        int top = -1;
        for (unsigned i = 0; i < c->n_sizes; i++) {
                int k = c->sizes[i].knob[MTHP_ANON];
                for (unsigned j = 0; j < c->sizes[i].n_stats; j++)
                        s->size[i].stat[j].present = true;
                if (k >= 0 && strcmp(knob[k], "always") == 0)
                        top = (int) i;
        }
        double per_fault = top < 0 ? 1 : (double) c->sizes[top].kb / c->page_kb;
        double faults = s->dt > 0 ? pages / per_fault : 0;
        if (top >= 0)
                s->size[top].stat[mthp_stat_index(&c->sizes[top], "anon_fault_alloc")].rate = faults;
        s->vm[MTHP_VM_PGFAULT].present = true;
        s->vm[MTHP_VM_PGFAULT].rate = faults;
        s->psi.present = true;
        s->mem.total_kb = total_kb;
        s->mem.available_kb = total_kb / 2;
        return faults;
}

const struct mthp_decision *anon16_decision(const struct engine_host *e) {
        int knob = e->caps.sizes[1].knob[MTHP_ANON];
        assert_int_equal(e->caps.sizes[1].kb, 16);
        for (int i = 0; i < e->n_dec; i++)
                if (e->dec[i].knob == knob)
                        return &e->dec[i];
        fail_msg("no decision for 16K/anon");
        return NULL;
}

/* Is tok in text whole: a number not inside a longer number (letters
 * may touch it: "x2" holds 2), a word not inside a longer word? */
static bool has_token(const char *text, const char *tok) {
        size_t l = strlen(tok);
        if (!l)
                return true;
        bool num_start = isdigit((unsigned char) tok[0]), num_end = isdigit((unsigned char) tok[l - 1]);
        for (const char *p = text; (p = strstr(p, tok)); p++) {
                char b = p == text ? ' ' : p[-1], a = p[l];
                bool start = num_start ? !(isdigit((unsigned char) b) || b == '.') : !isalnum((unsigned char) b);
                bool end = num_end ? !(isdigit((unsigned char) a) || (a == '.' && isdigit((unsigned char) p[l + 1])))
                                   : !isalnum((unsigned char) a);
                if (start && end)
                        return true;
        }
        return false;
}

__attribute__((noinline)) void assert_rule(const struct mthp_decision *d, enum mthp_rule rule, const char *tokens) {
        assert_non_null(d);
        if (d->rule != rule && d->size_rule != rule)
                fail_msg("rule %s (size %s), not %s: %s", mthp_rule_name(d->rule), mthp_rule_name(d->size_rule),
                         mthp_rule_name(rule), d->reason);
        assert_tokens(d->reason, tokens);
}

__attribute__((noinline)) void assert_tokens(const char *text, const char *tokens) {
        assert_non_null(text);
        char tok[64];
        for (const char *p = tokens ? tokens : ""; *p;) {
                size_t l = strcspn(p, " ");
                if (l && l < sizeof(tok)) {
                        memcpy(tok, p, l);
                        tok[l] = 0;
                        if (!has_token(text, tok))
                                fail_msg("\"%s\" does not quote %s", text, tok);
                }
                p += l + (p[l] == ' ');
        }
}
