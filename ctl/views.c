/* SPDX-License-Identifier: MIT */
/* What mthpctl sees: the host view (sampled without the daemon), the
 * daemon view (over the bus, else from the status file), the restore
 * journal, and the errors of calls on the bus. */
#include "mthpctl.h"
#include "mthp/util.h"

const struct mthp_counter *stat_counter(const struct mthp_caps *caps, const struct mthp_snapshot *s,
                                        unsigned i, const char *name) {
        int j = mthp_stat_index(&caps->sizes[i], name);
        return j < 0 || !s->size[i].stat[j].present ? NULL : &s->size[i].stat[j];
}

const char *const kind_alloc_stat[_MTHP_KIND_MAX] = { "anon_fault_alloc", "shmem_alloc" };
const char *const kind_fallback_stat[_MTHP_KIND_MAX] = { "anon_fault_fallback", "shmem_fallback" };

void host_view_close(struct host_view *hv) {
        if (!hv)
                return;
        mthp_sampler_free(hv->s);
        mthp_host_free(hv->h);
        free(hv);
}

struct host_view *host_view_open(const struct ctl *c) {
        struct host_view *hv = calloc(1, sizeof(*hv));
        int r;
        if (!hv) {
                fprintf(stderr, "mthpctl: out of memory\n");
                return NULL;
        }
        if ((r = mthp_host_open(c->root, &hv->h)) < 0) {
                fprintf(stderr, "mthpctl: cannot open host root %s: %s\n", c->root, mthp_errno_words(r));
                goto fail;
        }
        if ((r = mthp_probe(hv->h, &hv->caps)) < 0) {
                fprintf(stderr, "mthpctl: no transparent hugepage support under %s%s: %s\n",
                        strcmp(c->root, "/") ? c->root : "", MTHP_THP_DIR, mthp_errno_words(r));
                goto fail;
        }
        if ((r = mthp_sampler_new(hv->h, &hv->caps, &hv->s)) < 0 ||
            (r = mthp_sampler_take(hv->s, mthp_now_usec(CLOCK_MONOTONIC), &hv->snap)) < 0) {
                fprintf(stderr, "mthpctl: sampling failed: %s\n", mthp_errno_words(r));
                goto fail;
        }
        return hv;
fail:
        host_view_close(hv);
        return NULL;
}

/* Who set each knob according to the restore journal (without a daemon on
 * the bus, that is all there is to go by). Returns false if it exists but
 * cannot be read. */
bool load_journal(const struct ctl *c, bool quiet, struct mthp_journal *j) {
        char path[MTHP_PATH_MAX], err[512] = "";
        int r = mthp_path_join(path, sizeof(path), c->state_dir, MTHP_JOURNAL_FILE);
        if (r < 0)
                snprintf(err, sizeof(err), "%s/%s: longer than %d bytes\n", c->state_dir, MTHP_JOURNAL_FILE,
                         MTHP_PATH_MAX - 1);
        else
                r = mthp_journal_load(path, j, err, sizeof(err));
        if (r < 0) {
                if (r != -ENOENT && !quiet) {
                        fprintf(stderr, "mthpctl: warning: ");
                        print_errors(err[0] ? err : "cannot read the restore journal\n");
                }
                memset(j, 0, sizeof(*j));
        }
        return r >= 0 || r == -ENOENT;
}

/* ---- the daemon ------------------------------------------------------- */

/* For reads: NULL when mthpd is not on the bus. */
struct ctl_bus *bus_open_for_read(bool quiet) {
        struct ctl_bus *b = NULL;
        struct ctl_bus_error e;
        int r = ctl_bus_open(&b, &e);
        if (r < 0 && r != -ESRCH && !quiet)
                fprintf(stderr, "mthpctl: warning: cannot reach mthpd on the bus: %s; showing what the host shows\n",
                        e.message);
        return r < 0 ? NULL : b;
}

