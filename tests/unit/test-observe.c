/* SPDX-License-Identifier: MIT */
/* The observer on a fake host, without the daemon: a tick's whole
 * snapshot (counters, knobs, fault cost, a managed cgroup, the density
 * plan, the processes the engine remembers), then the engine deciding on
 * it, as a tick of mthpd and a replay of its recording do. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/observe.h"
#include "mthp/policy.h"
#include "unit.h"

#define SEC 1000000ULL
#define CGROUP "mthpd-obs.slice"

struct ofix {
        struct fixture *f;
        struct mthp_config cfg;
        struct mthp_policy_set *policies;
        struct mthp_observer *o;
        struct mthp_engine_state st;   /* as the engine left it: all zero, or what a test remembers */
        struct mthp_snapshot snap;     /* large: keep them off the stack */
        struct mthp_engine_state next;
};

static int ofix_setup(void **state) {
        void *fs;
        char memdir[PATH_MAX], path[PATH_MAX + 32], dir[PATH_MAX + 32], err[1024];
        fixture_setup(&fs);
        struct ofix *x = calloc(1, sizeof(*x));
        assert_non_null(x);
        x->f = fs;
        /* a managed cgroup with memory in it, and the policy file naming it */
        assert_ok(fakehost_add_cgroup(x->f->dir, CGROUP, memdir, sizeof(memdir)));
        snprintf(path, sizeof(path), "%s/memory.current", memdir);
        assert_ok(fakehost_write_file(x->f->dir, path, "8388608\n"));
        snprintf(path, sizeof(path), "%s/memory.stat", memdir);
        assert_ok(fakehost_write_file(x->f->dir, path, "anon 4194304\nshmem 1048576\npgfault 100\n"));
        assert_ok(fakehost_write_file(x->f->dir, "/etc/mthpd/policy.d/obs.policy",
                                      "[Match]\nCgroup=/" CGROUP "\n[Policy]\nAnon=always\n"));
        snprintf(dir, sizeof(dir), "%s/etc/mthpd/policy.d", x->f->dir);
        if (mthp_policy_load_dir(dir, false, &x->policies, err, sizeof(err)) < 0)
                fail_msg("%s", err);
        mthp_config_defaults(&x->cfg);
        x->cfg.fault_cost_ns = 1500;   /* FaultCost=1.5us: as configured, never measured */
        x->cfg.engine.policies = x->policies;
        assert_ok(mthp_observer_new(x->f->host, &x->f->caps, &x->cfg, &x->o));
        *state = x;
        return 0;
}

static int ofix_teardown(void **state) {
        struct ofix *x = *state;
        void *fs = x->f;
        mthp_observer_free(x->o);
        mthp_policy_set_free(x->policies);
        free(x);
        return fixture_teardown(&fs);
}

static void take(struct ofix *x, uint64_t t, unsigned flags) {
        assert_ok(mthp_observer_take(x->o, t, &x->st, flags, &x->snap));
}

/* Everything a first take reads, as the fake host holds it. */
static void test_first_snapshot(void **state) {
        struct ofix *x = *state;
        struct fixture *f = x->f;
        uint64_t pgfault, total;
        assert_ok(fakehost_get_counter(f->dir, "/proc/vmstat", "pgfault", &pgfault));
        assert_ok(fakehost_get_counter(f->dir, "/proc/meminfo", "MemTotal", &total));
        assert_ok(fakehost_knob_set(f->dir, "64K/anon", "always"));
        take(x, 5 * SEC, 0);
        assert_int_equal(x->snap.tick, 0);
        assert_int_equal(x->snap.t_usec, 5 * SEC);
        assert_true(pgfault > 0);
        assert_int_equal(x->snap.vm[MTHP_VM_PGFAULT].value, pgfault);
        assert_true(total > 0);
        assert_int_equal(x->snap.mem.total_kb, total);
        assert_true(x->snap.psi.present);
        assert_string_equal(x->snap.knob[fixture_knob(f, "64K/anon")], "always");
        assert_string_equal(x->snap.knob[fixture_knob(f, "2M/anon")], fixture_knob_value(f, "2M/anon"));
        assert_string_equal(x->snap.knob[fixture_knob(f, "global/enabled")], "madvise");
        assert_double_equal(x->snap.fault_cost_ns, 1500);
        /* the cgroup a policy file names, with what its files say */
        assert_int_equal(x->snap.n_cgroups, 1);
        assert_string_equal(x->snap.cgroup[0].path, "/" CGROUP);
        assert_int_equal(x->snap.cgroup[0].usage_kb, 8192);
        assert_int_equal(x->snap.cgroup[0].anon_kb, 4096);
        assert_int_equal(x->snap.cgroup[0].shmem_kb, 1024);
        /* no rates on a first sample: no density asked for */
        assert_false(x->snap.density.valid);
}

