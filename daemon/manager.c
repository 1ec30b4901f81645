/* SPDX-License-Identifier: MIT */
/* The manager: mthpd's state and what it does with it. One tick takes the
 * observer's snapshot (mthp/observe.h), lets the engine decide, lets pins
 * override, applies through the actuator and explains; the operations the D-Bus service offers (reload,
 * mode, restore, pin, unpin, resume) are here too. mthpd.c drives it from
 * the event loop. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "bus.h"
#include "guard.h"
#include "daemon.h"
#include "mthp/cgmon.h"
#include "mthp/procfs.h"
#include "mthp/faults.h"
#include "mthp/deciders.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "mthp/safe-io.h"
#include "mthp/status.h"
#include "mthp/util.h"

const char *daemon_mode_name(enum mthp_mode mode) {
        return mode == MTHP_MODE_OBSERVE ? "observe" : "manage";
}

int daemon_mode_from_name(const char *name, enum mthp_mode *ret) {
        if (strcmp(name, "manage") == 0)
                *ret = MTHP_MODE_MANAGE;
        else if (strcmp(name, "observe") == 0)
                *ret = MTHP_MODE_OBSERVE;
        else
                return -EINVAL;
        return 0;
}

/* Log text line by line at prio, leaving text as it is; each entry names
 * the caller (CODE_FILE/LINE/FUNC), not this helper. */
#define log_lines(prio, text) log_lines_at(MTHP_LOG_WHERE, prio, text)
static void log_lines_at(const char *code_file, const char *code_line, const char *func, int prio, const char *text) {
        for (const char *line = text; *line;) {
                size_t len = strcspn(line, "\n");
                if (len > 0)
                        mthp_log_at(code_file, code_line, func, NULL, prio, "%.*s", (int) len, line);
                line += len + (line[len] == '\n');
        }
}

static bool cgroup_user_owned(void *user, const char *cgroup) {
        const struct daemon *d = user;
        return d->host && mthp_cgroup_owned_by_user(d->host, &d->caps, cgroup);
}

/* The files read, in order, for the log: "FILE, ..." (a configuration
 * without a main file starts from the built-in defaults). */
static void config_files_text(const struct mthp_config_files *f, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = 0;
        if (!f->main)
                len = (size_t) snprintf(buf, size, "built-in defaults%s", f->n ? ", " : "");
        for (size_t i = 0; i < f->n && len + 1 < size; i++) {
                int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", f->path[i]);
                len = n < 0 ? len : len + (size_t) n;
        }
}

/* The configuration files with the command line's overrides (not the mode's:
 * the callers decide it); the files in effect are logged once all of
 * them and the policy files loaded. err gets every "FILE:LINE: ..." error, one per
 * line. *from_file: read from the file, not the built-in defaults (which a
 * missing default file gives at start). On reload a file that is gone is an
 * error when the running configuration came from it: the defaults are not
 * what the administrator chose, and Mode=manage is among them. */
static int load_config(struct daemon *d, bool reload, struct mthp_config *out, struct mthp_policy_set **policies,
                       bool *from_file, char *err, size_t errsz) {
        struct mthp_config c;
        mthp_config_defaults(&c);
        /* the main file and the drop-ins (mthpd.conf(5), FILES); only a main
         * file that is not there gives the defaults under the drop-ins: one
         * that cannot be reached (EACCES) is read, and its error said */
        struct mthp_config_files files;
        int r = d->config_explicit ? mthp_config_files_explicit(d->config_file, &files, err, errsz)
                                   : mthp_config_files_find(mthp_config_default_dirs, &files, err, errsz);
        if (r < 0)
                return r;
        *from_file = files.main;
        if (!files.main && reload && d->config_from_file) {
                snprintf(err, errsz, "%s: the file is gone (no such file); keeping the running configuration, read "
                         "from it at the last start or reload (put it back, or restart mthpd to run on the "
                         "built-in defaults)\n", d->config_file);
                mthp_config_files_free(&files);
                return -ENOENT;
        }
        char list[4096];
        config_files_text(&files, list, sizeof(list));
        r = mthp_config_load_files(&files, &c, err, errsz);
        mthp_config_files_free(&files);
        if (r < 0)
                return r;
        if (d->interval_cli)
                c.interval_usec = d->interval_cli;
        if (d->state_dir_cli && mthp_config_set_state_dir(&c, d->state_dir_cli) < 0) {
                snprintf(err, errsz, "--state-dir %s: expected an absolute path of at most %d bytes\n",
                         d->state_dir_cli, MTHP_STATE_DIR_MAX);
                return -EINVAL;
        }
        if (d->policy_dir_cli && mthp_config_set_policy_dir(&c, d->policy_dir_cli) < 0) {
                snprintf(err, errsz, "--policy-dir %s: expected an absolute path of less than %d bytes\n",
                         d->policy_dir_cli, MTHP_PATH_MAX);
                return -EINVAL;
        }
        if (d->no_bus_cli || d->once)
                c.bus = false;
        /* the policy files with it: all of them or, on any error, none */
        struct mthp_policy_set *set = NULL;
        r = mthp_policy_load_dir(c.policy_dir, true, &set, err, errsz);
        if (r < 0)
                return r;
        mthp_log(LOG_INFO, "configuration: %s", list);
        /* Unit= stays out of cgroups owned by users unless Delegated=yes */
        set->user_owned = cgroup_user_owned;
        set->user_owned_data = d;
        c.engine.policies = set;
        /* the administrator's THP off is what mthpd found at its start */
        memcpy(c.engine.thp_off, d->cfg.engine.thp_off, sizeof(c.engine.thp_off));
        memcpy(c.engine.thp_off_kb, d->cfg.engine.thp_off_kb, sizeof(c.engine.thp_off_kb));
        *out = c;
        *policies = set;
        return 0;
}

/* Who set a knob: a pin counts as "pinned" while the knob holds the pinned
 * value and nobody else took it over. */
static const char *knob_setter(const struct daemon *d, int knob, const char *current) {
        const struct knob_pin *p = &d->pin[knob];
        if (p->active && !mthp_actuator_is_foreign(d->act, knob) && strcmp(current, p->value) == 0)
                return "pinned";
        return mthp_knob_owner(mthp_actuator_journal(d->act), &d->caps.knobs[knob], current);
}

