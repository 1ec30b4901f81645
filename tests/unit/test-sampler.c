/* SPDX-License-Identifier: MIT */
/* Sampler on a fake host whose counters the tests move. */
#include <errno.h>
#include <stdlib.h>

#include "mthp/sample.h"
#include "unit.h"

#define SEC 1000000ULL

struct sfix {
        struct fixture *f;
        struct mthp_sampler *s;
        struct mthp_snapshot snap;     /* large: keep it off the stack */
};

static int sfix_setup_opts(void **state, const struct fakehost_opts *o) {
        void *fs;
        fixture_setup_opts(&fs, o);
        struct sfix *x = calloc(1, sizeof(*x));
        assert_non_null(x);
        x->f = fs;
        assert_ok(mthp_sampler_new(x->f->host, &x->f->caps, &x->s));
        *state = x;
        return 0;
}

static int sfix_setup(void **state) {
        return sfix_setup_opts(state, NULL);
}

static int sfix_setup_no_psi(void **state) {
        struct fakehost_opts o = { .no_psi = true };
        return sfix_setup_opts(state, &o);
}

static int sfix_teardown(void **state) {
        struct sfix *x = *state;
        void *fs = x->f;
        mthp_sampler_free(x->s);
        free(x);
        return fixture_teardown(&fs);
}

static const struct mthp_counter *size_stat(struct sfix *x, unsigned kb, const char *name) {
        int i = mthp_caps_find_size(&x->f->caps, kb);
        assert_true(i >= 0);
        int j = mthp_stat_index(&x->f->caps.sizes[i], name);
        if (j < 0)
                fail_msg("no stat %s for %u kB", name, kb);
        return &x->snap.size[i].stat[j];
}

static void take(struct sfix *x, uint64_t t) {
        assert_ok(mthp_sampler_take(x->s, t, &x->snap));
}

static void test_first_snapshot(void **state) {
        struct sfix *x = *state;
        uint64_t pgfault;
        assert_ok(fakehost_get_counter(x->f->dir, "/proc/vmstat", "pgfault", &pgfault));
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 77));
        take(x, 5 * SEC);
        assert_int_equal(x->snap.tick, 0);
        assert_int_equal(x->snap.t_usec, 5 * SEC);
        assert_double_equal(x->snap.dt, 0);
        assert_true(x->snap.vm[MTHP_VM_PGFAULT].present);
        assert_int_equal(x->snap.vm[MTHP_VM_PGFAULT].value, pgfault);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 0);
        assert_false(x->snap.vm[MTHP_VM_PGFAULT].reset);
        assert_true(x->snap.vm[MTHP_VM_COMPACT_STALL].present);
        assert_int_equal(size_stat(x, 64, "anon_fault_alloc")->value, 77);
        assert_true(size_stat(x, 64, "anon_fault_alloc")->present);
        assert_double_equal(x->snap.fault_pages_rate, 0);
        /* meminfo as the fake host has it */
        uint64_t total, avail;
        assert_ok(fakehost_get_counter(x->f->dir, "/proc/meminfo", "MemTotal", &total));
        assert_ok(fakehost_get_counter(x->f->dir, "/proc/meminfo", "MemAvailable", &avail));
        assert_int_equal(x->snap.mem.total_kb, total);
        assert_int_equal(x->snap.mem.available_kb, avail);
        /* knob selections in caps order */
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "2M/anon")], "inherit");
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "64K/shmem")], "never");
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "global/enabled")], "madvise");
        assert_true(x->snap.psi.present);
}

static void test_rates(void **state) {
        struct sfix *x = *state;
        take(x, 10 * SEC);
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 5000));
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "compact_stall", 3));
        assert_ok(fakehost_add_size_stat(x->f->dir, 16, "anon_fault_fallback", 40));
        take(x, 12 * SEC);
        assert_int_equal(x->snap.tick, 1);
        assert_double_equal(x->snap.dt, 2.0);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 2500);
        assert_double_equal(x->snap.vm[MTHP_VM_COMPACT_STALL].rate, 1.5);
        assert_double_equal(x->snap.vm[MTHP_VM_PGMAJFAULT].rate, 0);
        assert_double_equal(size_stat(x, 16, "anon_fault_fallback")->rate, 20);
        assert_double_equal(x->snap.kind_fallback_rate[MTHP_ANON], 20);
        assert_double_equal(x->snap.kind_fallback_rate[MTHP_SHMEM], 0);
        /* half a second later */
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 100));
        take(x, 12 * SEC + 500000);
        assert_double_equal(x->snap.dt, 0.5);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 200);
        assert_double_equal(size_stat(x, 16, "anon_fault_fallback")->rate, 0);
        /* same timestamp: no rate rather than a division by zero */
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 100));
        take(x, 12 * SEC + 500000);
        assert_double_equal(x->snap.dt, 0);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 0);
}

