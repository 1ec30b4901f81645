/* SPDX-License-Identifier: MIT */
/* Churn (lib/engine-remember.c churns(), struct mthp_engine_proc churn,
 * peak_u, peak_rss_kb): a process whose memory turns over
 * ENGINE_CHURN_TURNOVER (1.5) times in a tick keeps a size while its densest
 * sample of it was dense and its RSS has not grown beyond (1 + MaxBloat)
 * of what it held then. stress-ng --vm (trace stress-vm) maps a 128 MiB
 * buffer, populates it, writes every page, unmaps it, again and again:
 * with 2M on, a sample catches it mid-write, 0.10 to 0.62 of its subpages
 * zero, and its average stepped anon down from 2M; at 4K it held the same
 * zero pages (coverage 1.00).
 *
 * A small host of its own: anon faults only, each served by the largest
 * anon size at "always" (no fallback); one worker of 128 MiB whose density
 * the test sets every tick. At 2M, 1,000,000 pages/s is 1,953 faults/s of
 * 2M, 4 GB/s: its memory turns over about 30 times a second. The boundaries,
 * each stepped down and blamed: the same worker whose RSS grows beyond
 * MaxBloat, the same worker turning over less than once a second, and a worker
 * started after the raise that never reads dense. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/sample.h"

#include "engine-caps.h"

#define MEM_TOTAL_KB 16000000ULL
#define PAGES 1000000.0         /* the worker's usual fault demand, 4K pages/s */
#define BUFFER_KB (128 * 1024)  /* its buffer, populated whole */
#define PID 4242

struct host {
        struct engine_host e;   /* config, caps, state, snapshot, knobs, decisions */
        double pages;           /* the worker's fault demand, 4K pages/s */
        int pid;                /* the worker sampled */
        double coverage;        /* of every block of its buffer: 1, populated whole */
        bool new_proc;          /* the scanner sees a new process at pid (a new start time) */
        unsigned zero_nan_from; /* sizes from this index on read no whole block (0: none) */
        unsigned cov_from;      /* sizes from this index on read cov_large present (0: none) */
        double cov_large;
        double zero_data;       /* of its zeros, the share beside data (NAN: unknown, as before it) */
        const char *comm;       /* the worker's name: stress-ng-vm unless set */
};

/* the shipped defaults and ladder (16K..2M), at the boot state */
static void host_init(struct host *h) {
        struct mthp_config c;
        memset(h, 0, sizeof(*h));
        mthp_config_defaults(&c);
        h->e.cfg = c.engine;
        caps_init(&h->e.caps);
        h->pages = PAGES;
        h->pid = PID;
        h->coverage = 1;
        h->zero_data = NAN;
        caps_boot_knobs(&h->e.caps, h->e.orig, h->e.knob);
}

static int host_setup(void **state) {
        struct host *h = malloc(sizeof(*h));
        assert_non_null(h);
        host_init(h);
        *state = h;
        return 0;
}

static int host_teardown(void **state) {
        free(*state);
        return 0;
}

/* The worker as the sampler sees it: `coverage` of every block present
 * (1: its buffer is populated whole), `zero` of its subpages zero, rss_kb
 * of anon. */
static void worker(struct mthp_proc_density *p, int pid, double fault_rate, uint64_t rss_kb, double zero,
                   double coverage) {
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        snprintf(p->comm, sizeof(p->comm), "stress-ng-vm");
        p->fault_rate = fault_rate;
        p->rss_kb[MTHP_ANON] = rss_kb;
        p->compact_ms = p->thrash_ms = p->reclaim_ms = NAN;
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++) {
                p->coverage[MTHP_ANON][i] = coverage;
                p->zero[MTHP_ANON][i] = zero;
                p->blocks[MTHP_ANON][i] = (double) BUFFER_KB / (16u << (i < 1 ? 0 : i - 1));
                p->coverage[MTHP_SHMEM][i] = p->zero[MTHP_SHMEM][i] = NAN;
        }
}

/* One tick: PAGES of anon faults, each a folio of the largest anon size at
 * "always"; the worker's sample with `zero` subpages zero and rss_kb. */
