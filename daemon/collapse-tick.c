/* SPDX-License-Identifier: MIT */
/* MADV_COLLAPSE from the daemon: Collapse=yes policies' anon regions and
 * the repair of shmem that mthpd's own 2M raise left at small folios
 * (lib/collapse.c does the walking and advising). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "daemon.h"
#include "mthp/host.h"
#include "mthp/log.h"
#include "mthp/procfs.h"
#include "mthp/util.h"

#define COLLAPSE_DIRS_MAX 64
#define COLLAPSE_PIDS_MAX 256

/* The processes of a cgroup and its children (bounded), from cgroup.procs
 * in the memory hierarchy. */
static unsigned cgroup_pids(const struct daemon *d, const char *path, pid_t *pids, unsigned max) {
        char dirs[COLLAPSE_DIRS_MAX][MTHP_PATH_MAX];
        unsigned n_dirs = 0, n = 0;
        const char *base = d->caps.cg_memory[0] ? d->caps.cg_memory : d->caps.cg_unified;
        if (!base[0])
                return 0;
        snprintf(dirs[n_dirs++], MTHP_PATH_MAX, "%s%s", base, strcmp(path, "/") == 0 ? "" : path);
        for (unsigned i = 0; i < n_dirs && n < max; i++) {
                char file[MTHP_PATH_MAX + 16], buf[8192];
                if (snprintf(file, sizeof(file), "%s/cgroup.procs", dirs[i]) >= (int) sizeof(file))
                        continue;
                if (mthp_host_read(d->host, file, buf, sizeof(buf)) >= 0)
                        for (char *l = strtok(buf, "\n"); l && n < max; l = strtok(NULL, "\n"))
                                if (atoi(l) > 0)
                                        pids[n++] = atoi(l);
                int dfd = mthp_host_open_file(d->host, dirs[i], O_RDONLY | O_DIRECTORY);
                if (dfd < 0)
                        continue;
                DIR *dir = fdopendir(dfd);
                if (!dir) {
                        close(dfd);
                        continue;
                }
                struct dirent *de;
                while ((de = readdir(dir)) && n_dirs < COLLAPSE_DIRS_MAX)
                        if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
                            snprintf(dirs[n_dirs], MTHP_PATH_MAX, "%s/%s", dirs[i], de->d_name) < MTHP_PATH_MAX)
                                n_dirs++;
                closedir(dir);
        }
        return n;
}

/* Is the PMD size on for shmem because mthpd raised it: the engine's
 * choice at this tick is 'always', the knob holds it, and no pin or other
 * writer put it there? */
static bool shmem_pmd_raised(const struct daemon *d) {
        for (unsigned i = 0; i < d->caps.n_sizes; i++) {
                int k = d->caps.sizes[i].knob[MTHP_SHMEM];
                if (d->caps.sizes[i].kb != d->caps.pmd_kb || k < 0)
                        continue;
                return !daemon_knob_pinned(d, k) && strcmp(d->engine_value[k], "always") == 0 &&
                       strcmp(d->known[k], "always") == 0 && !mthp_actuator_is_foreign(d->act, k);
        }
        return false;
}

/* The tick's collapse figures, anon and shmem together. */
static void add_result(struct mthp_collapse_result *sum, const struct mthp_collapse_result *r) {
        sum->candidates += r->candidates;
        sum->attempted += r->attempted;
        sum->collapsed += r->collapsed;
        sum->failed += r->failed;
        sum->kb_collapsed += r->kb_collapsed;
        sum->usec += r->usec;
}

/* A failed MADV_COLLAPSE run, logged once per distinct error ("MADV_COLLAPSE
 * <what> failed: ..."; unsupported is added for EOPNOTSUPP). True: stop
 * collapsing this tick, the kernel has no MADV_COLLAPSE. */
static bool collapse_failed(struct daemon *d, int r, const char *what, const char *unsupported) {
        if (r != d->collapse_error)
                mthp_log(LOG_WARNING, "MADV_COLLAPSE %s failed: %s%s", what, mthp_errno_words(r),
                         r == -EOPNOTSUPP ? unsupported : "");
        d->collapse_error = r;
        return r == -EOPNOTSUPP;
}