/* The counters decisions are made of are read every tick; the others
 * (split, swap, nr_anon...) every 10th, their rate over the time between
 * two of their reads: an idle tick is then mostly the hot few preads. */
static void test_cold_stats_every_tenth_tick(void **state) {
        struct sfix *x = *state;
        take(x, 0);
        assert_ok(fakehost_add_size_stat(x->f->dir, 64, "split", 50));
        assert_ok(fakehost_add_size_stat(x->f->dir, 64, "anon_fault_alloc", 30));
        take(x, 1 * SEC);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 30); /* hot: at once */
        assert_int_equal(size_stat(x, 64, "split")->value, 0);                /* cold: as last read */
        assert_true(size_stat(x, 64, "split")->present);
        for (uint64_t t = 2; t < 10; t++) {
                take(x, t * SEC);
                assert_int_equal(size_stat(x, 64, "split")->value, 0);
        }
        take(x, 10 * SEC); /* tick 10: the cold ones are read */
        assert_int_equal(size_stat(x, 64, "split")->value, 50);
        assert_double_equal(size_stat(x, 64, "split")->rate, 5); /* 50 over 10 s */
        take(x, 11 * SEC);
        assert_int_equal(size_stat(x, 64, "split")->value, 50);
        assert_double_equal(size_stat(x, 64, "split")->rate, 5);
}

/* Idle (nothing raised, no demand, every size below the PMD never): the
 * engine's per-size counters are read with the cold ones, every 10th tick
 * (a third of an idle tick's preads); back to busy, the first rate pairs
 * with the last cold read, not with a value 9 ticks old. */
static void test_idle_reads_engine_stats_cold(void **state) {
        struct sfix *x = *state;
        take(x, 0);
        mthp_sampler_set_idle(x->s, true);
        assert_ok(fakehost_add_size_stat(x->f->dir, 64, "anon_fault_alloc", 30));
        for (uint64_t t = 1; t < 10; t++) {
                take(x, t * SEC);
                assert_int_equal(size_stat(x, 64, "anon_fault_alloc")->value, 0);   /* as last read */
        }
        take(x, 10 * SEC);   /* tick 10: read with the cold ones */
        assert_int_equal(size_stat(x, 64, "anon_fault_alloc")->value, 30);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 3);   /* 30 over 10 s */
        take(x, 11 * SEC);
        assert_ok(fakehost_add_size_stat(x->f->dir, 64, "anon_fault_alloc", 120));
        mthp_sampler_set_idle(x->s, false);
        take(x, 12 * SEC);   /* busy again: read at once, paired with tick 10's read */
        assert_int_equal(size_stat(x, 64, "anon_fault_alloc")->value, 150);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 60);   /* 120 over 2 s */
        assert_ok(fakehost_add_size_stat(x->f->dir, 64, "anon_fault_alloc", 10));
        take(x, 13 * SEC);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 10);
}