static void host_step(struct host *h, uint64_t rss_kb, double zero) {
        struct mthp_snapshot *s = &h->e.snap;
        memset(s, 0, sizeof(*s));
        s->tick = h->e.tick;
        s->t_usec = 1000000 * (h->e.tick + 1);
        s->dt = h->e.tick ? 1.0 : 0.0; /* the sampler's first snapshot has no rates */
        double faults = snap_anon_faults(&h->e.caps, h->e.knob, s, h->pages, MEM_TOTAL_KB);
        s->mem.anon_kb = rss_kb;
        s->density.valid = true;
        s->density.n_procs = 1;
        worker(&s->density.proc[0], h->pid, faults, rss_kb, zero, h->coverage);
        if (h->comm)
                snprintf(s->density.proc[0].comm, sizeof(s->density.proc[0].comm), "%s", h->comm);
        s->density.proc[0].new_proc = h->new_proc;
        for (unsigned z = 0; z < MTHP_SIZES_MAX; z++)
                s->density.proc[0].zero_data[MTHP_ANON][z] = s->density.proc[0].zero_data[MTHP_SHMEM][z] = NAN;
        for (unsigned z = 0; z < MTHP_SIZES_MAX && z < h->e.caps.n_sizes; z++)
                s->density.proc[0].zero_data[MTHP_ANON][z] = h->zero_data;
        for (unsigned z = h->zero_nan_from; h->zero_nan_from && z < MTHP_SIZES_MAX; z++)
                s->density.proc[0].zero[MTHP_ANON][z] = NAN;
        for (unsigned z = h->cov_from; h->cov_from && z < MTHP_SIZES_MAX; z++)
                s->density.proc[0].coverage[MTHP_ANON][z] = h->cov_large;
        memcpy(s->knob, h->e.knob, sizeof(s->knob));
        mthp_snapshot_derive(&h->e.caps, s);
        engine_host_decide(&h->e);
}

static unsigned anon_level(const struct host *h) {
        return h->e.st.kind[MTHP_ANON].level;
}

/* the reason of this tick's decision for 16K/anon */
static const char *anon_reason(const struct host *h) {
        return anon16_reason(&h->e);
}

static const struct mthp_decision *anon_decision(const struct host *h) {
        return anon16_decision(&h->e);
}

/* a density step down blamed on the worker sampled now (the churn rule
 * armed or not) */
static __attribute__((noinline)) void assert_blames(const struct host *h) {
        const struct mthp_decision *d = anon_decision(h);
        char who[48];
        snprintf(who, sizeof(who), "%d anon%s", h->pid, h->comm ? "" : " stress-ng-vm");
        if (d->rule != MTHP_RULE_STEP_DOWN_CHURN)
                assert_rule(d, MTHP_RULE_STEP_DOWN_SPARSE, who);
        assert_tokens(d->reason, who);
}

static const struct mthp_engine_proc *remembered(const struct host *h) {
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (h->e.st.proc[j].pid == h->pid)
                        return &h->e.st.proc[j];
        fail_msg("pid %d not remembered", h->pid);
        return NULL;
}

/* At 4K the worker reads dense (coverage: every page touched) and anon
 * goes to 2M; returns with 2M on. */
static void raise_to_2m(struct host *h) {
        for (unsigned i = 0; i < 10 && anon_level(h) < 8; i++)
                host_step(h, BUFFER_KB, 0.5);
        assert_int_equal(anon_level(h), 8);
}

/* The zeros a sample of the worker reads at 2M, caught mid-write:
 * stress-vm's pid 7332 read 0.10 and then 0.62 */
static double mid_write(unsigned i) {
        static const double z[] = { 0.10, 0.62, 0.34, 0.62, 0.17 };
        return z[i % (sizeof(z) / sizeof(z[0]))];
}

/* The worker churns: its zeros come and go, its RSS stays at its buffer;
 * anon stays at 2M. */