/* The density plan: not while the host is quiet, at once when it faults
 * at a raise's rate, and on an early tick whatever the rate. */
static void test_density_when_faulting(void **state) {
        struct ofix *x = *state;
        take(x, 5 * SEC, 0);
        take(x, 6 * SEC, 0);
        assert_int_equal(x->snap.tick, 1);
        assert_double_equal(x->snap.dt, 1.0);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 0);
        assert_false(x->snap.density.valid);
        take(x, 7 * SEC, MTHP_OBSERVE_EARLY);
        assert_true(x->snap.density.valid);
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 1000000));
        take(x, 8 * SEC, 0);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 1000000);
        struct mthp_observe_plan plan;
        mthp_observe_plan(&x->cfg.engine, &x->f->caps, &x->snap, &x->st, 0, &plan);
        assert_true(plan.density);
        assert_double_equal(plan.hot_rate, x->cfg.engine.min_proc_fault_rate);
        assert_true(x->snap.density.valid);
        assert_int_equal(x->snap.density.n_procs, 0);   /* the fake host runs no process */
}

/* A process the engine remembers that has exited is reported gone, so
 * that the engine forgets it at once. */
static void test_remembered_process_gone(void **state) {
        struct ofix *x = *state;
        x->st.proc[3].pid = 4242;
        snprintf(x->st.proc[3].comm, sizeof(x->st.proc[3].comm), "gone");
        take(x, 5 * SEC, MTHP_OBSERVE_EARLY);
        assert_true(x->snap.density.valid);
        assert_int_equal(x->snap.density.n_gone, 1);
        assert_int_equal(x->snap.density.gone[0], 4242);
        assert_int_equal(x->snap.density.n_rates, 0);
}

/* shmem's PMD size on: its 2M folios read as mapped by a PMD. */
static void test_plan_shmem_pmd(void **state) {
        struct ofix *x = *state;
        struct mthp_observe_plan plan;
        take(x, 5 * SEC, 0);
        mthp_observe_plan(&x->cfg.engine, &x->f->caps, &x->snap, &x->st, 0, &plan);
        assert_false(plan.shmem_pmd_on);
        assert_false(plan.density);
        assert_int_equal(plan.n_first, 0);
        assert_ok(fakehost_knob_set(x->f->dir, "2M/shmem", "always"));
        take(x, 6 * SEC, 0);
        mthp_observe_plan(&x->cfg.engine, &x->f->caps, &x->snap, &x->st, 0, &plan);
        assert_true(plan.shmem_pmd_on);
}

/* Young processes with less than MinBloatBytes at stake wait 2 s to be
 * sampled; MinBloatBytes=0 (every process's faults count at once): none
 * waits. */
static void test_plan_young_wait(void **state) {
        struct ofix *x = *state;
        struct mthp_observe_plan plan;
        take(x, 5 * SEC, 0);
        x->cfg.engine.min_bloat_auto = false;
        x->cfg.engine.min_bloat_kb = 32768;
        mthp_observe_plan(&x->cfg.engine, &x->f->caps, &x->snap, &x->st, 0, &plan);
        assert_int_equal(plan.young_usec, MTHP_OBSERVE_YOUNG_USEC);
        assert_int_equal(plan.young_stake_kb, 32768);
        x->cfg.engine.min_bloat_kb = 0;
        mthp_observe_plan(&x->cfg.engine, &x->f->caps, &x->snap, &x->st, 0, &plan);
        assert_int_equal(plan.young_usec, 0);
}