void daemon_look(const struct ctl *c, struct ctl_bus *bus, unsigned what, struct daemon_view *v) {
        struct ctl_bus_error e;
        struct ctl_bus_props p;
        int r = -ESRCH;

        memset(v, 0, sizeof(*v));
        if (bus && (r = ctl_bus_get_props(bus, &p, &e)) >= 0 &&
            (!(what & LOOK_KNOBS) || (r = ctl_bus_list_knobs(bus, v->knob, MTHP_KNOBS_MAX, &v->n_knobs, &e)) >= 0) &&
            (!(what & LOOK_REASONS) ||
             (r = ctl_bus_explain(bus, "", v->reason, MTHP_KNOBS_MAX, &v->n_reasons, &e)) >= 0)) {
                v->running = v->on_bus = true;
                v->pid = ctl_bus_pid(bus);
                mthp_strcpy(v->mode, sizeof(v->mode), p.mode[0] ? p.mode : "manage");
                mthp_strcpy(v->not_writable, sizeof(v->not_writable), p.not_writable);
                mthp_strcpy(v->version, sizeof(v->version), p.version);
                v->tick = p.tick;
                v->changes = p.changes;
                v->changes_known = true;
                v->counters_known = p.counters_known;
                v->write_errors = p.write_errors;
                v->guard_trips = p.guard_trips;
                v->n_knob_writes = p.n_knob_writes;
                memcpy(v->knob_writes, p.knob_writes, sizeof(v->knob_writes));
                v->fault_pages_rate = p.fault_pages_rate;
                v->interval_usec = p.interval_usec;
                v->rates_known = p.rates_known;
                v->fault_cost_ns = p.fault_cost_ns;
                v->raise_rate = p.raise_rate;
                v->lower_rate = p.lower_rate;
                v->rates_by_time = p.rates_by_time;
                v->coverage = p.coverage;
                v->host_bloat_known = p.host_bloat_known;
                v->host_bloat_budget = p.host_bloat_budget;
                v->n_host_bloat = p.n_host_bloat;
                memcpy(v->host_bloat, p.host_bloat, sizeof(v->host_bloat));
                return;
        }
        if (bus && r != -ESRCH && !(what & LOOK_QUIET))
                fprintf(stderr, "mthpctl: warning: mthpd on the bus failed to answer: %s; falling back to %s/%s\n",
                        e.message, c->state_dir, MTHP_STATUS_FILE);
        v->n_knobs = v->n_reasons = 0;
        struct mthp_status *st = calloc(1, sizeof(*st));
        if (!st)
                return;
        if (mthp_status_file_read(c->state_dir, st) == 0) {
                v->running = true;
                v->pid = st->pid;
                mthp_strcpy(v->mode, sizeof(v->mode), st->observing ? "observe" : "manage");
                mthp_strcpy(v->not_writable, sizeof(v->not_writable), st->not_writable);
                v->tick = st->tick;
                v->fault_pages_rate = st->fault_pages_rate;
                v->rates_known = st->rates_known;
                v->fault_cost_ns = st->rates.fault_cost_ns;
                v->raise_rate = st->rates.raise;
                v->lower_rate = st->rates.lower;
                v->rates_by_time = st->rates.by_time;
                v->coverage = st->coverage;
                v->n_reasons = st->n;
                memcpy(v->reason, st->k, st->n * sizeof(st->k[0]));
        }
        free(st);
}

static const struct ctl_bus_knob *view_knob(const struct daemon_view *v, const char *id) {
        for (unsigned i = 0; i < v->n_knobs; i++)
                if (strcmp(v->knob[i].id, id) == 0)
                        return &v->knob[i];
        return NULL;
}

static const struct mthp_status_knob *view_reason(const struct daemon_view *v, const char *id) {
        for (unsigned i = 0; i < v->n_reasons; i++)
                if (strcmp(v->reason[i].id, id) == 0)
                        return &v->reason[i];
        return NULL;
}