static void test_churn_keeps_2m(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        for (unsigned i = 0; i < 30; i++) {
                host_step(h, BUFFER_KB, mid_write(i));
                if (anon_level(h) != 8)
                        fail_msg("tick %u (zeros %.2f): %s", (unsigned) h->e.tick - 1, mid_write(i), anon_reason(h));
                assert_true(remembered(h)->churn[MTHP_ANON]);
        }
}

/* The worker caught mid-write with its zeros ahead of the write, in
 * windows that read no data (zero_data near 0), or once just after it
 * populated its buffer (one window written in part: its zeros read beside
 * data in that sample alone): anon stays at 2M. */
static void test_zeros_ahead_keep_2m(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        for (unsigned i = 0; i < 30; i++) {
                h->zero_data = i % 7 == 3 ? 0.75 : 0.02;
                host_step(h, BUFFER_KB, mid_write(i));
                if (anon_level(h) != 8)
                        fail_msg("tick %u (zeros %.2f, beside data %.2f): %s", (unsigned) h->e.tick - 1, mid_write(i),
                                 h->zero_data, anon_reason(h));
        }
        assert_true(remembered(h)->churn[MTHP_ANON]);
}

/* The boundary (zeros beside data): the same worker turned sparse, a byte
 * every 64K of the same buffer: its RSS at 2M is what it held dense, but
 * every window that reads data reads mostly zeros, sample after sample
 * (a phased workload read 0.92-0.95 zero, and 2M was kept for
 * 5 s at 13 times its 4K RSS, until its RSS happened to grow). Stepped
 * down at the second such sample, blamed. */
static void test_turned_sparse_steps_down(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        host_step(h, BUFFER_KB, mid_write(0));
        assert_int_equal(anon_level(h), 8);
        h->zero_data = 0.73;   /* 4 reads a window, a byte in 16 subpages */
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 8; i++) {
                host_step(h, BUFFER_KB, 0.94);
                assert_true(remembered(h)->churn[MTHP_ANON]);
        }
        if (anon_level(h) == 8 || i > 2)
                fail_msg("level %u after %u sparse samples: %s", anon_level(h), i, anon_reason(h));
        assert_blames(h);
        assert_rule(anon_decision(h), MTHP_RULE_STEP_DOWN_CHURN, NULL);
        assert_true(h->e.st.kind[MTHP_ANON].churn_beside); /* why: its zeros lay beside its data */
        /* at 4K its 2M folios of before may still be mapped whole and read
         * dense by presence: no raise back at the next sample; from
         * ENGINE_CHURN_BESIDE_TICKS (2) on, a dense reading is its own
         * (a churner has turned its memory over), and the raise back
         * skips the dwell as for any churner */
        h->zero_data = NAN;
        host_step(h, BUFFER_KB, 0.5);
        if (anon_level(h) == 8)
                fail_msg("raised back the tick after turning sparse: %s", anon_reason(h));
        host_step(h, BUFFER_KB, 0.5);
        if (anon_level(h) != 8)
                fail_msg("2 ticks after turning sparse, reading dense: level %u: %s", anon_level(h), anon_reason(h));
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_CHURN_BACK, NULL);
        assert_true(h->e.st.kind[MTHP_ANON].churn_beside);
}

/* Samples that read the zeros beside data count in a row only: one whose
 * windows with data were too few to say (zero_data NAN beside a known zero
 * share: the zeros were ahead of a write) ends the run. */
static void test_sparse_beside_data_in_a_row(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        static const double zd[] = { 0.73, NAN, 0.73, 0.02, 0.73 };
        for (unsigned i = 0; i < sizeof(zd) / sizeof(zd[0]); i++) {
                h->zero_data = zd[i];
                host_step(h, BUFFER_KB, 0.94);
                if (anon_level(h) != 8)
                        fail_msg("sample %u (beside data %.2f): %s", i, zd[i], anon_reason(h));
        }
        h->zero_data = 0.73;
        host_step(h, BUFFER_KB, 0.94);   /* the second in a row */
        assert_true(anon_level(h) < 8);
}

