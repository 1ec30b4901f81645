/* SPDX-License-Identifier: MIT */
/* mthpctl metrics: the knobs, the per-size counters, page faults, PSI,
 * mthpd's state and its managed cgroups, collected once into the metric
 * model (metrics.h) and printed as the Prometheus text exposition format
 * 0.0.4 (for node_exporter's textfile collector: counters are the kernel's
 * own since boot, no rates) or as JSON. */
#include "metrics.h"
#include "mthpctl.h"
#include "mthp/deciders.h"

static void size_counter(struct metric_set *set, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                         const char *name, const char *stat, const char *help) {
        struct metric_family *f = metric_family_add(set, name, "counter", help);
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_counter *ct = stat_counter(caps, snap, i, stat);
                char size[16];
                if (!ct)
                        continue;
                mthp_format_size(caps->sizes[i].kb, size, sizeof(size));
                struct metric_sample *s = metric_sample_add(f);
                metric_label(s, "size", size);
                metric_set_uint(s, ct->value);
        }
}

/* One gauge without labels. */
static void gauge(struct metric_set *set, const char *name, const char *type, const char *help, double v,
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
        struct metric_family *f = metric_family_add(set, "mthpd_cgroup_faults_per_second", "gauge",
                "Page faults per second of a cgroup a policy file manages (memory.stat pgfault).");
        for (unsigned i = 0; i < n; i++) {
                cgroup_sample(f, &cg[i], NULL);
                metric_set_double(&f->s[f->n - 1], cg[i].fault_rate, 1);
        }
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
        f = metric_family_add(set, "mthpd_cgroup_psi_memory_some_avg10", "gauge",
                              "Memory pressure of a managed cgroup, percent.");
        for (unsigned i = 0; i < n; i++)
                if (cg[i].psi_some >= 0) {
                        cgroup_sample(f, &cg[i], NULL);
                        metric_set_double(&f->s[f->n - 1], cg[i].psi_some, 2);
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
}

/* The other deciders (mthp/deciders.h): one info sample per setting. */
static void collect_deciders(struct metric_set *set, const struct host_view *hv) {
        static struct mthp_deciders d;
        (void) mthp_deciders_read(hv->h, &hv->caps, &d);
        gauge(set, "mthp_tuned_running", "gauge", "1 if a tuned process is running.", d.tuned_pid != 0, -1);
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

static void collect_host(struct metric_set *set, const struct host_view *hv) {
        size_counter(set, &hv->caps, &hv->snap, "mthp_size_anon_fault_alloc_total", "anon_fault_alloc",
                     "Anonymous page faults that allocated a folio of this size.");
        size_counter(set, &hv->caps, &hv->snap, "mthp_size_anon_fault_fallback_total", "anon_fault_fallback",
                     "Anonymous page faults that wanted this size and fell back to a smaller one.");
        size_counter(set, &hv->caps, &hv->snap, "mthp_size_shmem_alloc_total", "shmem_alloc",
                     "Shmem and tmpfs folios of this size allocated.");
        size_counter(set, &hv->caps, &hv->snap, "mthp_size_shmem_fallback_total", "shmem_fallback",
                     "Shmem and tmpfs allocations that wanted this size and fell back to a smaller one.");
        struct metric_sample *s = metric_sample_add(metric_family_add(set, "mthp_vmstat_pgfault_total", "counter",
                "Page faults on the host (/proc/vmstat pgfault)."));
        metric_set_uint(s, hv->snap.vm[MTHP_VM_PGFAULT].value);
        if (hv->snap.psi.present)
                gauge(set, "mthp_psi_memory_some_avg10", "gauge",
                      "Percent of the last 10s some task stalled on memory (/proc/pressure/memory).",
                      hv->snap.psi.some_avg10, 2);
}

static void collect_daemon(struct metric_set *set, const struct daemon_view *v) {
        gauge(set, "mthpd_up", "gauge", "1 if mthpd is running.", v->running, -1);
        if (!v->running)
                return;
        struct metric_sample *s = metric_sample_add(metric_family_add(set, "mthpd_ticks_total", "counter",
                "Sampling intervals mthpd has run since it started."));
        metric_set_uint(s, v->tick);
        if (v->changes_known) {
                s = metric_sample_add(metric_family_add(set, "mthpd_changes_total", "counter",
                                                        "Knob writes by mthpd since it started."));
                metric_set_uint(s, v->changes);
        }
        gauge(set, "mthpd_fault_pages_per_second", "gauge", "Fault demand in 4K pages per second at mthpd's last tick.",
              v->fault_pages_rate, 1);
        if (v->rates_known) {
                gauge(set, "mthpd_raise_fault_pages_per_second", "gauge",
                      "Fault demand in 4K pages per second at which mthpd raises a size.", v->raise_rate, 1);
                gauge(set, "mthpd_lower_fault_pages_per_second", "gauge",
                      "Fault demand in 4K pages per second below which mthpd steps a size down.", v->lower_rate, 1);
                if (v->fault_cost_ns > 0)
                        gauge(set, "mthpd_fault_cost_seconds", "gauge",
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
        collect_host(set, hv);
        collect_deciders(set, hv);
        collect_daemon(set, v);
        free(v);
        host_view_close(hv);
        return EXIT_OK;
}

int cmd_metrics(struct ctl *c, int argc, char **argv) {
        struct metric_set set = { 0 };
        (void) argc;
        (void) argv;
        int r = metrics_collect(c, &set);
        if (r == EXIT_OK)
                r = (c->json ? metrics_print_json(stdout, &set) : metrics_print_text(stdout, &set)) < 0 ? EXIT_FAIL
                                                                                                         : EXIT_OK;
        metric_set_free(&set);
        return r;
}
