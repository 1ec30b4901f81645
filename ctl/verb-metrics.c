/* SPDX-License-Identifier: MIT */
/* mthpctl metrics: Prometheus text exposition (and JSON). */
#include "mthpctl.h"

static void metric_family(const char *name, const char *type, const char *help) {
        printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value in the exposition format: \\, \" and \n escaped. */
static void label_value(const char *s) {
        putchar('"');
        for (; *s; s++) {
                if (*s == '\\' || *s == '"')
                        printf("\\%c", *s);
                else if (*s == '\n')
                        printf("\\n");
                else
                        putchar(*s);
        }
        putchar('"');
}

static void metric_size_counter(const struct mthp_caps *caps, const struct mthp_snapshot *snap, const char *name,
                                const char *stat, const char *help) {
        metric_family(name, "counter", help);
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_counter *ct = stat_counter(caps, snap, i, stat);
                char size[16];
                if (!ct)
                        continue;
                mthp_format_size(caps->sizes[i].kb, size, sizeof(size));
                printf("%s{size=\"%s\"} %llu\n", name, size, (unsigned long long) ct->value);
        }
}

/* Prometheus text exposition format 0.0.4, for node_exporter's textfile
 * collector: counters are the kernel's own since boot, no rates. */
/* The managed cgroups, from mthpd (ListCgroups). */
static void metrics_cgroups(void) {
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
        static const struct {
                const char *name, *type, *help;
        } fam[] = {
                { "mthpd_cgroup_faults_per_second", "gauge",
                  "Page faults per second of a cgroup a policy file manages (memory.stat pgfault)." },
                { "mthpd_cgroup_memory_bytes", "gauge", "Memory in use by a managed cgroup." },
                { "mthpd_cgroup_memory_limit_bytes", "gauge", "Memory limit of a managed cgroup (absent: none)." },
                { "mthpd_cgroup_psi_memory_some_avg10", "gauge", "Memory pressure of a managed cgroup, percent." },
                { "mthpd_cgroup_dense_bytes", "gauge",
                  "Largest folio size every sampled process of a managed cgroup uses densely enough." },
        };
        for (unsigned f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                metric_family(fam[f].name, fam[f].type, fam[f].help);
                for (unsigned i = 0; i < n; i++) {
                        const struct ctl_bus_cgroup *x = &cg[i];
                        for (int k = 0; k < (f == 4 ? 2 : 1); k++) {
                                if ((f == 2 && !x->limit_kb) || (f == 3 && x->psi_some < 0) ||
                                    (f == 4 && x->dense_kb[k] < 0))
                                        continue;
                                printf("%s{cgroup=", fam[f].name);
                                label_value(x->path);
                                printf(",policy=");
                                label_value(x->policy);
                                if (f == 4)
                                        printf(",kind=\"%s\"", k ? "shmem" : "anon");
                                printf("} ");
                                switch (f) {
                                case 0: printf("%.1f\n", x->fault_rate); break;
                                case 1: printf("%llu\n", (unsigned long long) x->usage_kb * 1024); break;
                                case 2: printf("%llu\n", (unsigned long long) x->limit_kb * 1024); break;
                                case 3: printf("%.2f\n", x->psi_some); break;
                                default: printf("%llu\n", (unsigned long long) x->dense_kb[k] * 1024); break;
                                }
                        }
                }
        }
        free(cg);
}

/* metrics --json: the exposition text, read back into families of samples
 * ({"name", "type", "help", "samples": [{"labels": {...}, "value": N}]}). */
static int metrics_to_json(const char *text) {
        printf("{\"metrics\":[");
        bool first_family = true, open_family = false, first_sample = true;
        char name[128] = "", type[32] = "", help[512] = "";
        for (const char *l = text; *l;) {
                size_t len = strcspn(l, "\n");
                char line[2048];
                snprintf(line, sizeof(line), "%.*s", (int) (len < sizeof(line) - 1 ? len : sizeof(line) - 1), l);
                l += len + (l[len] == '\n');
                if (strncmp(line, "# HELP ", 7) == 0) {
                        if (open_family)
                                printf("]}");
                        open_family = false;
                        char *sp = strchr(line + 7, ' ');
                        if (!sp)
                                return -EINVAL;
                        snprintf(name, sizeof(name), "%.*s", (int) (sp - line - 7), line + 7);
                        snprintf(help, sizeof(help), "%s", sp + 1);
                        continue;
                }
                if (strncmp(line, "# TYPE ", 7) == 0) {
                        char *sp = strrchr(line, ' ');
                        snprintf(type, sizeof(type), "%s", sp ? sp + 1 : "untyped");
                        printf("%s{\"name\":", first_family ? "" : ",");
                        json_str(name);
                        printf(",\"type\":");
                        json_str(type);
                        printf(",\"help\":");
                        json_str(help);
                        printf(",\"samples\":[");
                        first_family = false;
                        open_family = true;
                        first_sample = true;
                        continue;
                }
                if (!line[0] || line[0] == '#' || !open_family)
                        continue;
                /* name{k="v",...} value */
                char *p = line + strcspn(line, "{ ");
                printf("%s{\"labels\":{", first_sample ? "" : ",");
                first_sample = false;
                if (*p == '{') {
                        p++;
                        bool first_label = true;
                        while (*p && *p != '}') {
                                char *eq = strchr(p, '=');
                                if (!eq || eq[1] != '"')
                                        return -EINVAL;
                                *eq = 0;
                                printf("%s", first_label ? "" : ",");
                                json_str(p);
                                printf(":");
                                first_label = false;
                                char val[1024];
                                size_t o = 0;
                                for (p = eq + 2; *p && *p != '"' && o < sizeof(val) - 1; p++) {
                                        if (*p == '\\' && p[1]) {
                                                p++;
                                                val[o++] = *p == 'n' ? '\n' : *p;
                                        } else
                                                val[o++] = *p;
                                }
                                val[o] = 0;
                                json_str(val);
                                if (*p == '"')
                                        p++;
                                if (*p == ',')
                                        p++;
                        }
                        if (*p == '}')
                                p++;
                }
                while (*p == ' ')
                        p++;
                printf("},\"value\":%s}", *p ? p : "null");
        }
        if (open_family)
                printf("]}");
        printf("]}\n");
        return 0;
}