/* One sample that reads the worker's zeros beside its data ends the
 * density back-off: the next tick samples again, to tell a worker that
 * turned sparse from one caught just after it populated its buffer. */
static void test_sparse_beside_data_samples_again(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        h->zero_data = 0.02;
        for (unsigned i = 0; i < 12; i++)
                host_step(h, BUFFER_KB, mid_write(i));
        assert_int_equal(anon_level(h), 8);
        assert_true(mthp_engine_density_steady(&h->e.cfg, &h->e.snap, &h->e.st));
        h->zero_data = 0.73;
        host_step(h, BUFFER_KB, 0.94);
        assert_int_equal(anon_level(h), 8);
        assert_false(mthp_engine_density_steady(&h->e.cfg, &h->e.snap, &h->e.st));
}

/* The boundary (MaxBloat): the same worker whose RSS grows beyond
 * (1 + MaxBloat) of what it held when it read dense, while it still
 * churns: it holds memory it did not hold at 4K, and its zeros may be it.
 * Stepped down, blamed. */
static void test_grown_rss_steps_down(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 8; i++) {
                host_step(h, BUFFER_KB * 3 / 2, mid_write(i));
                assert_true(remembered(h)->churn[MTHP_ANON]);
        }
        assert_true(anon_level(h) < 8);
        assert_blames(h);
        /* at 1.2 times its RSS (MaxBloat 20%), not above: it keeps 2M */
        host_init(h);
        raise_to_2m(h);
        for (i = 0; i < 30; i++)
                host_step(h, BUFFER_KB * 6 / 5 - 2, mid_write(i));
        assert_int_equal(anon_level(h), 8);
}

/* The boundary (churn): a worker with 4 buffers, 512 MiB, dense at 4K,
 * with its RSS unchanged, but whose memory does not turn over 1.5 times a
 * second (100,000 pages/s, 195 faults/s of 2M: 400 MB/s beside 512 MiB,
 * 0.76 times): a sample is not a moment of a write it repeats faster than
 * the sampler looks; its average decides, and it is stepped down. */
static void test_slow_turnover_steps_down(void **state) {
        struct host *h = *state;
        h->pages = 100000;
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) < 8; i++)
                host_step(h, 4 * BUFFER_KB, 0.5);
        assert_int_equal(anon_level(h), 8);
        for (i = 0; i < 10 && anon_level(h) == 8; i++) {
                host_step(h, 4 * BUFFER_KB, mid_write(i));
                assert_false(remembered(h)->churn[MTHP_ANON]);
        }
        assert_true(anon_level(h) < 8);
        assert_blames(h);
}

/* The boundary (no dense sample): a worker that starts after the raise
 * (it has no 4K reference) and churns but never reads dense, as a sparse
 * program that maps, touches and unmaps would: its content decides, and it
 * is stepped down (the no-harm case: a process started after the
 * raise). */
static void test_new_sparse_churner_steps_down(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        host_step(h, BUFFER_KB, 0.10); /* the dense worker, at 2M */
        h->pid = PID + 1;               /* it exits; a new one starts */
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 8; i++) {
                host_step(h, BUFFER_KB, 0.62);
                assert_true(remembered(h)->churn[MTHP_ANON]);
        }
        assert_true(anon_level(h) < 8);
        assert_blames(h);
}

/* A worker started after the raise, caught mid-write at its every sample
 * with 2M on (no dense sample: the churn rule cannot keep it), is stepped
 * down; at 4K it reads dense by presence. Its zeros were a write it had
 * not finished: anon goes back to 2M at the next tick, not DwellTicks (5)
 * later, and the reason says why. Returns at 2M, 1 tick after the raise
 * back. (trace stress-vm-2w: pid 13756, tick 4.) */
static void new_churner_stepped_down(struct host *h) {
        raise_to_2m(h);
        h->pid = PID + 1;
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 8; i++)
                host_step(h, BUFFER_KB, 0.62);
        assert_int_equal(anon_level(h), 0);
        assert_blames(h);
        assert_rule(anon_decision(h), MTHP_RULE_STEP_DOWN_CHURN, NULL);
}

