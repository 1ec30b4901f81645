/* SPDX-License-Identifier: MIT */
/* What the engine remembers between ticks: each
 * sampled process's usage of every size, decayed; its fault samples and the
 * anon/shmem split they give; the managed cgroups' fault rates. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

/* How much of a block of this size a process really uses. Content is not
 * use: while no folio of this size or larger is handed out (folios_on
 * false), pagemap coverage says exactly what was touched, and a written
 * zero is a touch. Once folios that large are on, pagemap shows every
 * subpage of a folio present, so the lower of coverage and the share of
 * non-zero subpages (the sampler counts zeros only beside data,
 * include/mthp/density.h). NAN: no sample. */
static double usage(const struct mthp_proc_density *p, enum mthp_kind kind, unsigned size, bool folios_on) {
        double c = p->coverage[kind][size], z = p->zero[kind][size];
        double u = NAN;
        if (!isnan(c))
                u = c;
        if (folios_on && !isnan(z) && (isnan(u) || 1 - z < u))
                u = 1 - z;
        return u;
}

int mthp_engine_largest_always(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind) {
        int g = mthp_caps_find_knob(caps, kind == MTHP_ANON ? "global/enabled" : "global/shmem_enabled");
        bool global_always = g >= 0 && strcmp(snap->knob[g], "always") == 0;
        int top = -1;
        for (unsigned z = 0; z < caps->n_sizes; z++) {
                int k = caps->sizes[z].knob[kind];
                if (k < 0)
                        continue;
                if (strcmp(snap->knob[k], "always") == 0 || (global_always && strcmp(snap->knob[k], "inherit") == 0))
                        top = (int) z;
        }
        return top;
}

/* Fold one sample (usage u seen over w blocks) into a decayed average. A
 * full-weight sample far from the memory means the process changed phase
 * (dense -> sparse -> dense): start over from it. A light one (a few blocks
 * seen between two mappings) only nudges the average. */
static void fold_usage(double *mw, double *mu, double u, double w) {
        double old_w = *mw * PROC_DECAY;
        if (old_w > 0 && w >= old_w / 2 && fabs(u - *mu / *mw) > 0.5)
                *mw = *mu = 0;
        *mw = *mw * PROC_DECAY + w;
        *mu = *mu * PROC_DECAY + u * w;
}

/* The usage of the sample's mappings that are not hg, at one size: the hg
 * part taken out of the whole by its blocks (exact for a census, where
 * every block weighs the same). NAN: none there, or no hg part to take out
 * (then *pw = 0). */
static double plain_usage(const struct mthp_proc_density *p, enum mthp_kind kind, unsigned z, bool folios_on,
                          double *pw) {
        double b = p->blocks[kind][z], hb = p->hg_blocks[kind][z];
        *pw = 0;
        if (!(hb > 0) || isnan(p->coverage[kind][z]) || isnan(p->hg_coverage[kind][z]))
                return NAN;
        if (b - hb <= 0)
                return NAN;
        double c = (p->coverage[kind][z] * b - p->hg_coverage[kind][z] * hb) / (b - hb);
        c = c < 0 ? 0 : c > 1 ? 1 : c;
        double z0 = p->zero[kind][z];
        if (folios_on && !isnan(z0) && 1 - z0 < c)
                c = 1 - z0;
        *pw = b - hb;
        return c;
}

/* Does the process's memory of a kind turn over ENGINE_CHURN_TURNOVER
 * times a second, with folios of size index top (or larger) on? Each
 * of its faults brings a folio of the top size at most, and the host's
 * mTHP allocations of the kind bound all of them together. stress-ng --vm
 * (trace stress-vm): 4,087 faults/s with 2M on, 8.4 GB/s, beside 111 MiB
 * of RSS. A sparse program that holds what it faults grows by its fault
 * pages: it turns over less than once a second after its first second. */