static void test_fault_pages_rate(void **state) {
        struct sfix *x = *state;
        take(x, 1 * SEC);
        /* ten 64K anon folio faults: ten pgfault events, 160 4K pages */
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 10));
        assert_ok(fakehost_add_size_stat(x->f->dir, 64, "anon_fault_alloc", 10));
        take(x, 2 * SEC);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 10);
        assert_double_equal(x->snap.fault_pages_rate, 160);
        assert_double_equal(x->snap.kind_pages_rate[MTHP_ANON], 160);
        assert_double_equal(x->snap.kind_alloc_rate[MTHP_ANON], 10);
        assert_double_equal(x->snap.kind_pages_rate[MTHP_SHMEM], 0);
        /* plus 4 plain 4K faults, one 2M shmem fault and two 16K shmem faults, over 2 s */
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 4 + 1 + 2));
        assert_ok(fakehost_add_size_stat(x->f->dir, 2048, "shmem_alloc", 1));
        assert_ok(fakehost_add_size_stat(x->f->dir, 16, "shmem_alloc", 2));
        take(x, 4 * SEC);
        /* pages: 4 + 512 + 2 * 4 = 524 over 2 s */
        assert_double_equal(x->snap.fault_pages_rate, 262);
        assert_double_equal(x->snap.kind_pages_rate[MTHP_SHMEM], 260);
        assert_double_equal(x->snap.kind_alloc_rate[MTHP_SHMEM], 1.5);
        assert_double_equal(x->snap.kind_pages_rate[MTHP_ANON], 0);
}

static void test_counter_backwards(void **state) {
        struct sfix *x = *state;
        assert_ok(fakehost_set_counter(x->f->dir, "/proc/vmstat", "pgfault", 1000000));
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 500));
        take(x, 1 * SEC);
        assert_ok(fakehost_set_counter(x->f->dir, "/proc/vmstat", "pgfault", 10));
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 5));
        take(x, 2 * SEC);
        const struct mthp_counter *c = &x->snap.vm[MTHP_VM_PGFAULT];
        assert_true(c->reset);
        assert_double_equal(c->rate, 0);
        assert_int_equal(c->value, 10);
        assert_true(size_stat(x, 64, "anon_fault_alloc")->reset);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 0);
        assert_double_equal(x->snap.fault_pages_rate, 0);
        /* next tick counts from the new base */
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 30));
        take(x, 3 * SEC);
        assert_false(x->snap.vm[MTHP_VM_PGFAULT].reset);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 30);
        assert_false(size_stat(x, 64, "anon_fault_alloc")->reset);
}

static void test_counter_update_pure(void **state) {
        (void) state;
        struct mthp_counter prev = { 0 }, c;
        mthp_counter_update(&c, NULL, 100, 1.0);
        assert_true(c.present);
        assert_double_equal(c.rate, 0);
        mthp_counter_update(&c, &prev, 100, 1.0);   /* prev not present */
        assert_double_equal(c.rate, 0);
        assert_false(c.reset);
        prev = (struct mthp_counter) { .value = 40, .present = true };
        mthp_counter_update(&c, &prev, 100, 4.0);
        assert_double_equal(c.rate, 15);
        mthp_counter_update(&c, &prev, 100, 0);
        assert_double_equal(c.rate, 0);
        mthp_counter_update(&c, &prev, 39, 1.0);
        assert_true(c.reset);
        assert_double_equal(c.rate, 0);
        assert_int_equal(c.value, 39);
}

static void test_psi(void **state) {
        struct sfix *x = *state;
        assert_ok(fakehost_set_psi(x->f->dir, 1.5, 1000000));
        take(x, 1 * SEC);
        assert_true(x->snap.psi.present);
        assert_double_equal(x->snap.psi.some_avg10, 1.5);
        assert_int_equal(x->snap.psi.some_total.value, 1000000);
        assert_ok(fakehost_set_psi(x->f->dir, 12.25, 1250000));
        take(x, 2 * SEC);
        assert_double_equal(x->snap.psi.some_avg10, 12.25);
        assert_double_equal(x->snap.psi.some_total.rate, 250000);
        assert_double_equal(x->snap.psi.full_avg10, 0);
        assert_true(x->snap.psi.full_total.present);
}

static void test_psi_absent(void **state) {
        struct sfix *x = *state;
        assert_false(x->f->caps.psi);
        take(x, 1 * SEC);
        assert_false(x->snap.psi.present);
        assert_double_equal(x->snap.psi.some_avg10, 0);
        assert_ok(fakehost_add_counter(x->f->dir, "/proc/vmstat", "pgfault", 7));
        take(x, 2 * SEC);
        assert_false(x->snap.psi.present);
        assert_double_equal(x->snap.vm[MTHP_VM_PGFAULT].rate, 7);
}

