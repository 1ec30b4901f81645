/* SPDX-License-Identifier: MIT */
/* Cgroups in the engine (engine-sim.h): policy files arbitrating between
 * cgroups (mthpd.policy(5)), memory-limited cgroups and the guard,
 * the start grace of a new cgroup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/policy.h"

#include "engine-sim.h"

/* ---- policy files: arbitration between cgroups (mthpd.policy(5)) ---- */

static struct mthp_policy test_policies[4];
static struct mthp_policy_set test_policy_set;

static void policy_add(struct sim *s, const char *text) {
        char err[1024];
        struct mthp_policy *p = &test_policies[test_policy_set.n];
        char name[32];
        snprintf(name, sizeof(name), "p%u", test_policy_set.n);
        if (mthp_policy_load_string(name, text, p, err, sizeof(err)) < 0)
                fail_msg("policy: %s", err);
        test_policy_set.p = test_policies;
        test_policy_set.n++;
        s->cfg.policies = &test_policy_set;
}

static void cg_view(struct mthp_cgroup_view *c, const char *path, double rate) {
        memset(c, 0, sizeof(*c));
        snprintf(c->path, sizeof(c->path), "%s", path);
        c->fault_rate = rate;
        c->anon_kb = 500000;
}

/* a dense process in /dense and a sparse one in /sparse, both faulting hard */
static void two_cgroups(struct sim *s, struct mthp_density_view *v, struct mthp_cgroup_view *cg, struct workload *w) {
        wide(s);
        test_policy_set.n = 0;
        v->valid = true;
        v->n_procs = 2;
        dens_proc(&v->proc[0], 500, 1, 0);
        dens_proc(&v->proc[1], 501, 0.25, 0); /* one page in 64K */
        snprintf(v->proc[0].cgroup, sizeof(v->proc[0].cgroup), "/dense");
        snprintf(v->proc[1].cgroup, sizeof(v->proc[1].cgroup), "/sparse/job");
        cg_view(&cg[0], "/dense", 50000);
        cg_view(&cg[1], "/sparse", 50000);
        *w = anon_hot;
        w->dens = v;
        w->cgroups = cg;
        w->n_cgroups = 2;
}

static void test_policy_high_always_outranks_never(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nPriority=80\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=20\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(changes(s, MTHP_ANON), 1);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_WANTED, "/sparse 50000 p1 Anon=never 20");
        assert_tokens(kind_reason(s, MTHP_ANON), "/dense 50000 p0 Anon=always 80");
}

static void test_policy_high_never_forces_madvise(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nSizes=64K-2M\nPriority=20\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=80\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* the outranked wish becomes madvise for every size it accepts */
        assert_string_equal(knob_of(s, 16, MTHP_ANON), "madvise");
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "madvise");
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "/sparse 50000 p1 Anon=never 80 16K");
        assert_tokens(kind_reason(s, MTHP_ANON), "/dense");
        /* shmem: nobody has a say there */
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_string_equal(knob_of(s, 64, MTHP_SHMEM), "never");
}

/* The administrator's THP off (cfg.thp_off): a policy's always raises
 * nothing (a size is one knob for the whole host); a policy's madvise
 * stands (its programs' own MADV_HUGEPAGE). */
static void test_policy_admin_thp_off(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        snprintf(s->cfg.thp_off[MTHP_ANON], sizeof(s->cfg.thp_off[MTHP_ANON]), "%s",
                 "the kernel command line: transparent_hugepage=never");
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nPriority=80\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_ADMIN, "transparent_hugepage=never 4K");
        assert_string_equal(knob_of(s, 16, MTHP_ANON), "never");

        /* a cgroup whose policy says madvise, on a faulting host */
        test_policy_set.n = 0;
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=madvise\nSizes=64K\n");
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_ADMIN, "4K");
        assert_string_equal(knob_of(s, 64, MTHP_ANON), "madvise");
        assert_string_equal(knob_of(s, 32, MTHP_ANON), "never");
}

static void test_policy_tie_goes_to_smaller(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* no madvise: not outranked, a tie */
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), s->orig[s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]]);
}