static bool churns(const struct mthp_caps *caps, const struct mthp_snapshot *snap, const struct mthp_proc_density *p,
                   const struct mthp_engine_proc *m, enum mthp_kind kind, int top) {
        if (top < 0 || snap->dt <= 0 || p->rss_kb[kind] == 0)
                return false;
        /* its faults of this kind only (a backend's shmem faults are no
         * turnover of its anon), per second whatever the tick's length
         * (an early tick is a quarter of one) */
        double kb = p->fault_rate * engine_fault_share(m, kind, false) * caps->sizes[top].kb;
        double host = snap->kind_pages_rate[kind] * mthp_caps_page_kb(caps);
        if (host < kb)
                kb = host;
        return kb >= ENGINE_CHURN_TURNOVER * (double) p->rss_kb[kind];
}

/* Which of two remembered processes gives its slot up: a free slot first,
 * one sampled earlier in this tick last; then one that is not persistent
 * (engine_persistent: seen under 5 s with less than MinBloatBytes at
 * stake) before one that is, then the one seen longest ago. On a build box
 * up to 8 compiler jobs a tick are sampled: by age alone two ticks of them
 * evicted a service seen for minutes, whose faults then counted as a
 * newcomer's again for 5 s. */
static bool evict_before(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                         const struct mthp_snapshot *snap, const struct mthp_engine_proc *c,
                         const struct mthp_engine_proc *best) {
        if (!best)
                return true;
        if (!c->pid || !best->pid)
                return !c->pid; /* the last free slot, as ever */
        /* one sampled earlier in this tick keeps its sample for this decision */
        bool nc = snap->tick && c->seen_tick == snap->tick, nb = snap->tick && best->seen_tick == snap->tick;
        if (nc != nb)
                return !nc;
        bool pc = engine_persistent(caps, c, MTHP_ANON, st->min_bloat_kb) ||
                  engine_persistent(caps, c, MTHP_SHMEM, st->min_bloat_kb);
        bool pb = engine_persistent(caps, best, MTHP_ANON, st->min_bloat_kb) ||
                  engine_persistent(caps, best, MTHP_SHMEM, st->min_bloat_kb);
        if (pc != pb)
                return !pc;
        return c->seen_tick < best->seen_tick;
}

/* Its slot for a sampled process: the one it had, emptied when the pid
 * now names another process, else a free one or the one evict_before
 * picks. */
static struct mthp_engine_proc *remember_slot(const struct mthp_caps *caps, struct mthp_engine_state *st,
                                              const struct mthp_snapshot *snap,
                                              const struct mthp_proc_density *p) {
        struct mthp_engine_proc *m = NULL, *oldest = NULL;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                struct mthp_engine_proc *c = &st->proc[j];
                if (c->pid == p->pid) {
                        m = c;
                        break;
                }
                if (evict_before(caps, st, snap, c, oldest))
                        oldest = c;
        }
        /* The pid was reused (or exec'd: fork+exec keeps the pid and
         * changes comm): a new process, in the same slot. The search
         * stopped at the match, so `oldest` only covers the slots
         * before it (NULL when the match is slot 0). */
        /* Or the scanner saw a new process at this pid (a new start
         * time: its rate is a lifetime average again) with the same
         * comm: nothing remembered of the old one is its. */
        bool reused = m && m->seen_tick && m->seen_tick < snap->tick && p->new_proc && !m->new_proc;
        if (m && (reused || strncmp(m->comm, p->comm, sizeof(m->comm)) != 0)) {
                memset(m, 0, sizeof(*m));
                m->pid = p->pid;
                m->first_usec = snap->t_usec;
        }
        if (!m) {
                m = oldest;
                memset(m, 0, sizeof(*m));
                m->pid = p->pid;
                m->first_usec = snap->t_usec;
        }
        return m;
}

/* Who it is (comm, cgroup), its fault rate, whether THP is off for it
 * (then nothing it used of a size is kept), its RSS smoothed. */