static void test_psi_goes_away(void **state) {
        struct sfix *x = *state;
        take(x, 1 * SEC);
        assert_true(x->snap.psi.present);
        assert_ok(fakehost_remove_file(x->f->dir, "/proc/pressure/memory"));
        take(x, 2 * SEC);
        assert_false(x->snap.psi.present);
        assert_ok(fakehost_write_file(x->f->dir, "/proc/pressure/memory",
                                      "some avg10=3.00 avg60=0.00 avg300=0.00 total=5\n"));
        take(x, 3 * SEC);
        assert_true(x->snap.psi.present);
        assert_double_equal(x->snap.psi.some_avg10, 3);
        assert_double_equal(x->snap.psi.some_total.rate, 0);
        /* garbage is "absent" too, not an error */
        assert_ok(fakehost_write_file(x->f->dir, "/proc/pressure/memory", "nonsense\n"));
        take(x, 4 * SEC);
        assert_false(x->snap.psi.present);
}

static void test_parse_psi(void **state) {
        (void) state;
        struct mthp_psi p = { 0 };
        assert_int_equal(mthp_parse_psi("some avg10=2.70 avg60=6.96 avg300=4.49 total=24920085\n"
                                        "full avg10=0.50 avg60=0.00 avg300=0.00 total=77\n",
                                        &p),
                         0);
        assert_true(p.present);
        assert_double_equal(p.some_avg10, 2.70);
        assert_int_equal(p.some_total.value, 24920085);
        assert_double_equal(p.full_avg10, 0.5);
        assert_int_equal(p.full_total.value, 77);
        struct mthp_psi q = { 0 };
        assert_int_equal(mthp_parse_psi("some avg10=1.00 avg60=0.00 avg300=0.00 total=3\n", &q), 0);
        assert_true(q.present);
        struct mthp_psi r = { 0 };
        assert_int_equal(mthp_parse_psi("full avg10=1.00 avg60=0.00 avg300=0.00 total=3\n", &r), -EBADMSG);
        assert_false(r.present);
        assert_int_equal(mthp_parse_psi("", &r), -EBADMSG);
        /* found by tests/fuzz/fuzz-procfs: avg10 must be a percentage */
        struct mthp_psi t = { 0 };
        assert_int_equal(mthp_parse_psi("some avg10=-5 avg60=0 avg300=0 total=1\n", &t), -EBADMSG);
        assert_false(t.present);
        assert_int_equal(mthp_parse_psi("some avg10=nan avg60=0 avg300=0 total=1\n", &t), -EBADMSG);
        assert_int_equal(mthp_parse_psi("some avg10=100.01 avg60=0 avg300=0 total=1\n", &t), -EBADMSG);
        assert_int_equal(mthp_parse_psi("some avg10=100.00 avg60=0 avg300=0 total=1\n"
                                        "full avg10=inf avg60=0 avg300=0 total=2\n",
                                        &t),
                         0);
        assert_double_equal(t.some_avg10, 100);
        assert_double_equal(t.full_avg10, 0);
        assert_int_equal(t.full_total.value, 0);
}

static void test_stat_file_comes_and_goes(void **state) {
        struct sfix *x = *state;
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 100));
        take(x, 1 * SEC);
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 110));
        take(x, 2 * SEC);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 10);

        /* the kernel removes the attribute: not present, no rate, no error */
        assert_ok(fakehost_remove_file(x->f->dir, THP "/hugepages-64kB/stats/anon_fault_alloc"));
        take(x, 3 * SEC);
        assert_false(size_stat(x, 64, "anon_fault_alloc")->present);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 0);
        assert_double_equal(x->snap.kind_alloc_rate[MTHP_ANON], 0);
        take(x, 4 * SEC);
        assert_false(size_stat(x, 64, "anon_fault_alloc")->present);

        /* it comes back (a new file): present again, rates from the next tick */
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 7));
        take(x, 5 * SEC);
        assert_true(size_stat(x, 64, "anon_fault_alloc")->present);
        assert_int_equal(size_stat(x, 64, "anon_fault_alloc")->value, 7);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 0);
        assert_false(size_stat(x, 64, "anon_fault_alloc")->reset);
        assert_ok(fakehost_set_size_stat(x->f->dir, 64, "anon_fault_alloc", 27));
        take(x, 6 * SEC);
        assert_double_equal(size_stat(x, 64, "anon_fault_alloc")->rate, 20);
        assert_double_equal(x->snap.kind_alloc_rate[MTHP_ANON], 20);
}