void daemon_knob_view(const struct daemon *d, int knob, unsigned flags, struct daemon_knob_view *v) {
        memset(v, 0, sizeof(*v));
        v->knob = &d->caps.knobs[knob];
        if (!(flags & DAEMON_VIEW_READ) || mthp_knob_read(d->host, v->knob, v->current) < 0)
                mthp_strcpy(v->current, sizeof(v->current), d->known[knob]);
        v->set_by = knob_setter(d, knob, v->current);
        v->engine_value = d->engine_value[knob][0] ? d->engine_value[knob] : "original";
        v->pinned = daemon_knob_pinned(d, knob);
        for (int i = 0; i < d->n_decisions && !v->decision; i++)
                if (d->decisions[i].knob == knob)
                        v->decision = &d->decisions[i];
        v->rule = v->size_rule = "";
        if (v->pinned)
                v->rule = "pinned";
        else if (v->decision) {
                if (v->decision->rule != MTHP_RULE_NONE)
                        v->rule = mthp_rule_name(v->decision->rule);
                if (v->decision->size_rule != MTHP_RULE_NONE)
                        v->size_rule = mthp_rule_name(v->decision->size_rule);
        }
}

void daemon_coverage(const struct daemon *d, struct mthp_status_coverage *c) {
        struct mthp_cgmon_stats st;
        memset(c, 0, sizeof(*c));
        c->cgroups_known = mthp_observer_cgroup_stats(d->observer, &st, &c->fd_limit);
        if (c->cgroups_known) {
                c->managed = st.n_managed;
                c->reopened = st.n_transient > st.n_unmonitored ? st.n_transient - st.n_unmonitored : 0;
                c->unmonitored = st.n_unmonitored;
                c->fds = st.fds;
                c->fd_reserve = MTHP_CGMON_FD_RESERVE;
        }
        guard_coverage(d->guard, c);
}

void daemon_cgroup_view(const struct daemon *d, unsigned i, struct daemon_cgroup_view *v) {
        memset(v, 0, sizeof(*v));
        v->cgroup = &d->snap.cgroup[i];
        v->policy = mthp_engine_policy(&d->cfg.engine, v->cgroup->path, NULL, 0);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                v->mode[k] = v->policy ? mthp_policy_mode_name(v->policy->mode[k]) : "auto";
                v->dense_kb[k] = mthp_engine_cgroup_dense_kb(&d->cfg.engine, &d->caps, &d->engine, v->cgroup->path, k,
                                                             NULL);
        }
        v->priority = v->policy ? v->policy->priority : d->cfg.engine.default_priority;
}

/* Every knob write mthpd makes, whoever asked for it, goes through here:
 * the Changes, WriteErrors and KnobWrites properties count them. */
static int knob_write(struct daemon *d, int knob, const char *value, const char *reason, char *err, size_t errsz) {
        int r = mthp_knob_write(d->act, knob, value, reason, err, errsz);
        if (r > 0) {
                d->changes++;
                d->knob_writes[knob]++;
        } else if (r < 0) {
                d->write_errors++;
                d->knob_write_errors[knob]++;
        }
        return r;
}

/* The actuator's hook: KnobChanged for every write (not for the changes an
 * observing mthpd only logs). */
static void on_knob_foreign(void *user, const struct mthp_knob *k, const char *ours, const char *theirs) {
        struct daemon *d = user;
        (void) ours;
        (void) mthp_deciders_foreign_noticed(d->host, &d->caps, d->cfg.state_dir, k, theirs);
}

static void on_knob_changed(void *user, const struct mthp_change *c) {
        struct daemon *d = user;
        if (mthp_actuator_observing(d->act))
                return;
        int k = mthp_caps_find_knob(&d->caps, c->id);
        if (k >= 0)
                mthp_strcpy(d->known[k], sizeof(d->known[k]), c->new);
        bus_emit_knob_changed(d->bus, c);
}

/* Write the tick's decisions; a write that fails leaves its decision
 * saying what the knob holds and why, and the engine's state follows what
 * was really written (mthp_engine_note_applied). */
static void apply(struct daemon *d) {
        bool failed[MTHP_KNOBS_MAX] = { false }, any = false;
        for (int i = 0; i < d->n_decisions; i++) {
                struct mthp_decision *dec = &d->decisions[i];
                char err[512];
                int r = knob_write(d, dec->knob, dec->value, dec->reason, err, sizeof(err));
                if (r == 0 && !dec->value[0] && d->last_error[dec->knob][0] && !daemon_knob_pinned(d, dec->knob))
                        continue; /* the engine took back what failed: not cleared until a write works */
                if (r >= 0) {
                        /* each condition is logged once, and once when it clears */
                        if (d->last_error[dec->knob][0])
                                mthp_log(LOG_NOTICE, "%s: no longer failing (%s)", d->caps.knobs[dec->knob].id,
                                         r > 0 ? "written now" : "nothing to write any more");
                        d->last_error[dec->knob][0] = 0;
                        continue;
                }
                if (strcmp(d->last_error[dec->knob], err) != 0) {
                        mthp_log_knob(LOG_ERR, d->caps.knobs[dec->knob].id, "%s", err);
                        snprintf(d->last_error[dec->knob], sizeof(d->last_error[0]), "%s", err);
                }
                /* the engine's choice, not an administrator's pin */
                if (!daemon_knob_pinned(d, dec->knob))
                        failed[dec->knob] = any = true;
                /* explain and the status file show what the knob holds, and
                 * why not what the engine wanted: never a value it lacks */
                char cur[MTHP_VALUE_MAX] = "unknown", why[MTHP_REASON_MAX];
                (void) mthp_knob_read(d->host, &d->caps.knobs[dec->knob], cur);
                /* the engine's why without its "(level 2/9; 32K in use)": the size is not */
                const char *lvl = strstr(dec->reason, " (level ");
                int why_len = lvl ? (int) (lvl - dec->reason) : (int) strlen(dec->reason);
                snprintf(why, sizeof(why), "not applied: %.300s; it holds '%s', mthpd wanted '%s' (%.*s)", err, cur,
                         dec->value[0] ? dec->value : "original", why_len < 250 ? why_len : 250, dec->reason);
                mthp_strcpy(dec->reason, sizeof(dec->reason), why);
                mthp_strcpy(dec->value, sizeof(dec->value), cur);
        }
        if (any)
                mthp_engine_note_applied(&d->cfg.engine, &d->caps, &d->engine, failed);
}

