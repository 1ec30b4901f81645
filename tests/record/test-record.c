/* SPDX-License-Identifier: MIT */
/* Record and replay (lib/record.c): synthetic snapshots that use every field
 * (NAN, infinities, extreme integers, odd strings, a full density view)
 * read back exactly, the engine decides the same on both, and malformed
 * files fail with -EBADMSG naming file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/record.h"
#include "mthp/util.h"

#include "../engine/engine-caps.h"   /* add_knob */

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define N_TICKS 6

static char tmpdir[] = "/tmp/mthp-test-record.XXXXXX";

static void tmp_path(char *buf, size_t size, const char *name) {
        snprintf(buf, size, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

/* ---- synthetic input ---- */

/* 8K..2M like a 6.18 host; strings with the characters the format escapes */
static void make_caps(struct mthp_caps *c) {
        static const char *const anon[] = { "always", "inherit", "madvise", "never", NULL };
        static const char *const shmem[] = { "always", "inherit", "within_size", "advise", "never", NULL };
        static const char *const defrag[] = { "always", "defer", "defer+madvise", "madvise", "never", NULL };
        static const char *const odd[] = { "a b", "c,d", "", "\"q\"", "back\\slash", NULL };
        static const char *const stats[] = { "anon_fault_alloc", "anon_fault_fallback", "shmem_alloc",
                                             "shmem_fallback", "split" };
        memset(c, 0, sizeof(*c));
        c->pmd_kb = 2048;
        c->psi = true;
        c->task_delayacct = true;
        c->cg_layout = MTHP_CG_HYBRID;
        snprintf(c->cg_memory, sizeof(c->cg_memory), "/sys/fs/cgroup/mem ory");
        for (unsigned kb = 8; kb <= 2048; kb *= 2) {
                struct mthp_size *sz = &c->sizes[c->n_sizes];
                char name[16], id[32], path[MTHP_PATH_MAX];
                sz->kb = kb;
                sz->order = __builtin_ctz(kb / 4);
                mthp_format_size(kb, name, sizeof(name));
                sz->knob[MTHP_ANON] = -1;
                if (kb > 8) {
                        snprintf(id, sizeof(id), "%s/anon", name);
                        snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/enabled", kb);
                        sz->knob[MTHP_ANON] = (int) c->n_knobs;
                        add_knob(c, MTHP_KNOB_SIZE_ANON, kb, id, path, anon);
                }
                snprintf(id, sizeof(id), "%s/shmem", name);
                snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/shmem_enabled", kb);
                sz->knob[MTHP_SHMEM] = (int) c->n_knobs;
                add_knob(c, MTHP_KNOB_SIZE_SHMEM, kb, id, path, shmem);
                /* 128K has no stats at all */
                sz->n_stats = kb == 128 ? 0 : ELEMENTSOF(stats);
                for (unsigned j = 0; j < sz->n_stats; j++)
                        snprintf(sz->stats[j], MTHP_STAT_NAME_MAX, "%s", stats[(j + c->n_sizes) % ELEMENTSOF(stats)]);
                c->n_sizes++;
        }
        add_knob(c, MTHP_KNOB_ENABLED, 0, "global/enabled", MTHP_THP_DIR "/enabled", odd);
        add_knob(c, MTHP_KNOB_DEFRAG, 0, "global/defrag", MTHP_THP_DIR "/defrag", defrag);
}

static void counter(struct mthp_counter *c, uint64_t value, double rate) {
        c->value = value;
        c->rate = rate;
        c->present = true;
        c->reset = false;
}

static int stat_of(const struct mthp_caps *caps, unsigned size, const char *name) {
        int j = mthp_stat_index(&caps->sizes[size], name);
        assert_true(j >= 0);
        return j;
}

/* Tick t of a workload that faults hard and is dense for anon, sparse for
 * shmem; every field gets something, the odd values on some ticks. */
static void make_snapshot(const struct mthp_caps *caps, unsigned t, struct mthp_snapshot *s) {
        memset(s, 0, sizeof(*s));
        s->tick = t;
        s->t_usec = 1000000ULL * t + 123457;
        s->dt = t ? 1.0 + t / 3.0 : 0; /* 4/3, 5/3: need all 17 digits */
        /* FaultCost=: unknown (0) on tick 0, then measured, 11.4 us / 3 */
        s->fault_cost_ns = t ? 11400.0 / 3 * t : 0;
        for (int i = 0; i < _MTHP_VM_MAX; i++)
                if (i != MTHP_VM_PSWPOUT)
                        counter(&s->vm[i], 1000ULL * t * (unsigned) (i + 1), t ? 1e5 / 3 * (i + 1) : 0);
        s->vm[MTHP_VM_PGMAJFAULT].reset = t == 2;
        if (t == 3) /* not present but not empty either: kept as it is */
                s->vm[MTHP_VM_PSWPOUT] = (struct mthp_counter){ .value = 7, .rate = -0.0 };
        s->mem = (struct mthp_meminfo){ 16000000, 8000000 - t, 1234, 567, 0, UINT64_MAX };
        if (t != 4) {
                s->psi.present = true;
                s->psi.some_avg10 = 0.1 * t;
                s->psi.full_avg10 = t == 1 ? DBL_MIN / 4 : 0; /* subnormal */
                counter(&s->psi.some_total, UINT64_MAX - t, t * 0.7);
                counter(&s->psi.full_total, 5, 0);
        }
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                if (!caps->sizes[i].n_stats)
                        continue;
                double npages = caps->sizes[i].kb / 4.0;
                counter(&s->size[i].stat[stat_of(caps, i, "anon_fault_alloc")], 10ULL * t, t ? 60000 / npages : 0);
                counter(&s->size[i].stat[stat_of(caps, i, "shmem_alloc")], 3ULL * t, t ? 100.0 / 7 : 0);
                s->size[i].stat[stat_of(caps, i, "split")].reset = t == 5;
                /* the others stay absent: trailing ones are left out */
        }
        for (unsigned i = 0; i < caps->n_knobs; i++)
                snprintf(s->knob[i], sizeof(s->knob[i]), "%s", i == 3 && t == 2 ? "" : caps->knobs[i].allowed[0]);
        mthp_snapshot_derive(caps, s);
        s->fault_pages_rate += t ? 200000.0 / 3 : 0;

        struct mthp_density_view *v = &s->density;
        v->valid = t != 1;
        v->usec = 1234.5 + t;
        v->fault_sampling = t % 2 == 0;
        /* none, one, and as many as a tick holds */
        v->n_gone = t == 4 ? MTHP_DENSITY_GONE_MAX : t % 2;
        for (unsigned g = 0; g < v->n_gone; g++)
                v->gone[g] = 4000000 + (int) (t * 100 + g);
        v->n_rates = t == 5 ? MTHP_DENSITY_GONE_MAX : (t + 1) % 2;
        for (unsigned g = 0; g < v->n_rates; g++)
                v->rates[g] = (struct mthp_proc_rate) { 5000000 + (int) (t * 100 + g), g ? 1e5 / 3 * g : 0 };
        unsigned n_procs = t == 5 ? MTHP_DENSITY_PROCS : (t % 3) + 1;
        v->n_procs = n_procs;
        for (unsigned p = 0; p < n_procs; p++) {
                struct mthp_proc_density *d = &v->proc[p];
                d->pid = 1000 + (int) p;
                snprintf(d->comm, sizeof(d->comm), "%s", p == 0 ? "web, \"con\"\\t" : p == 1 ? "" : "\xc3\xa9t\xc3\xa9");
                d->fault_rate = p == 0 ? 1e6 / 7 : 50.0 * p;
                d->rss_kb[MTHP_ANON] = 1ULL << (20 + p);
                d->rss_kb[MTHP_SHMEM] = p == 0 ? 65536 : 0;
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        for (unsigned j = 0; j < caps->n_sizes; j++) {
                                d->coverage[k][j] = k == MTHP_ANON ? 1.0 - j / 97.0 : 1.0 / (1u << j);
                                d->zero[k][j] = d->zero_data[k][j] = NAN;
                        }
                d->zero[MTHP_ANON][2] = 0.01;
                d->zero_data[MTHP_ANON][2] = p == 0 ? 0.003 : NAN;   /* zeros beside data: left out when unknown */
                if (p == 2) /* nothing sampled: the lists are left out */
                        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                                for (unsigned j = 0; j < caps->n_sizes; j++)
                                        d->coverage[k][j] = NAN;
                d->compact_ms = p == 1 ? INFINITY : NAN;
                d->thrash_ms = -0.0;
                d->reclaim_ms = 2.5;
                snprintf(d->cgroup, sizeof(d->cgroup), "/user.slice/a=b c,d");
                d->cg_usage_kb = 500000;
                d->cg_limit_kb = p == 0 ? 1000000 : 0;
                /* the opt-outs and the shmem mapping (left out when none) */
                d->thp_disabled = p == 1;
                d->nohuge_kb[MTHP_ANON] = p == 0 ? 4096 : 0;
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        for (unsigned j = 0; j < caps->n_sizes; j++) {
                                d->hg_coverage[k][j] = p == 0 && k == MTHP_ANON ? 0.5 + j / 64.0 : NAN;
                                d->hg_zero[k][j] = NAN;
                                d->hg_blocks[k][j] = p == 0 && k == MTHP_ANON ? 3.0 * (j + 1) : 0;
                        }
                if (p == 0)
                        d->shm = (struct mthp_shm_mapping) { .addr = 0x7f0000201000ULL, .bytes = 64ULL << 20,
                                                             .align_kb = 4, .reach = MTHP_SHM_PER_SIZE,
                                                             .sampled = 16, .large = 3, .probe = MTHP_SHM_PROBE_PMD };
                /* sampled faults by kind (FaultSampling=): left out when none */
                d->fault_samples[MTHP_ANON] = p == 0 ? 37 : 0;
                d->fault_samples[MTHP_SHMEM] = p == 0 ? 4 : p;
                d->fault_samples_other = p == 1 ? 9 : 0;
        }
        s->n_cgroups = t == 5 ? MTHP_SNAP_CGROUPS : t % 3;
        for (unsigned c = 0; c < s->n_cgroups; c++) {
                struct mthp_cgroup_view *g = &s->cgroup[c];
                snprintf(g->path, sizeof(g->path), c ? "/batch.slice/job-%u.scope" : "/system.slice/a b,\"c\"", c);
                g->fault_rate = 1e5 / (c + 3);
                g->new_cgroup = c == 1;
                g->anon_kb = 4096 * c;
                g->shmem_kb = c == 2 ? 12 : 0;
                g->usage_kb = 1ULL << 33;
                g->limit_kb = c == 0 ? 1000000 : 0;
                g->growth_kb_s = -12.25;
                g->psi_present = c != 1;
                g->psi_some_avg10 = c == 1 ? 0 : 3.14;
                g->appeared_usec = c == 1 ? 123456789012ULL : 0;
        }
        s->limited_valid = t % 2 == 0;
        s->n_limited = !s->limited_valid ? 0 : t == 4 ? MTHP_SNAP_LIMITED : t % 3;
        for (unsigned c = 0; c < s->n_limited; c++) {
                struct mthp_limited_cgroup *l = &s->limited[c];
                snprintf(l->path, sizeof(l->path), "/mthpd-test-%u/a b", c);
                l->usage_kb = 1ULL << (20 + c % 20);
                l->limit_kb = 600 * 1024 + c;
                l->populated = c % 2 == 0;
        }
}

/* ---- exact comparison ---- */

static void assert_same_double(double a, double b, const char *what) {
        if (isnan(a) && isnan(b))
                return;
        if (a != b || signbit(a) != signbit(b))
                fail_msg("%s: %.17g != %.17g", what, a, b);
}

static void assert_same_counter(const struct mthp_counter *a, const struct mthp_counter *b, const char *what) {
        assert_int_equal(a->value, b->value);
        assert_same_double(a->rate, b->rate, what);
        assert_int_equal(a->reset, b->reset);
        assert_int_equal(a->present, b->present);
}

static void assert_same_caps(const struct mthp_caps *a, const struct mthp_caps *b) {
        assert_int_equal(a->pmd_kb, b->pmd_kb);
        assert_int_equal(a->psi, b->psi);
        assert_int_equal(a->task_delayacct, b->task_delayacct);
        assert_int_equal(a->cg_layout, b->cg_layout);
        assert_string_equal(a->cg_memory, b->cg_memory);
        assert_string_equal(a->cg_unified, b->cg_unified);
        assert_int_equal(a->n_knobs, b->n_knobs);
        for (unsigned i = 0; i < a->n_knobs; i++) {
                const struct mthp_knob *x = &a->knobs[i], *y = &b->knobs[i];
                assert_int_equal(x->type, y->type);
                assert_int_equal(x->size_kb, y->size_kb);
                assert_string_equal(x->id, y->id);
                assert_string_equal(x->path, y->path);
                assert_int_equal(x->n_allowed, y->n_allowed);
                for (unsigned j = 0; j < x->n_allowed; j++)
                        assert_string_equal(x->allowed[j], y->allowed[j]);
        }
        assert_int_equal(a->n_sizes, b->n_sizes);
        for (unsigned i = 0; i < a->n_sizes; i++) {
                const struct mthp_size *x = &a->sizes[i], *y = &b->sizes[i];
                assert_int_equal(x->kb, y->kb);
                assert_int_equal(x->order, y->order);
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        assert_int_equal(x->knob[k], y->knob[k]);
                assert_int_equal(x->n_stats, y->n_stats);
                for (unsigned j = 0; j < x->n_stats; j++)
                        assert_string_equal(x->stats[j], y->stats[j]);
        }
}

static void assert_same_snapshot(const struct mthp_caps *caps, const struct mthp_snapshot *a,
                                 const struct mthp_snapshot *b) {
        assert_int_equal(a->tick, b->tick);
        assert_int_equal(a->t_usec, b->t_usec);
        assert_same_double(a->dt, b->dt, "dt");
        assert_same_double(a->fault_cost_ns, b->fault_cost_ns, "fault_cost_ns");
        for (int i = 0; i < _MTHP_VM_MAX; i++)
                assert_same_counter(&a->vm[i], &b->vm[i], mthp_vmstat_name(i));
        assert_memory_equal(&a->mem, &b->mem, sizeof(a->mem));
        assert_int_equal(a->psi.present, b->psi.present);
        assert_same_double(a->psi.some_avg10, b->psi.some_avg10, "psi some");
        assert_same_double(a->psi.full_avg10, b->psi.full_avg10, "psi full");
        assert_same_counter(&a->psi.some_total, &b->psi.some_total, "psi some total");
        assert_same_counter(&a->psi.full_total, &b->psi.full_total, "psi full total");
        for (unsigned i = 0; i < caps->n_sizes; i++)
                for (unsigned j = 0; j < caps->sizes[i].n_stats; j++)
                        assert_same_counter(&a->size[i].stat[j], &b->size[i].stat[j], caps->sizes[i].stats[j]);
        for (unsigned i = 0; i < caps->n_knobs; i++)
                assert_string_equal(a->knob[i], b->knob[i]);
        assert_same_double(a->fault_pages_rate, b->fault_pages_rate, "fault_pages_rate");
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                assert_same_double(a->kind_pages_rate[k], b->kind_pages_rate[k], "kind_pages_rate");
                assert_same_double(a->kind_alloc_rate[k], b->kind_alloc_rate[k], "kind_alloc_rate");
                assert_same_double(a->kind_fallback_rate[k], b->kind_fallback_rate[k], "kind_fallback_rate");
        }
        const struct mthp_density_view *x = &a->density, *y = &b->density;
        assert_int_equal(x->valid, y->valid);
        assert_same_double(x->usec, y->usec, "density usec");
        assert_int_equal(x->fault_sampling, y->fault_sampling);
        assert_int_equal(x->n_procs, y->n_procs);
        assert_int_equal(x->n_gone, y->n_gone);
        for (unsigned g = 0; g < x->n_gone; g++)
                assert_int_equal(x->gone[g], y->gone[g]);
        assert_int_equal(x->n_rates, y->n_rates);
        for (unsigned g = 0; g < x->n_rates; g++) {
                assert_int_equal(x->rates[g].pid, y->rates[g].pid);
                assert_same_double(x->rates[g].fault_rate, y->rates[g].fault_rate, "rate fault_rate");
        }
        for (unsigned p = 0; p < x->n_procs; p++) {
                const struct mthp_proc_density *u = &x->proc[p], *v = &y->proc[p];
                assert_int_equal(u->pid, v->pid);
                assert_string_equal(u->comm, v->comm);
                assert_same_double(u->fault_rate, v->fault_rate, "fault_rate");
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        assert_int_equal(u->rss_kb[k], v->rss_kb[k]);
                        for (unsigned j = 0; j < caps->n_sizes; j++) {
                                assert_same_double(u->coverage[k][j], v->coverage[k][j], "coverage");
                                assert_same_double(u->zero[k][j], v->zero[k][j], "zero");
                                assert_same_double(u->zero_data[k][j], v->zero_data[k][j], "zero_data");
                        }
                }
                assert_same_double(u->compact_ms, v->compact_ms, "compact_ms");
                assert_same_double(u->thrash_ms, v->thrash_ms, "thrash_ms");
                assert_same_double(u->reclaim_ms, v->reclaim_ms, "reclaim_ms");
                assert_string_equal(u->cgroup, v->cgroup);
                assert_int_equal(u->cg_usage_kb, v->cg_usage_kb);
                assert_int_equal(u->cg_limit_kb, v->cg_limit_kb);
                assert_int_equal(u->thp_disabled, v->thp_disabled);
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        assert_int_equal(u->nohuge_kb[k], v->nohuge_kb[k]);
                        for (unsigned j = 0; j < caps->n_sizes; j++) {
                                assert_same_double(u->hg_coverage[k][j], v->hg_coverage[k][j], "hg_coverage");
                                assert_same_double(u->hg_zero[k][j], v->hg_zero[k][j], "hg_zero");
                                assert_same_double(u->hg_blocks[k][j] > 0 ? u->hg_blocks[k][j] : 0,
                                                   v->hg_blocks[k][j] > 0 ? v->hg_blocks[k][j] : 0, "hg_blocks");
                        }
                }
                assert_int_equal(u->shm.addr, v->shm.addr);
                assert_int_equal(u->shm.bytes, v->shm.bytes);
                assert_int_equal(u->shm.align_kb, v->shm.align_kb);
                assert_int_equal(u->shm.reach, v->shm.reach);
                assert_int_equal(u->shm.sampled, v->shm.sampled);
                assert_int_equal(u->shm.large, v->shm.large);
                assert_int_equal(u->shm.probe, v->shm.probe);
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        assert_int_equal(u->fault_samples[k], v->fault_samples[k]);
                assert_int_equal(u->fault_samples_other, v->fault_samples_other);
        }
        assert_int_equal(a->n_cgroups, b->n_cgroups);
        for (unsigned c = 0; c < a->n_cgroups; c++) {
                const struct mthp_cgroup_view *g = &a->cgroup[c], *h = &b->cgroup[c];
                assert_string_equal(g->path, h->path);
                assert_same_double(g->fault_rate, h->fault_rate, "cgroup fault_rate");
                assert_int_equal(g->new_cgroup, h->new_cgroup);
                assert_int_equal(g->anon_kb, h->anon_kb);
                assert_int_equal(g->shmem_kb, h->shmem_kb);
                assert_int_equal(g->usage_kb, h->usage_kb);
                assert_int_equal(g->limit_kb, h->limit_kb);
                assert_same_double(g->growth_kb_s, h->growth_kb_s, "growth");
                assert_int_equal(g->psi_present, h->psi_present);
                assert_same_double(g->psi_some_avg10, h->psi_some_avg10, "cgroup psi");
                assert_int_equal(g->appeared_usec, h->appeared_usec);
        }
        assert_int_equal(a->limited_valid, b->limited_valid);
        assert_int_equal(a->n_limited, b->n_limited);
        for (unsigned c = 0; c < a->n_limited; c++) {
                assert_string_equal(a->limited[c].path, b->limited[c].path);
                assert_int_equal(a->limited[c].usage_kb, b->limited[c].usage_kb);
                assert_int_equal(a->limited[c].limit_kb, b->limited[c].limit_kb);
                assert_int_equal(a->limited[c].populated, b->limited[c].populated);
        }
}