static void test_knob_values_follow_writes(void **state) {
        struct sfix *x = *state;
        take(x, 1 * SEC);
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "64K/anon")], "never");
        assert_ok(fakehost_knob_write(x->f->dir, "64K/anon", "always"));
        assert_ok(mthp_host_write(x->f->host, THP "/hugepages-32kB/shmem_enabled", "advise\n"));
        take(x, 2 * SEC);
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "64K/anon")], "always");
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "32K/shmem")], "advise");
        /* an unreadable knob is "" for the tick */
        assert_ok(fakehost_remove_file(x->f->dir, THP "/hugepages-32kB/shmem_enabled"));
        take(x, 3 * SEC);
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "32K/shmem")], "");
        assert_string_equal(x->snap.knob[fixture_knob(x->f, "64K/anon")], "always");
}

static void test_meminfo(void **state) {
        struct sfix *x = *state;
        assert_ok(fakehost_set_meminfo(x->f->dir, "MemTotal", 8000000));
        assert_ok(fakehost_set_meminfo(x->f->dir, "MemAvailable", 400000));
        assert_ok(fakehost_set_meminfo(x->f->dir, "AnonPages", 123));
        assert_ok(fakehost_set_meminfo(x->f->dir, "Shmem", 456));
        assert_ok(fakehost_set_meminfo(x->f->dir, "AnonHugePages", 2048));
        assert_ok(fakehost_set_meminfo(x->f->dir, "ShmemHugePages", 4096));
        take(x, 1 * SEC);
        assert_int_equal(x->snap.mem.total_kb, 8000000);
        assert_int_equal(x->snap.mem.available_kb, 400000);
        assert_int_equal(x->snap.mem.anon_kb, 123);
        assert_int_equal(x->snap.mem.shmem_kb, 456);
        assert_int_equal(x->snap.mem.anon_huge_kb, 2048);
        assert_int_equal(x->snap.mem.shmem_huge_kb, 4096);
}

static void test_vmstat_missing(void **state) {
        struct sfix *x = *state;
        take(x, 1 * SEC);
        assert_ok(fakehost_remove_file(x->f->dir, "/proc/vmstat"));
        assert_int_equal(mthp_sampler_take(x->s, 2 * SEC, &x->snap), -ENODEV);
        assert_int_equal(mthp_sampler_take(x->s, 3 * SEC, &x->snap), -ENOENT);
}

static void test_vmstat_field_missing(void **state) {
        struct sfix *x = *state;
        /* an older kernel without compaction counters */
        char *text = malloc(65536);
        assert_non_null(text);
        assert_true(fakehost_read_file(x->f->dir, "/proc/vmstat", text, 65536) > 0);
        char *p = strstr(text, "compact_stall ");
        assert_non_null(p);
        memcpy(p, "compact_stal_", 13);
        assert_ok(fakehost_write_file(x->f->dir, "/proc/vmstat", text));
        free(text);
        take(x, 1 * SEC);
        assert_false(x->snap.vm[MTHP_VM_COMPACT_STALL].present);
        assert_true(x->snap.vm[MTHP_VM_COMPACT_FAIL].present);
        assert_string_equal(mthp_vmstat_name(MTHP_VM_COMPACT_STALL), "compact_stall");
        assert_string_equal(mthp_vmstat_name(MTHP_VM_PGFAULT), "pgfault");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sfix_setup, sfix_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_first_snapshot),
                T(test_rates),
                T(test_cold_stats_every_tenth_tick),
                T(test_idle_reads_engine_stats_cold),
                T(test_fault_pages_rate),
                T(test_counter_backwards),
                cmocka_unit_test(test_counter_update_pure),
                T(test_psi),
                cmocka_unit_test_setup_teardown(test_psi_absent, sfix_setup_no_psi, sfix_teardown),
                T(test_psi_goes_away),
                cmocka_unit_test(test_parse_psi),
                T(test_stat_file_comes_and_goes),
                T(test_knob_values_follow_writes),
                T(test_meminfo),
                T(test_vmstat_missing),
                T(test_vmstat_field_missing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
