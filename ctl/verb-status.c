/* SPDX-License-Identifier: MIT */
/* mthpctl status, sizes, explain. */
#include "mthpctl.h"
#include "mthp/deciders.h"

static void print_rate(struct table *t, const struct mthp_snapshot *snap, double rate) {
        if (snap->dt > 0)
                table_cell(t, "%.0f", rate);
        else
                table_cell(t, "-");
}

/* The size x kind table and the global knobs, as status and top show them. */
void print_knobs(FILE *f, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                 const struct knob_owners *o) {
        struct table t;
        table_init(&t, "SIZE", "ANON", "SET BY", "SHMEM", "SET BY", ">ANON/s", ">A-FALLB/s", ">SHMEM/s", ">S-FALLB/s",
                   NULL);
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                char size[16];
                mthp_format_size(caps->sizes[i].kb, size, sizeof(size));
                table_cell(&t, "%s", size);
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        int kn = caps->sizes[i].knob[k];
                        table_cell(&t, "%s", kn >= 0 ? snap->knob[kn] : "-");
                        table_cell(&t, "%s", kn >= 0 ? o->set_by[kn] : "-");
                }
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        print_rate(&t, snap, mthp_stat_rate(caps, snap, i, kind_alloc_stat[k]));
                        print_rate(&t, snap, mthp_stat_rate(caps, snap, i, kind_fallback_stat[k]));
                }
        }
        table_print(&t, f);
        table_free(&t);
        fputc('\n', f);
        table_init(&t, "GLOBAL", "VALUE", "SET BY", NULL);
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                if (caps->knobs[i].size_kb)
                        continue;
                table_cell(&t, "%s", caps->knobs[i].id);
                table_cell(&t, "%s", snap->knob[i]);
                table_cell(&t, "%s", o->set_by[i]);
        }
        table_print(&t, f);
        table_free(&t);
}

/* "raises at 2486 pages/s ..., a 4K fault costs 10.06 us": the engine's
 * thresholds as the reasons quote them, before any reason has. */
static void print_rates(FILE *f, const struct daemon_view *v) {
        if (!v->running || !v->rates_known)
                return;
        fprintf(f, "mthpd raises a size at %.0f 4K pages/s of a kind's fault demand and steps down below %.0f",
                v->raise_rate, v->lower_rate);
        if (v->rates_by_time)
                fprintf(f, " (set by RaiseFaultTime= at %.2f us a 4K fault)\n", v->fault_cost_ns / 1e3);
        else if (v->fault_cost_ns > 0)
                fprintf(f, " (set by RaiseFaultRate= and LowerFaultRate=; a 4K fault costs %.2f us)\n", v->fault_cost_ns / 1e3);
        else
                fprintf(f, " (set by RaiseFaultRate= and LowerFaultRate=; no 4K fault cost known)\n");
}

/* What mthpd can and cannot watch: one line while all is well, a note for
 * each thing it cannot (status), or only the notes (explain). */
static void print_coverage(FILE *f, const struct daemon_view *v, bool notes_only) {
        const struct mthp_status_coverage *c = &v->coverage;
        if (!v->running || (!c->cgroups_known && !c->guard_known))
                return;
        if (!notes_only) {
                fprintf(f, "watching:");
                if (c->cgroups_known)
                        fprintf(f, " %u managed cgroup(s), %u descriptor(s) held (soft RLIMIT_NOFILE %llu)%s",
                                c->managed, c->fds, c->fd_limit, c->guard_known ? ";" : "");
                if (c->guard_known)
                        fprintf(f, " guard: %u cgroup(s) scanned in %.1f ms, %u memory-limited, %u of them weighed",
                                c->scanned, (double) c->scan_usec / 1000, c->limited, c->weighed);
                fputc('\n', f);
        }
        if (c->cgroups_known && (c->reopened || c->unmonitored)) {
                fprintf(f, "note: %u of %u managed cgroups have no descriptors of their own", c->reopened + c->unmonitored,
                        c->managed);
                if (c->reopened)
                        fprintf(f, ": %u are opened, read and closed each tick", c->reopened);
                if (c->unmonitored)
                        fprintf(f, "%s %u are not read at all (their fault rate, usage and pressure are unknown "
                                "to mthpd)", c->reopened ? ";" : ":", c->unmonitored);
                fprintf(f, "; soft RLIMIT_NOFILE %llu, %u held, %u kept free for knob writes and the restore "
                        "(raise LimitNOFILE= in mthpd.service)\n", c->fd_limit, c->fds, c->fd_reserve);
        }
        if (c->guard_known && c->unseen)
                fprintf(f, "note: the guard cannot see %u cgroup director%s (a path longer than %d characters) nor "
                        "what is below: a memory limit there is unknown to mthpd, which raises sizes without "
                        "weighing it\n", c->unseen, c->unseen == 1 ? "y" : "ies", PATH_MAX - 1);
}