static void test_policy_idle_never_has_no_say(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        v.n_procs = 1;          /* only the dense process faults ... */
        cg[1].fault_rate = 20;  /* ... /sparse is idle */
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=100\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* it starts faulting: the next tick it holds the sizes back */
        cg[1].fault_rate = 40000;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* its rate is smoothed: (20 + 40000) / 2 */
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_SPARSE, "/sparse 20010 p0 Anon=never 100");
}

static void test_policy_auto_own_maxbloat_and_sizes(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        /* the sparse process uses 0.25 of 16K: x4 RSS. Its policy allows x4
         * (MaxBloat=300%) up to 16K only (Sizes=16K); the dense one may go to 64K */
        v.proc[1].fault_rate = 200000; /* still >= MinProcessShare once /dense gets 64K folios */
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nMaxBloat=300%\nSizes=16K\n");
        /* its 1.4 GiB of bloat at 16K is over the host's budget (2.5% of
         * MemTotal, 391 MiB here): none, for the policies alone */
        s->cfg.max_host_bloat_set = true;
        s->cfg.max_host_bloat_kb = UINT64_MAX;
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nSizes=16K-64K\nPriority=60\n");
        sim_run(s, &w, 10);
        /* 32K: /sparse (priority 50) objects (Sizes), /dense (60) accepts: outranked;
         * 128K: /dense objects too */
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "500 128K");
        assert_tokens(kind_reason(s, MTHP_ANON), "501 proc501 200000 /sparse/job p0");
}

static void test_policy_madvise_cgroup(void **state) {
        struct sim *s = *state;
        struct mthp_cgroup_view cg;
        struct workload w = idle;
        wide(s);
        test_policy_set.n = 0;
        cg_view(&cg, "/jvm", 0); /* idle, but present: its madvise stands */
        w.cgroups = &cg;
        w.n_cgroups = 1;
        policy_add(s, "[Match]\nCgroup=/jvm\n[Policy]\nAnon=madvise\nShmem=madvise\nSizes=2M\n");
        sim_run(s, &w, 5);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "madvise");
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        const char *orig = s->orig[s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]];
        assert_string_not_equal(orig, "madvise");
        assert_string_equal(knob_of(s, 1024, MTHP_ANON), s->orig[s->caps.sizes[size_index(&s->caps, 1024)].knob[MTHP_ANON]]);
        /* gone: the original value comes back */
        w.n_cgroups = 0;
        sim_step(s, &w);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), orig);
}

static void test_policy_cgroup_pressure(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        v.n_procs = 1;
        cg[1].fault_rate = 0;
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nMaxPressure=5%\n");
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 8);
        cg[0].psi_present = true;
        cg[0].psi_some_avg10 = 7.5;
        sim_run(s, &w, 2);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_PRESSURE, "/dense 7.5 5 p0");
}

static void test_policy_cgroup_headroom(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        v.n_procs = 1;
        cg[1].fault_rate = 0;
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\n");
        cg[0].limit_kb = 1000000;
        cg[0].usage_kb = 500000;
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 8);
        cg[0].usage_kb = 950000; /* within CgroupHeadroom=10% of the limit */
        sim_run(s, &w, 2);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_PRESSURE, "/dense 95 976");
}

/* ---- memory-limited cgroups: the invariant and the guard ---- */

/* A dense process faulting hard; a populated 600 MiB cgroup nobody sampled. */
static void limited_setup(struct sim *s, struct mthp_density_view *v, struct workload *w, const char *dense_cg) {
        wide(s);
        memset(v, 0, sizeof(*v));
        v->valid = true;
        v->n_procs = 1;
        dens_proc(&v->proc[0], 700, 1, 0);
        snprintf(v->proc[0].cgroup, sizeof(v->proc[0].cgroup), "%s", dense_cg);
        *w = anon_hot;
        w->dens = v;
        w->limited = &lim_600;
        w->n_limited = 1;
}

/* A delegated user names cgroups: a path holding what a reason puts
 * after a path (a space, parentheses, ';', ':') or a quote is
 * quoted, its quotes and backslashes escaped, so it cannot end early and
 * forge the numbers after it; a plain path stays as it is. */