static void test_churner_raised_back(void **state) {
        struct host *h = *state;
        new_churner_stepped_down(h);
        host_step(h, BUFFER_KB, 0.5); /* at 4K: coverage 1.00, its zeros do not count */
        if (anon_level(h) != 8)
                fail_msg("1 tick after the step down: level %u: %s", anon_level(h), anon_reason(h));
        /* why: zeros it was writing (neither beside its data nor a grown RSS) */
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_CHURN_BACK, NULL);
        assert_false(h->e.st.kind[MTHP_ANON].churn_beside || h->e.st.kind[MTHP_ANON].churn_grown);
}

/* The raise back names the churner as every reason does: a comm that
 * could end its name early is quoted, its quotes escaped. */
static void test_churner_comm_quoted(void **state) {
        struct host *h = *state;
        h->comm = "vm) stepped (";
        new_churner_stepped_down(h);
        host_step(h, BUFFER_KB, 0.5);
        assert_int_equal(anon_level(h), 8);
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_CHURN_BACK, NULL);
        char want[64];
        snprintf(want, sizeof(want), "pid %d (\"vm) stepped (\") stepped anon down", h->pid);
        if (!strstr(anon_reason(h), want))
                fail_msg("\"%s\" does not quote the comm: %s", anon_reason(h), want);
}

/* But not onto a size off now (the review of that change): a churner
 * that read dense at 1M and 2M once (first sample) and reads 0.30 of each
 * 1M and 2M block by presence since is raised to 512K and stays there; its
 * old densest sample (peak_u never decays) must not outvote what it
 * touches now. With the exemption at every size, anon went 512K -> 2M ->
 * 512K every 6 ticks. */
static void test_churner_not_raised_onto_sparse(void **state) {
        struct host *h = *state;
        h->cov_from = 7; /* 1M and 2M */
        h->cov_large = 0.95;
        host_step(h, BUFFER_KB, 0.5); /* the first sample: no rates, no decision */
        h->cov_large = 0.30;
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 0; i++)
                host_step(h, BUFFER_KB, 0.5);
        if (anon_level(h) != 6)
                fail_msg("the raise went to level %u, not 512K: %s", anon_level(h), anon_reason(h));
        for (i = 0; i < 12; i++) {
                host_step(h, BUFFER_KB, 0.5);
                assert_true(remembered(h)->churn[MTHP_ANON]);
                if (anon_level(h) != 6)
                        fail_msg("%u ticks at 512K, reading 0.30 of each 1M block: level %u: %s", i + 1,
                                 anon_level(h), anon_reason(h));
        }
}

/* Dense at 4K at 70% of its buffer, raised to 2M, then at its whole
 * buffer with zeros: stepped down, blamed, the quick raise back armed. */
static void grown_churner_stepped_down(struct host *h) {
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) < 8; i++)
                host_step(h, BUFFER_KB * 7 / 10, 0.5);
        assert_int_equal(anon_level(h), 8);
        for (i = 0; i < 10 && anon_level(h) == 8; i++)
                host_step(h, BUFFER_KB, 0.62);
        assert_int_equal(anon_level(h), 0);
        assert_blames(h);
        assert_rule(anon_decision(h), MTHP_RULE_STEP_DOWN_CHURN, NULL);
}

/* The other way a churner loses the rule (a stress-ng --vm worker
 * sampled dense at 4K at 91 MiB while it populated its 129 MiB buffer): its RSS grows past (1 + MaxBloat) of what it held
 * when it read dense, so with 2M on its zeros decide and anon steps down.
 * At 4K it reads dense at its whole buffer (presence): the growth was
 * memory it uses, and the raise back does not wait DwellTicks either;
 * at 2M again it keeps the size at that RSS. */