static void json_coverage(const struct daemon_view *v) {
        const struct mthp_status_coverage *c = &v->coverage;
        printf(",\"cgroup_monitor\":");
        if (v->running && c->cgroups_known)
                printf("{\"managed\":%u,\"held\":%u,\"reopened\":%u,\"unmonitored\":%u,\"descriptors\":%u,"
                       "\"descriptor_limit\":%llu,\"descriptor_reserve\":%u}",
                       c->managed, coverage_held(c), c->reopened, c->unmonitored, c->fds,
                       c->fd_limit, c->fd_reserve);
        else
                printf("null");
        printf(",\"guard\":");
        if (v->running && c->guard_known)
                printf("{\"scanned\":%u,\"limited\":%u,\"weighed\":%u,\"unseen\":%u,\"scan_seconds\":%.6f}",
                       c->scanned, c->limited, c->weighed, c->unseen, (double) c->scan_usec / 1e6);
        else
                printf("null");
}

static void json_accepts(const struct mthp_knob *k) {
        printf("[");
        for (unsigned a = 0; a < k->n_allowed; a++) {
                printf(a ? "," : "");
                json_str(k->allowed[a]);
        }
        printf("]");
}

static void json_daemon(const struct daemon_view *v) {
        printf("\"daemon\":%s,\"source\":", v->running ? "true" : "false");
        json_str_or_null(!v->running ? NULL : v->on_bus ? "bus" : "status-file");
        printf(",\"pid\":%d,\"mode\":", v->pid);
        json_str_or_null(v->running ? v->mode : NULL);
        printf(",\"dry_run\":%s", v->running && strcmp(v->mode, "observe") == 0 ? "true" : "false");
        printf(",\"not_writable\":");
        json_str_or_null(v->running && v->not_writable[0] ? v->not_writable : NULL);
        if (v->running)
                printf(",\"tick\":%llu", v->tick);
        if (v->changes_known)
                printf(",\"changes\":%llu", v->changes);
        if (v->interval_usec)
                printf(",\"interval_usec\":%llu", (unsigned long long) v->interval_usec);
        if (v->rates_known) {
                printf(",\"fault_cost_ns\":");
                if (v->fault_cost_ns > 0)
                        printf("%.1f", v->fault_cost_ns);
                else
                        printf("null");
                printf(",\"raise_fault_rate\":%.1f,\"lower_fault_rate\":%.1f,\"fault_rates_by\":\"%s\"", v->raise_rate,
                       v->lower_rate, v->rates_by_time ? "RaiseFaultTime" : "RaiseFaultRate");
        }
        if (v->version[0]) {
                printf(",\"version\":");
                json_str(v->version);
        }
        json_coverage(v);
}

/* The host, what mthpd says about each knob (if it is on the bus) and the
 * restore journal: what status and metrics both show. */
int look_at_knobs(struct ctl *c, struct host_view **hv, struct daemon_view **v, struct mthp_journal *j,
                  bool *journal_ok) {
        *hv = host_view_open(c);
        if (!*hv)
                return -EIO;
        struct ctl_bus *bus = bus_open_for_read(false);
        *v = xrealloc(NULL, sizeof(**v));
        daemon_look(c, bus, LOOK_KNOBS, *v);
        ctl_bus_free(bus);
        /* on the bus, mthpd says who set what: the journal (root's) is extra */
        *journal_ok = load_journal(c, (*v)->on_bus, j);
        return 0;
}