/* Reads of the fake host's /proc/loadavg during one take. The host keeps
 * its descriptor open, so reads are counted (IN_ACCESS: a read that
 * returned data), on the directory: inotify merges an event identical to
 * the last one queued, and the scan's read of /proc/uptime, between the
 * scan's loadavg and the tracker's, keeps two apart. */
static unsigned loadavg_reads(struct ofix *x, uint64_t t) {
        char path[PATH_MAX + 32], buf[8192] __attribute__((aligned(8)));
        snprintf(path, sizeof(path), "%s/proc", x->f->dir);
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        assert_true(fd >= 0);
        assert_true(inotify_add_watch(fd, path, IN_ACCESS) >= 0);
        take(x, t, 0);
        unsigned n = 0;
        ssize_t k;
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                for (char *p = buf; p < buf + k; p += sizeof(struct inotify_event) + ((struct inotify_event *) p)->len) {
                        const struct inotify_event *e = (const struct inotify_event *) p;
                        n += e->len && strcmp(e->name, "loadavg") == 0;
                }
        close(fd);
        return n;
}

/* While an anon size is raised, the density scan and the tracker of
 * processes grown under the raise both want the last PID handed out:
 * /proc/loadavg is read once a tick for both (twice before). */
static void test_loadavg_once_a_tick(void **state) {
        struct ofix *x = *state;
        assert_ok(fakehost_write_file(x->f->dir, "/proc/loadavg", "0.00 0.00 0.00 1/100 4000\n"));
        assert_ok(fakehost_write_file(x->f->dir, "/proc/uptime", "1000.00 1900.00\n"));
        take(x, 5 * SEC, 0);
        x->st.kind[MTHP_ANON].level = 1;   /* raised */
        for (unsigned t = 6; t < 9; t++)
                assert_int_equal(loadavg_reads(x, t * SEC), 1);
        x->st.kind[MTHP_ANON].level = 0;
        assert_int_equal(loadavg_reads(x, 9 * SEC), 1);   /* the scan's, as before */
}

/* The per-size counters may be read cold only while no size below the
 * PMD can allocate. */
static void test_sizes_idle(void **state) {
        struct ofix *x = *state;
        take(x, 5 * SEC, 0);
        assert_true(mthp_observe_sizes_idle(&x->cfg.engine, &x->f->caps, &x->snap, &x->st));
        assert_ok(fakehost_knob_set(x->f->dir, "64K/anon", "always"));
        take(x, 6 * SEC, 0);
        assert_false(mthp_observe_sizes_idle(&x->cfg.engine, &x->f->caps, &x->snap, &x->st));
}

/* observe -> decide without the daemon: the engine decides every knob it
 * manages on the observer's snapshot. */
static void test_decide_on_snapshot(void **state) {
        struct ofix *x = *state;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        take(x, 5 * SEC, 0);
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 1000000));
        take(x, 6 * SEC, 0);
        assert_double_equal(x->snap.fault_pages_rate, 1000000);
        assert_int_equal(x->snap.n_cgroups, 1);
        int n = mthp_engine_decide(&x->cfg.engine, &x->f->caps, &x->snap, &x->st, &x->next, dec, MTHP_KNOBS_MAX);
        assert_true(n > 0);
        assert_int_equal(x->next.tick, x->snap.tick);
        for (int i = 0; i < n; i++) {
                assert_true(dec[i].knob >= 0 && (unsigned) dec[i].knob < x->f->caps.n_knobs);
                assert_true(dec[i].reason[0] != 0);
        }
}

/* A host whose counters cannot be read gives no snapshot. */
static void test_counters_unreadable(void **state) {
        struct ofix *x = *state;
        take(x, 5 * SEC, 0);
        assert_ok(fakehost_remove_file(x->f->dir, "/proc/vmstat"));
        assert_true(mthp_observer_take(x->o, 6 * SEC, &x->st, 0, &x->snap) < 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_first_snapshot, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_density_when_faulting, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_remembered_process_gone, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_plan_shmem_pmd, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_plan_young_wait, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_sizes_idle, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_loadavg_once_a_tick, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_decide_on_snapshot, ofix_setup, ofix_teardown),
                cmocka_unit_test_setup_teardown(test_counters_unreadable, ofix_setup, ofix_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