static void remember_basics(struct mthp_engine_proc *m, const struct mthp_proc_density *p) {
        memcpy(m->comm, p->comm, sizeof(m->comm));
        m->comm[sizeof(m->comm) - 1] = 0;
        if (p->cgroup[0])
                mthp_strcpy(m->cgroup, sizeof(m->cgroup), p->cgroup);
        m->fault_rate = p->fault_rate;
        m->new_proc = p->new_proc;
        bool fresh = m->seen_tick == 0 && m->w[0][0] == 0 && m->rss_kb[0] == 0 && m->rss_kb[1] == 0;
        m->thp_off = p->thp_disabled;
        if (m->thp_off) {
                /* it gets no folio of any size: what it uses of one says nothing */
                memset(m->w, 0, sizeof(m->w));
                memset(m->u, 0, sizeof(m->u));
                memset(m->wp, 0, sizeof(m->wp));
                memset(m->up, 0, sizeof(m->up));
                memset(m->hg, 0, sizeof(m->hg));
                memset(m->peak_u, 0, sizeof(m->peak_u));
                memset(m->peak_rss_kb, 0, sizeof(m->peak_rss_kb));
                memset(m->peak_base_kb, 0, sizeof(m->peak_base_kb));
                memset(m->data_sparse, 0, sizeof(m->data_sparse));
        }
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                /* smoothed: a map/unmap loop's RSS depends on the instant */
                m->rss_kb[k] = fresh ? p->rss_kb[k] : (m->rss_kb[k] + p->rss_kb[k]) / 2;
                m->nohuge_kb[k] = fresh ? p->nohuge_kb[k] : (m->nohuge_kb[k] + p->nohuge_kb[k]) / 2;
        }
}

/* Its densest sample of a size and the RSS it held then (peak_u,
 * peak_rss_kb, peak_base_kb), for the churn rule. on: the largest size of
 * the kind at always (-1 none); dense: its keep threshold; content: some
 * size of the kind read its zero share. */
static void remember_peak(const struct mthp_engine_kind *ks, const struct mthp_snapshot *snap,
                          const struct mthp_proc_density *p, struct mthp_engine_proc *m, int k, unsigned z, int on,
                          double u, double dense, bool content) {
        double dense_raise = engine_raise_threshold(dense);
        /* its densest sample, and the RSS it held then (as
         * dense again: the larger RSS). Not one that read
         * no content at all with the size on: whole folios
         * are present, so its coverage is 1 whatever it
         * uses (an all-zero mapping has no zero share at
         * any size). One that read data at some size
         * (stress-ng --vm: zeros 0 at 16K, none read in a
         * whole larger block) counts by its coverage. */
        bool blind = (int) z <= on && isnan(p->zero[k][z]) && !content;
        bool larger = !blind && m->rss_kb[k] > m->peak_rss_kb[k][z];
        /* or any other sample that reads dense enough to
         * raise (the threshold peak_u is judged by for a
         * raise) at a larger RSS, by presence with the size
         * off, by content with it on: a churner first seen
         * while it populated its buffer (stress-ng --vm:
         * 91 of 129 MiB) held the rest densely too; one whose
         * densest sample read 1.00 and whose later ones at its
         * whole buffer read 0.9996 would lose the rule (a
         * stress-ng --vm worker did, 26 s in). By content (the size on)
         * below a new densest sample, no more than MaxBloat
         * past what presence or the densest sample showed
         * (peak_base_kb): the zero share counts mappings where
         * no read found data as touched, so content alone must
         * not ratchet it up tick by tick. The churn rule
         * then allows MaxBloat on top: (1 + MaxBloat)^2 of
         * the base, 1.44 at 20%. A new densest sample by
         * content still sets the base: a worker first dense
         * mid-map (stress-ng --vm: at 47 MiB of a 129 MiB
         * buffer) needs it.
         * With the size off, at the lower of the sample's
         * RSS and the smoothed one (which still holds half
         * of the RSS before), and never raised in the tick
         * after a step down: the folios of before may still
         * be there, whole. Once it has read dense, no
         * sample lowers peak_rss_kb. */
        bool off = (int) z > on;
        bool settled = !(ks->last_dir < 0 && snap->tick < ks->last_change_tick + 2);
        uint64_t seen_kb = off && p->rss_kb[k] < m->rss_kb[k] ? p->rss_kb[k] : m->rss_kb[k];
        bool was_dense = m->peak_u[k][z] >= dense;
        bool grows = seen_kb > m->peak_rss_kb[k][z] && (!off || settled);
        if (!blind && (u > m->peak_u[k][z] || (u == m->peak_u[k][z] && larger))) {
                if (!was_dense || grows)
                        m->peak_rss_kb[k][z] = m->peak_base_kb[k][z] = seen_kb;
        } else if (!blind && u >= dense_raise && grows) {
                if (off)
                        m->peak_rss_kb[k][z] = m->peak_base_kb[k][z] = seen_kb;
                else { /* by content: within MaxBloat of the base */
                        double cap = (double) m->peak_base_kb[k][z] / dense;
                        uint64_t to = (double) seen_kb < cap ? seen_kb : (uint64_t) cap;
                        if (to > m->peak_rss_kb[k][z])
                                m->peak_rss_kb[k][z] = to;
                }
        }
        if (!blind && u > m->peak_u[k][z])
                m->peak_u[k][z] = u;
}