/* Shmem repair (ShmemCollapse=yes, the default): while mthpd's own raise
 * keeps 2M on for shmem and the host is not under memory pressure, the
 * recently sampled, faulting processes (in faults, or in the shmem pages
 * they bring in: mthp_engine_proc_pages_rate) whose largest shmem mapping the
 * per-size knobs reach, aligned for 2M, but with sampled pages in small
 * folios (the page cache was filled before the raise, lib/density.c's
 * probe) get that mapping's aligned blocks they touched whose page cache
 * is dense (lib/collapse.c: whoever wrote it) collapsed, most pages
 * faulted first, within what is left of the tick's budget after Collapse=yes. A
 * repair under way goes on, faulting or sampled or not, until
 * SHM_REPAIR_QUIET_PASSES passes in a row find nothing left (the probe
 * samples only a few pages) or the process is gone. A cgroup whose
 * policy says Shmem=never is left alone; misaligned mappings are never
 * tried (explain says why). */
#define SHM_REPAIR_QUIET_PASSES 3

/* The repair entry of pid's mapping at addr; with create, a new one (in a
 * free slot, else the one worked on longest ago). NULL: none. */
static struct daemon_shm_repair *repair_entry(struct daemon *d, int pid, uint64_t addr, bool create) {
        struct daemon_shm_repair *old = NULL;
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS; i++) {
                struct daemon_shm_repair *e = &d->shm_repair[i];
                if (e->pid == pid && e->addr == addr)
                        return e;
                if (!old || (old->pid && (!e->pid || e->tick < old->tick)))
                        old = e;
        }
        if (!create)
                return NULL;
        *old = (struct daemon_shm_repair) { .pid = pid, .addr = addr };
        return old;
}

void daemon_collapse_fill(struct daemon *d) {
        for (unsigned i = 0; i < d->snap.density.n_procs && i < MTHP_DENSITY_PROCS; i++) {
                struct mthp_proc_density *p = &d->snap.density.proc[i];
                const struct daemon_shm_repair *e =
                        p->shm.reach != MTHP_SHM_NONE ? repair_entry(d, p->pid, p->shm.addr, false) : NULL;
                p->shm_repaired_kb = e ? e->kb : 0;
        }
}

/* One pass over pid's shmem mapping [addr, addr + bytes); false: stop
 * repairing on this host (collapse_failed said why). A repair entry whose
 * process is gone, or whose PID now names another process, ends; from
 * memory (the process not sampled now) nothing else is tried then. */
static bool repair_pass(struct daemon *d, uint64_t t, int pid, const char *comm, const char *cgroup, uint64_t addr,
                        uint64_t bytes, bool from_memory) {
        const struct mthp_policy *pol =
                cgroup && cgroup[0] ? mthp_engine_policy(&d->cfg.engine, cgroup, NULL, 0) : NULL;
        uint64_t start = 0;
        struct daemon_shm_repair *known = repair_entry(d, pid, addr, false);
        int q = mthp_proc_read_starttime(d->host, pid, &start);
        /* gone, the PID reused, or its cgroup's policy now says never:
         * that repair ends */
        if (known && (q < 0 || (known->starttime && known->starttime != start) ||
                      (pol && pol->mode[MTHP_SHMEM] == MTHP_POLICY_NEVER)))
                known->pid = 0;
        if (q < 0 || (pol && pol->mode[MTHP_SHMEM] == MTHP_POLICY_NEVER) || (from_memory && (!known || !known->pid)))
                return true;
        struct mthp_collapse_result res;
        int r = mthp_collapser_run_shm(d->collapser, pid, addr, bytes, t, &res);
        struct daemon_shm_repair *e = repair_entry(d, pid, addr, r >= 0);
        if (r < 0 && e)
                e->pid = 0;   /* gone, or refused (EPERM: for good): the repair ends */
        if (r == -ESRCH)
                return true;
        if (r < 0) {
                char what[64];
                snprintf(what, sizeof(what), "of pid %d (%s)'s shmem", pid, comm);
                return !collapse_failed(d, r, what, "; shmem held below 2M stays so on this host");
        }
        add_result(&d->collapse_last, &res);
        e->starttime = start;
        e->bytes = bytes;
        mthp_strcpy(e->comm, sizeof(e->comm), comm);
        mthp_strcpy(e->cgroup, sizeof(e->cgroup), cgroup ? cgroup : "");
        e->tick = d->engine.tick;
        e->kb += res.kb_collapsed;
        if (res.candidates || res.collapsed)
                e->quiet = 0;
        else if (!res.deferred && e->quiet < UINT8_MAX)
                e->quiet++;
        if (res.collapsed)
                mthp_log(LOG_INFO, "collapsed %u region(s), %llu MiB, of pid %d (%s)'s %llu MiB shmem "
                         "mapping at 0x%llx (not mapped by 2M folios after the 2M shmem raise) in %.1f ms",
                         res.collapsed, (unsigned long long) res.kb_collapsed / 1024, pid, comm,
                         (unsigned long long) (bytes >> 20), (unsigned long long) addr, (double) res.usec / 1000.0);
        else if (res.failed)
                mthp_log(LOG_DEBUG, "MADV_COLLAPSE of pid %d's shmem at 0x%llx: %u block(s) failed (%s)", pid,
                         (unsigned long long) addr, res.failed, mthp_errno_words(res.last_error));
        return true;
}