/* The fields of status --json (also top --json's frames), without braces. */
void json_status_fields(const struct ctl *c, const struct host_view *hv, const struct daemon_view *v,
                        const struct knob_owners *o, const struct mthp_journal *j, bool journal_ok) {
        printf("\"root\":");
        json_str(c->root);
        printf(",");
        json_daemon(v);
        printf(",\"sample_seconds\":%.3f,\"fault_pages_per_s\":%.0f,", hv->snap.dt, hv->snap.fault_pages_rate);
        printf("\"psi\":");
        if (hv->snap.psi.present)
                printf("{\"some_avg10\":%.2f,\"full_avg10\":%.2f}", hv->snap.psi.some_avg10,
                       hv->snap.psi.full_avg10);
        else
                printf("null");
        printf(",\"mem_available_kb\":%llu,\"cgroup_layout\":\"%s\",\"restore_journal_knobs\":",
               (unsigned long long) hv->snap.mem.available_kb, mthp_cg_layout_name(hv->caps.cg_layout));
        if (journal_ok)
                printf("%u,\"knobs\":[", j->n);
        else
                printf("null,\"knobs\":[");
        for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                const struct mthp_knob *k = &hv->caps.knobs[i];
                int si = k->size_kb ? mthp_caps_find_size(&hv->caps, k->size_kb) : -1;
                int kind = k->type == MTHP_KNOB_SIZE_ANON ? MTHP_ANON : MTHP_SHMEM;
                printf("%s{\"id\":", i ? "," : "");
                json_str(k->id);
                printf(",\"size_kb\":%u,\"kind\":\"%s\",\"value\":", k->size_kb,
                       si < 0 ? "global" : mthp_kind_name(kind));
                json_str(hv->snap.knob[i]);
                printf(",\"set_by\":\"%s\",\"decision\":", o->set_by[i]);
                json_str_or_null(o->decision[i]);
                printf(",\"pinned\":%s", o->pinned[i] ? "true" : "false");
                if (si >= 0)
                        printf(",\"alloc_per_s\":%.1f,\"fallback_per_s\":%.1f",
                               mthp_stat_rate(&hv->caps, &hv->snap, (unsigned) si, kind_alloc_stat[kind]),
                               mthp_stat_rate(&hv->caps, &hv->snap, (unsigned) si, kind_fallback_stat[kind]));
                printf(",\"accepts\":");
                json_accepts(k);
                printf("}");
        }
        printf("]");
}

/* status --json: knobs another writer took: whom, and since when (mthpd's note) */
static void json_other_writers(const struct host_view *hv, const struct knob_owners *o,
                               const struct mthp_deciders *dec, const struct mthp_foreign_note *notes, int n_notes) {
        printf(",\"other_writers\":[");
        bool first = true;
        for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                if (strcmp(o->set_by[i], "other") != 0)
                        continue;
                const struct mthp_foreign_note *nt = foreign_note_find(notes, n_notes, hv->caps.knobs[i].id);
                char who[512];
                likely_writer(dec, nt, (int) i, hv->snap.knob[i], who, sizeof(who));
                printf("%s{\"id\":", first ? "" : ",");
                json_str(hv->caps.knobs[i].id);
                printf(",\"value\":");
                json_str(hv->snap.knob[i]);
                printf(",\"likely_writer\":");
                json_str_or_null(who[0] ? who : NULL);
                printf(",\"noticed_usec\":");
                json_u64_or_null(nt != NULL, nt ? nt->usec : 0);
                printf("}");
                first = false;
        }
        printf("]");
}

/* status --json in observe mode: what mthpd would set next to what is set */
static void json_observe(const struct host_view *hv, const struct knob_owners *o) {
        printf(",\"observe\":[");
        bool first = true;
        for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                if (!o->decision[i])
                        continue;
                printf("%s{\"id\":", first ? "" : ",");
                json_str(hv->caps.knobs[i].id);
                printf(",\"value\":");
                json_str(hv->snap.knob[i]);
                printf(",\"would_set\":");
                json_str(o->decision[i]);
                printf("}");
                first = false;
        }
        printf("]");
}