/* One size of one kind of a sample: its usage (all mappings and those
 * that are not hg), its densest sample, its zeros beside data. */
static void remember_size(const struct mthp_engine_state *st, const struct mthp_snapshot *snap,
                          const struct mthp_proc_density *p, struct mthp_engine_proc *m, int k, unsigned z, int on,
                          double dense, bool content) {
        double u = usage(p, k, z, (int) z <= on);
        if (isnan(u))
                return; /* no sample: keep what we knew */
        double w = p->blocks[k][z] > 0 ? p->blocks[k][z] : 1, pw;
        fold_usage(&m->w[k][z], &m->u[k][z], u, w);
        remember_peak(&st->kind[k], snap, p, m, k, z, on, u, dense, content);
        /* zeros beside data, with the size on: a
         * program that turned sparse, not a write
         * caught before its end (data_sparse). In a
         * row: a sample with the size off, or one
         * whose windows with data were too few to
         * say (zero_data NAN beside a known zero
         * share: its zeros were ahead), ends it */
        double zd = p->zero_data[k][z];
        if ((int) z <= on && !isnan(zd) && 1 - zd < dense)
                m->data_sparse[k][z] += m->data_sparse[k][z] < UINT8_MAX;
        else if ((int) z > on || !isnan(zd) || !isnan(p->zero[k][z]))
                m->data_sparse[k][z] = 0;
        /* the mappings that are not hg: all of them when the
         * sample saw no hg one */
        m->hg[k][z] = p->hg_blocks[k][z] > 0;
        double pu = m->hg[k][z] ? plain_usage(p, k, z, (int) z <= on, &pw) : u;
        if (!m->hg[k][z])
                pw = w;
        if (!isnan(pu))
                fold_usage(&m->wp[k][z], &m->up[k][z], pu, pw);
        else /* all hg: nothing of the others seen */
                m->wp[k][z] *= PROC_DECAY, m->up[k][z] *= PROC_DECAY;
}

/* Its fault samples, which split its faults between the kinds once there
 * are enough (fs, fs_known), and whether it waits for them (fs_pending). */