/* ---- tests ---- */

static struct mthp_caps caps_in, caps_out;
static struct mthp_snapshot snap_in[N_TICKS], snap_out;

static void write_recording(const char *path) {
        struct mthp_record_writer *w;
        make_caps(&caps_in);
        assert_int_equal(mthp_record_open_write(path, &caps_in, &w), 0);
        for (unsigned t = 0; t < N_TICKS; t++) {
                make_snapshot(&caps_in, t, &snap_in[t]);
                assert_int_equal(mthp_record_write(w, &snap_in[t]), 0);
        }
        assert_int_equal(mthp_record_close_write(w), 0);
}

static void test_round_trip(void **state) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *r = NULL;
        char path[256], err[512];
        (void) state;
        tmp_path(path, sizeof(path), "round-trip.rec");
        write_recording(path);

        assert_int_equal(mthp_record_open_read(path, &caps_out, &r, err, sizeof(err)), 0);
        assert_same_caps(&caps_in, &caps_out);
        for (unsigned t = 0; t < N_TICKS; t++) {
                assert_int_equal(mthp_record_read(r, &snap_out, err, sizeof(err)), 1);
                assert_same_snapshot(&caps_in, &snap_in[t], &snap_out);
        }
        assert_int_equal(mthp_record_read(r, &snap_out, err, sizeof(err)), 0);
        assert_int_equal(mthp_record_read(r, &snap_out, err, sizeof(err)), 0); /* stays at the end */
}