/* status: a note per knob another writer took, with the likely writer. */
static void print_foreign_notes(const struct host_view *hv, const struct mthp_journal *j,
                                const struct mthp_deciders *dec, const struct mthp_foreign_note *notes, int n_notes) {
        char id[128], value[4 * MTHP_VALUE_MAX];
        for (unsigned i = 0; i < j->n; i++) {
                if (j->e[i].state != MTHP_ENTRY_FOREIGN)
                        continue;
                int kn = mthp_caps_find_knob(&hv->caps, j->e[i].id);
                const struct mthp_foreign_note *nt = foreign_note_find(notes, n_notes, j->e[i].id);
                char who[512], when[64] = "";
                likely_writer(dec, nt, kn, j->e[i].foreign_value, who, sizeof(who));
                if (nt) {
                        time_t t = (time_t) (nt->usec / 1000000);
                        struct tm tm;
                        if (localtime_r(&t, &tm))
                                strftime(when, sizeof(when), " at %Y-%m-%d %H:%M:%S", &tm);
                }
                mthp_escape(id, sizeof(id), j->e[i].id);
                printf("note: %s was changed by someone else to '%s'%s; mthpd no longer manages it "
                       "('mthpctl resume %s' hands it back)\n",
                       id, mthp_escape(value, sizeof(value), j->e[i].foreign_value), when, id);
                printf("      likely writer: %s\n", who[0] ? who : "unknown (no tuned profile, "
                       "unit or command line setting writes this knob)");
        }
}

/* status in observe mode, the documented way to run beside another tuner:
 * mthpd decides and explains, the other one writes */
static void print_observe(const struct host_view *hv, const struct knob_owners *o) {
        struct table t;
        table_init(&t, "KNOB", "IS", "MTHPD WOULD SET", NULL);
        unsigned shown = 0;
        for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                if (!o->decision[i])
                        continue;
                bool same = strcmp(o->decision[i], "original") == 0 || strcmp(o->decision[i], hv->snap.knob[i]) == 0;
                table_cell(&t, "%s", hv->caps.knobs[i].id);
                table_cell(&t, "%s", hv->snap.knob[i]);
                table_cell(&t, "%s", same ? "(same)" : o->decision[i]);
                shown++;
        }
        printf("\nobserve mode: mthpd writes nothing; what it would set:\n");
        if (shown)
                table_print(&t, stdout);
        else
                printf("  no decision yet\n");
        table_free(&t);
        for (unsigned i = 0; i < hv->caps.n_knobs; i++)
                if (o->decision[i] && strcmp(o->decision[i], "original") != 0 &&
                    strcmp(o->decision[i], hv->snap.knob[i]) != 0)
                        printf("note: observe mode: mthpd would set %s to %s\n", hv->caps.knobs[i].id,
                               o->decision[i]);
}

int cmd_status(struct ctl *c, int argc, char **argv) {
        struct mthp_journal j;
        (void) argc;
        (void) argv;

        struct host_view *hv;
        struct daemon_view *v;
        bool journal_ok;
        if (look_at_knobs(c, &hv, &v, &j, &journal_ok) < 0)
                return EXIT_FAIL;

        if (c->sample_usec) {
                usleep((useconds_t) c->sample_usec);
                mthp_sampler_take(hv->s, mthp_now_usec(CLOCK_MONOTONIC), &hv->snap);
        }
        static struct knob_owners o;
        knob_owners_fill(&o, &hv->caps, &hv->snap, &j, v);

        static struct mthp_deciders dec;
        static struct mthp_foreign_note notes[MTHP_KNOBS_MAX];
        (void) mthp_deciders_read(hv->h, &hv->caps, &dec);
        int n_notes = mthp_foreign_notes_load(c->state_dir, notes, MTHP_KNOBS_MAX);
        if (n_notes < 0)
                n_notes = 0;
        bool observe = v->running && strcmp(v->mode, "observe") == 0;

        if (c->json) {
                printf("{");
                json_status_fields(c, hv, v, &o, &j, journal_ok);
                printf(",");
                json_deciders(&hv->caps, &dec);
                printf(",");
                json_thp_off(&hv->caps, &hv->snap, &dec);
                json_other_writers(hv, &o, &dec, notes, n_notes);
                if (observe)
                        json_observe(hv, &o);
                printf("}\n");
        } else {
                print_daemon_line(stdout, v);
                if (journal_ok)
                        printf("; %u knob(s) in the restore journal", j.n);
                else
                        printf("; restore journal not readable");
                printf("\nfault demand: %.0f pages/s over %.1fs; PSI memory some: ", hv->snap.fault_pages_rate,
                       hv->snap.dt);
                if (hv->snap.psi.present)
                        printf("%.2f%%", hv->snap.psi.some_avg10);
                else
                        printf("absent");
                printf("; MemAvailable %llu MiB\n", (unsigned long long) hv->snap.mem.available_kb / 1024);
                print_rates(stdout, v);
                print_coverage(stdout, v, false);
                print_thp_off(stdout, &hv->caps, &hv->snap, &dec);
                printf("\n");
                print_knobs(stdout, &hv->caps, &hv->snap, &o);
                char clean[4 * sizeof(v->not_writable)];
                if (v->not_writable[0])
                        printf("note: mthpd cannot write the knobs (%s): it only observes\n",
                               mthp_escape(clean, sizeof(clean), v->not_writable));
                print_foreign_notes(hv, &j, &dec, notes, n_notes);
                for (unsigned i = 0; i < hv->caps.n_knobs; i++)
                        if (o.pinned[i])
                                printf("note: %s is pinned by an administrator ('mthpctl unpin %s' hands it back)\n",
                                       hv->caps.knobs[i].id, hv->caps.knobs[i].id);
                if (observe)
                        print_observe(hv, &o);
                printf("\n");
                print_deciders(stdout, &hv->caps, &dec);
        }
        free(v);
        host_view_close(hv);
        return EXIT_OK;
}