static void notify_status(struct daemon *d) {
        char s[1024], mode[600], failing[600] = "", top[_MTHP_KIND_MAX][16];
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n = mthp_engine_ladder(&d->cfg.engine, &d->caps, k, ladder);
                unsigned lvl = d->engine.kind[k].level;
                if (lvl && lvl <= n)
                        mthp_format_size(d->caps.sizes[ladder[lvl - 1]].kb, top[k], sizeof(top[k]));
                else
                        snprintf(top[k], sizeof(top[k]), "original");
        }
        if (d->cfg.mode == MTHP_MODE_OBSERVE && d->not_writable[0])
                snprintf(mode, sizeof(mode), "observing, the knobs are not writable (%s)", d->not_writable);
        else
                snprintf(mode, sizeof(mode), "%s", d->cfg.mode == MTHP_MODE_OBSERVE ? "observing" : "managing");
        /* the writes that fail now: the sizes above are what the kernel holds */
        unsigned n_failing = 0;
        for (unsigned i = 0; i < d->caps.n_knobs; i++)
                if (d->last_error[i][0] && n_failing++ == 0)
                        snprintf(failing, sizeof(failing), "; not applied: %.500s", d->last_error[i]);
        if (n_failing > 1)
                snprintf(failing + strlen(failing), sizeof(failing) - strlen(failing), " (and %u more)", n_failing - 1);
        /* bloat given back since the start (giveback-tick.c), once there is some */
        char given[96] = "";
        if (d->give_back_total.processes)
                snprintf(given, sizeof(given), "; bloat given back: %llu MiB of %u process(es)",
                         (unsigned long long) d->give_back_total.freed_kb >> 10, d->give_back_total.processes);
        snprintf(s, sizeof(s), "STATUS=%s: anon up to %s, shmem up to %s; %.0f fault pages/s; %llu changes%s%s", mode,
                 top[MTHP_ANON], top[MTHP_SHMEM], d->snap.fault_pages_rate, (unsigned long long) d->changes, given,
                 failing);
        sd_notify(0, s);
}

/* --record: the snapshot exactly as the engine gets it. A failed write
 * stops the recording, never the daemon. */
static void record_tick(struct daemon *d) {
        if (!d->recorder)
                return;
        int r = mthp_record_write(d->recorder, &d->snap);
        if (r < 0) {
                mthp_log(LOG_ERR, "recording to %s failed: %s; recording stops, mthpd carries on", d->record_file,
                         mthp_errno_words(r));
                mthp_record_close_write(d->recorder);
                d->recorder = NULL;
        }
}

/* A cgroup the start grace is for: managed by a policy that says always
 * for a kind, while StartGrace= is on. */
static bool grace_cgroup(const struct daemon *d, const char *path) {
        if (!d->cfg.engine.start_grace_usec || !mthp_observe_cgroup_managed(d->policies, path))
                return false;
        const struct mthp_policy *pol = mthp_engine_policy(&d->cfg.engine, path, NULL, 0);
        return pol && (pol->mode[MTHP_ANON] == MTHP_POLICY_ALWAYS || pol->mode[MTHP_SHMEM] == MTHP_POLICY_ALWAYS);
}

bool daemon_cgroup_created(struct daemon *d, const char *path) {
        if (!mthp_observer_has_cgroups(d->observer) || !d->policies || !d->policies->n || !grace_cgroup(d, path))
                return false;
        /* none where the sizes its policy allows are on already: the next
         * tick sees it in its grace, which then holds them */
        return mthp_engine_grace_room(&d->cfg.engine, &d->caps, &d->engine,
                                      mthp_engine_policy(&d->cfg.engine, path, NULL, 0));
}

/* The fault cost the engine decides with and the rates it gives
 * (FaultCost= is 1 ns to 1 s, a measurement at most 1 ms: it takes either). */
static void rates_update(struct daemon *d, double cost_ns) {
        struct mthp_status_rates *x = &d->rates;
        x->by_time = mthp_engine_fault_rates(&d->cfg.engine, cost_ns, &x->raise, &x->lower);
        x->fault_cost_ns = cost_ns;
}

/* The status file: the last tick's decisions in the engine's order, each
 * as the knob view says it. */
static void write_status(const struct daemon *d) {
        struct mthp_status_knob rows[MTHP_KNOBS_MAX];
        unsigned n = 0;
        for (int i = 0; i < d->n_decisions; i++) {
                struct daemon_knob_view v;
                daemon_knob_view(d, d->decisions[i].knob, 0, &v);
                struct mthp_status_knob *row = &rows[n++];
                mthp_strcpy(row->id, sizeof(row->id), v.knob->id);
                mthp_strcpy(row->decision, sizeof(row->decision), v.decision->value);
                mthp_strcpy(row->reason, sizeof(row->reason), v.decision->reason);
                mthp_strcpy(row->set_by, sizeof(row->set_by), v.set_by);
                row->pinned = v.pinned;
                mthp_strcpy(row->rule, sizeof(row->rule), v.rule);
                mthp_strcpy(row->size_rule, sizeof(row->size_rule), v.size_rule);
        }
        struct mthp_status_coverage coverage;
        daemon_coverage(d, &coverage);
        (void) mthp_status_file_write(d->cfg.state_dir, &d->snap, rows, n, d->cfg.mode == MTHP_MODE_OBSERVE,
                                      d->not_writable, d->last_tick_usec, &d->rates, &coverage);
}

