/* SPDX-License-Identifier: MIT */
/* mthpctl metrics: the knobs, every per-size counter of the kernel, mthpd's
 * state, counters and decisions and its managed cgroups, collected once into
 * the metric model (metrics.h) and printed as the Prometheus text exposition
 * format 0.0.4 (for node_exporter's textfile collector) or as JSON.
 * Prometheus naming: counters end in _total and are the kernel's or mthpd's
 * own since boot or start (rate() makes rates), values are in base units
 * (bytes, seconds), and nothing node_exporter already exports (page faults
 * from /proc/vmstat, PSI) is repeated. */
#include <ctype.h>
#include <fcntl.h>
#include <unistd.h>

#include "metrics.h"
#include "mthpctl.h"
#include "mthp/deciders.h"
#include "mthp/safe-io.h"
#include "mthp/status.h"

/* What the kernel's per-size stats count (Documentation/admin-guide/mm/
 * transhuge.rst); a stat this table lacks gets a generic help line. */
static const struct {
        const char *stat, *help;
} size_stat_help[] = {
        { "anon_fault_alloc", "Anonymous page faults that allocated a folio of this size." },
        { "anon_fault_fallback", "Anonymous page faults that wanted this size and fell back to a smaller one." },
        { "anon_fault_fallback_charge",
          "Anonymous page faults that fell back from this size because the memory cgroup charge failed." },
        { "anon_fault_declined", "Anonymous page faults that declined this size (kernel stat anon_fault_declined)." },
        { "zswpout", "Folios of this size swapped out to zswap without being split." },
        { "swpin", "Folios of this size swapped in in one piece." },
        { "swpin_fallback", "Swap-ins that wanted this size and fell back to a smaller one." },
        { "swpin_fallback_charge",
          "Swap-ins that fell back from this size because the memory cgroup charge failed." },
        { "swpout", "Folios of this size swapped out without being split." },
        { "swpout_fallback", "Folios of this size split before being swapped out." },
        { "shmem_alloc", "Shmem and tmpfs folios of this size allocated." },
        { "shmem_fallback", "Shmem and tmpfs allocations that wanted this size and fell back to a smaller one." },
        { "shmem_fallback_charge",
          "Shmem and tmpfs allocations that fell back from this size because the memory cgroup charge failed." },
        { "split", "Folios of this size split into smaller ones." },
        { "split_failed", "Attempts to split a folio of this size that failed." },
        { "split_deferred", "Folios of this size queued for a deferred split (partially unmapped)." },
        { "nr_anon", "Anonymous folios of this size in the system now." },
        { "nr_anon_partially_mapped", "Anonymous folios of this size that are partially mapped now." },
};

/* A stat name as part of a metric name: [a-z0-9_] only, else refused. */
static bool stat_name_ok(const char *stat) {
        if (!stat[0])
                return false;
        for (const char *p = stat; *p; p++)
                if (!islower((unsigned char) *p) && !isdigit((unsigned char) *p) && *p != '_')
                        return false;
        return true;
}

/* One family per stat in any hugepages-*kB/stats/ directory of the running
 * kernel (the probe lists what it finds, nothing is hard-coded): the kernel's
 * nr_* stats are folio counts now (gauges mthp_size_<stat>), every other
 * one a counter since boot (mthp_size_<stat>_total). */