int cmd_sizes(struct ctl *c, int argc, char **argv) {
        (void) argc;
        (void) argv;

        struct host_view *hv = host_view_open(c);
        if (!hv)
                return EXIT_FAIL;
        struct table t;
        if (c->json) {
                char pmd[16];
                mthp_format_size(hv->caps.pmd_kb, pmd, sizeof(pmd));
                printf("{\"pmd_size\":\"%s\",\"pmd_kb\":%u,\"sizes\":[", pmd, hv->caps.pmd_kb);
        } else
                table_init(&t, "SIZE", ">ORDER", "KIND", "SETTING", ">ALLOC", ">FALLBACK", "ACCEPTS", NULL);
        for (unsigned i = 0; i < hv->caps.n_sizes; i++) {
                const struct mthp_size *sz = &hv->caps.sizes[i];
                char size[16];
                mthp_format_size(sz->kb, size, sizeof(size));
                if (c->json)
                        printf("%s{\"size\":\"%s\",\"size_kb\":%u,\"order\":%d,\"pmd\":%s,\"knobs\":[", i ? "," : "",
                               size, sz->kb, sz->order, sz->kb == hv->caps.pmd_kb ? "true" : "false");
                bool first = true;
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        int kn = sz->knob[k];
                        if (kn < 0)
                                continue;
                        const struct mthp_counter *a = stat_counter(&hv->caps, &hv->snap, i, kind_alloc_stat[k]),
                                                  *f = stat_counter(&hv->caps, &hv->snap, i, kind_fallback_stat[k]);
                        if (c->json) {
                                printf("%s{\"id\":", first ? "" : ",");
                                json_str(hv->caps.knobs[kn].id);
                                printf(",\"kind\":\"%s\",\"value\":", mthp_kind_name(k));
                                json_str(hv->snap.knob[kn]);
                                printf(",\"accepts\":");
                                json_accepts(&hv->caps.knobs[kn]);
                                printf(",\"alloc\":");
                                json_u64_or_null(a != NULL, a ? a->value : 0);
                                printf(",\"fallback\":");
                                json_u64_or_null(f != NULL, f ? f->value : 0);
                                printf("}");
                        } else {
                                table_cell(&t, "%s", first ? size : "");
                                if (first)
                                        table_cell(&t, "%d", sz->order);
                                else
                                        table_cell(&t, "%s", "");
                                table_cell(&t, "%s", mthp_kind_name(k));
                                table_cell(&t, "%s", hv->snap.knob[kn]);
                                if (a)
                                        table_cell(&t, "%llu", (unsigned long long) a->value);
                                else
                                        table_cell(&t, "-");
                                if (f)
                                        table_cell(&t, "%llu", (unsigned long long) f->value);
                                else
                                        table_cell(&t, "-");
                                char accepts[MTHP_VALUES_MAX * (MTHP_VALUE_MAX + 1)] = "";
                                for (unsigned v = 0; v < hv->caps.knobs[kn].n_allowed; v++) {
                                        if (v)
                                                strcat(accepts, " ");
                                        strcat(accepts, hv->caps.knobs[kn].allowed[v]);
                                }
                                table_cell(&t, "%s", accepts);
                        }
                        first = false;
                }
                if (c->json) {
                        printf("],\"stats\":{");
                        for (unsigned j = 0; j < sz->n_stats; j++) {
                                printf("%s", j ? "," : "");
                                json_str(sz->stats[j]);
                                if (hv->snap.size[i].stat[j].present)
                                        printf(":%llu", (unsigned long long) hv->snap.size[i].stat[j].value);
                                else
                                        printf(":null");
                        }
                        printf("}}");
                }
        }
        if (c->json)
                printf("]}\n");
        else {
                table_print(&t, stdout);
                table_free(&t);
                printf("\nALLOC and FALLBACK count faults (anon) or allocations (shmem) since boot: "
                       "hugepages-<N>kB/stats/{anon_fault,shmem}_{alloc,fallback}.\n");
        }
        host_view_close(hv);
        return EXIT_OK;
}