static int tick(struct daemon *d) {
        struct mthp_engine_state next;
        uint64_t t = mthp_now_usec(CLOCK_MONOTONIC);
        d->ticks++;
        unsigned hints = (d->tick_early ? MTHP_OBSERVE_EARLY : 0) | (d->awaits ? MTHP_OBSERVE_AWAITS : 0);
        int r = mthp_observer_take(d->observer, t, &d->engine, hints, &d->snap);
        if (r < 0) {
                /* once when it starts failing, once when it works again */
                if (d->sample_failures++ == 0)
                        mthp_log(LOG_ERR, "sampling failed: %s; keeping the current settings until it works again",
                                 mthp_errno_words(r));
                return 0;
        }
        if (d->sample_failures) {
                mthp_log(LOG_NOTICE, "sampling works again after %llu failed ticks",
                         (unsigned long long) d->sample_failures);
                d->sample_failures = 0;
        }
        memcpy(d->known, d->snap.knob, sizeof(d->known));
        rates_update(d, d->snap.fault_cost_ns);
        daemon_collapse_fill(d);   /* the shmem repair so far: part of the snapshot, recorded */
        guard_scan(d->guard);
        record_tick(d);
        mthp_actuator_check_foreign(d->act, (const char(*)[MTHP_VALUE_MAX]) d->snap.knob);
        daemon_expire_pins(d);
        d->n_decisions = mthp_engine_decide(&d->cfg.engine, &d->caps, &d->snap, &d->engine, &next, d->decisions,
                                            MTHP_KNOBS_MAX);
        d->engine = next;
        daemon_apply_pins(d);
        for (int i = 0; i < d->n_decisions; i++)
                mthp_log(LOG_DEBUG, "tick %llu %s: %s", (unsigned long long) d->snap.tick,
                         d->caps.knobs[d->decisions[i].knob].id, d->decisions[i].reason);
        apply(d);
        guard_arm(d->guard);
        d->awaits = mthp_engine_awaits_samples(&d->cfg.engine, &d->caps, &d->snap, &d->engine, &d->awaits_rate);
        /* CollapseCPU= and CollapseBudget= are a tick's: the early tick
         * (a quarter Interval after the last) leaves them to the next one,
         * due when it would have been without it */
        if (!d->tick_early) {
                daemon_collapse(d, t);
                daemon_give_back(d);
        }
        write_status(d);
        mthp_observer_set_idle(d->observer, mthp_observe_sizes_idle(&d->cfg.engine, &d->caps, &d->snap, &d->engine));
        d->last_tick_usec = mthp_now_usec(CLOCK_MONOTONIC) - t;
        notify_status(d);
        return 0;
}

/* For the guard (guard.c): the one knob writer, and a check between ticks. */
int daemon_knob_write(struct daemon *d, int knob, const char *value, const char *reason, char *err, size_t errsz) {
        return knob_write(d, knob, value, reason, err, errsz);
}

/* A check between ticks: a new cgroup's start grace, the guard's
 * thresholds after a step-down. It samples and decides as a tick does,
 * but only the ticks of Interval= count towards ConfirmTicks, LowerTicks,
 * DwellTicks and the other streaks: a check that changed no level and
 * wrote no knob leaves the engine as the last tick left it (a user who
 * makes a cgroup every few ms would otherwise shrink each streak to
 * milliseconds and flap the sizes). One that changed a level keeps its
 * state: a change starts every streak and the dwell afresh anyway. */
void daemon_run_check(struct daemon *d) {
        static struct mthp_engine_state was;   /* one daemon, one thread: no copy on the stack */
        was = d->engine;
        uint64_t changes = d->changes;
        (void) tick(d);
        bool acted = d->changes != changes;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                acted = acted || d->engine.kind[k].level != was.kind[k].level;
        if (!acted)
                d->engine = was;
}

uint64_t daemon_timer_tick(struct daemon *d, uint64_t usec) {
        d->tick_early = d->plan.early;
        (void) tick(d);
        d->tick_early = false;
        /* a tick without density saw no process: it neither starts nor
         * ends an await (else the next density tick would start one again) */
        bool awaits = d->snap.density.valid ? d->awaits : d->plan.awaited;
        /* a burst tick that saw nobody to act on: look again soon (the
         * processes that fault may have forked just after it) */
        bool look = d->tick_burst && d->snap.density.valid &&   /* valid: a density sampler saw processes */
                    mthp_engine_burst_unexplained(&d->cfg.engine, &d->caps, &d->snap, &d->engine);
        if (d->tick_burst)
                d->plan.burst_tick = d->engine.tick;
        d->tick_burst = false;
        /* a raise short of the top, on this tick's density: the next step
         * of the climb a quarter Interval later */
        bool climb = mthp_engine_climbing(&d->cfg.engine, &d->caps, &d->snap, &d->engine);
        uint64_t next = mthp_tick_next(&d->plan, d->ticks, usec, d->cfg.interval_usec, awaits, look, climb);
        if (d->plan.early && climb) {
                mthp_observer_expect_faults(d->observer, &d->snap, d->awaits_rate, (double) (next - usec) / (double) d->cfg.interval_usec);
                mthp_log(LOG_DEBUG, "tick %llu: raised short of the top: next tick in %llu ms",
                         (unsigned long long) d->snap.tick, (unsigned long long) (next - usec) / 1000);
        } else if (d->plan.early && d->plan.look)
                mthp_log(LOG_DEBUG, "tick %llu: the fault burst goes on, no process to act on seen yet: next tick "
                         "in %llu ms", (unsigned long long) d->snap.tick, (unsigned long long) (next - usec) / 1000);
        else if (d->plan.early) {
                /* as many samples by then as a whole Interval would bring */
                mthp_observer_expect_faults(d->observer, &d->snap, d->awaits_rate, (double) (next - usec) / (double) d->cfg.interval_usec);
                mthp_log(LOG_DEBUG, "tick %llu: fault samples awaited for a raise: next tick in %llu ms",
                         (unsigned long long) d->snap.tick, (unsigned long long) (next - usec) / 1000);
        }
        daemon_alarm_steer(d);
        return next;
}

/* Put back every knob mthpd changed, also while observing (what the
 * journal still holds is from managing). Each goes through knob_write() so
 * History and KnobChanged show it; mthp_actuator_restore() then deals with
 * the rest (knobs someone else changed, the per-size/global order the kernel
 * may insist on) and forgets the journal. err says what could not be put back. */
