/* SPDX-License-Identifier: MIT */
/* Density sampler against real child processes on this kernel: dense and
 * sparse anon, zero-filled pages, a sparse terabyte-scale reservation,
 * processes exiting mid-tick, and host-wide selection by fault rate. Shmem
 * and its probes: test-density-shm.c. Needs root (pagemap of another
 * process, process_vm_readv); else 77. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "density-proc-common.h"

static void test_dense_anon(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(DENSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("dense", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->census);
        assert_true(k->mapped_bytes == 64 * MiB);
        for (unsigned i = 0; i < 3; i++) {
                assert_true(k->size[i].coverage >= 0.95);
                assert_true(k->size[i].read_pages > 0);
                assert_true(k->size[i].zero_fraction <= 0.05);
        }
        assert_int_equal(k->size[1].blocks, 1024);   /* every 64K block of the mapping */
        assert_int_equal(p->kind[MTHP_SHMEM].windows, 0);
        assert_true(rep.pages_examined <= b.max_pages_per_tick);
        mthp_density_free(s);
        reap(&c);
}

static void test_sparse_anon(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(SPARSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("sparse", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->size[1].coverage <= 0.1);
        assert_true(fabs(k->size[1].coverage - 1.0 / 16) < 1e-9);   /* read whole: exact */
        assert_true(fabs(k->size[0].coverage - 0.25) < 1e-9);
        assert_true(fabs(k->size[2].coverage - 1.0 / 16) < 1e-9);
        assert_int_equal(k->size[1].full_blocks, 0);
        assert_true(isnan(k->size[1].zero_fraction));   /* no full block: nothing to read */
        mthp_density_free(s);
        reap(&c);
}

/* Every page written, 15 in 16 with zeros only, in 4K folios (the child
 * has THP disabled): the zeros are pages it touched, and a larger folio
 * would add nothing there, so they are no bloat. (Zeros inside large
 * folios are: test_thp_bloat.) Without /proc/kpageflags the sampler cannot
 * tell a base page from a large folio's subpage and counts every zero. */
static void test_zero_fraction(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        bool kpf = pfns_visible();
        struct child c = spawn(ZERO15, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("zero15", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        if (!kpf)
                printf("# kpageflags or PFNs not visible here (CAP_SYS_ADMIN): every zero counts\n");
        for (unsigned i = 0; i < 3; i++) {
                assert_true(k->size[i].coverage >= 0.95);   /* every page is there... */
                assert_true(k->size[i].read_pages >= 100);
                /* ...15 in 16 hold nothing... */
                assert_true(k->size[i].zero_pages >= k->size[i].read_pages * 85 / 100);
                if (kpf) {   /* ...but were written, in 4K folios */
                        assert_int_equal(k->size[i].zero_base_pages, k->size[i].zero_pages);
                        assert_true(k->size[i].zero_fraction <= 0.05);
                } else {
                        assert_int_equal(k->size[i].zero_base_pages, 0);
                        assert_true(k->size[i].zero_fraction >= 0.85);
                }
        }
        assert_true(p->pages_read > 0 && rep.pages_read == p->pages_read);
        mthp_density_free(s);
        reap(&c);
}

/* A tick whose time budget is gone before a process's first window (its
 * first-sight smaps read can take it all: 9-32 ms for a 1 GiB shared
 * segment) still measures it in a few windows of each kind: a process
 * sampled with no block says nothing, and pgbench's backends were raised
 * for two ticks late for it. 1 us is spent before any window here. */
static void test_floor_past_budget(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        b.max_usec = 1;
        for (unsigned kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct child c = spawn(kind == MTHP_ANON ? DENSE : SHMEM_DENSE, 64 * MiB, 0);
                const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
                print_kind("past budget", p, (int) kind);
                const struct mthp_density_kind *k = &p->kind[kind];
                assert_true(rep.budget_exhausted);
                assert_false(k->census);
                assert_int_equal(k->windows, 4);
                for (unsigned i = 0; i < 3; i++) {
                        assert_true(k->size[i].blocks > 0);
                        assert_true(k->size[i].coverage >= 0.95);
                }
                mthp_density_free(s);
                reap(&c);
        }
}

/* Content is not use: a process that writes zeros to every page touched
 * them all. Its zeros are no bloat, so no zero_fraction may say "unused"
 * (it said 1.00, and the engine held will-it-scale page_fault1 at 4K). */
static void test_zero_writer(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(ZEROS, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("zeros", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        for (unsigned i = 0; i < 3; i++) {
                assert_true(k->size[i].coverage >= 0.95);     /* every page touched */
                assert_true(k->size[i].read_pages >= 100);    /* and read... */
                assert_true(isnan(k->size[i].zero_fraction)); /* ...but zeros alone say nothing */
        }
        mthp_density_free(s);
        reap(&c);
}

/* Budgets too small to read the mapping whole: 64 MiB (32 populated
 * windows) is listed and 8 of them chosen uniformly; 1 GiB (512, more than
 * the listing pays for) gets 8 random draws. */
static void test_sampled_modes(void **state) {
        (void) state;
        const enum pattern pat[] = { DENSE, SPARSE, ZERO15 };
        const uint64_t len[] = { 64 * MiB, 1 * GiB };
        for (unsigned m = 0; m < 2; m++)
                for (unsigned j = 0; j < 3; j++) {
                        struct mthp_density_budget b = roomy();
                        struct mthp_density_sampler *s;
                        struct mthp_density_report rep;
                        b.max_pages_per_proc = 8 * (512 + b.reads_per_window);
                        struct child c = spawn(pat[j], len[m], 0);
                        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
                        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
                        print_kind(m ? "drawn" : "listed", p, MTHP_ANON);
                        assert_false(k->census);
                        assert_int_equal(k->windows, 8);
                        assert_true(p->pages_examined + p->pages_read <= b.max_pages_per_proc);
                        if (pat[j] == SPARSE)
                                assert_true(fabs(k->size[1].coverage - 1.0 / 16) < 1e-9);
                        else
                                assert_true(k->size[1].coverage >= 0.95);
                        if (pat[j] == ZERO15)   /* zeros read (in 4K folios: test_zero_fraction) */
                                assert_true(k->size[1].zero_pages >= k->size[1].read_pages * 85 / 100);
                        mthp_density_free(s);
                        reap(&c);
                }
}

static void test_whole_process(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(DENSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, false, &b, &s, &rep);
        print_kind("whole", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->mapped_bytes >= 64 * MiB);
        assert_true(k->rss_bytes >= 64 * MiB);
        assert_true(k->windows > 0);
        assert_true(k->size[2].coverage > 0 && k->size[2].coverage <= 1);
        assert_true(rep.kind[MTHP_ANON].size[2].coverage == k->size[2].coverage);   /* one process */
        assert_true(p->usec <= rep.usec);
        mthp_density_free(s);
        reap(&c);
}

/* 64 GiB reserved, 64 MiB + 4 pages touched: the walk hops over the holes,
 * so the sample is exact and cheap. */
static void test_sparse_reservation(void **state) {
        (void) state;
        struct utsname u;
        unsigned major = 0, minor = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 || major * 100 + minor < 607)
                skip();   /* no PAGEMAP_SCAN to hop over holes: 64 GiB is too much to list */
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(RESERVE, 64 * GiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("reserve", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->census);
        assert_int_equal(k->windows, 32 + 4);
        assert_int_equal(k->size[2].blocks, 32 + 4);
        assert_true(fabs(k->size[2].coverage - (16384.0 + 4) / (36 * 512)) < 1e-9);
        assert_true(fabs(k->size[1].coverage - (16384.0 + 4) / (1028 * 16)) < 1e-9);
        assert_true(p->pages_examined == 36 * 512);
        mthp_density_free(s);

        /* too few draws to read all 36: a uniform choice among them */
        b.max_pages_per_proc = 4 * (512 + b.reads_per_window);
        p = sample(&c, true, &b, &s, &rep);
        print_kind("reserve, 4 draws", p, MTHP_ANON);
        assert_false(p->kind[MTHP_ANON].census);
        assert_int_equal(p->kind[MTHP_ANON].windows, 4);
        mthp_density_free(s);
        reap(&c);
}

/* Children that exit while being sampled, at varying moments: never an error. */
static void test_exit_mid_tick(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        b.max_pages_per_proc = 1 << 20;   /* read all 256 MiB: a tick of several ms */
        unsigned seen = 0, skipped = 0;
        for (unsigned i = 0; i < 24; i++) {
                struct mthp_density_sampler *s;
                struct mthp_density_report rep;
                struct child c = spawn(DENSE, 256 * MiB, 1 + i * 250);
                struct mthp_density_target t = { .pid = c.pid };
                assert_int_equal(mthp_density_new(host, sizes, 3, &b, &s), 0);
                assert_int_equal(mthp_density_set_targets(s, &t, 1), 0);
                for (unsigned j = 0; j < 3; j++) {
                        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
                        assert_true(rep.n_procs <= 1);
                        seen += rep.n_procs;
                        skipped += rep.procs_skipped;
                }
                mthp_density_free(s);
                assert_int_equal(waitpid(c.pid, NULL, 0), c.pid);
        }
        printf("# exit mid-tick: %u samples complete, %u skipped as gone\n", seen, skipped);
}

static void test_zombie_and_dead(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child z = spawn(DENSE, 1 * MiB, 1);
        usleep(100000);   /* exited, not reaped: a zombie */
        struct child d = spawn(DENSE, 1 * MiB, 1);
        assert_int_equal(waitpid(d.pid, NULL, 0), d.pid);   /* gone entirely */
        struct mthp_density_target t[2] = { { .pid = z.pid }, { .pid = d.pid } };
        assert_int_equal(mthp_density_new(host, sizes, 3, NULL, &s), 0);
        assert_int_equal(mthp_density_set_targets(s, t, 2), 0);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(rep.n_procs, 0);
        assert_true(isnan(rep.kind[MTHP_ANON].size[0].coverage));
        mthp_density_free(s);
        assert_int_equal(waitpid(z.pid, NULL, 0), z.pid);
}

/* No targets: the faulting child is found among all of /proc, and the
 * tick stays within its budget. */
static void test_host_wide(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b;
        mthp_density_budget_default(&b);
        b.max_procs = 16;
        b.max_usec = 200000;
        struct child c = spawn(CHURN, 16 * MiB, 0);
        assert_int_equal(mthp_density_new(host, sizes, 3, &b, &s), 0);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        usleep(200000);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        printf("# host-wide: %u listed, %u scanned, %u sampled, %u skipped, %llu pages, %llu read, %llu us%s\n",
               rep.procs_listed, rep.procs_scanned, rep.n_procs, rep.procs_skipped,
               (unsigned long long) rep.pages_examined, (unsigned long long) rep.pages_read,
               (unsigned long long) rep.usec, rep.budget_exhausted ? " (budget exhausted)" : "");
        bool found = false;
        for (unsigned i = 0; i < rep.n_procs; i++) {
                const struct mthp_density_proc *p = &rep.procs[i];
                printf("#   %7d %-16s %10.0f flt/s anon %6.1f MiB windows %u\n", p->pid, p->comm, p->minflt_rate,
                       (double) p->kind[MTHP_ANON].rss_bytes / MiB, p->kind[MTHP_ANON].windows);
                assert_true(p->pid != getpid());
                if (p->pid == c.pid) {
                        found = true;
                        assert_false(p->rate_from_lifetime);
                        assert_true(p->minflt_rate > 1000);
                }
        }
        assert_true(found);
        assert_true(rep.n_procs <= b.max_procs);
        assert_true(rep.pages_examined + rep.pages_read <= b.max_pages_per_tick);
        assert_true(rep.procs_listed > 1);
        mthp_density_free(s);
        reap(&c);
}

/* mthp_density_proc_rate: after the first tick only lifetime averages
 * (-EAGAIN); after the second, the churning child's measured rate and the
 * quiet one's (it faults no more), each with its comm; a zombie reads 0; a
 * reaped child and PIDs outside the table are not there (-ENOENT). */
static void test_proc_rate(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child busy = spawn(CHURN, 16 * MiB, 0), quiet = spawn(DENSE, 4 * MiB, 0);
        struct child z = spawn(DENSE, 1 * MiB, 1);
        usleep(100000);   /* z exited, not reaped: a zombie */
        struct child d = spawn(DENSE, 1 * MiB, 1);
        assert_int_equal(waitpid(d.pid, NULL, 0), d.pid);
        double rate = -1;
        char comm[16];
        assert_int_equal(mthp_density_new(host, sizes, 3, NULL, &s), 0);
        assert_int_equal(mthp_density_proc_rate(s, busy.pid, &rate, NULL, 0), -ENOENT);   /* no tick yet */
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(mthp_density_proc_rate(s, busy.pid, &rate, NULL, 0), -EAGAIN);   /* a lifetime average */
        usleep(200000);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(mthp_density_proc_rate(s, busy.pid, &rate, comm, sizeof(comm)), 0);
        printf("# busy %.0f faults/s (%s)\n", rate, comm);
        assert_true(rate > 1000);
        assert_true(strlen(comm) > 0);
        assert_int_equal(mthp_density_proc_rate(s, quiet.pid, &rate, NULL, 0), 0);
        printf("# quiet %.0f faults/s\n", rate);
        assert_true(rate < 100);
        rate = -1;
        assert_int_equal(mthp_density_proc_rate(s, z.pid, &rate, NULL, 0), 0);
        assert_true(rate == 0);
        assert_int_equal(mthp_density_proc_rate(s, d.pid, &rate, NULL, 0), -ENOENT);
        assert_int_equal(mthp_density_proc_rate(s, 1 << 30, &rate, NULL, 0), -ENOENT);
        assert_int_equal(mthp_density_proc_rate(s, 0, &rate, NULL, 0), -EINVAL);
        assert_int_equal(mthp_density_proc_rate(s, busy.pid, NULL, NULL, 0), -EINVAL);
        mthp_density_free(s);
        reap(&busy);
        reap(&quiet);
        assert_int_equal(waitpid(z.pid, NULL, 0), z.pid);
}

/* mthp_density_set_first: a process set first is sampled before a busier
 * one, for that one tick. With room for one process a tick, the quiet
 * child (faulting no more) is not the one sampled; set first, it is (the
 * early tick's budget goes to the process it is due for), and the tick
 * after is ranked again. Other processes of the host may outrank the
 * churning child: only the quiet one's place is asserted. */
static void test_first_sampled(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = roomy();
        b.max_procs = 1;
        struct child busy = spawn(CHURN, 16 * MiB, 0), quiet = spawn(DENSE, 4 * MiB, 0);
        assert_int_equal(mthp_density_new(host, sizes, 3, &b, &s), 0);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);   /* rates from here on */
        usleep(100000);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(rep.n_procs, 1);
        assert_int_not_equal(rep.procs[0].pid, quiet.pid);
        int first[] = { -1, quiet.pid, quiet.pid };   /* an invalid pid and a duplicate are ignored */
        mthp_density_set_first(s, first, 3);
        usleep(100000);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(rep.n_procs, 1);
        assert_int_equal(rep.procs[0].pid, quiet.pid);
        assert_true(rep.procs[0].kind[MTHP_ANON].rss_bytes >= 4 * MiB);   /* its dense 4 MiB */
        usleep(100000);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(rep.n_procs, 1);
        assert_int_not_equal(rep.procs[0].pid, quiet.pid);
        mthp_density_free(s);
        reap(&busy);
        reap(&quiet);
}

/* A child of pattern p (MADV_HUGEPAGE) sampled, its anon measures in *k;
 * the test skips when the host gave it no 2M folios (knobs,
 * fragmentation). The caller frees *s and reaps *c. */
static void thp_sampled(enum pattern p, const char *name, struct child *c, struct mthp_density_sampler **s,
                        const struct mthp_density_kind **k) {
        struct mthp_density_budget b = roomy();
        struct mthp_density_report rep;
        *c = spawn(p, 64 * MiB, 0);
        const struct mthp_density_proc *dp = sample(c, true, &b, s, &rep);
        print_kind(name, dp, MTHP_ANON);
        *k = &dp->kind[MTHP_ANON];
        if (!((*k)->size[2].coverage > 0.99)) {
                mthp_density_free(*s);
                reap(c);
                skip();
        }
}

/* With 2M THP (madvise + inherit) a process touching 1 page per 64K gets
 * whole 2M folios: pagemap shows them full, the zeros show the bloat. */
static void test_thp_bloat(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct child c;
        const struct mthp_density_kind *k;
        thp_sampled(THP_SPARSE, "thp sparse", &c, &s, &k);
        assert_true(k->size[1].zero_fraction >= 0.85);
        assert_true(k->size[2].zero_fraction >= 0.85);
        /* its zeros sit beside its data, in every window: with 4 reads a
         * window, a window that reads data reads about 3 zeros (0.73) */
        printf("# thp sparse: zeros beside data %.3f at 64K, %.3f at 2M\n", k->size[1].zero_data_fraction,
               k->size[2].zero_data_fraction);
        assert_true(k->size[1].zero_data_fraction >= 0.5);
        assert_true(k->size[2].zero_data_fraction >= 0.5);
        mthp_density_free(s);
        reap(&c);
}

/* 2M folios half written: the zeros are ahead of a write, in windows that
 * read no data (stress-ng --vm caught mid-pass), not beside the data:
 * zero_fraction reads half, zero_data_fraction next to none. */
static void test_thp_zeros_ahead(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct child c;
        const struct mthp_density_kind *k;
        thp_sampled(THP_HALF, "thp half", &c, &s, &k);
        printf("# thp half: zeros %.3f, beside data %.3f at 2M\n", k->size[2].zero_fraction,
               k->size[2].zero_data_fraction);
        assert_true(k->size[2].zero_fraction >= 0.3 && k->size[2].zero_fraction <= 0.7);
        assert_true(k->size[2].zero_data_fraction <= 0.1);
        mthp_density_free(s);
        reap(&c);
}

/* A zero-writer's small data beside its buffer of zeros (page_fault1:
 * a 128 MiB buffer written with 0, and a heap and stack whose few blocks
 * read zeros beside data): zero_data_fraction speaks only for windows that
 * read data making up 5% of the windows read (ZERO_DATA_MIN_SHARE). Here
 * 1 data window of 33 (3%): NAN, though that window reads half zeros
 * beside its data; with 4 of 36 (11%) it reads them. 64 reads a window
 * make the data window's data certain to be read. Without the share rule,
 * recording zero-anon.mthpd.47 read 0.42-0.75 from the heap and stack and
 * the churn rule stepped page_fault1 down (0.55x of all-always).
 * zero_fraction counts the buffer's subpages as touched: its zeros are
 * the data window's over all 33 (36) windows read, a few percent (it read
 * half, the data window's alone, and the engine's usage took 0.5 at 16K
 * for the whole process: recording zero-anon.mthpd.149 of 2026-12-04). */
static void zeros_beside_data(enum pattern p, uint64_t data, double *zf, double *zd) {
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(p, 64 * MiB, 0);
        c.len = 64 * MiB + 2 * MiB + data;   /* the zeros, the gap, the data */
        b.reads_per_window = 64;
        const struct mthp_density_proc *dp = sample(&c, true, &b, &s, &rep);
        print_kind(p == THP_ZEROS_DATA1 ? "zeros, 2 MiB data" : "zeros, 8 MiB data", dp, MTHP_ANON);
        const struct mthp_density_kind *k = &dp->kind[MTHP_ANON];
        bool thp = k->size[2].coverage > 0.99 && k->size[2].blocks == (64 * MiB + data) / (2 * MiB);
        *zf = k->size[2].zero_fraction;
        *zd = k->size[2].zero_data_fraction;
        printf("# 2M: zeros %.3f, beside data %.3f\n", *zf, *zd);
        mthp_density_free(s);
        reap(&c);
        if (!thp)
                skip();   /* no 2M folios from this host (knobs, fragmentation) */
}

static void test_zero_data_share(void **state) {
        (void) state;
        double zf, zd;
        zeros_beside_data(THP_ZEROS_DATA1, 2 * MiB, &zf, &zd);
        assert_true(zf > 0 && zf <= 0.05);     /* its data window was read: half zeros, of 33 */
        assert_true(isnan(zd));                /* 1 window of 33 says nothing */
        zeros_beside_data(THP_ZEROS_DATA4, 8 * MiB, &zf, &zd);
        assert_true(zf > 0 && zf <= 0.1);      /* 4 windows of 36, half zeros */
        assert_true(zd >= 0.3 && zd <= 0.7);   /* 4 of 36 do */
}

/* Opt-outs: a process with THP disabled (PR_SET_THP_DISABLE, as every
 * child but the THP_* and ADVISED ones runs) is reported, not measured. */
static void test_thp_disabled_not_measured(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(DENSE, 64 * MiB, 0);
        b.measure_thp_disabled = false;
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("thp disabled", p, MTHP_ANON);
        assert_true(p->thp_disabled);
        assert_int_equal(p->kind[MTHP_ANON].windows, 0);
        assert_int_equal(p->pages_examined, 0);
        assert_true(isnan(p->kind[MTHP_ANON].size[1].coverage));
        assert_true(p->kind[MTHP_ANON].rss_bytes >= 60 * MiB);
        mthp_density_free(s);
        reap(&c);
}

/* Rss of the child's MADV_NOHUGEPAGE mappings outside [c->addr, +len),
 * from its smaps: none in a plain build; under ASan its shadow and
 * allocator regions (no_huge_pages_for_shadow), ~9 MiB on a 6.18 host. */
static uint64_t other_nohuge_rss(const struct child *c) {
        char path[64], line[512];
        snprintf(path, sizeof(path), "/proc/%d/smaps", (int) c->pid);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        uint64_t total = 0, rss = 0, start = 0, end = 0;
        while (fgets(line, sizeof(line), f)) {
                unsigned long long a, b, kb;
                char perms[8];
                if (sscanf(line, "%llx-%llx %7s ", &a, &b, perms) == 3) {     /* a mapping's header */
                        start = a;
                        end = b;
                        rss = 0;
                } else if (sscanf(line, "Rss: %llu kB", &kb) == 1) {
                        rss = kb * 1024;
                } else if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " nh")) {
                        bool outside = end <= c->addr || start >= c->addr + c->len;
                        bool inside = start >= c->addr && end <= c->addr + c->len;
                        assert_true(outside || inside);    /* merged across the region's edge: no bound */
                        if (outside)
                                total += rss;
                }
        }
        fclose(f);
        return total;
}

/* nh mappings are in no measure (their span and RSS are reported); hg ones
 * are measured with the rest and again on their own. */
static void test_nohuge_left_out_hg_apart(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(ADVISED, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        print_kind("nh+hg", p, MTHP_ANON);
        printf("#   nohuge %llu bytes (rss %llu), advised %llu bytes, hg 64K blocks %llu coverage %.4f\n",
               (unsigned long long) k->nohuge_bytes, (unsigned long long) k->nohuge_rss_bytes,
               (unsigned long long) k->advised_bytes, (unsigned long long) k->advised[1].blocks,
               k->advised[1].coverage);
        assert_false(p->thp_disabled);
        assert_int_equal(k->nohuge_bytes, 32 * MiB);
        /* RssAnon x the nh share of it: the 32 MiB, a little of the rest,
         * and the child's other nh memory (ASan's) */
        uint64_t other = other_nohuge_rss(&c);
        printf("#   other nh rss %llu bytes\n", (unsigned long long) other);
        assert_true(k->nohuge_rss_bytes >= 30 * MiB && k->nohuge_rss_bytes <= 34 * MiB + other);
        assert_int_equal(k->mapped_bytes, 32 * MiB);
        assert_int_equal(k->advised_bytes, 32 * MiB);
        assert_int_equal(k->size[1].blocks, 512);    /* the hg half's 64K blocks only */
        assert_int_equal(k->advised[1].blocks, 512);
        assert_true(k->advised[1].coverage >= 0.95);
        mthp_density_free(s);
        reap(&c);
}

int main(void) {
        int fd = open("/proc/self/pagemap", O_RDONLY);
        if (geteuid() != 0 || fd < 0) {
                printf("# skipped: needs root and /proc/PID/pagemap\n");
                return 77;
        }
        close(fd);
        setvbuf(stdout, NULL, _IOLBF, 0);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dense_anon),
                cmocka_unit_test(test_thp_disabled_not_measured),
                cmocka_unit_test(test_nohuge_left_out_hg_apart),
                cmocka_unit_test(test_sparse_anon),
                cmocka_unit_test(test_zero_fraction),
                cmocka_unit_test(test_zero_writer),
                cmocka_unit_test(test_floor_past_budget),
                cmocka_unit_test(test_sampled_modes),
                cmocka_unit_test(test_whole_process),
                cmocka_unit_test(test_sparse_reservation),
                cmocka_unit_test(test_exit_mid_tick),
                cmocka_unit_test(test_zombie_and_dead),
                cmocka_unit_test(test_host_wide),
                cmocka_unit_test(test_first_sampled),
                cmocka_unit_test(test_proc_rate),
                cmocka_unit_test(test_thp_bloat),
                cmocka_unit_test(test_thp_zeros_ahead),
                cmocka_unit_test(test_zero_data_share),
        };
        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