static int metrics_text(struct ctl *c);

int cmd_metrics(struct ctl *c, int argc, char **argv) {
        (void) argc;
        (void) argv;
        if (!c->json)
                return metrics_text(c);
        /* write the text exposition to memory, then read it back as JSON:
         * one source for both, so they cannot disagree */
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len), *out = stdout;
        if (!mem)
                return EXIT_FAIL;
        stdout = mem; /* glibc: stdout is an assignable FILE * */
        int r = metrics_text(c);
        stdout = out;
        fclose(mem);
        if (r == EXIT_OK && metrics_to_json(text) < 0) {
                fprintf(stderr, "mthpctl: metrics: cannot convert to JSON\n");
                r = EXIT_FAIL;
        }
        free(text);
        return r == EXIT_OK && fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_FAIL;
}

static int metrics_text(struct ctl *c) {
        struct mthp_journal j;
        static struct knob_owners o;

        struct host_view *hv;
        struct daemon_view *v;
        bool journal_ok;
        if (look_at_knobs(c, &hv, &v, &j, &journal_ok) < 0)
                return EXIT_FAIL;
        knob_owners_fill(&o, &hv->caps, &hv->snap, &j, v);

        metric_family("mthp_knob_info", "gauge", "The setting of an mTHP sysfs knob and who set it (always 1).");
        for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                const struct mthp_knob *k = &hv->caps.knobs[i];
                char size[16] = "";
                if (k->size_kb)
                        mthp_format_size(k->size_kb, size, sizeof(size));
                printf("mthp_knob_info{knob=");
                label_value(k->id);
                const char *kind = !k->size_kb ? "global"
                                 : mthp_kind_name(k->type == MTHP_KNOB_SIZE_ANON ? MTHP_ANON : MTHP_SHMEM);
                printf(",size=\"%s\",kind=\"%s\",value=", size, kind);
                label_value(hv->snap.knob[i]);
                printf(",set_by=");
                label_value(o.set_by[i]);
                printf("} 1\n");
        }
        metric_size_counter(&hv->caps, &hv->snap, "mthp_size_anon_fault_alloc_total", "anon_fault_alloc",
                            "Anonymous page faults that allocated a folio of this size.");
        metric_size_counter(&hv->caps, &hv->snap, "mthp_size_anon_fault_fallback_total", "anon_fault_fallback",
                            "Anonymous page faults that wanted this size and fell back to a smaller one.");
        metric_size_counter(&hv->caps, &hv->snap, "mthp_size_shmem_alloc_total", "shmem_alloc",
                            "Shmem and tmpfs folios of this size allocated.");
        metric_size_counter(&hv->caps, &hv->snap, "mthp_size_shmem_fallback_total", "shmem_fallback",
                            "Shmem and tmpfs allocations that wanted this size and fell back to a smaller one.");
        metric_family("mthp_vmstat_pgfault_total", "counter", "Page faults on the host (/proc/vmstat pgfault).");
        printf("mthp_vmstat_pgfault_total %llu\n", (unsigned long long) hv->snap.vm[MTHP_VM_PGFAULT].value);
        if (hv->snap.psi.present) {
                metric_family("mthp_psi_memory_some_avg10", "gauge",
                              "Percent of the last 10s some task stalled on memory (/proc/pressure/memory).");
                printf("mthp_psi_memory_some_avg10 %.2f\n", hv->snap.psi.some_avg10);
        }
        metric_family("mthpd_up", "gauge", "1 if mthpd is running.");
        printf("mthpd_up %d\n", v->running);
        if (v->running) {
                metric_family("mthpd_ticks_total", "counter", "Sampling intervals mthpd has run since it started.");
                printf("mthpd_ticks_total %llu\n", v->tick);
                if (v->changes_known) {
                        metric_family("mthpd_changes_total", "counter", "Knob writes by mthpd since it started.");
                        printf("mthpd_changes_total %llu\n", v->changes);
                }
                metric_family("mthpd_fault_pages_per_second", "gauge",
                              "Fault demand in 4K pages per second at mthpd's last tick.");
                printf("mthpd_fault_pages_per_second %.1f\n", v->fault_pages_rate);
                metric_family("mthpd_mode", "gauge", "mthpd's mode: manage (writes knobs) or observe (1 = current).");
                printf("mthpd_mode{mode=\"manage\"} %d\n", strcmp(v->mode, "manage") == 0);
                printf("mthpd_mode{mode=\"observe\"} %d\n", strcmp(v->mode, "observe") == 0);
                metrics_cgroups();
        }
        free(v);
        host_view_close(hv);
        return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_FAIL;
}