int cmd_explain(struct ctl *c, int argc, char **argv) {
        unsigned kb = 0;
        char want[16] = "";
        if (argc > 0) {
                if (mthp_parse_size(argv[0], &kb) < 0 || kb == 0) {
                        fprintf(stderr, "mthpctl: explain: expected a size like 64K or 2M, got '%s'\n", argv[0]);
                        return EXIT_USAGE;
                }
                mthp_format_size(kb, want, sizeof(want));
        }
        struct ctl_bus *bus = bus_open_for_read(false);
        struct daemon_view *v = xrealloc(NULL, sizeof(*v));
        daemon_look(c, bus, 0, v);
        if (v->on_bus) {
                /* the daemon filters by size itself */
                struct ctl_bus_error e;
                int r = ctl_bus_explain(bus, want, v->reason, MTHP_KNOBS_MAX, &v->n_reasons, &e);
                if (r < 0) {
                        ctl_bus_free(bus);
                        free(v);
                        return bus_fail(c, r, &e);
                }
        }
        ctl_bus_free(bus);
        if (!v->running) {
                fprintf(stderr, "mthpctl: explain: mthpd is not running (not on the bus, no live %s/%s): nothing "
                        "to explain\n", c->state_dir, MTHP_STATUS_FILE);
                free(v);
                return EXIT_NOT_RUNNING;
        }
        if (c->json) {
                printf("{");
                json_daemon(v);
                printf(",\"knobs\":[");
        }
        bool first = true;
        for (unsigned i = 0; i < v->n_reasons; i++) {
                const struct mthp_status_knob *k = &v->reason[i];
                size_t wl = strlen(want);
                if (kb && (strncmp(k->id, want, wl) != 0 || k->id[wl] != '/'))
                        continue;
                if (c->json) {
                        printf("%s{\"id\":", first ? "" : ",");
                        json_str(k->id);
                        printf(",\"decision\":");
                        json_str(k->decision);
                        printf(",\"reason\":");
                        json_str(k->reason);
                        printf(",\"rule\":");
                        json_str_or_null(k->rule[0] ? k->rule : NULL);
                        printf(",\"size_rule\":");
                        json_str_or_null(k->size_rule[0] ? k->size_rule : NULL);
                        printf("}");
                } else {
                        /* the id and value escaped here; the reason's names
                         * were escaped by the engine that quoted them */
                        char id[4 * sizeof(k->id)], decision[4 * sizeof(k->decision)], reason[4 * sizeof(k->reason)];
                        printf("%s: %s\n    %s\n", mthp_escape(id, sizeof(id), k->id),
                               mthp_escape(decision, sizeof(decision), k->decision),
                               composed_text(reason, sizeof(reason), k->reason));
                        if (k->rule[0]) {
                                char rule[4 * sizeof(k->rule)], size_rule[4 * sizeof(k->size_rule)];
                                printf("    rule: %s%s%s\n", mthp_escape(rule, sizeof(rule), k->rule),
                                       k->size_rule[0] ? ", " : "",
                                       mthp_escape(size_rule, sizeof(size_rule), k->size_rule));
                        }
                }
                first = false;
        }
        if (c->json)
                printf("]}\n");
        else {
                if (first)
                        printf("mthpd manages no knob%s%s under its configuration\n", kb ? " of size " : "", want);
                print_coverage(stdout, v, true);
        }
        free(v);
        return EXIT_OK;
}