static int restore_all(struct daemon *d, const char *why, char *err, size_t errsz) {
        char reason[MTHP_REASON_MAX];
        bool observing = mthp_actuator_observing(d->act);
        snprintf(reason, sizeof(reason), "original value restored: %s", why);
        mthp_actuator_set_observing(d->act, false);
        for (unsigned i = 0; i < d->caps.n_knobs; i++)
                (void) knob_write(d, (int) i, "", reason, NULL, 0);
        int left = mthp_actuator_restore(d->act);
        mthp_actuator_set_observing(d->act, observing);
        if (left == 0)
                return 0;
        snprintf(err, errsz, "%d knob(s) could not be restored; the journal %s keeps their originals",
                 left < 0 ? -1 : left, mthp_actuator_journal_file(d->act));
        mthp_log(LOG_ERR, "%s", err);
        return left < 0 ? left : -EIO;
}

/* Going to observe puts every knob back first (and switches even if some
 * could not be); going to manage needs the restore journal. */
static int switch_mode(struct daemon *d, enum mthp_mode mode, const char *why, char *err, size_t errsz) {
        int r = 0;
        if (mode == d->cfg.mode)
                return 0;
        if (mode == MTHP_MODE_MANAGE && d->lock_fd < 0) {
                snprintf(err, errsz, "cannot manage knobs: the state directory %s is not usable, and without a "
                         "restore journal mthpd could not undo its writes", d->cfg.state_dir);
                mthp_log(LOG_ERR, "%s: %s", why, err);
                return -EROFS;
        }
        if (mode == MTHP_MODE_MANAGE) {
                /* the knobs may have become writable since (a remount) */
                char nw[sizeof(d->not_writable)] = "";
                mthp_actuator_set_observing(d->act, false);
                r = mthp_actuator_check_writable(d->act, nw, sizeof(nw));
                mthp_actuator_set_observing(d->act, true);
                if (strcmp(nw, d->not_writable) != 0) {
                        mthp_strcpy(d->not_writable, sizeof(d->not_writable), nw);
                        bus_emit_property_changed(d->bus, "NotWritable");
                }
                if (r < 0) {
                        snprintf(err, errsz, "cannot manage: the mTHP knobs cannot be written (%s)", nw);
                        mthp_log(LOG_ERR, "%s: %s; still observing", why, err);
                        return r;
                }
        }
        if (mode == MTHP_MODE_OBSERVE) {
                r = restore_all(d, why, err, errsz);
                mthp_actuator_forget_simulated(d->act); /* observe from the host as it is */
        }
        mthp_actuator_set_observing(d->act, mode == MTHP_MODE_OBSERVE);
        d->cfg.mode = mode;
        mthp_log(LOG_NOTICE, "%s: %s", why,
                 mode == MTHP_MODE_OBSERVE ? "observing: deciding and logging, writing nothing" : "managing mTHP knobs");
        bus_emit_property_changed(d->bus, "Mode");
        notify_status(d);
        return r;
}

/* Append one line to buf (a reload's notes, one per line); returns it,
 * without its newline, for the log. */
static const char *note_line(char *buf, size_t size, char *line, size_t linesz, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static const char *note_line(char *buf, size_t size, char *line, size_t linesz, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, linesz, fmt, ap);
        va_end(ap);
        size_t used = strlen(buf);
        if (used < size)
                snprintf(buf + used, size - used, "%s\n", line);
        return line;
}

/* The mode a reload leaves: Mode= of the file, unless a runtime choice
 * (--mode, SetMode, Restore) holds, or unless it would turn observe into
 * manage without the file saying Mode=manage (a file that lost its line
 * gives the default, manage). Each refusal goes to notes and the log. */
static enum mthp_mode reload_mode(struct daemon *d, const struct mthp_config *c, char *notes, size_t notesz) {
        char line[512];
        if (d->mode_override >= 0) {
                enum mthp_mode held = (enum mthp_mode) d->mode_override;
                if (c->mode_set && c->mode != held)
                        mthp_log(LOG_NOTICE, "reload: %s",
                                 note_line(notes, notesz, line, sizeof(line), "Mode=%s in %s is not applied: %s set "
                                           "mode %s, which holds until mthpd restarts ('mthpctl mode %s' switches "
                                           "now)", daemon_mode_name(c->mode), d->config_file, d->mode_override_by,
                                           daemon_mode_name(held), daemon_mode_name(c->mode)));
                return held;
        }
        if (d->cfg.mode == MTHP_MODE_OBSERVE && c->mode == MTHP_MODE_MANAGE && !c->mode_set) {
                mthp_log(LOG_NOTICE, "reload: %s",
                         note_line(notes, notesz, line, sizeof(line), "%s does not say Mode=manage: mthpd keeps "
                                   "observing (a reload starts managing only when the file says Mode=manage)",
                                   d->config_from_file ? d->config_file : "the built-in configuration"));
                return MTHP_MODE_OBSERVE;
        }
        return c->mode;
}

/* The reload's outcome in STATE/reload (MTHP_RELOAD_FILE), for a reload
 * asked for by SIGHUP: 'mthpctl reload' reads it when mthpd is off the bus.
 * Best effort: without a state directory the journal alone says it. */
static void reload_outcome(const struct daemon *d, int r, const char *text) {
        char why[MTHP_PATH_MAX + 256];
        int dfd = mthp_safe_open_dir(d->cfg.state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why));
        if (dfd < 0)
                return;
        char *buf = NULL;
        int len = asprintf(&buf, "usec=%llu\nresult=%s\n%s", (unsigned long long) mthp_now_usec(CLOCK_REALTIME),
                           r < 0 ? "failed" : "ok", text);
        if (len >= 0 && mthp_safe_write_atomic(dfd, d->cfg.state_dir, MTHP_RELOAD_FILE, 0600, buf, (size_t) len,
                                               false, why, sizeof(why)) < 0)
                mthp_log(LOG_WARNING, "reload: %s", why);
        free(buf);
        close(dfd);
}