static void test_grown_churner_raised_back(void **state) {
        struct host *h = *state;
        unsigned i;
        grown_churner_stepped_down(h);
        uint64_t down = h->e.tick - 1;
        for (i = 0; i < 10 && anon_level(h) == 0; i++)
                host_step(h, BUFFER_KB, 0.5);
        if (anon_level(h) != 8 || h->e.tick - 1 > down + 2)
                fail_msg("stepped down at tick %llu, level %u at tick %llu: %s", (unsigned long long) down,
                         anon_level(h), (unsigned long long) h->e.tick - 1, anon_reason(h));
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_CHURN_BACK, NULL);
        assert_true(h->e.st.kind[MTHP_ANON].churn_grown);
        for (i = 0; i < 20; i++) {
                host_step(h, BUFFER_KB, mid_write(i));
                if (anon_level(h) != 8)
                        fail_msg("%u ticks after the raise back: %s", i + 1, anon_reason(h));
        }
}

/* And one that reads dense by content at its whole buffer with 2M on
 * (0.9996 used: a few zero subpages, just below its densest sample's 1.00
 * at 70%) held that RSS densely: caught mid-write later, it keeps 2M
 * (a stress-ng --vm worker, densest at 98 of its 129 MiB, read 0.9996 at
 * 129 MiB and was stepped down 18 ticks later for its RSS). */
static void test_churner_dense_by_content_keeps_2m(void **state) {
        struct host *h = *state;
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) < 8; i++)
                host_step(h, BUFFER_KB * 7 / 10, 0.5);
        assert_int_equal(anon_level(h), 8);
        for (i = 0; i < 3; i++)
                host_step(h, BUFFER_KB, 0.0004);
        for (i = 0; i < 20; i++) {
                host_step(h, BUFFER_KB, mid_write(i));
                if (anon_level(h) != 8)
                        fail_msg("%u ticks mid-write at the RSS it read dense at: %s", i + 1, anon_reason(h));
        }
}

/* The bound on it (the review of that change): content leaves out
 * mappings where no read found data, so a churner whose RSS grows 10% a
 * tick, reading 0.95 by content every other tick, must not carry the RSS
 * it is allowed up with it: by content, no more than MaxBloat past what
 * presence or its densest sample showed. It is stepped down, and blamed. */
static void test_churner_growing_by_content_steps_down(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        double rss = BUFFER_KB;
        unsigned i;
        /* 0.95 by content; not 1.00, a tie with its densest sample, which
         * still sets the base (engine-remember.c: a worker first dense
         * mid-map needs it): that way up is open */
        for (i = 0; i < 20 && anon_level(h) == 8; i++) {
                rss *= 1.1;
                host_step(h, (uint64_t) rss, i % 2 ? 0.62 : 0.05);
                assert_true(remembered(h)->churn[MTHP_ANON]);
        }
        if (anon_level(h) == 8)
                fail_msg("RSS %.1f times the buffer it read dense at: %s", rss / BUFFER_KB, anon_reason(h));
        assert_blames(h);
}

/* The review's case for it: in the tick after the step down the sample
 * may still see the 2M folios of before, whole, and the RSS they bloated
 * (here twice the buffer); from the next tick on the worker reads 0.30 of
 * each block. That first sample must not make the bloated RSS one it read
 * dense at: no raise back, quick or not, while the dwell lasts. */
static void test_grown_churner_stale_sample(void **state) {
        struct host *h = *state;
        unsigned i;
        grown_churner_stepped_down(h);
        host_step(h, 2 * BUFFER_KB, 0.5); /* the folios of before, whole */
        if (anon_level(h) != 0)
                fail_msg("raised back on the sample of the folios of before: %s", anon_reason(h));
        h->coverage = 0.3;
        for (i = 0; i < 3; i++) {
                host_step(h, BUFFER_KB, 0.5);
                if (anon_level(h) != 0)
                        fail_msg("%u ticks after, reading 0.30 of each block: %s", i + 2, anon_reason(h));
        }
}

/* No flap (1): the same churner reads sparse by presence at 4K (a third
 * of each block touched): no raise, quick or not, while the dwell lasts,
 * nor after. */
static void test_sparse_churner_not_raised(void **state) {
        struct host *h = *state;
        new_churner_stepped_down(h);
        h->coverage = 0.3;
        for (unsigned i = 0; i < 8; i++) {
                host_step(h, BUFFER_KB, 0.5);
                if (anon_level(h) != 0)
                        fail_msg("%u ticks after the step down, reading sparse at 4K: %s", i + 1, anon_reason(h));
        }
}