static bool repair_going(const struct daemon_shm_repair *e) {
        return e && e->pid && e->kb && e->quiet < SHM_REPAIR_QUIET_PASSES;
}

static void collapse_shmem(struct daemon *d, uint64_t t) {
        if (!d->cfg.shmem_collapse || !d->caps.pmd_kb || !shmem_pmd_raised(d))
                return;
        if (d->snap.psi.present && d->snap.psi.some_avg10 >= d->cfg.engine.psi_some_max)
                return; /* pressure: the engine lowers sizes now, copying memory would add to it */
        bool done[MTHP_ENGINE_PROCS] = { false };
        double rate[MTHP_ENGINE_PROCS];
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                rate[j] = mthp_engine_proc_pages_rate(&d->cfg.engine, &d->caps, &d->engine, j, MTHP_SHMEM);
        for (;;) {
                int best = -1;
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                        const struct mthp_engine_proc *p = &d->engine.proc[j];
                        const struct mthp_shm_mapping *m = &p->shm;
                        /* the probe saw small folios there, or a repair under
                         * way still finds blocks (the probe samples a few pages) */
                        bool small = m->sampled >= 4 && m->large < m->sampled;
                        bool going = repair_going(repair_entry(d, p->pid, m->addr, false));
                        /* a repair starts for a recently sampled process
                         * that faults, counted in faults or in the shmem
                         * pages they bring in (where it uses 2M densely and
                         * its faults were sampled by address, a shmem
                         * fault counts 512: pgbench TPC-B's backends,
                         * filling the pool with 2M folios, fault 10-50
                         * times a second); one under way goes on below,
                         * sampled or not */
                        bool faults = p->fault_rate >= d->cfg.engine.min_proc_fault_rate ||
                                      rate[j] >= d->cfg.engine.min_proc_fault_rate;
                        if (done[j] || !p->pid || p->thp_off || p->seen_tick + 3 < d->engine.tick || !faults ||
                            m->reach != MTHP_SHM_PER_SIZE ||
                            m->align_kb < d->caps.pmd_kb || m->bytes < (uint64_t) d->caps.pmd_kb * 1024 ||
                            !(small || going))
                                continue;
                        if (best < 0 || rate[j] > rate[best] ||
                            (rate[j] == rate[best] && p->fault_rate > d->engine.proc[best].fault_rate))
                                best = (int) j;
                }
                if (best < 0)
                        break;
                done[best] = true;
                const struct mthp_engine_proc *p = &d->engine.proc[best];
                if (!repair_pass(d, t, p->pid, p->comm, p->cgroup, p->shm.addr, p->shm.bytes, false))
                        return;
        }
        /* Repairs under way that were not worked on above: a database's
         * backends fault while they map the buffer pool and hardly at all
         * after, while they keep using it (pgbench -S: the repair stopped at
         * 140 of ~400 MiB when they fell below MinProcessFaultRate=), and a
         * process that faults nothing is not sampled at all. They go on,
         * from what the repair remembers, until it ends (quiet, or the
         * process gone). */
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS; i++) {
                struct daemon_shm_repair *e = &d->shm_repair[i];
                if (!repair_going(e) || e->tick == d->engine.tick || !e->bytes)
                        continue;
                char comm[MTHP_PROC_COMM_MAX], cgroup[MTHP_CGROUP_PATH_MAX];
                mthp_strcpy(comm, sizeof(comm), e->comm);
                mthp_strcpy(cgroup, sizeof(cgroup), e->cgroup);
                if (!repair_pass(d, t, e->pid, comm, cgroup, e->addr, e->bytes, true))
                        return;
        }
}