int daemon_reload(struct daemon *d, char *err, size_t errsz) {
        struct mthp_config c;
        struct mthp_policy_set *policies = NULL;
        char buf[64];
        bool from_file;
        snprintf(buf, sizeof(buf), "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long) mthp_now_usec(CLOCK_MONOTONIC));
        sd_notify(0, buf);
        if (errsz)
                err[0] = 0;
        int r = load_config(d, true, &c, &policies, &from_file, err, errsz);
        if (r < 0) {
                log_lines(LOG_ERR, err); /* one line per error, each naming file and line */
                mthp_log(LOG_ERR, "reload of %s failed: keeping the running configuration", d->config_file);
        } else {
                char mode_err[512], line[512];
                if (strcmp(c.state_dir, d->cfg.state_dir) != 0) {
                        mthp_log(LOG_WARNING, "reload: %s",
                                 note_line(err, errsz, line, sizeof(line), "StateDirectory= cannot change on "
                                           "reload; keeping %s", d->cfg.state_dir));
                        snprintf(c.state_dir, sizeof(c.state_dir), "%s", d->cfg.state_dir);
                }
                if (c.bus != d->cfg.bus) {
                        mthp_log(LOG_WARNING, "reload: %s",
                                 note_line(err, errsz, line, sizeof(line), "Bus= takes effect at the next start; %s",
                                           d->cfg.bus ? "keeping the D-Bus interface" : "staying off the bus"));
                        c.bus = d->cfg.bus;
                }
                bool interval_changed = c.interval_usec != d->cfg.interval_usec;
                enum mthp_mode mode = reload_mode(d, &c, err, errsz);
                c.mode = d->cfg.mode; /* switch_mode() changes it, restoring first if need be */
                d->cfg = c;
                d->config_from_file = from_file;
                mthp_policy_set_free(d->policies);
                d->policies = policies;
                mthp_observer_configure(d->observer, &d->cfg); /* walk again with the new files */
                daemon_collapse_config(d); /* CollapseBudget=, CollapseCPU=, Interval= */
                mode_err[0] = 0;
                if (switch_mode(d, mode, "Mode= changed on reload", mode_err, sizeof(mode_err)) < 0 && mode_err[0])
                        (void) note_line(err, errsz, line, sizeof(line), "Mode=%s: %s", daemon_mode_name(mode),
                                         mode_err);   /* switch_mode() logged it */
                sd_event_source_set_time(d->timer, mthp_now_usec(CLOCK_MONOTONIC) + d->cfg.interval_usec);
                d->plan.early = false;   /* the next tick is a regular one */
                d->tick_burst = false;
                (void) mthp_fault_alarm_disarm(d->alarm);   /* that tick sets it again, from the new config */
                if (interval_changed)
                        bus_emit_property_changed(d->bus, "IntervalUSec");
                if (from_file)
                        mthp_log(LOG_INFO, "reloaded %s and %u policy file(s) from %s", d->config_file,
                                 d->policies->n, d->cfg.policy_dir);
                else
                        mthp_log(LOG_INFO, "reloaded: %s does not exist (built-in defaults, as at the start); %u "
                                 "policy file(s) from %s", d->config_file, d->policies->n, d->cfg.policy_dir);
        }
        reload_outcome(d, r, err);
        sd_notify(0, "READY=1");
        notify_status(d);
        return r;
}

int daemon_set_mode(struct daemon *d, enum mthp_mode mode, uid_t uid, char *err, size_t errsz) {
        char why[64];
        snprintf(why, sizeof(why), "mode %s set by uid %u", daemon_mode_name(mode), (unsigned) uid);
        int r = switch_mode(d, mode, why, err, errsz);
        if (d->cfg.mode == mode) {
                d->mode_override = mode; /* a reload keeps it */
                snprintf(d->mode_override_by, sizeof(d->mode_override_by), "'mthpctl mode %s' (uid %u)",
                         daemon_mode_name(mode), (unsigned) uid);
        }
        return r;
}

int daemon_restore(struct daemon *d, uid_t uid, char *err, size_t errsz) {
        char why[64];
        snprintf(why, sizeof(why), "restore requested by uid %u", (unsigned) uid);
        for (unsigned i = 0; i < d->caps.n_knobs; i++)
                if (d->pin[i].active) {
                        mthp_log(LOG_NOTICE, "%s: %s: the pin to '%s' is dropped", why, d->caps.knobs[i].id,
                                 d->pin[i].value);
                        memset(&d->pin[i], 0, sizeof(d->pin[i]));
                }
        int r = d->cfg.mode == MTHP_MODE_OBSERVE ? restore_all(d, why, err, errsz)
                                                 : switch_mode(d, MTHP_MODE_OBSERVE, why, err, errsz);
        d->mode_override = MTHP_MODE_OBSERVE;
        snprintf(d->mode_override_by, sizeof(d->mode_override_by), "'mthpctl restore' (uid %u)", (unsigned) uid);
        return r;
}

int daemon_resume(struct daemon *d, const char *id, uid_t uid, char *err, size_t errsz) {
        int k = daemon_find_knob(d, id, err, errsz);
        if (k < 0)
                return k;
        int r = mthp_actuator_resume(d->act, k);
        if (r == -ENOENT) {
                snprintf(err, errsz, "%s is not marked as changed by someone else: there is nothing to resume", id);
                return -EINVAL;
        }
        if (r < 0) {
                snprintf(err, errsz, "%s: cannot save the restore journal %s: %s", id, mthp_actuator_journal_file(d->act),
                         strerror(-r));
                return r;
        }
        char current[MTHP_VALUE_MAX] = "?";
        (void) mthp_knob_read(d->host, &d->caps.knobs[k], current);
        mthp_log(LOG_NOTICE, "%s: resumed by uid %u: mthpd manages it again, and restores it to '%s', the value "
                 "the other writer set", id, (unsigned) uid, current);
        return 0;
}

static int take_lock(struct daemon *d, int dfd) {
        char why[MTHP_PATH_MAX + 256];
        d->lock_fd = mthp_safe_open_lock(dfd, d->cfg.state_dir, "lock", why, sizeof(why));
        if (d->lock_fd < 0) {
                mthp_log(d->cfg.mode == MTHP_MODE_OBSERVE ? LOG_WARNING : LOG_ERR, "%s", why);
                return d->lock_fd;
        }
        if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        return 0;
}

/* The administrator's THP off at start (mthp_deciders_thp_off): the
 * engine holds such a kind at 4K unless OverrideThpOff=yes. */
static void admin_thp_off(struct daemon *d) {
        static struct mthp_deciders dec;
        char enabled[MTHP_VALUE_MAX];
        int g = mthp_caps_find_knob(&d->caps, "global/enabled");
        bool known = g >= 0 && mthp_knob_read(d->host, &d->caps.knobs[g], enabled) >= 0;
        (void) mthp_deciders_read(d->host, &d->caps, &dec);
        mthp_deciders_thp_off(&dec, &d->caps, known ? enabled : NULL, &d->cfg.engine);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                const char *why = d->cfg.engine.thp_off[k];
                if (!why[0])
                        continue;
                if (d->cfg.engine.override_thp_off)
                        mthp_log(LOG_NOTICE, "THP off by the administrator (%s), but OverrideThpOff=yes: mthpd "
                                 "raises %s sizes all the same", why, mthp_kind_name(k));
                else
                        mthp_log(LOG_NOTICE, "THP off by the administrator (%s): mthpd holds %s at 4K and writes "
                                 "only a policy's madvise (OverrideThpOff=yes in [Daemon] lets it raise sizes)", why,
                                 mthp_kind_name(k));
        }
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (d->cfg.engine.thp_off_kb[k] && !d->cfg.engine.override_thp_off)
                        mthp_log(LOG_NOTICE, "the kernel command line sets some %s sizes to never: mthpd leaves "
                                 "them as they are", mthp_kind_name(k));
}