static void remember_fault_samples(const struct mthp_snapshot *snap, const struct mthp_proc_density *p,
                                   struct mthp_engine_proc *m) {
        /* halved at each sample, but never below 8 in all: so 8
         * added up split its faults, and a process with 3 samples a
         * tick (a few of many faulting processes, or one whose
         * faults fell) has its split renewed every tick from about
         * its last 8. Halved outright, 3 a tick never reach 8 (6 at
         * most): it would wait for good (kind_demand), or keep the
         * split its first 8 gave, however old */
        double held = engine_fault_samples(m), got = 0;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                got += p->fault_samples[k];
        got += p->fault_samples_other;
        double keep = 0.5;
        if (held * 0.5 + got < ENGINE_FAULT_SAMPLES_MIN)
                keep = held > 0 ? fmin(1, (ENGINE_FAULT_SAMPLES_MIN + 1e-6 - got) / held) : 1;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                m->fs[k] = m->fs[k] * keep + p->fault_samples[k];
        m->fs_other = m->fs_other * keep + p->fault_samples_other;
        if (engine_fault_samples(m) >= ENGINE_FAULT_SAMPLES_MIN) {
                memcpy(m->fs_last, m->fs, sizeof(m->fs_last));
                m->fs_last_other = m->fs_other;
                m->fs_known = true;
        }
        bool wait = snap->density.fault_sampling && m->rss_kb[MTHP_SHMEM] >= MTHP_FAULT_SHARED_KB &&
                    engine_fault_samples(m) < ENGINE_FAULT_SAMPLES_MIN && !m->fs_known;
        /* for as long as it lasts: by memory held its faults would
         * be shmem's whatever they touch (kind_demand) */
        m->fs_pending = wait;
}

/* Its shared mapping's sampled folios (shm) and what the daemon repaired. */
static void remember_shm(const struct mthp_snapshot *snap, const struct mthp_proc_density *p,
                         struct mthp_engine_proc *m) {
        struct mthp_shm_mapping old = m->shm;
        bool same = old.addr == p->shm.addr && old.bytes == p->shm.bytes;
        if (same || p->shm.bytes >= old.bytes || snap->tick > m->shm_tick + PROC_FORGET_TICKS) {
                /* the daemon's count, for this mapping (0 for another) */
                m->shm_repaired_kb = p->shm_repaired_kb;
                m->shm = p->shm;
                m->shm_tick = snap->tick;
                /* a few probes a tick: half the last ones still count,
                 * if they came from the same probe (kpageflags counts
                 * 64K folios large, the PMD probe does not) */
                if (same && (!old.sampled || !p->shm.sampled || old.probe == p->shm.probe)) {
                        m->shm.sampled = (uint16_t) (old.sampled / 2 + p->shm.sampled);
                        m->shm.large = (uint16_t) (old.large / 2 + p->shm.large);
                        if (!p->shm.sampled)
                                m->shm.probe = old.probe;
                }
        }
}

/* Forget the processes not seen for PROC_FORGET_TICKS and those gone;
 * take the fault rate of those the /proc scan read but did not sample. */
static void remember_forget(const struct mthp_snapshot *snap, struct mthp_engine_state *st) {
        const struct mthp_density_view *dv = &snap->density;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (st->proc[j].pid && snap->tick > st->proc[j].seen_tick + PROC_FORGET_TICKS)
                        memset(&st->proc[j], 0, sizeof(st->proc[j]));
        /* gone: forgotten now, not PROC_FORGET_TICKS later (its last sample
         * would count for PROC_RECENT_TICKS); not one sampled this tick (a
         * new process at the pid) */
        for (unsigned g = 0; dv->valid && g < dv->n_gone && g < MTHP_DENSITY_GONE_MAX; g++)
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                        if (dv->gone[g] > 0 && st->proc[j].pid == dv->gone[g] && st->proc[j].seen_tick < snap->tick)
                                memset(&st->proc[j], 0, sizeof(st->proc[j]));
        /* not sampled but read by the /proc scan: its rate now, not its
         * last sample's; the rest of that sample stands */
        for (unsigned g = 0; dv->valid && g < dv->n_rates && g < MTHP_DENSITY_GONE_MAX; g++)
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                        if (dv->rates[g].pid > 0 && st->proc[j].pid == dv->rates[g].pid &&
                            st->proc[j].seen_tick < snap->tick && dv->rates[g].fault_rate >= 0 &&
                            isfinite(dv->rates[g].fault_rate)) {
                                st->proc[j].fault_rate = dv->rates[g].fault_rate;
                                st->proc[j].new_proc = false;   /* measured, not a lifetime average */
                        }
}