static void test_cgroup_path_quoted_in_reasons(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        struct mthp_limited_cgroup odd = lim_600;
        snprintf(odd.path, sizeof(odd.path), "%s", "/lim (usage 9 MiB\\\"");
        limited_setup(s, &v, &w, "/work");
        w.limited = &odd;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 5);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "2 600 598");
        assert_contains(kind_reason(s, MTHP_ANON), "limited cgroup \"/lim (usage 9 MiB\\\\\\\"\" (usage 2 MiB");
}

static void test_limited_unknown_blocks_2m(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        sim_run(s, &w, 20);
        /* x512 of 6 MiB/tick (1% of 600 MiB) is far beyond 75% of its
         * headroom; x64 at 256K is 384 MiB, within; x128 at 512K is not */
        assert_int_equal(level(s, MTHP_ANON), 5);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "inherit");
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "/lim 2 600 598 x128.0 512K");
        /* an unlimited host (or one whose limited cgroups are all empty) gets 2M as before */
        struct mthp_limited_cgroup empty = lim_600;
        empty.populated = false;
        w.limited = &empty;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

static void test_limited_measured_dense_does_not_block(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/lim"); /* the dense process runs in the limited cgroup */
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "always");
}

static void test_limited_new_cgroup_steps_down_at_once(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        w.limited = NULL;
        w.n_limited = 0;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* a limited cgroup appears and fills: no dwell, no confirmation */
        struct mthp_limited_cgroup c = lim_600;
        c.usage_kb = 100 * 1024;
        w.limited = &c;
        w.n_limited = 1;
        sim_step(s, &w);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_LIMIT, "/lim 100 anon 2M");
}

static void test_limited_policy_priority_cannot_override(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nPriority=80\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=20\n");
        /* the outranked cgroup has a limit: its memory may be traded, its process not */
        struct mthp_limited_cgroup c = { .path = "/sparse", .usage_kb = 64 * 1024, .limit_kb = 600 * 1024,
                                         .populated = true };
        w.limited = &c;
        w.n_limited = 1;
        sim_run(s, &w, 10);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "inherit");
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "/sparse 64 600");
}

/* An empty limited cgroup: a program may start in it and fault as fast as
 * the kernel charges; the guard stops it only past its threshold and after
 * its wake-up. A tight limit cannot take that burst's bloat (the oom-matrix
 * 'after' cells: 100 MiB cgroups, a sparse program OOM-killed under 2M). */
static void test_limited_small_empty_cgroup_blocks(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        struct mthp_limited_cgroup c = { .path = "/small", .usage_kb = 0, .limit_kb = 100 * 1024 };
        w.limited = &c;
        sim_run(s, &w, 20);
        /* 25 MiB to the threshold + 32 MiB past it: x4 at 16K leaves 43 MiB of bloat > 33 */
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "/small 0 100");
        assert_tokens(kind_reason(s, MTHP_ANON), "25 32");
        /* 300 MiB: 75 + 32 MiB of burst, 100 MiB may be bloat: up to 32K (x8: 94 MiB) */
        c.limit_kb = 300 * 1024;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "64K");
        /* 600 MiB: every size */
        c.limit_kb = 600 * 1024;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

/* ---- the start grace: a service's sizes before its first fault ---- */

/* An idle host; then /db appears, managed by a Shmem=always policy, with
 * no fault yet: PostgreSQL maps its shared buffers at start, and a segment
 * mapped while the size is off is never aligned for it. */
static void grace_setup(struct sim *s, struct workload *w, struct mthp_cgroup_view *cg) {
        wide(s);
        test_policy_set.n = 0;
        policy_add(s, "[Match]\nCgroup=/db\n[Policy]\nShmem=always\nSizes=64K-2M\n");
        static const struct mthp_density_view none = { .valid = true }; /* sampled: nobody faults */
        memset(w, 0, sizeof(*w));
        w->dens = &none;
        sim_run(s, w, 3);
        cg_view(cg, "/db", 0);
        cg->anon_kb = 0;
        cg->new_cgroup = true;
        cg->appeared_usec = 1000000 * (s->tick + 1); /* the next snapshot's t_usec */
        w->cgroups = cg;
        w->n_cgroups = 1;
}