/* The configuration, then the host root and what it offers. */
static int open_host(struct daemon *d) {
        int r;
        char buf[4096];

        char err[4096];
        if (load_config(d, false, &d->cfg, &d->policies, &d->config_from_file, err, sizeof(err)) < 0) {
                log_lines(LOG_ERR, err); /* one line per error, each naming file and line */
                /* STATUS=: the first error, not EINVAL's "the kernel rejected the value" */
                snprintf(d->start_failure, sizeof(d->start_failure), "invalid configuration: %.*s",
                         (int) strcspn(err, "\n"), err);
                d->exit_code = MTHPD_EXIT_CONFIG;
                return -EINVAL;
        }
        if (d->mode_override >= 0) {
                d->cfg.mode = (enum mthp_mode) d->mode_override;
                snprintf(d->mode_override_by, sizeof(d->mode_override_by), "the command line (--mode %s)",
                         daemon_mode_name(d->cfg.mode));
        }
        r = mthp_host_open(d->root, &d->host);
        if (r < 0) {
                mthp_log(LOG_ERR, "cannot open host root %s: %s", d->root, mthp_errno_words(r));
                return r;
        }
        r = mthp_probe(d->host, &d->caps);
        if (r < 0) {
                mthp_log(LOG_ERR, "no transparent hugepage support under %s" MTHP_THP_DIR ": %s", d->root,
                         mthp_errno_words(r));
                return r;
        }
        mthp_caps_describe(&d->caps, buf, sizeof(buf));
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
                mthp_log(LOG_INFO, "probe: %s", line);
        mthp_deciders_log(d->host, &d->caps);
        /* nothing to manage: said once, and no state directory, journal
         * or write (mthpd.c then exits 0: a unit on such a kernel is not
         * a failed one, nor restarted) */
        if (mthp_probe_no_mthp(d->host, &d->caps, d->start_failure, sizeof(d->start_failure))) {
                mthp_log(LOG_WARNING, "%s; exiting", d->start_failure);
                return -EOPNOTSUPP;
        }
        admin_thp_off(d);
        return 0;
}

/* The state directory and its lock: refused when not safe, and without
 * them only observing is possible. */
static int open_state_dir(struct daemon *d) {
        int r;
        bool dry = d->cfg.mode == MTHP_MODE_OBSERVE;
        char why[MTHP_PATH_MAX + 256];
        /* made if missing, and refused when not root's or writable by others */
        int dfd = mthp_safe_open_dir(d->cfg.state_dir, MTHP_SAFE_OWNER, true, why, sizeof(why));
        if (dfd < 0) {
                r = dfd;
                if (!dry || r == -EPERM) {
                        /* without a journal we could not undo our writes: refuse;
                         * STATUS= names the directory too, never errno's
                         * words for /sys (a read-only one here is the state's) */
                        snprintf(d->start_failure, sizeof(d->start_failure), "state directory: %.400s; refusing "
                                 "to %s", why, dry ? "use it" : "change knobs without a restore journal");
                        mthp_log(LOG_ERR, "%s", d->start_failure);
                        return r;
                }
        } else {
                r = take_lock(d, dfd);
                close(dfd);
                if (r == -EWOULDBLOCK) {
                        snprintf(d->start_failure, sizeof(d->start_failure), "another mthpd holds %.400s/lock",
                                 d->cfg.state_dir);
                        mthp_log(LOG_ERR, "%s", d->start_failure);
                        return r;
                }
                /* a read-only /run: the lock may exist, the journal cannot */
                if (r == 0 && access(d->cfg.state_dir, W_OK) < 0)
                        r = -errno;
                if (r < 0) {
                        if (d->lock_fd >= 0)
                                close(d->lock_fd);
                        d->lock_fd = -1;
                        if (!dry) {
                                snprintf(d->start_failure, sizeof(d->start_failure), "state directory %.400s is "
                                         "not writable (%s); refusing to change knobs without a restore journal",
                                         d->cfg.state_dir, strerror(-r));
                                mthp_log(LOG_ERR, "%s", d->start_failure);
                                return r;
                        }
                        mthp_log(LOG_WARNING, "state directory %s is not writable (%s); observing without a "
                                 "lock, status file or journal", d->cfg.state_dir, strerror(-r));
                }
        }
        return 0;
}

