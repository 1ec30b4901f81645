/* SPDX-License-Identifier: MIT */
/* The last steps of a tick: one kind's level as a decision for every
 * per-size knob, and defrag. */
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"

#include "engine-internal.h"

/* ShmemAlign=: the largest shmem size on the ladder, while not raised and
 * off, goes to advise, so shared anonymous memory mapped now is aligned
 * for a later raise (the kernel aligns such a mapping for the largest size
 * enabled when it is mapped; advise gives large folios only where a
 * program madvises). Kept while it is ours (the knob then reads advise);
 * never over a value someone chose, nor while a memory-limited cgroup
 * caps the kind's sizes. */
void engine_kind_align(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        int knob = k->n_ladder ? caps->sizes[k->ladder[k->n_ladder - 1]].knob[k->kind] : -1;
        k->align = k->align_capped = false;
        if (k->kind == MTHP_SHMEM && cfg->shmem_align && !mthp_engine_thp_off(cfg, k->kind) && knob >= 0 &&
            st->level < k->n_ladder) {
                const char *v = snap->knob[knob], *eff = engine_effective_value(caps, snap, MTHP_SHMEM, knob);
                /* ours: advise we set, or always from a level that held
                 * the top size (a step down goes straight to advise) */
                bool ours = (st->align_advised && strcmp(v, "advise") == 0) ||
                            (k->old_level >= k->n_ladder && strcmp(v, "always") == 0);
                bool off = strcmp(eff, "never") == 0 || strcmp(eff, "deny") == 0;
                k->align_capped = k->afford < k->n_ladder;
                k->align = !k->align_capped && (off || ours) && mthp_knob_allows(&caps->knobs[knob], "advise");
        }
        st->align_advised = k->align;
}

unsigned engine_level_in_use(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, const struct kind_step *k, unsigned top,
                             double *pages_rate) {
        const char *stat = k->kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc";
        *pages_rate = 0;
        for (unsigned l = (top < k->n_ladder ? top : k->n_ladder) + 1; l-- > 1;) {
                unsigned z = k->ladder[l - 1];
                double pages = mthp_stat_rate(caps, snap, z, stat) * caps->sizes[z].kb / mthp_caps_page_kb(caps);
                if (pages >= cfg->min_proc_fault_rate) {
                        *pages_rate = pages;
                        return l;
                }
        }
        return 0;
}

/* One decision for every per-size knob of this kind: sizes off the ladder
 * (e.g. after a reload narrowed it) go back to their original value
 * instead of staying as we left them. */