static void collect_sizes(struct metric_set *set, const struct mthp_caps *caps, const struct mthp_snapshot *snap) {
        static char names[MTHP_SIZES_MAX * MTHP_STATS_MAX][MTHP_STAT_NAME_MAX + 32];
        static char helps[MTHP_SIZES_MAX * MTHP_STATS_MAX][MTHP_STAT_NAME_MAX + 64];
        unsigned n_names = 0;
        for (unsigned i = 0; i < caps->n_sizes; i++)
                for (unsigned j = 0; j < caps->sizes[i].n_stats; j++) {
                        const char *stat = caps->sizes[i].stats[j];
                        bool seen = false;
                        for (unsigned a = 0; a < i && !seen; a++)
                                seen = mthp_stat_index(&caps->sizes[a], stat) >= 0;
                        if (seen || !stat_name_ok(stat) || n_names == sizeof(names) / sizeof(names[0]))
                                continue;
                        bool gauge = strncmp(stat, "nr_", 3) == 0;
                        char *name = names[n_names], *generic = helps[n_names];
                        const char *help = generic;
                        n_names++;
                        snprintf(name, sizeof(names[0]), "mthp_size_%s%s", stat, gauge ? "" : "_total");
                        snprintf(generic, sizeof(helps[0]), "hugepages-*kB/stats/%s of this size%s.", stat,
                                 gauge ? "" : " since boot");
                        for (size_t h = 0; h < sizeof(size_stat_help) / sizeof(size_stat_help[0]); h++)
                                if (strcmp(size_stat_help[h].stat, stat) == 0)
                                        help = size_stat_help[h].help;
                        struct metric_family *f = metric_family_add(set, name, gauge ? "gauge" : "counter", help);
                        for (unsigned k = i; k < caps->n_sizes; k++) {
                                const struct mthp_counter *ct = stat_counter(caps, snap, k, stat);
                                char size[16];
                                if (!ct)
                                        continue;
                                mthp_format_size(caps->sizes[k].kb, size, sizeof(size));
                                struct metric_sample *s = metric_sample_add(f);
                                metric_label(s, "size", size);
                                metric_set_uint(s, ct->value);
                        }
                }
}

/* One sample without labels. */
static void one_sample(struct metric_set *set, const char *name, const char *type, const char *help, double v,
                       int decimals) {
        struct metric_sample *s = metric_sample_add(metric_family_add(set, name, type, help));
        if (decimals < 0)
                metric_set_uint(s, (unsigned long long) v);
        else
                metric_set_double(s, v, decimals);
}

static void cgroup_sample(struct metric_family *f, const struct ctl_bus_cgroup *x, const char *kind) {
        struct metric_sample *s = metric_sample_add(f);
        metric_label(s, "cgroup", x->path);
        metric_label(s, "policy", x->policy);
        if (kind)
                metric_label(s, "kind", kind);
}

/* The managed cgroups, from mthpd (ListCgroups). */
static void collect_cgroups(struct metric_set *set) {
        struct ctl_bus *bus = bus_open_for_read(true);
        struct ctl_bus_cgroup *cg = NULL;
        unsigned n = 0;
        struct ctl_bus_error e;
        if (!bus || ctl_bus_list_cgroups(bus, &cg, &n, &e) < 0 || !n) {
                ctl_bus_free(bus);
                free(cg);
                return;
        }
        ctl_bus_free(bus);
        struct metric_family *f;
        f = metric_family_add(set, "mthpd_cgroup_memory_bytes", "gauge", "Memory in use by a managed cgroup.");
        for (unsigned i = 0; i < n; i++) {
                cgroup_sample(f, &cg[i], NULL);
                metric_set_uint(&f->s[f->n - 1], (unsigned long long) cg[i].usage_kb * 1024);
        }
        f = metric_family_add(set, "mthpd_cgroup_memory_limit_bytes", "gauge",
                              "Memory limit of a managed cgroup (absent: none).");
        for (unsigned i = 0; i < n; i++)
                if (cg[i].limit_kb) {
                        cgroup_sample(f, &cg[i], NULL);
                        metric_set_uint(&f->s[f->n - 1], (unsigned long long) cg[i].limit_kb * 1024);
                }
        f = metric_family_add(set, "mthpd_cgroup_dense_bytes", "gauge",
                              "Largest folio size every sampled process of a managed cgroup uses densely enough.");
        for (unsigned i = 0; i < n; i++)
                for (int k = 0; k < 2; k++)
                        if (cg[i].dense_kb[k] >= 0) {
                                cgroup_sample(f, &cg[i], k ? "shmem" : "anon");
                                metric_set_uint(&f->s[f->n - 1], (unsigned long long) cg[i].dense_kb[k] * 1024);
                        }
        free(cg);
}