/* What the engine decides on the recording is what it decided live,
 * reasons included, byte for byte. */
static void test_replay_same_decisions(void **state) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *r = NULL;
        struct mthp_config cfg;
        struct mthp_engine_state live = { 0 }, replay = { 0 }, next;
        struct mthp_decision d_live[MTHP_KNOBS_MAX], d_replay[MTHP_KNOBS_MAX];
        char path[256], err[512];
        (void) state;
        mthp_config_defaults(&cfg);
        cfg.engine.raise_fault_rate = 1000;
        cfg.engine.dwell_ticks = 0;
        tmp_path(path, sizeof(path), "replay.rec");
        write_recording(path);
        assert_int_equal(mthp_record_open_read(path, &caps_out, &r, err, sizeof(err)), 0);
        bool changed = false;
        for (unsigned t = 0; t < N_TICKS; t++) {
                assert_int_equal(mthp_record_read(r, &snap_out, err, sizeof(err)), 1);
                int n = mthp_engine_decide(&cfg.engine, &caps_in, &snap_in[t], &live, &next, d_live, MTHP_KNOBS_MAX);
                live = next;
                int m = mthp_engine_decide(&cfg.engine, &caps_out, &snap_out, &replay, &next, d_replay,
                                           MTHP_KNOBS_MAX);
                replay = next;
                assert_int_equal(n, m);
                for (int i = 0; i < n; i++) {
                        assert_int_equal(d_live[i].knob, d_replay[i].knob);
                        assert_string_equal(d_live[i].value, d_replay[i].value);
                        assert_string_equal(d_live[i].reason, d_replay[i].reason);
                }
                changed = changed || live.kind[MTHP_ANON].level > 0;
                assert_memory_equal(&live.kind, &replay.kind, sizeof(live.kind));
        }
        assert_true(changed); /* the workload made the engine do something */
}