static void test_grace_new_always_cgroup_raises_before_faults(void **state) {
        struct sim *s = *state;
        struct workload w;
        struct mthp_cgroup_view cg;
        grace_setup(s, &w, &cg);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        sim_step(s, &w); /* the tick that first sees it */
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        assert_string_equal(knob_of(s, 64, MTHP_SHMEM), "always");
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "always");
        assert_int_equal(level(s, MTHP_ANON), 0); /* it wants shmem only */
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_RAISE_GRACE, "/db 0 p0 shmem 2M Shmem=always 50");
        /* it never faults: it keeps the sizes for StartGrace (30 s) ... */
        cg.new_cgroup = false;
        while (s->snap.t_usec + 1000000 < cg.appeared_usec + s->cfg.start_grace_usec)
                sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        assert_int_equal(changes(s, MTHP_SHMEM), 1);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_HOLD_GRACE, "/db 29 0 p0");
        /* ... then it has no say: no demand for 10 ticks steps down at
         * once, in one step (no size was ever allocated) */
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_STEP_DOWN_DEMAND, NULL);
        assert_contains(kind_reason(s, MTHP_SHMEM), "to 4K, no size allocated");
        sim_run(s, &w, 100);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 2);
        /* a cgroup present (populated) when mthpd started: its start was not seen */
        cg.appeared_usec = 0;
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* StartGrace=0 turns it off */
        s->cfg.start_grace_usec = 0;
        cg.appeared_usec = 1000000 * (s->tick + 1);
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
}

/* The grace is a say like any other: a limited cgroup that cannot afford a
 * size still stops it, the new one itself included. */
static void test_grace_limited_cgroup_still_blocks(void **state) {
        struct sim *s = *state;
        struct workload w;
        struct mthp_cgroup_view cg;
        grace_setup(s, &w, &cg);
        w.limited = &lim_600; /* populated, nobody sampled: affords 256K */
        w.n_limited = 1;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 5);
        assert_string_equal(knob_of(s, 512, MTHP_SHMEM), "never");
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_RAISE_GRACE, "/db 0");
        assert_tokens(kind_reason(s, MTHP_SHMEM), "256K /lim");
        assert_tokens(kind_reason(s, MTHP_SHMEM), "512K");
        /* the new cgroup is itself limited, 100 MiB and empty: no size at all */
        struct mthp_limited_cgroup small = { .path = "/db", .usage_kb = 0, .limit_kb = 100 * 1024 };
        w.limited = &small;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_STEP_DOWN_LIMIT, "/db 0 100");
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* a higher-priority never that faults outranks the grace, too */
        struct mthp_cgroup_view two[2];
        two[0] = cg;
        cg_view(&two[1], "/batch", 50000);
        two[1].shmem_kb = 500000;
        policy_add(s, "[Match]\nCgroup=/batch\n[Policy]\nShmem=never\nPriority=80\n");
        w.limited = NULL;
        w.n_limited = 0;
        w.cgroups = two;
        w.n_cgroups = 2;
        two[0].appeared_usec = 1000000 * (s->tick + 1);
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
}

/* The burst is what the guard measured, not a constant: a trip that got
 * far past its threshold makes the same empty cgroup unaffordable. */
static void test_guard_overshoot_learned(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        struct mthp_limited_cgroup c = lim_600;
        c.populated = false;
        c.usage_kb = 0;
        w.limited = &c;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 300 * 1024, .limit_kb = 600 * 1024,
                                     .armed_usage_kb = 0, .threshold_kb = 150 * 1024, .what = "usage threshold" };
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        s->st.steady_ticks = 10;   /* the density back-off was on */
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX), 8);
        assert_int_equal(next.guard_overshoot_kb, 150 * 1024);
        /* a step down, if the guard's: fresh samples from the next tick */
        assert_int_equal(next.steady_ticks, 0);
        for (int i = 0; i < 8; i++)
                memcpy(s->knob[dec[i].knob], s->orig[dec[i].knob], MTHP_VALUE_MAX);
        s->st = next;
        sim_run(s, &w, 40); /* past the backoff: the program left, the cgroup is empty again */
        assert_true(level(s, MTHP_ANON) < 8);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "150");
}