static void collect_knobs(struct metric_set *set, const struct host_view *hv, const struct knob_owners *o) {
        struct metric_family *f = metric_family_add(set, "mthp_knob_info", "gauge",
                                                    "The setting of an mTHP sysfs knob and who set it (always 1).");
        for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                const struct mthp_knob *k = &hv->caps.knobs[i];
                char size[16] = "";
                if (k->size_kb)
                        mthp_format_size(k->size_kb, size, sizeof(size));
                const char *kind = !k->size_kb ? "global"
                                 : mthp_kind_name(k->type == MTHP_KNOB_SIZE_ANON ? MTHP_ANON : MTHP_SHMEM);
                struct metric_sample *s = metric_sample_add(f);
                metric_label(s, "knob", k->id);
                metric_label(s, "size", size);
                metric_label(s, "kind", kind);
                metric_label(s, "value", hv->snap.knob[i]);
                metric_label(s, "set_by", o->set_by[i]);
                metric_set_uint(s, 1);
        }
        f = metric_family_add(set, "mthpd_knob_decision_info", "gauge",
                              "mthpd's current decision for a knob it manages (always 1; value original: "
                              "the setting it found).");
        for (unsigned i = 0; i < hv->caps.n_knobs; i++)
                if (o->decision[i]) {
                        struct metric_sample *s = metric_sample_add(f);
                        metric_label(s, "knob", hv->caps.knobs[i].id);
                        metric_label(s, "value", o->decision[i]);
                        metric_set_uint(s, 1);
                }
}

/* The other deciders (mthp/deciders.h): one info sample per setting. */
static void collect_deciders(struct metric_set *set, const struct host_view *hv) {
        static struct mthp_deciders d;
        (void) mthp_deciders_read(hv->h, &hv->caps, &d);
        one_sample(set, "mthp_tuned_running", "gauge", "1 if a tuned process is running.", d.tuned_pid != 0, -1);
        struct metric_family *f = metric_family_add(set, "mthp_decider_setting_info", "gauge",
                "A THP setting of another decider: the kernel command line, tuned's active profile, a unit "
                "(always 1).");
        for (unsigned i = 0; i < d.n; i++) {
                struct metric_sample *s = metric_sample_add(f);
                metric_label(s, "source", mthp_decider_source_name(d.s[i].source));
                metric_label(s, "origin", d.s[i].origin);
                metric_label(s, "setting", d.s[i].text);
                metric_label(s, "value", d.s[i].value);
                metric_set_uint(s, 1);
        }
}

static void knob_counter(struct metric_set *set, const struct daemon_view *v, const char *name, const char *help,
                         bool errors) {
        struct metric_family *f = metric_family_add(set, name, "counter", help);
        for (unsigned i = 0; i < v->n_knob_writes; i++) {
                struct metric_sample *s = metric_sample_add(f);
                metric_label(s, "knob", v->knob_writes[i].id);
                metric_set_uint(s, errors ? v->knob_writes[i].errors : v->knob_writes[i].writes);
        }
}

/* The wall time of mthpd's last tick, from its status file (rewritten each
 * tick): a gauge, the status file keeps no sum. */
static void collect_tick_duration(const struct ctl *c, struct metric_set *set) {
        struct mthp_status *st = calloc(1, sizeof(*st));
        if (st && mthp_status_file_read(c->state_dir, st) == 0)
                one_sample(set, "mthpd_last_tick_duration_seconds", "gauge",
                           "Wall time mthpd's last tick took (sampling, deciding, writing).", st->tick_usec / 1e6, 6);
        free(st);
}

/* What mthpd can and cannot watch (from an mthpd that says it): the managed
 * cgroups by how they are read, their descriptors, and the guard's scan. */
