/* SPDX-License-Identifier: MIT */
/* The replay of a recorded trace and the helpers the trace tests share
 * (replay.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/record.h"
#include "mthp/util.h"

#include "replay.h"

#ifndef MTHP_TRACE_DIR
#error "MTHP_TRACE_DIR: the directory of the recorded traces"
#endif

/* The replay in use: freed by the next replay or the group teardown, so a
 * failing assertion (a longjmp out of the test) leaks nothing. */
static struct replay *current;

int free_replay(void **state) {
        (void) state;
        free(current);
        current = NULL;
        return 0;
}

bool replay_backoff;
bool replay_every_say;

struct replay *replay_trace_time(const char *name, double raise_fault_time) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *r = NULL;
        struct replay *rp = calloc(1, sizeof(*rp));
        struct mthp_engine_state st = { 0 }, next;
        struct mthp_tick_plan plan = { 0 };
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        static struct mthp_snapshot snap;
        unsigned ladder[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        char path[512], err[512];
        int e;

        assert_non_null(rp);
        free_replay(NULL);
        current = rp;
        rp->name = name;
        mthp_config_defaults(&rp->cfg);
        if (replay_every_say) {
                rp->cfg.engine.min_bloat_auto = false;
                rp->cfg.engine.min_bloat_kb = 0;
        }
        if (!isnan(raise_fault_time))
                rp->cfg.engine.raise_fault_time = raise_fault_time;
        snprintf(path, sizeof(path), "%s/%s.rec", MTHP_TRACE_DIR, name);
        if (mthp_record_open_read(path, &rp->caps, &r, err, sizeof(err)) < 0)
                fail_msg("%s", err);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                rp->n_ladder[k] = mthp_engine_ladder(&rp->cfg.engine, &rp->caps, k, ladder[k]);
                assert_true(rp->n_ladder[k] > 0);
                rp->top_kb[k] = rp->caps.sizes[ladder[k][rp->n_ladder[k] - 1]].kb;
        }
        while ((e = mthp_record_read(r, &snap, err, sizeof(err))) > 0) {
                assert_true(rp->n < MAX_TICKS);
                struct tick_outcome *o = &rp->t[rp->n++];
                if (replay_backoff && !mthp_engine_wants_density(&rp->cfg.engine, &snap, &st)) {
                        snap.density.valid = false;
                        snap.density.n_procs = 0;
                }
                o->sampled = snap.density.valid;
                int n = mthp_engine_decide(&rp->cfg.engine, &rp->caps, &snap, &st, &next, dec, MTHP_KNOBS_MAX);
                st = next;
                o->tick = snap.tick;
                o->t_usec = snap.t_usec;
                o->awaits = mthp_engine_awaits_samples(&rp->cfg.engine, &rp->caps, &snap, &st, NULL);
                /* the daemon's ticks count from 1 */
                o->climb = mthp_engine_climbing(&rp->cfg.engine, &rp->caps, &snap, &st);
                o->next_usec = mthp_tick_next(&plan, snap.tick + 1, snap.t_usec, rp->cfg.interval_usec, o->awaits, false,
                                              o->climb);
                o->density = snap.density;
                for (unsigned c = 0; c < snap.n_limited; c++)
                        o->limited_populated = o->limited_populated ||
                                               (snap.limited[c].populated &&
                                                strncmp(snap.limited[c].path, "/mthpd-test-trace-", 18) == 0);
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        o->level[k] = st.kind[k].level;
                        int knob = rp->caps.sizes[ladder[k][0]].knob[k];
                        for (int i = 0; i < n; i++)
                                if (dec[i].knob == knob)
                                        snprintf(o->reason[k], sizeof(o->reason[k]), "%s", dec[i].reason);
                        assert_true(o->reason[k][0]);
                }
        }
        if (e < 0)
                fail_msg("%s", err);
        assert_true(rp->n >= 8);
        return rp;
}

struct replay *replay_trace(const char *name) {
        return replay_trace_time(name, NAN);
}

const struct mthp_proc_density *find_proc(const struct tick_outcome *o, const char *comm) {
        for (unsigned i = 0; o->density.valid && i < o->density.n_procs; i++)
                if (strcmp(o->density.proc[i].comm, comm) == 0)
                        return &o->density.proc[i];
        return NULL;
}

bool faulting(const struct replay *rp, const struct mthp_proc_density *p) {
        return p && p->fault_rate >= rp->cfg.engine.min_proc_fault_rate;
}

bool measured(const struct replay *rp, const struct mthp_proc_density *p, enum mthp_kind kind) {
        if (!faulting(rp, p) || p->rss_kb[kind] == 0)
                return false;
        for (unsigned j = 0; j < rp->caps.n_sizes; j++)
                if (!isnan(p->coverage[kind][j]) || !isnan(p->zero[kind][j]))
                        return true;
        return false;
}

int first_faulting(const struct replay *rp, const char *comm) {
        for (unsigned i = 0; i < rp->n; i++)
                if (faulting(rp, find_proc(&rp->t[i], comm)))
                        return (int) i;
        return -1;
}

int last_faulting(const struct replay *rp, const char *comm) {
        for (int i = (int) rp->n - 1; i >= 0; i--)
                if (faulting(rp, find_proc(&rp->t[i], comm)))
                        return i;
        return -1;
}

void assert_reason_contains(const struct replay *rp, unsigned i, enum mthp_kind kind, const char *needle) {
        if (!strstr(rp->t[i].reason[kind], needle))
                fail_msg("%s tick %llu, %s: reason '%s' lacks '%s'", rp->name, (unsigned long long) rp->t[i].tick,
                         mthp_kind_name(kind), rp->t[i].reason[kind], needle);
}

void assert_level(const struct replay *rp, unsigned i, enum mthp_kind kind, unsigned level) {
        if (rp->t[i].level[kind] != level)
                fail_msg("%s tick %llu: %s at level %u, expected %u (%s)", rp->name,
                         (unsigned long long) rp->t[i].tick, mthp_kind_name(kind), rp->t[i].level[kind], level,
                         rp->t[i].reason[kind]);
}

int first_top(const struct replay *rp, enum mthp_kind kind) {
        for (unsigned i = 0; i < rp->n; i++)
                if (rp->t[i].level[kind] == rp->n_ladder[kind])
                        return (int) i;
        return -1;
}