/* Lines left out read as zero/absent; comments, blank lines and CRLF are
 * fine. */
static void test_minimal_file(void **state) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *r = NULL;
        struct mthp_caps caps;
        char path[256], err[512];
        (void) state;
        tmp_path(path, sizeof(path), "minimal.rec");
        write_file(path, "mthp-record 1\n"
                         "# hand-written\n"
                         "caps pmd_kb=2048 psi=0 task_delayacct=0 cg_layout=v2 cg_memory=\"\" cg_unified=/sys/fs/cgroup\n"
                         "knob id=64K/anon type=size_anon size_kb=64 path=/x allowed=always,never\r\n"
                         "size kb=64 order=4 anon=0 stats=anon_fault_alloc,anon_fault_fallback\n"
                         "end\n"
                         "\n"
                         "tick 7 t_usec=5 dt=0\n"
                         "stat 64K ,3/1.5:r\n"
                         "knobs never\n"
                         "proc pid=1 comm=init fault_rate=1e3 cov_anon=0.25\n"
                         /* before shm_probe: its samples were kpageflags' */
                         "proc pid=2 comm=pg shm_reach=1 shm_sampled=16 shm_large=0\n"
                         "end\n");
        assert_int_equal(mthp_record_open_read(path, &caps, &r, err, sizeof(err)), 0);
        assert_int_equal(caps.n_sizes, 1);
        assert_int_equal(caps.sizes[0].knob[MTHP_ANON], 0);
        assert_int_equal(caps.sizes[0].knob[MTHP_SHMEM], -1); /* left out: no knob */
        assert_string_equal(caps.knobs[0].allowed[1], "never");
        assert_int_equal(mthp_record_read(r, &snap_out, err, sizeof(err)), 1);
        assert_int_equal(snap_out.tick, 7);
        assert_same_double(snap_out.fault_cost_ns, 0, "fault_cost_ns"); /* a recording from before it: unknown */
        assert_false(snap_out.psi.present);
        assert_false(snap_out.vm[MTHP_VM_PGFAULT].present);
        assert_false(snap_out.size[0].stat[0].present);
        assert_true(snap_out.size[0].stat[1].present && snap_out.size[0].stat[1].reset);
        assert_int_equal(snap_out.size[0].stat[1].value, 3);
        assert_string_equal(snap_out.knob[0], "never");
        assert_false(snap_out.density.valid);
        assert_int_equal(snap_out.density.n_procs, 2);
        assert_int_equal(snap_out.density.proc[1].shm.sampled, 16);
        assert_int_equal(snap_out.density.proc[1].shm.probe, MTHP_SHM_PROBE_KPAGEFLAGS);
        assert_same_double(snap_out.density.proc[0].coverage[MTHP_ANON][0], 0.25, "coverage");
        assert_true(isnan(snap_out.density.proc[0].zero[MTHP_ANON][0]));
        assert_true(isnan(snap_out.density.proc[0].zero_data[MTHP_ANON][0]));   /* before it: unknown */
        assert_true(isnan(snap_out.density.proc[0].coverage[MTHP_SHMEM][0]));
        assert_int_equal(mthp_record_read(r, &snap_out, err, sizeof(err)), 0);
}