static void collect_coverage(struct metric_set *set, const struct daemon_view *v) {
        const struct mthp_status_coverage *c = &v->coverage;
        if (c->cgroups_known) {
                struct metric_family *f = metric_family_add(set, "mthpd_managed_cgroups", "gauge",
                        "Cgroups a policy file manages, by how mthpd reads them: with descriptors of their own "
                        "(held), opened and closed each tick for want of descriptors (reopened), or not at all "
                        "(unmonitored: that would eat into the reserve kept for knob writes).");
                static const char *const how[] = { "held", "reopened", "unmonitored" };
                unsigned n[] = { coverage_held(c), c->reopened, c->unmonitored };
                for (unsigned i = 0; i < 3; i++) {
                        struct metric_sample *s = metric_sample_add(f);
                        metric_label(s, "monitor", how[i]);
                        metric_set_uint(s, n[i]);
                }
                one_sample(set, "mthpd_cgroup_monitor_descriptors", "gauge",
                           "File descriptors the managed cgroups hold open.", c->fds, -1);
                one_sample(set, "mthpd_cgroup_monitor_descriptor_limit", "gauge",
                           "The soft RLIMIT_NOFILE mthpd's cgroup monitor budgets under (a reserve below it stays "
                           "free for knob writes and the restore).", (double) c->fd_limit, -1);
        }
        if (c->guard_known) {
                one_sample(set, "mthpd_guard_scanned_cgroups", "gauge",
                           "Memory cgroups the guard's last scan visited.", c->scanned, -1);
                struct metric_family *f = metric_family_add(set, "mthpd_guard_limited_cgroups", "gauge",
                        "Memory-limited cgroups the guard's last scan found: weighed by the engine (the least "
                        "headroom), or not (more headroom than those).");
                struct metric_sample *s = metric_sample_add(f);
                metric_label(s, "state", "weighed");
                metric_set_uint(s, c->weighed);
                s = metric_sample_add(f);
                metric_label(s, "state", "unweighed");
                metric_set_uint(s, c->limited > c->weighed ? c->limited - c->weighed : 0);
                one_sample(set, "mthpd_guard_unseen_cgroups", "gauge",
                           "Cgroup directories the guard cannot see (paths beyond PATH_MAX, with their subtrees): "
                           "their memory limits are unknown to mthpd.", c->unseen, -1);
                one_sample(set, "mthpd_guard_scan_seconds", "gauge", "Wall time of the guard's last scan.",
                           (double) c->scan_usec / 1e6, 6);
        }
}

/* The host's bloat budget (MaxHostBloat=), from an mthpd on the bus that says it. */
static void collect_host_bloat(struct metric_set *set, const struct daemon_view *v) {
        if (!v->host_bloat_known)
                return;
        if (v->host_bloat_budget != UINT64_MAX)
                one_sample(set, "mthpd_host_bloat_budget_bytes", "gauge",
                           "MaxHostBloat=: the bloat the host may hold for a kind's sizes (absent: no budget).",
                           (double) v->host_bloat_budget, -1);
        if (!v->n_host_bloat)
                return;
        struct metric_family *f = metric_family_add(set, "mthpd_host_bloat_bytes", "gauge",
                "The bloat the host would hold with the kind's level at this size, as mthpd's last tick predicted "
                "it (the sampled processes', and for anon the bloat measured and not given back).");
        for (unsigned i = 0; i < v->n_host_bloat; i++) {
                struct metric_sample *s = metric_sample_add(f);
                metric_label(s, "kind", v->host_bloat[i].kind);
                metric_label(s, "size", v->host_bloat[i].size);
                metric_set_uint(s, v->host_bloat[i].bytes);
        }
}