/* The actuator, whether it can write, and a leftover journal restored. */
static int open_actuator(struct daemon *d) {
        bool dry = d->cfg.mode == MTHP_MODE_OBSERVE;
        int r = mthp_actuator_new(d->host, &d->caps, d->cfg.state_dir, dry, &d->act);
        if (r < 0) {
                /* strerror: an error of the state directory, not of /sys */
                snprintf(d->start_failure, sizeof(d->start_failure), "cannot prepare the state directory %.400s: "
                         "%s", d->cfg.state_dir, strerror(-r));
                mthp_log(LOG_ERR, "%s", d->start_failure);
                return r;
        }
        mthp_actuator_set_hooks(d->act, on_knob_changed, on_knob_foreign, d);
        /* Managing knobs that cannot be written would log an error per knob
         * and leave a state that claims sizes the kernel never got: say it
         * once and stop, unless asked to observe (restarting cannot help:
         * its own exit status). */
        r = mthp_actuator_check_writable(d->act, d->not_writable, sizeof(d->not_writable));
        if (r < 0 && !dry) {
                mthp_log(LOG_ERR, "cannot write the mTHP knobs (%s), so mthpd does not start: make them writable, "
                         "or run it with --mode observe (Mode=observe) to only decide and explain", d->not_writable);
                d->exit_code = MTHPD_EXIT_NOT_WRITABLE;
                return r;
        }
        if (r < 0)
                mthp_log(LOG_WARNING, "observe mode: the mTHP knobs cannot be written (%s); mthpd decides and "
                         "explains, and writes nothing", d->not_writable);
        if (access(mthp_actuator_journal_file(d->act), F_OK) == 0) {
                /* the last run died without restoring: put things back first */
                unsigned n = 0;
                mthp_log(LOG_WARNING, "found restore journal %s from a run that did not stop cleanly; restoring",
                         mthp_actuator_journal_file(d->act));
                r = mthp_actuator_restore_file(d->host, mthp_actuator_journal_file(d->act), &n);
                if (r != 0) {
                        /* never restart over it: a loop of failing restores helps nobody */
                        char left[32] = "";
                        if (r > 0)
                                snprintf(left, sizeof(left), " (%d knob(s) left)", r);
                        snprintf(d->start_failure, sizeof(d->start_failure),
                                 "the restore journal %s of a run that did not stop cleanly cannot be restored%s; "
                                 "see the errors above, put the knobs back or fix the cause, run 'mthpctl restore', "
                                 "then start mthpd again", mthp_actuator_journal_file(d->act), left);
                        mthp_log(LOG_ERR, "not starting: %s", d->start_failure);
                        d->exit_code = MTHPD_EXIT_JOURNAL;
                        return r < 0 ? r : -EIO;
                }
                mthp_log(LOG_INFO, "restored %u knobs from the previous run", n);
        }
        return 0;
}

/* The observer (its samplers: the host's counters, the processes,
 * density, cgroups) and the collapser. Only the first is required. */
static int open_samplers(struct daemon *d) {
        mthp_log(LOG_INFO, "%u policy file(s) from %s", d->policies->n, d->cfg.policy_dir);
        int r = mthp_observer_new(d->host, &d->caps, &d->cfg, &d->observer);
        if (r < 0)
                return r;
        daemon_collapse_open(d);
        return 0;
}

int daemon_startup(struct daemon *d) {
        int r = open_host(d);
        if (r >= 0)
                r = open_state_dir(d);
        if (r >= 0)
                r = open_actuator(d);
        if (r >= 0)
                r = open_samplers(d);
        rates_update(d, d->cfg.fault_cost_ns);   /* a measured cost comes with the first tick */
        return r;
}

int daemon_new(struct daemon **ret) {
        struct daemon *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->root = "/";
        d->lock_fd = -1;
        d->mode_override = -1;
        *ret = d;
        return 0;
}

/* After the loop: put back what mthpd changed (unless --once) and say what
 * was done; returns the exit status, exit_code unless the restore failed. */
int daemon_stop(struct daemon *d, int exit_code) {
        d->exit_code = exit_code;
        if (d->guard) {
                char g[160];
                guard_describe(d->guard, g, sizeof(g));
                mthp_log(LOG_INFO, "guard: %s", g);
        }
        if (!d->once) {
                sd_notify(0, "STOPPING=1");
                /* say what was really put back: the knobs mthpd changed and
                 * still owns (others' changes stay, and the restore says so) */
                unsigned ours = 0;
                const struct mthp_journal *j = mthp_actuator_journal(d->act);
                for (unsigned i = 0; i < j->n; i++)
                        ours += j->e[i].state != MTHP_ENTRY_FOREIGN;
                int left = mthp_actuator_restore(d->act);
                if (left != 0) {
                        mthp_log(LOG_ERR, "%d knob(s) could not be restored; the journal %s keeps their originals",
                                 left < 0 ? -1 : left, mthp_actuator_journal_file(d->act));
                        d->exit_code = 1;
                } else if (mthp_actuator_observing(d->act) && mthp_actuator_journal(d->act)->n > 0)
                        mthp_log(LOG_INFO, "observing: leaving %u knob(s) to the journal %s ('mthpctl restore' or "
                                 "the next start puts them back); exiting", mthp_actuator_journal(d->act)->n, mthp_actuator_journal_file(d->act));
                else if (ours == 0)
                        mthp_log(LOG_INFO, "mthpd changed no knob: nothing to restore; exiting");
                else
                        mthp_log(LOG_INFO, "all knobs restored; exiting (the %u mthpd had changed)", ours);
        } else if (mthp_actuator_journal(d->act)->n > 0)
                mthp_log(LOG_INFO, "--once: leaving %u knob(s) set; 'mthpctl restore' puts them back",
                         mthp_actuator_journal(d->act)->n);
        mthp_status_file_remove(d->cfg.state_dir);
        return d->exit_code;
}

/* Releases whatever daemon_startup() and main() set up, on every way out of
 * main(). NULL is fine. */
void daemon_free(struct daemon *d) {
        if (!d)
                return;
        bus_free(d->bus);
        guard_free(d->guard);
        sd_event_source_unref(d->timer);
        daemon_alarm_free(d);
        sd_event_unref(d->event);
        if (mthp_record_close_write(d->recorder) < 0)
                mthp_log(LOG_WARNING, "closing the recording %s failed; its last tick may be missing", d->record_file);
        mthp_observer_free(d->observer);
        mthp_collapser_free(d->collapser);
        mthp_policy_set_free(d->policies);
        mthp_actuator_free(d->act);
        mthp_host_free(d->host);
        if (d->lock_fd >= 0)
                close(d->lock_fd);
        free(d);
}