/* Fold this tick's density samples into the remembered processes. */
void engine_remember(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                     const struct mthp_snapshot *snap, struct mthp_engine_state *st) {
        const struct mthp_density_view *dv = &snap->density;
        int on[_MTHP_KIND_MAX];
        st->min_bloat_kb = engine_min_bloat_kb(cfg, snap);
        if (dv->valid && dv->n_procs)
                st->procs_seen_tick = snap->tick ? snap->tick : 1;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                on[k] = mthp_engine_largest_always(caps, snap, k);
        for (unsigned i = 0; dv->valid && i < dv->n_procs; i++) {
                const struct mthp_proc_density *p = &dv->proc[i];
                struct mthp_engine_proc *m = remember_slot(caps, st, snap, p);
                remember_basics(m, p);
                /* its MaxBloat's keep threshold: what reads dense */
                double dense = engine_keep_threshold(cfg, mthp_engine_policy(cfg, m->cgroup, NULL, 0));
                bool content[_MTHP_KIND_MAX] = { false };
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        for (unsigned z = 0; z < caps->n_sizes && z < MTHP_SIZES_MAX; z++)
                                content[k] = content[k] || !isnan(p->zero[k][z]);
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        /* after both kinds' RSS: without fault samples they split its faults */
                        m->churn[k] = churns(caps, snap, p, m, k, on[k]);
                        for (unsigned z = 0; z < caps->n_sizes && z < MTHP_SIZES_MAX && !m->thp_off; z++)
                                remember_size(st, snap, p, m, k, z, on[k], dense, content[k]);
                }
                remember_fault_samples(snap, p, m);
                if (p->shm.reach != MTHP_SHM_NONE)
                        remember_shm(snap, p, m);
                m->seen_tick = snap->tick;
                m->seen_usec = snap->t_usec > m->first_usec ? snap->t_usec : m->first_usec;
        }
        remember_forget(snap, st);
}

/* Fold this tick's managed cgroups into the remembered ones. */
void engine_remember_cgroups(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                             struct mthp_engine_state *st) {
        for (unsigned i = 0; i < snap->n_cgroups && i < MTHP_SNAP_CGROUPS; i++) {
                const struct mthp_cgroup_view *c = &snap->cgroup[i];
                struct mthp_engine_cgroup *m = NULL, *free_slot = NULL;
                for (unsigned j = 0; j < MTHP_SNAP_CGROUPS && !m; j++) {
                        if (strcmp(st->cgroup[j].path, c->path) == 0)
                                m = &st->cgroup[j];
                        else if (!free_slot && (!st->cgroup[j].path[0] || st->cgroup[j].seen_tick + PROC_FORGET_TICKS < snap->tick))
                                free_slot = &st->cgroup[j];
                }
                if (!m) {
                        if (!free_slot)
                                continue;
                        m = free_slot;
                        memset(m, 0, sizeof(*m));
                        mthp_strcpy(m->path, sizeof(m->path), c->path);
                }
                if (!c->new_cgroup) {
                        m->fault_rate = m->seen_tick ? (m->fault_rate + c->fault_rate) / 2 : c->fault_rate;
                        if (c->fault_rate >= cfg->min_proc_fault_rate)
                                m->say_tick = snap->tick ? snap->tick : 1;
                }
                m->seen_tick = snap->tick ? snap->tick : 1;
        }
        for (unsigned j = 0; j < MTHP_SNAP_CGROUPS; j++)
                if (st->cgroup[j].path[0] && st->cgroup[j].seen_tick + PROC_FORGET_TICKS < snap->tick)
                        memset(&st->cgroup[j], 0, sizeof(st->cgroup[j]));
}

const struct mthp_engine_cgroup *engine_remembered_cgroup(const struct mthp_engine_state *st, const char *path) {
        for (unsigned j = 0; j < MTHP_SNAP_CGROUPS; j++)
                if (st->cgroup[j].path[0] && strcmp(st->cgroup[j].path, path) == 0)
                        return &st->cgroup[j];
        return NULL;
}

double engine_remembered(const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned size) {
        return m->w[kind][size] > 0 ? m->u[kind][size] / m->w[kind][size] : NAN;
}