static void config_budget(const struct mthp_config *cfg, struct mthp_collapse_budget *b) {
        mthp_collapse_budget_default(b);
        b->max_kb_per_tick = cfg->collapse_budget_kb;
        b->max_usec = mthp_collapse_usec_per_tick(cfg->interval_usec, cfg->collapse_cpu);
}

/* What the collapser holds, not what was asked of it: a reload test reads
 * this line to see the running collapser take the new values. */
static void log_budget(const struct daemon *d, const char *why) {
        struct mthp_collapse_budget b;
        char kb[16];
        mthp_collapser_get_budget(d->collapser, &b);
        mthp_format_size((unsigned) b.max_kb_per_tick, kb, sizeof(kb));
        if (b.max_kb_per_tick == 0)
                mthp_log(LOG_INFO, "%sMADV_COLLAPSE budget: none (CollapseBudget=none): no collapsing", why);
        else
                mthp_log(LOG_INFO, "%sMADV_COLLAPSE budget: %s and %.1f ms a tick (CollapseCPU=%g%% of a core at "
                         "a %g s interval)", why, kb, (double) b.max_usec / 1000.0, d->cfg.collapse_cpu,
                         (double) d->cfg.interval_usec / 1e6);
}

void daemon_collapse_open(struct daemon *d) {
        struct mthp_collapse_budget cb;
        config_budget(&d->cfg, &cb);
        if (mthp_collapser_new(d->host, &cb, &d->collapser) < 0)
                d->collapser = NULL;
        else
                log_budget(d, "");
}

void daemon_collapse_config(struct daemon *d) {
        struct mthp_collapse_budget now, want;
        if (!d->collapser)
                return;
        mthp_collapser_get_budget(d->collapser, &now);
        config_budget(&d->cfg, &want);
        if (now.max_kb_per_tick == want.max_kb_per_tick && now.max_usec == want.max_usec)
                return;
        int r = mthp_collapser_set_budget(d->collapser, &want);
        if (r < 0)      /* the configuration checked it: should not happen */
                mthp_log(LOG_WARNING, "reload: MADV_COLLAPSE budget not changed: %s", mthp_errno_words(r));
        else
                log_budget(d, "reload: ");
}

/* Collapse=yes: MADV_COLLAPSE the dense, long-lived regions of those
 * cgroups' processes, within the tick's budget (mthp_collapser_run). */
void daemon_collapse(struct daemon *d, uint64_t t) {
        memset(&d->collapse_last, 0, sizeof(d->collapse_last));
        if (!d->collapser || mthp_actuator_observing(d->act) || !d->cfg.collapse_budget_kb)
                return;
        mthp_collapser_begin_tick(d->collapser, t);
        for (unsigned c = 0; c < d->snap.n_cgroups; c++) {
                const struct mthp_policy *pol = mthp_engine_policy(&d->cfg.engine, d->snap.cgroup[c].path, NULL, 0);
                if (!pol || !pol->collapse)
                        continue;
                pid_t pids[COLLAPSE_PIDS_MAX];
                unsigned n = cgroup_pids(d, d->snap.cgroup[c].path, pids, COLLAPSE_PIDS_MAX);
                for (unsigned i = 0; i < n; i++) {
                        struct mthp_collapse_result res;
                        int r = mthp_collapser_run_in(d->collapser, pids[i], d->snap.cgroup[c].path,
                                                      d->caps.cg_layout, t, &res);
                        if (r == -ESRCH)
                                continue;
                        if (r < 0) {
                                char what[MTHP_CGROUP_PATH_MAX + 96];
                                snprintf(what, sizeof(what), "for cgroup %s (policy %s)", d->snap.cgroup[c].path,
                                         pol->name);
                                if (collapse_failed(d, r, what, "; Collapse= has no effect on this host"))
                                        return;
                                continue;
                        }
                        add_result(&d->collapse_last, &res);
                        if (res.collapsed)
                                mthp_log(LOG_INFO, "collapsed %u region(s), %llu MiB, of pid %d in cgroup %s "
                                         "(policy %s, Collapse=yes) in %.1f ms",
                                         res.collapsed, (unsigned long long) res.kb_collapsed / 1024, pids[i],
                                         d->snap.cgroup[c].path, pol->name, (double) res.usec / 1000.0);
                }
        }
        collapse_shmem(d, t);
        mthp_collapser_totals(d->collapser, &d->collapse_total);
}