void engine_emit_size_decisions(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                                const struct mthp_engine_state *st_all, const struct kind_step *k,
                                struct mthp_decision *out, size_t *n, size_t n_out) {
        const struct mthp_engine_kind *st = k->st;
        for (unsigned i = 0; i < caps->n_sizes && *n < n_out; i++) {
                int knob = caps->sizes[i].knob[k->kind];
                if (knob < 0)
                        continue;
                int rung = -1;
                for (unsigned r = 0; r < k->n_ladder; r++)
                        if (k->ladder[r] == i)
                                rung = (int) r;
                struct mthp_decision *d = &out[(*n)++];
                char sname[16], status[400];
                mthp_format_size(caps->sizes[i].kb, sname, sizeof(sname));
                d->knob = knob;
                bool on = rung >= 0 && (unsigned) rung < st->level;
                const char *adv = k->kind == MTHP_ANON ? "madvise" : "advise";
                bool madv = !on && rung >= 0 && k->dens.madvise[rung] && mthp_knob_allows(&caps->knobs[knob], adv);
                bool align = !on && !madv && k->align && rung == (int) k->n_ladder - 1;
                snprintf(d->value, sizeof(d->value), "%s", on ? "always" : madv || align ? adv : "");
                d->rule = k->rule;
                /* "in use" only where the kernel can use it: a shmem size
                 * does not reach mappings made or filled before it */
                char unreach[360];
                enum mthp_rule shm = on && k->kind == MTHP_SHMEM ? engine_shm_unreachable(st_all, snap->tick,
                                                                                          caps->sizes[i].kb, unreach,
                                                                                          sizeof(unreach))
                                                                 : MTHP_RULE_NONE;
                if (shm != MTHP_RULE_NONE) {
                        d->size_rule = shm;
                        snprintf(status, sizeof(status), "always, but %s", unreach);
                } else if (on && k->kind == MTHP_SHMEM && caps->sizes[i].kb == caps->pmd_kb &&
                           engine_shm_repaired(st_all, snap->tick, unreach, sizeof(unreach))) {
                        d->size_rule = MTHP_RULE_SIZE_REPAIRED;
                        snprintf(status, sizeof(status), "in use; %s", unreach);
                } else if (!on && !madv && k->align_capped && rung == (int) k->n_ladder - 1) {
                        d->size_rule = MTHP_RULE_SIZE_ALIGN_CAPPED;
                        snprintf(status, sizeof(status), "not needed: original value (no advise for alignment: %.300s)",
                                 k->lim_why);
                } else if (align) {
                        d->size_rule = MTHP_RULE_SIZE_ALIGN;
                        snprintf(status, sizeof(status),
                                 "advise: shared anonymous memory mapped now is %s-aligned, so a raise reaches it "
                                 "(only memory a program madvises gets %s folios)",
                                 sname, sname);
                } else {
                        d->size_rule = on ? MTHP_RULE_SIZE_IN_USE : madv ? MTHP_RULE_SIZE_MADVISE : MTHP_RULE_SIZE_OFF;
                        snprintf(status, sizeof(status), "%s",
                                 on     ? "in use"
                                 : madv ? "madvise: a policy wants it where programs ask"
                                        : "not needed: original value");
                }
                if (rung < 0) {
                        d->rule = d->size_rule = MTHP_RULE_SIZE_OUTSIDE;
                        snprintf(d->reason, sizeof(d->reason),
                                 "%s is outside the %s sizes mthpd may use: original value", sname, k->kname);
                } else if (snprintf(d->reason, sizeof(d->reason), "%s (level %u/%u; %s %s)%s%s%s%s", k->why, st->level,
                                  k->n_ladder, sname, status,
                                  k->dens.outranked[0] ? "; outranked: " : "", k->dens.outranked,
                                  k->left_out[0] ? "; " : "", k->left_out) >=
                         (int) sizeof(d->reason))
                        d->reason[sizeof(d->reason) - 2] = '~'; /* cut, never lost */
        }
}

/* defrag, with the same confirm/lower hysteresis as the sizes */
void engine_decide_defrag(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, struct mthp_engine_state *next, bool want_defer,
                          const char *defer_why, struct mthp_decision *out, size_t *n, size_t n_out) {
        int dk = mthp_caps_find_knob(caps, "global/defrag");
        if (dk < 0 || *n >= n_out)
                return;
        if (snap->dt > 0) {
                if (want_defer != next->defrag_defer)
                        next->defrag_streak++;
                else
                        next->defrag_streak = 0;
                unsigned need = want_defer ? cfg->confirm_ticks : cfg->lower_ticks;
                if (next->defrag_streak >= need) {
                        next->defrag_defer = want_defer;
                        next->defrag_streak = 0;
                }
        }
        struct mthp_decision *d = &out[(*n)++];
        d->knob = dk;
        bool on = next->defrag_defer && mthp_knob_allows(&caps->knobs[dk], "defer");
        snprintf(d->value, sizeof(d->value), "%s", on ? "defer" : "");
        d->rule = on ? MTHP_RULE_DEFRAG_DEFER : MTHP_RULE_DEFRAG_ADMIN;
        d->size_rule = MTHP_RULE_NONE;
        if (on)
                snprintf(d->reason, sizeof(d->reason), "%s", defer_why[0] ? defer_why :
                         "large sizes were falling back: keeping defrag=defer until that stops");
        else
                snprintf(d->reason, sizeof(d->reason),
                         "no large size falls back >= %.0f%%: the administrator's defrag setting",
                         DEFRAG_FALLBACK_PCT);
}