void knob_owners_fill(struct knob_owners *o, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                      const struct mthp_journal *j, const struct daemon_view *v) {
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                const struct ctl_bus_knob *bk = view_knob(v, caps->knobs[i].id);
                const struct mthp_status_knob *sk = view_reason(v, caps->knobs[i].id);
                /* off the bus, the running mthpd's view from its status
                 * file; without one, what the journal says */
                o->set_by[i] = bk ? bk->set_by : sk && sk->set_by[0] ? sk->set_by
                                                   : mthp_knob_owner(j, &caps->knobs[i], snap->knob[i]);
                o->decision[i] = bk ? bk->decision : sk ? sk->decision : NULL;
                o->pinned[i] = bk ? bk->pinned : sk && sk->pinned;
        }
}

/* "running (manage), pid 123, tick 45, 6 changes" */
void print_daemon_line(FILE *f, const struct daemon_view *v) {
        if (!v->running) {
                fprintf(f, "mthpd: not running");
                return;
        }
        fprintf(f, "mthpd: running (%s%s%s)", v->mode,
                strcmp(v->mode, "observe") == 0 ? ": decides, writes nothing" : "",
                v->not_writable[0] ? ": the knobs are not writable" : "");
        if (v->pid)
                fprintf(f, ", pid %d", v->pid);
        fprintf(f, ", tick %llu", v->tick);
        if (v->changes_known)
                fprintf(f, ", %llu change(s)", v->changes);
        if (!v->on_bus)
                fprintf(f, " (not on the bus: from %s)", MTHP_STATUS_FILE);
}

/* ---- errors from the bus --------------------------------------------- */

/* Print what went wrong with a call for command cmd; returns the exit code. */
int bus_fail(const struct ctl *c, int r, const struct ctl_bus_error *err) {
        const char *name = c->cmd->name;
        /* the daemon's words may quote names anyone chose: escaped */
        static struct ctl_bus_error clean;
        mthp_strcpy(clean.name, sizeof(clean.name), err->name);
        mthp_escape(clean.message, sizeof(clean.message), err->message);
        const struct ctl_bus_error *e = &clean;
        switch (-r) {
        case EACCES:
                fprintf(stderr, "mthpctl: %s: permission denied: only root may %s (run as root)\n", name,
                        c->cmd->root_only ? c->cmd->root_only : "do this");
                return EXIT_DENIED;
        case ESRCH: {
                /* not on the bus need not mean not running: a restarted
                 * dbus-daemon, Bus=no, --no-bus. Its status file says. */
                struct mthp_status *st = calloc(1, sizeof(*st));
                pid_t pid = st && mthp_status_file_read(c->state_dir, st) == 0 ? st->pid : 0;
                free(st);
                if (pid > 0)
                        fprintf(stderr, "mthpctl: %s: mthpd runs (pid %d) but is not on the system bus%s%s%s, so it "
                                "cannot be asked; after a restart of dbus it reconnects within seconds: try "
                                "again, or see journalctl -u mthpd\n", name, (int) pid,
                                e->message[0] && !e->name[0] ? " (" : "",
                                e->message[0] && !e->name[0] ? e->message : "", e->message[0] && !e->name[0] ? ")" : "");
                else if (e->name[0] || !e->message[0])
                        fprintf(stderr, "mthpctl: %s: mthpd is not running\n", name);
                else
                        fprintf(stderr, "mthpctl: %s: mthpd is not running (%s)\n", name, e->message);
                return EXIT_NOT_RUNNING;
        }
        case EOPNOTSUPP:
                fprintf(stderr, "mthpctl: %s: the running mthpd does not offer this (%s); is it older than mthpctl?\n",
                        name, e->message);
                return EXIT_FAIL;
        default:
                fprintf(stderr, "mthpctl: %s: %s\n", name, e->message[0] ? e->message : strerror(-r));
                return EXIT_FAIL;
        }
}

/* For writes: the bus, or an exit code. */
int bus_open_for_write(const struct ctl *c, struct ctl_bus **bus) {
        struct ctl_bus_error e;
        int r = ctl_bus_open(bus, &e);
        return r < 0 ? bus_fail(c, r, &e) : 0;
}