struct malformed {
        const char *name;
        const char *text;
        unsigned line;
        const char *says;     /* part of the message after "FILE:LINE: " */
        bool in_caps;         /* the error is in the header: open fails */
};

#define HEAD "mthp-record 1\n"
#define CAPS HEAD "caps pmd_kb=2048\nknob id=16K/anon type=size_anon size_kb=16 path=/p allowed=always,never\n" \
                  "size kb=16 order=2 anon=0 stats=a,b\nend\n"
#define TICK "tick 0 t_usec=0 dt=0\n"
/* MTHP_DENSITY_GONE_MAX + 1 lines of one kind: the 17th is line 23 */
#define X4(l) l l l l
#define X17(l) X4(l) X4(l) X4(l) X4(l) l
_Static_assert(MTHP_DENSITY_GONE_MAX == 16, "X17 must write MTHP_DENSITY_GONE_MAX + 1 lines");

static const struct malformed malformed[] = {
        { "empty", "", 1, "empty file: expected 'mthp-record 1'", true },
        { "not a recording", "[Engine]\nRaiseFaultRate=1\n", 1, "not an mthpd recording", true },
        { "newer version", "mthp-record 2\n", 1, "format version 2: this build reads version 1", true },
        { "no caps", HEAD "tick 0\n", 2, "expected the 'caps' line", true },
        { "bad number", HEAD "caps pmd_kb=2M\n", 2, "'caps' line: pmd_kb=2M: expected an unsigned integer", true },
        { "unknown key", HEAD "caps pmd=1\n", 2, "'caps' line: unknown key 'pmd'", true },
        { "not key=value", HEAD "caps 2048\n", 2, "expected KEY=VALUE, got '2048'", true },
        { "twice", HEAD "caps psi=1 psi=0\n", 2, "key 'psi' given twice", true },
        { "bad enum", HEAD "caps cg_layout=v3\n", 2, "cg_layout=v3: expected one of none, v1, hybrid, v2", true },
        { "bad escape", HEAD "caps cg_memory=a\\x4\n", 2, "cg_memory=a\\x4: expected a string", true },
        { "signed escape", HEAD "caps cg_memory=\\x+4\n", 2, "expected a string", true },
        { "NUL escape", HEAD "caps cg_memory=a\\x00\n", 2, "expected a string", true },
        { "bad stat counter", CAPS TICK "stat 16K 1,x\nend\n", 7, "'stat' line: expected a counter", false },
        { "string too long", HEAD "caps\nknob id=0123456789012345678901234567890123456789\n", 3, "longer than 31 bytes",
          true },
        { "knob index", HEAD "caps\nsize kb=16 anon=3\n", 3, "anon=3: expected -1 or the index of one of the 0 knob lines",
          true },
        { "knob of another size", HEAD "caps\nknob id=16K/anon type=size_anon size_kb=16 path=/p\nsize kb=32 anon=0\n", 4,
          "knob 16K/anon is not the anon knob of 32kB", true },
        { "sizes descending", HEAD "caps\nsize kb=64\nsize kb=16\n", 4, "sizes must be ascending", true },
        { "caps cut short", HEAD "caps\nsize kb=16\n", 3, "ends inside its caps", true },
        { "tick without end", CAPS TICK "mem total=1\n", 7, "ends inside tick 0 (no 'end' line)", false },
        { "no tick line", CAPS "mem total=1\nend\n", 6, "expected 'tick N ...' to start a tick, got 'mem'", false },
        { "ticks go back", CAPS TICK "end\ntick 0\nend\n", 8, "tick 0 after tick 0: ticks must increase", false },
        { "unknown line", CAPS TICK "vmstat pgfault=1\nend\n", 7, "unknown line 'vmstat' in tick 0", false },
        { "gone without pid", CAPS TICK "gone\nend\n", 7, "pid=0, expected a process ID above 0", false },
        { "gone of pid 0", CAPS TICK "gone pid=0\nend\n", 7, "pid=0, expected a process ID above 0", false },
        { "gone bad key", CAPS TICK "gone tid=3\nend\n", 7, "'gone' line: unknown key 'tid'", false },
        { "rate negative", CAPS TICK "rate pid=3 fault_rate=-1\nend\n", 7, "expected a process ID above 0 and a rate",
          false },
        { "rate without pid", CAPS TICK "rate fault_rate=5\nend\n", 7, "pid=0 fault_rate=5, expected", false },
        { "rate without rate", CAPS TICK "rate pid=5\nend\n", 7, "pid=5 fault_rate=nan, expected", false },
        { "line twice", CAPS TICK "mem total=1\nmem total=2\nend\n", 8, "second 'mem' line in tick 0", false },
        { "bad counter", CAPS TICK "vm pgfault=12/x\nend\n", 7, "pgfault=12/x: expected a counter", false },
        { "bad counter flag", CAPS TICK "psi some_total=1:z\nend\n", 7, "expected a counter", false },
        { "stat of unknown size", CAPS TICK "stat 32K 1\nend\n", 7, "'32K' is not one of the recording's sizes",
          false },
        { "too many stats", CAPS TICK "stat 16K 1,2,3\nend\n", 7, "more counters than the 2 stats of 16K", false },
        { "knobs count", CAPS TICK "knobs never never\nend\n", 7, "expected 1 values (one per knob), got 2", false },
        { "list length", CAPS TICK "proc pid=1 cov_anon=1,1\nend\n", 7,
          "cov_anon=: expected 1 comma-separated numbers", false },
        { "nine procs", CAPS TICK "proc\nproc\nproc\nproc\nproc\nproc\nproc\nproc\nproc\nend\n", 15,
          "more than 8 'proc' lines in tick 0", false },
        { "17 gone", CAPS TICK X17("gone pid=4\n") "end\n", 23, "more than 16 'gone' lines in tick 0", false },
        { "17 rates", CAPS TICK X17("rate pid=4 fault_rate=1\n") "end\n", 23, "more than 16 'rate' lines in tick 0",
          false },
};