/* No flap (2): raised back, the same worker steps anon down again (its RSS
 * grows beyond MaxBloat while it churns): the raise back, dense at 4K
 * again, waits DwellTicks after that second step down. And a second step
 * down blamed on it for zeros with no dense sample (its densest samples
 * forgotten: the engine's memory edited) does not skip the dwell either:
 * once a process. */
static void test_second_step_down_dwells(void **state) {
        struct host *h = *state;
        for (int pass = 0; pass < 2; pass++) {
                host_init(h);
                new_churner_stepped_down(h);
                host_step(h, BUFFER_KB, 0.5);
                assert_int_equal(anon_level(h), 8);
                unsigned i;
                for (i = 0; i < 10 && anon_level(h) == 8; i++) {
                        if (pass == 1)
                                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                                        if (h->e.st.proc[j].pid == h->pid)
                                                memset(h->e.st.proc[j].peak_u, 0, sizeof(h->e.st.proc[j].peak_u));
                        host_step(h, pass == 0 ? BUFFER_KB * 3 / 2 : BUFFER_KB, 0.62);
                }
                assert_int_equal(anon_level(h), 0);
                assert_blames(h);
                /* a second step down arms no quick raise: the dwell applies */
                assert_rule(anon_decision(h), MTHP_RULE_STEP_DOWN_SPARSE, NULL);
                if (pass == 1)
                        assert_true(remembered(h)->churn_spent[MTHP_ANON]);
                uint64_t down = h->e.tick - 1;
                /* the second density step-down in a row is a flap: the
                 * sizes above are barred 4 DwellTicks (engine.c) */
                for (i = 0; i < 30 && anon_level(h) == 0; i++)
                        host_step(h, BUFFER_KB, 0.5);
                if (anon_level(h) != 8 || h->e.tick - 1 < down + h->e.cfg.dwell_ticks)
                        fail_msg("pass %d: stepped down at tick %llu, level %u at tick %llu: %s", pass,
                                 (unsigned long long) down, anon_level(h), (unsigned long long) h->e.tick - 1,
                                 anon_reason(h));
        }
}

/* A raise that stopped short (stress-ng --vm raised back to 512K at tick
 * 7, to 2M only at tick 27): the churner was
 * dense at 4K, so at 512K the churn rule keeps the sizes it has, but its
 * content there, caught mid-write, held the raise above them for 20 ticks
 * while both workers' presence read dense at 1M and 2M. What keeps a size
 * does not bar a raise through it: anon goes on to 2M. Here the first
 * sample reads 0.88 of each 1M and 2M block (dense enough to keep, not to
 * raise: the raise stops at 512K); the next ones read every block whole. */
static void test_churner_raise_not_held_by_zeros(void **state) {
        struct host *h = *state;
        h->cov_from = 7;                  /* 1M and 2M */
        h->cov_large = 0.88;
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 0; i++)
                host_step(h, BUFFER_KB, 0.5);
        if (anon_level(h) != 6)
                fail_msg("the first raise went to level %u, not 512K: %s", anon_level(h), anon_reason(h));
        /* held there, the reason says what bars a raise */
        host_step(h, BUFFER_KB, 0.5);
        assert_int_equal(anon_level(h), 6);
        assert_rule(anon_decision(h), MTHP_RULE_HOLD_NO_HIGHER, "4242 stress-ng-vm 0.880 1M 0.917");
        h->cov_from = 0;
        /* the zeros a stress-ng --vm worker read at 512K, five ticks in a row */
        static const double z[] = { 0.62, 0.38, 0.88, 0.37, 0.64 };
        for (i = 0; i < 5 && anon_level(h) == 6; i++) {
                host_step(h, BUFFER_KB, z[i]);
                assert_true(remembered(h)->churn[MTHP_ANON]);
        }
        if (anon_level(h) != 8)
                fail_msg("%u ticks at 512K, dense at 1M and 2M by presence: level %u: %s", i, anon_level(h),
                         anon_reason(h));
}