static void test_guard_steps_down_and_remembers(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        struct mthp_limited_cgroup empty = lim_600;
        empty.populated = false;
        w.limited = &empty;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);

        /* between two ticks the cgroup crosses its threshold */
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 160 * 1024, .limit_kb = 600 * 1024,
                                     .armed_usage_kb = 2048, .threshold_kb = 151 * 1024, .what = "usage threshold",
                                     .latency_us = 40 };
        struct mthp_engine_state next, prev = s->st;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n = mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX);
        assert_memory_equal(&prev, &s->st, sizeof(prev)); /* pure */
        assert_int_equal(n, 8);                           /* every anon size, nothing of shmem */
        assert_int_equal(next.kind[MTHP_ANON].level, 0);
        assert_int_equal(dec[0].knob, s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]); /* largest first */
        for (int i = 0; i < n; i++) {
                assert_string_equal(dec[i].value, "");
                assert_rule(&dec[i], MTHP_RULE_GUARD_LIMIT, "/lim 151");
                assert_tokens(dec[i].reason, "600 160");
                assert_tokens(dec[i].reason, "anon 2M 4K");
        }
        /* nothing left to step down: a second trip at once writes nothing new */
        struct mthp_engine_state again;
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &next, &again, dec, MTHP_KNOBS_MAX), 0);
        assert_true(again.limited[0].trip_until > next.limited[0].trip_until); /* the backoff doubled */

        /* the ticks after it: the cgroup counts as sparse, 2M stays down */
        for (int i = 0; i < n; i++)
                memcpy(s->knob[dec[i].knob], s->orig[dec[i].knob], MTHP_VALUE_MAX);
        s->st = next;
        struct mthp_limited_cgroup now = { .path = "/lim", .usage_kb = 200 * 1024, .limit_kb = 600 * 1024,
                                           .populated = true };
        w.limited = &now;
        sim_run(s, &w, 20);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_LIMIT, "9");
}

static void test_guard_limit_hit_holds_4k_for_the_backoff(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        s->cfg.dwell_ticks = 0; /* nothing but the trip may hold the raise back */
        struct mthp_limited_cgroup c = lim_600;
        c.populated = false;
        w.limited = &c;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* memory.events max moved: it reached its limit, whatever it grew */
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 2048, .limit_kb = 600 * 1024,
                                     .armed_usage_kb = 2048, .threshold_kb = 151 * 1024,
                                     .what = "memory.events max", .hit_limit = true };
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX), 8);
        for (int i = 0; i < 8; i++)
                memcpy(s->knob[dec[i].knob], s->orig[dec[i].knob], MTHP_VALUE_MAX);
        s->st = next;
        c.populated = true;
        sim_run(s, &w, 29); /* the backoff: 30 ticks */
        assert_int_equal(level(s, MTHP_ANON), 0);
        sim_run(s, &w, 5);  /* after it, what the cgroup affords */
        assert_int_equal(level(s, MTHP_ANON), 5);
}

static void test_guard_unaffected_sizes(void **state) {
        struct sim *s = *state;
        /* nothing raised: a trip has nothing to step down */
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 160 * 1024, .limit_kb = 600 * 1024 };
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX), 0);
        assert_string_equal(next.limited[0].path, "/lim");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_limited_unknown_blocks_2m),
                T(test_cgroup_path_quoted_in_reasons),
                T(test_limited_measured_dense_does_not_block),
                T(test_limited_new_cgroup_steps_down_at_once),
                T(test_limited_policy_priority_cannot_override),
                T(test_limited_small_empty_cgroup_blocks),
                T(test_grace_new_always_cgroup_raises_before_faults),
                T(test_grace_limited_cgroup_still_blocks),
                T(test_guard_overshoot_learned),
                T(test_guard_steps_down_and_remembers),
                T(test_guard_limit_hit_holds_4k_for_the_backoff),
                T(test_guard_unaffected_sizes),
                T(test_policy_high_always_outranks_never),
                T(test_policy_high_never_forces_madvise),
                T(test_policy_admin_thp_off),
                T(test_policy_tie_goes_to_smaller),
                T(test_policy_idle_never_has_no_say),
                T(test_policy_auto_own_maxbloat_and_sizes),
                T(test_policy_madvise_cgroup),
                T(test_policy_cgroup_pressure),
                T(test_policy_cgroup_headroom),
        };

        return cmocka_run_group_tests_name("engine-cgroups", tests, NULL, NULL);
}