double engine_remembered_raise(const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned size, bool madvised) {
        if (!madvised)
                return engine_remembered(m, kind, size);
        /* a tiny remainder after the decay is no sample */
        return m->wp[kind][size] > 1e-3 ? m->up[kind][size] / m->wp[kind][size] : NAN;
}

/* No per-mapping fault counts exist: where a process's memory of a kind is
 * mostly (at least half) nh, that is taken as where it faults, and the rest
 * (stacks, a small heap, libc's data) as memory that does not fault. */
double engine_eligible_kb(const struct mthp_engine_proc *m, enum mthp_kind kind) {
        if (m->thp_off || 2 * m->nohuge_kb[kind] >= m->rss_kb[kind])
                return 0;
        return (double) (m->rss_kb[kind] - m->nohuge_kb[kind]);
}

/* The memory (kB) a process's density speaks for: what it holds that a
 * size can reach, or what it faults in of the kind in a second if that is
 * more. A generator that maps, touches one page of each 64K and unmaps
 * holds 2-7 MB at any sample but faults 275,000 pages a second: each of
 * those faults would allocate a whole folio. */
double engine_stake_kb(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind) {
        double flow = m->fault_rate * engine_fault_share(m, kind, true) * mthp_caps_page_kb(caps);
        double held = engine_eligible_kb(m, kind);
        return flow > held ? flow : held;
}

double engine_seen_s(const struct mthp_engine_proc *m) {
        return m->seen_usec > m->first_usec ? (double) (m->seen_usec - m->first_usec) / 1e6 : 0;
}

bool engine_persistent(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                       double floor_kb) {
        return m->seen_usec >= m->first_usec + ENGINE_PERSIST_USEC || engine_stake_kb(caps, m, kind) >= floor_kb;
}

double engine_fault_samples(const struct mthp_engine_proc *m) {
        return m->fs[MTHP_ANON] + m->fs[MTHP_SHMEM] + m->fs_other;
}

/* Issue 12: a postgres backend holds gigabytes of shared buffers and a few
 * MiB of heap, so by memory held nearly all its faults are shmem faults,
 * whatever it faults. Where its faults were sampled (FaultSampling=), the
 * addresses say: the share of samples in its non-nh mappings of the kind
 * (samples in nh mappings, files and text are no size's). Else by memory
 * held: the kind's share of its RSS, of which nh memory and everything of a
 * process with THP disabled is no size's (engine_eligible_kb). */
double engine_fault_share(const struct mthp_engine_proc *m, enum mthp_kind kind, bool eligible) {
        double samples = engine_fault_samples(m);
        if (samples >= ENGINE_FAULT_SAMPLES_MIN)
                return eligible && m->thp_off ? 0 : m->fs[kind] / samples;
        if (m->fs_known) {   /* too few now: the split they last gave */
                double last = m->fs_last[MTHP_ANON] + m->fs_last[MTHP_SHMEM] + m->fs_last_other;
                return eligible && m->thp_off ? 0 : m->fs_last[kind] / last;
        }
        double all = (double) m->rss_kb[MTHP_ANON] + (double) m->rss_kb[MTHP_SHMEM];
        if (all <= 0)
                return 0;
        return (eligible ? engine_eligible_kb(m, kind) : (double) m->rss_kb[kind]) / all;
}

void engine_fault_split_note(const struct mthp_engine_proc *m, enum mthp_kind kind, char *buf, size_t n) {
        double samples = engine_fault_samples(m);
        if (n)
                buf[0] = 0;
        if (samples >= ENGINE_FAULT_SAMPLES_MIN)
                snprintf(buf, n, ", %.0f%% of them %s by fault address", 100.0 * m->fs[kind] / samples,
                         mthp_kind_name(kind));
        else if (m->fs_known)
                snprintf(buf, n, ", %.0f%% of them %s by fault address when last sampled enough",
                         100.0 * engine_fault_share(m, kind, false), mthp_kind_name(kind));
}