/* The review's cases. A sample that reads no content with 2M on (an
 * all-zero mapping: no zero share) sets no densest sample: with whole
 * folios present its coverage is 1 whatever it uses. */
static void test_blind_sample_sets_no_peak(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        h->pid = PID + 1;                 /* started after the raise */
        host_step(h, BUFFER_KB, NAN);
        for (unsigned z = 0; z < h->e.caps.n_sizes; z++)
                if (remembered(h)->peak_u[MTHP_ANON][z] != 0)
                        fail_msg("size %u: peak %.2f from a sample that read no content", z,
                                 remembered(h)->peak_u[MTHP_ANON][z]);
}

/* But one that read data at a smaller size (stress-ng --vm: zeros 0 at
 * 16K, no whole larger block read) read
 * content: its coverage at the larger sizes sets their densest sample. */
static void test_data_at_16k_sets_peak(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        h->pid = PID + 1;                 /* started after the raise */
        h->zero_nan_from = 2;             /* 16K reads 0 zeros, 32K..2M none read */
        host_step(h, BUFFER_KB, 0);
        h->zero_nan_from = 0;
        if (!(remembered(h)->peak_u[MTHP_ANON][8] > 0.9))
                fail_msg("2M: peak %.2f after a sample with data at 16K", remembered(h)->peak_u[MTHP_ANON][8]);
}

/* A new process at a reused pid with the same comm (the scanner saw a new
 * start time) inherits nothing: its densest sample is its own. */
static void test_reused_pid_forgets_peak(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        assert_true(remembered(h)->peak_u[MTHP_ANON][8] > 0.9); /* dense at 4K */
        h->new_proc = true;
        host_step(h, BUFFER_KB, 0.62);
        h->new_proc = false;
        if (remembered(h)->peak_u[MTHP_ANON][8] > 0.5)
                fail_msg("the new process at pid %d kept the old one's peak %.2f", h->pid,
                         remembered(h)->peak_u[MTHP_ANON][8]);
}

/* Turnover is per second: a churner at 3 turnovers a second (100,000
 * pages/s: 400 MB/s beside 128 MiB) still churns on an early tick (a
 * quarter Interval: 0.76 turnovers in it). */
static void test_churn_per_second(void **state) {
        struct host *h = *state;
        h->pages = 100000;
        raise_to_2m(h);
        host_step(h, BUFFER_KB, mid_write(0));
        assert_true(remembered(h)->churn[MTHP_ANON]);
        /* the same rates over a quarter of a second */
        struct mthp_snapshot *s = &h->e.snap;
        struct mthp_engine_state next;
        s->tick = h->e.tick;
        s->t_usec += 250000;
        s->dt = 0.25;
        s->density.proc[0].zero[MTHP_ANON][1] = mid_write(1);
        h->e.n_dec = mthp_engine_decide(&h->e.cfg, &h->e.caps, s, &h->e.st, &next, h->e.dec, MTHP_KNOBS_MAX);
        h->e.st = next;
        h->e.tick++;
        assert_true(remembered(h)->churn[MTHP_ANON]);
        assert_int_equal(anon_level(h), 8);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_churn_keeps_2m, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_grown_rss_steps_down, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_slow_turnover_steps_down, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_new_sparse_churner_steps_down, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churner_raised_back, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churner_comm_quoted, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churner_not_raised_onto_sparse, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_grown_churner_raised_back, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_grown_churner_stale_sample, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churner_dense_by_content_keeps_2m, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churner_growing_by_content_steps_down, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_sparse_churner_not_raised, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_second_step_down_dwells, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churner_raise_not_held_by_zeros, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_blind_sample_sets_no_peak, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_data_at_16k_sets_peak, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_reused_pid_forgets_peak, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_churn_per_second, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_zeros_ahead_keep_2m, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_turned_sparse_steps_down, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_sparse_beside_data_samples_again, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_sparse_beside_data_in_a_row, host_setup, host_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