static void test_malformed(void **state) {
        char path[256];
        (void) state;
        tmp_path(path, sizeof(path), "bad.rec");
        for (size_t i = 0; i < ELEMENTSOF(malformed); i++) {
                const struct malformed *m = &malformed[i];
                struct mthp_record_reader *r = NULL;
                struct mthp_caps caps;
                char err[512], want[300];
                int e;
                write_file(path, m->text);
                e = mthp_record_open_read(path, &caps, &r, err, sizeof(err));
                if (!m->in_caps) {
                        if (e < 0)
                                fail_msg("%s: open failed: %s", m->name, err);
                        do
                                e = mthp_record_read(r, &snap_out, err, sizeof(err));
                        while (e > 0);
                        mthp_record_close_read(r);
                }
                if (e != -EBADMSG)
                        fail_msg("%s: got %d, expected -EBADMSG (%s)", m->name, e, err);
                snprintf(want, sizeof(want), "%s:%u: ", path, m->line);
                if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, m->says))
                        fail_msg("%s: message '%s', expected '%s...%s'", m->name, err, want, m->says);
        }
}

static void test_nul_byte(void **state) {
        struct mthp_record_reader *r = NULL;
        struct mthp_caps caps;
        char path[256], err[512];
        (void) state;
        tmp_path(path, sizeof(path), "binary.rec");
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fwrite("mthp-record 1\ncaps\0x\n", 1, 21, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(mthp_record_open_read(path, &caps, &r, err, sizeof(err)), -EBADMSG);
        assert_non_null(strstr(err, ":2: NUL byte"));
}

static void test_open_errors(void **state) {
        struct mthp_record_writer *w = NULL;
        struct mthp_record_reader *r = NULL;
        char path[256], err[512];
        (void) state;
        make_caps(&caps_in);
        tmp_path(path, sizeof(path), "no/such/dir.rec");
        assert_int_equal(mthp_record_open_write(path, &caps_in, &w), -ENOENT);
        assert_int_equal(mthp_record_open_read(path, &caps_out, &r, err, sizeof(err)), -ENOENT);
        assert_non_null(strstr(err, "no/such/dir.rec: cannot open"));
        /* a full disk shows at the first write, as an errno */
        if (access("/dev/full", W_OK) == 0)
                assert_int_equal(mthp_record_open_write("/dev/full", &caps_in, &w), -ENOSPC);
        assert_int_equal(mthp_record_close_write(NULL), 0);
        mthp_record_close_read(NULL);
}

static int setup(void **state) {
        (void) state;
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        (void) state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_replay_same_decisions),
                cmocka_unit_test(test_minimal_file),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_nul_byte),
                cmocka_unit_test(test_open_errors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