static void collect_daemon(const struct ctl *c, struct metric_set *set, const struct daemon_view *v) {
        one_sample(set, "mthpd_up", "gauge", "1 if mthpd is running.", v->running, -1);
        if (!v->running)
                return;
        struct metric_sample *s = metric_sample_add(metric_family_add(set, "mthpd_ticks_total", "counter",
                "Sampling intervals mthpd has run since it started."));
        metric_set_uint(s, v->tick);
        collect_tick_duration(c, set);
        /* per knob from an mthpd that says KnobWrites, else the sums */
        if (v->n_knob_writes) {
                knob_counter(set, v, "mthpd_knob_writes_total", "Knob writes by mthpd since it started, per knob.",
                             false);
                knob_counter(set, v, "mthpd_knob_write_errors_total",
                             "Knob writes by mthpd that failed since it started, per knob.", true);
        } else if (v->changes_known)
                one_sample(set, "mthpd_knob_writes_total", "counter", "Knob writes by mthpd since it started.",
                           (double) v->changes, -1);
        if (v->counters_known && !v->n_knob_writes)
                one_sample(set, "mthpd_knob_write_errors_total", "counter",
                           "Knob writes by mthpd that failed since it started.", (double) v->write_errors, -1);
        if (v->counters_known)
                one_sample(set, "mthpd_guard_trips_total", "counter",
                           "Times mthpd's guard stepped sizes down for a cgroup near its memory limit since it started.",
                           (double) v->guard_trips, -1);
        if (v->rates_known) {
                one_sample(set, "mthpd_raise_fault_pages_per_second", "gauge",
                           "Fault demand in 4K pages per second at which mthpd raises a size.", v->raise_rate, 1);
                one_sample(set, "mthpd_lower_fault_pages_per_second", "gauge",
                           "Fault demand in 4K pages per second below which mthpd steps a size down.", v->lower_rate,
                           1);
                if (v->fault_cost_ns > 0)
                        one_sample(set, "mthpd_fault_cost_seconds", "gauge",
                                   "CPU time of a 4K page fault that mthpd decides with (FaultCost=: measured, or set).",
                                   v->fault_cost_ns / 1e9, 9);
        }
        struct metric_family *f = metric_family_add(set, "mthpd_mode", "gauge",
                                                    "mthpd's mode: manage (writes knobs) or observe (1 = current).");
        static const char *const modes[] = { "manage", "observe" };
        for (unsigned i = 0; i < 2; i++) {
                s = metric_sample_add(f);
                metric_label(s, "mode", modes[i]);
                metric_set_uint(s, strcmp(v->mode, modes[i]) == 0);
        }
        collect_coverage(set, v);
        collect_host_bloat(set, v);
        collect_cgroups(set);
}

/* Everything metrics prints, into set. EXIT_OK or EXIT_FAIL (said). */
static int metrics_collect(struct ctl *c, struct metric_set *set) {
        struct mthp_journal j;
        static struct knob_owners o;
        struct host_view *hv;
        struct daemon_view *v;
        bool journal_ok;
        if (look_at_knobs(c, &hv, &v, &j, &journal_ok) < 0)
                return EXIT_FAIL;
        knob_owners_fill(&o, &hv->caps, &hv->snap, &j, v);
        collect_knobs(set, hv, &o);
        collect_sizes(set, &hv->caps, &hv->snap);
        collect_deciders(set, hv);
        collect_daemon(c, set, v);
        free(v);
        host_view_close(hv);
        return EXIT_OK;
}

/* The exposition into path, atomically: a temporary file in the same
 * directory renamed over it, so node_exporter's textfile collector never
 * reads half a file (it reads *.prom only: the temporary name is not one). */
static int write_output(const char *path, const struct metric_set *set, bool json) {
        char *buf = NULL, why[512];
        size_t len = 0;
        const char *base;
        FILE *f = open_memstream(&buf, &len);
        if (!f) {
                fprintf(stderr, "mthpctl: %s: %s\n", path, strerror(errno));
                return EXIT_FAIL;
        }
        int r = json ? metrics_print_json(f, set) : metrics_print_text(f, set);
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r < 0) {
                free(buf);
                fprintf(stderr, "mthpctl: %s: %s\n", path, strerror(-r));
                return EXIT_FAIL;
        }
        int dfd = mthp_safe_open_parent(path, 0, &base, why, sizeof(why));
        if (dfd >= 0) {
                r = mthp_safe_write_atomic(dfd, NULL, base, 0644, buf, len, true, why, sizeof(why));
                close(dfd);
        } else
                r = dfd;
        free(buf);
        if (r < 0) {
                fprintf(stderr, "mthpctl: %s\n", why);
                return EXIT_FAIL;
        }
        return EXIT_OK;
}

int cmd_metrics(struct ctl *c, int argc, char **argv) {
        struct metric_set set = { 0 };
        (void) argc;
        (void) argv;
        int r = metrics_collect(c, &set);
        if (r == EXIT_OK && c->output)
                r = write_output(c->output, &set, c->json);
        else if (r == EXIT_OK)
                r = (c->json ? metrics_print_json(stdout, &set) : metrics_print_text(stdout, &set)) < 0 ? EXIT_FAIL
                                                                                                         : EXIT_OK;
        metric_set_free(&set);
        return r;
}
