/* SPDX-License-Identifier: MIT */
/* org.mthpd.Manager1 (man/mthpd.dbus.5.scd): marshalling and access checks.
 * What a method does is daemon_*() in manager.c, and every knob is shown
 * as daemon_knob_view() says. The bus policy file is not
 * trusted alone: every method that changes something checks the caller's
 * effective UID here. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bus.h"
#include "guard.h"
#include "mthp-config.h"
#include "mthp/escape.h"
#include "mthp/log.h"
#include "mthp/util.h"

/* After a disconnect (dbus-daemon restarted or gone) mthpd connects again,
 * first after 250 ms, then doubling up to every 4 s, for as long as it runs. */
#define BUS_RETRY_FIRST_USEC 250000ULL
#define BUS_RETRY_MAX_USEC 4000000ULL
/* A call to dbus-daemon (Hello, RequestName) blocks the event loop: never
 * for longer than this, far below WatchdogSec=. */
#define BUS_CALL_TIMEOUT_USEC 5000000ULL

struct bus {
        sd_bus *bus;
        struct daemon *daemon;
        bool connected;
        bool emit_error_logged;
        sd_event_source *retry;             /* armed while disconnected */
        uint64_t retry_usec;                /* the next wait */
        unsigned failed_retries;            /* since the disconnect; the first is logged */
};

/* The caller's EUID as the bus daemon vouches for it (dbus-daemon's
 * UnixUserID: the peer credentials of the caller's socket), never a /proc
 * lookup, which a caller could race. */
static int check_root(sd_bus_message *m, const char *action, uid_t *ret_uid, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid = 0;
        int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "only root may %s; the bus did not say who you are (%s)", action,
                                         strerror(-r));
        if (uid != 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "only root may %s; you are uid %u", action,
                                         (unsigned) uid);
        *ret_uid = uid;
        return 0;
}

/* Every string a reply or signal carries: sd-bus refuses invalid UTF-8
 * (a Reload whose error quoted byte 0xff never replied; a comm with 0xff in
 * a reason broke Explain, History and KnobChanged for everyone), and names
 * in them are anyone's. One ring of buffers: a call formats a few at once. */
static const char *clean(const char *s) {
        static char ring[8][4 * MTHP_REASON_MAX];
        static unsigned next;
        char *b = ring[next++ % 8];
        return mthp_escape(b, sizeof(ring[0]), s ? s : "");
}

/* An error text of several lines: each escaped, the newlines kept. */
static const char *clean_lines(const char *s) {
        static char buf[4 * 4096];
        return mthp_escape_lines(buf, sizeof(buf), s);
}

/* A daemon_*() failure as a D-Bus error: -EINVAL means the caller's arguments. */
static int set_daemon_error(sd_bus_error *error, int r, const char *err) {
        return sd_bus_error_set(error, r == -EINVAL ? SD_BUS_ERROR_INVALID_ARGS : SD_BUS_ERROR_FAILED,
                                clean_lines(err[0] ? err : strerror(-r)));
}

static const char *knob_kind(const struct mthp_knob *k) {
        switch (k->type) {
        case MTHP_KNOB_SIZE_ANON: return "anon";
        case MTHP_KNOB_SIZE_SHMEM: return "shmem";
        default: return "global";
        }
}

static int method_list_knobs(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        struct daemon *d = userdata;
        (void) error;
        int r = sd_bus_message_new_method_return(m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', MTHP_DBUS_KNOB_SIG);
        for (unsigned i = 0; r >= 0 && i < d->caps.n_knobs; i++) {
                struct daemon_knob_view v;
                daemon_knob_view(d, (int) i, DAEMON_VIEW_READ, &v);
                r = sd_bus_message_append(reply, MTHP_DBUS_KNOB_SIG, clean(v.knob->id), v.knob->size_kb,
                                          knob_kind(v.knob), clean(v.current), clean(v.set_by), clean(v.engine_value),
                                          (int) v.pinned);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* Explain and ExplainRules: the last tick's decisions, with their rules or without. */
static int explain(sd_bus_message *m, struct daemon *d, bool rules, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *size;
        unsigned kb = 0;
        int r = sd_bus_message_read(m, MTHP_DBUS_EXPLAIN_ARGS, &size);
        if (r < 0)
                return r;
        if (size[0] && (mthp_parse_size(size, &kb) < 0 || mthp_caps_find_size(&d->caps, kb) < 0))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "no mTHP size '%s' on this host: expected a size like 64K or 2M, "
                                         "or \"\" for every knob",
                                         clean(size));
        r = sd_bus_message_new_method_return(m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', rules ? MTHP_DBUS_DECISION_RULES_SIG : MTHP_DBUS_DECISION_SIG);
        /* the last tick's decisions, in the engine's order, as the status file has them */
        for (int i = 0; r >= 0 && i < d->n_decisions; i++) {
                struct daemon_knob_view v;
                daemon_knob_view(d, d->decisions[i].knob, 0, &v);
                if (size[0] && v.knob->size_kb != kb)
                        continue;
                const char *value = clean(v.decision->value[0] ? v.decision->value : "original");
                if (rules)
                        r = sd_bus_message_append(reply, MTHP_DBUS_DECISION_RULES_SIG, clean(v.knob->id), value,
                                                  clean(v.decision->reason), v.rule, v.size_rule);
                else
                        r = sd_bus_message_append(reply, MTHP_DBUS_DECISION_SIG, clean(v.knob->id), value,
                                                  clean(v.decision->reason));
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_explain(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return explain(m, userdata, false, error);
}

static int method_explain_rules(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return explain(m, userdata, true, error);
}

/* The managed cgroups, highest fault rate first, with their policy, the
 * density the engine remembers of their processes and their pressure. */
static int method_list_cgroups(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        struct daemon *d = userdata;
        (void) error;
        int r = sd_bus_message_new_method_return(m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', MTHP_DBUS_CGROUP_SIG);
        for (unsigned i = 0; r >= 0 && i < d->snap.n_cgroups; i++) {
                struct daemon_cgroup_view v;
                daemon_cgroup_view(d, i, &v);
                const struct mthp_cgroup_view *c = v.cgroup;
                r = sd_bus_message_append(reply, MTHP_DBUS_CGROUP_SIG, clean(c->path),
                                          clean(v.policy ? v.policy->name : ""), v.mode[MTHP_ANON], v.mode[MTHP_SHMEM],
                                          v.priority, c->new_cgroup ? 0.0 : c->fault_rate, c->anon_kb, c->shmem_kb,
                                          c->usage_kb, c->limit_kb, c->psi_present ? c->psi_some_avg10 : -1.0,
                                          v.dense_kb[MTHP_ANON], v.dense_kb[MTHP_SHMEM],
                                          v.policy ? v.policy->collapse : false);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_history(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const struct mthp_actuator *a = ((struct daemon *) userdata)->act;
        uint32_t max;
        (void) error;
        int r = sd_bus_message_read(m, MTHP_DBUS_HISTORY_ARGS, &max);
        if (r < 0)
                return r;
        unsigned n_history = mthp_actuator_n_history(a);
        unsigned n = max < n_history ? max : n_history;
        r = sd_bus_message_new_method_return(m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', MTHP_DBUS_CHANGE_SIG);
        for (unsigned i = 0; r >= 0 && i < n; i++) {
                bool observing;
                const struct mthp_change *c = mthp_actuator_history(a, n_history - n + i, &observing);
                r = sd_bus_message_append(reply, MTHP_DBUS_CHANGE_SIG, c->realtime_usec, clean(c->id), clean(c->old),
                                          clean(c->new), clean(c->reason), (int) observing);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_reload(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct daemon *d = userdata;
        char err[4096] = "";
        uid_t uid;
        int r = check_root(m, "reload the configuration", &uid, error);
        if (r < 0)
                return r;
        mthp_log(LOG_INFO, "uid %u asked over D-Bus to reload %s", (unsigned) uid, d->config_file);
        r = daemon_reload(d, err, sizeof(err));
        if (r < 0) {
                size_t len = strlen(err);
                while (len > 0 && err[len - 1] == '\n')
                        err[--len] = 0;
                return sd_bus_error_set(error, MTHP_DBUS_ERROR_INVALID_CONFIG, clean_lines(err[0] ? err : strerror(-r)));
        }
        /* what the reload did not apply (a Mode= a runtime mode overrides...) */
        size_t len = strlen(err);
        while (len > 0 && err[len - 1] == '\n')
                err[--len] = 0;
        return sd_bus_reply_method_return(m, MTHP_DBUS_RELOAD_RESULT, clean_lines(err));
}

static int method_pin(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *id, *value;
        uint64_t until;
        char err[1024] = "";
        uid_t uid;
        int r = check_root(m, "pin knobs", &uid, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, MTHP_DBUS_PIN_ARGS, &id, &value, &until);
        if (r < 0)
                return r;
        r = daemon_pin(userdata, id, value, until, uid, err, sizeof(err));
        if (r < 0)
                return set_daemon_error(error, r, err);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_unpin(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *id;
        char err[1024] = "";
        uid_t uid;
        int r = check_root(m, "unpin knobs", &uid, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, MTHP_DBUS_UNPIN_ARGS, &id);
        if (r < 0)
                return r;
        r = daemon_unpin(userdata, id, uid, err, sizeof(err));
        if (r < 0)
                return set_daemon_error(error, r, err);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_set_mode(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name;
        enum mthp_mode mode;
        char err[1024] = "";
        uid_t uid;
        int r = check_root(m, "change the mode", &uid, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, MTHP_DBUS_SET_MODE_ARGS, &name);
        if (r < 0)
                return r;
        if (daemon_mode_from_name(name, &mode) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "unknown mode '%s': expected manage or observe",
                                         name);
        r = daemon_set_mode(userdata, mode, uid, err, sizeof(err));
        if (r < 0)
                return set_daemon_error(error, r, err);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_restore(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        char err[1024] = "";
        uid_t uid;
        int r = check_root(m, "restore knobs", &uid, error);
        if (r < 0)
                return r;
        r = daemon_restore(userdata, uid, err, sizeof(err));
        if (r < 0)
                return set_daemon_error(error, r, err);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_resume(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *id;
        char err[1024] = "";
        uid_t uid;
        int r = check_root(m, "resume knobs", &uid, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, MTHP_DBUS_RESUME_ARGS, &id);
        if (r < 0)
                return r;
        r = daemon_resume(userdata, id, uid, err, sizeof(err));
        if (r < 0)
                return set_daemon_error(error, r, err);
        return sd_bus_reply_method_return(m, NULL);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        (void) bus, (void) path, (void) interface, (void) property, (void) userdata, (void) error;
        return sd_bus_message_append(reply, "s", MTHP_VERSION);
}

static int property_get_mode(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "s", daemon_mode_name(d->cfg.mode));
}

static int property_get_interval(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "t", d->cfg.interval_usec);
}

static int property_get_not_writable(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "s", clean(d->not_writable));
}

static int property_get_tick(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "t", d->ticks);
}

static int property_get_fault_rate(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) property, (void) error;
        return sd_bus_message_append(reply, "d", d->snap.fault_pages_rate);
}

/* The fault cost the last tick decided with, the rates it gave and which
 * setting set them (FaultCost=, RaiseFaultTime=): what the reasons quote,
 * readable before any raise. */
static int property_get_fault_cost(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) error;
        if (strcmp(property, MTHP_DBUS_PROP_RATES_BY) == 0)
                return sd_bus_message_append(reply, "s", d->rates.by_time ? "RaiseFaultTime" : "RaiseFaultRate");
        return sd_bus_message_append(reply, "d", strcmp(property, MTHP_DBUS_PROP_FAULT_COST) == 0 ? d->rates.fault_cost_ns
                                                 : strcmp(property, MTHP_DBUS_PROP_RAISE_RATE) == 0 ? d->rates.raise
                                                                                                     : d->rates.lower);
}

/* The counters since start: Changes, WriteErrors, GuardTrips. */
static int property_get_counter(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) error;
        return sd_bus_message_append(reply, "t", strcmp(property, MTHP_DBUS_PROP_WRITE_ERRORS) == 0 ? d->write_errors
                                                 : strcmp(property, MTHP_DBUS_PROP_GUARD_TRIPS) == 0 ? guard_trips(d->guard)
                                                                                                      : d->changes);
}

/* What mthpd can and cannot watch (daemon_coverage): the managed cgroups'
 * descriptors and the guard's last scan, each read as it is asked for. */
static int property_get_coverage(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        struct mthp_status_coverage c;
        (void) bus, (void) path, (void) interface, (void) error;
        daemon_coverage(d, &c);
        if (strcmp(property, MTHP_DBUS_PROP_FD_LIMIT) == 0)
                return sd_bus_message_append(reply, "t", (uint64_t) c.fd_limit);
        if (strcmp(property, MTHP_DBUS_PROP_GUARD_SCAN) == 0)
                return sd_bus_message_append(reply, "t", (uint64_t) c.scan_usec);
        static const struct {
                const char *name;
                size_t offset;
        } u[] = {
                { MTHP_DBUS_PROP_MANAGED_CGROUPS, offsetof(struct mthp_status_coverage, managed) },
                { MTHP_DBUS_PROP_CGROUPS_REOPENED, offsetof(struct mthp_status_coverage, reopened) },
                { MTHP_DBUS_PROP_CGROUPS_UNMONITORED, offsetof(struct mthp_status_coverage, unmonitored) },
                { MTHP_DBUS_PROP_CGROUP_FDS, offsetof(struct mthp_status_coverage, fds) },
                { MTHP_DBUS_PROP_FD_RESERVE, offsetof(struct mthp_status_coverage, fd_reserve) },
                { MTHP_DBUS_PROP_GUARD_SCANNED, offsetof(struct mthp_status_coverage, scanned) },
                { MTHP_DBUS_PROP_GUARD_LIMITED, offsetof(struct mthp_status_coverage, limited) },
                { MTHP_DBUS_PROP_GUARD_WEIGHED, offsetof(struct mthp_status_coverage, weighed) },
                { MTHP_DBUS_PROP_GUARD_UNSEEN, offsetof(struct mthp_status_coverage, unseen) },
        };
        for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
                if (strcmp(property, u[i].name) == 0)
                        return sd_bus_message_append(reply, "u", *(const unsigned *) ((const char *) &c + u[i].offset));
        return -ENOENT;
}

/* Per knob mthpd manages: its writes and failed writes since start. */
static int property_get_knob_writes(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) property, (void) error;
        int r = sd_bus_message_open_container(reply, 'a', MTHP_DBUS_KNOB_WRITES_SIG);
        for (unsigned i = 0; r >= 0 && i < d->caps.n_knobs; i++)
                r = sd_bus_message_append(reply, MTHP_DBUS_KNOB_WRITES_SIG, d->caps.knobs[i].id, d->knob_writes[i],
                                          d->knob_write_errors[i]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* The host's bloat budget the last tick decided with (engine-budget.c):
 * per kind and size of its ladder, the bloat the host would hold with the
 * kind's level there; and MaxHostBloat= in bytes (UINT64_MAX: none). */
static int property_get_host_bloat(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct daemon *d = userdata;
        (void) bus, (void) path, (void) interface, (void) error;
        if (strcmp(property, MTHP_DBUS_PROP_HOST_BLOAT_BUDGET) == 0) {
                double b = d->engine.host_budget_kb;
                return sd_bus_message_append(reply, "t", isfinite(b) && b >= 0 ? (uint64_t) b * 1024 : UINT64_MAX);
        }
        int r = sd_bus_message_open_container(reply, 'a', MTHP_DBUS_HOST_BLOAT_SIG);
        for (int kind = 0; r >= 0 && kind < _MTHP_KIND_MAX; kind++) {
                unsigned ladder[MTHP_SIZES_MAX], n = mthp_engine_ladder(&d->cfg.engine, &d->caps, kind, ladder);
                for (unsigned i = 0; r >= 0 && i < n; i++) {
                        char sz[16];
                        double kb = d->engine.host_bloat_kb[kind][ladder[i]];
                        mthp_format_size(d->caps.sizes[ladder[i]].kb, sz, sizeof(sz));
                        r = sd_bus_message_append(reply, MTHP_DBUS_HOST_BLOAT_SIG, mthp_kind_name(kind), sz,
                                                  isfinite(kb) && kb > 0 ? (uint64_t) kb * 1024 : (uint64_t) 0);
                }
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* Every method is marked unprivileged: sd-bus would otherwise check
 * CAP_SYS_ADMIN itself and answer with a message that does not say what
 * was refused. The writes check the caller in check_root(). */
#define OPEN SD_BUS_VTABLE_UNPRIVILEGED
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_VERSION, "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_MODE, "s", property_get_mode, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_NOT_WRITABLE, "s", property_get_not_writable, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_INTERVAL, "t", property_get_interval, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_TICK, "t", property_get_tick, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_FAULT_RATE, "d", property_get_fault_rate, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_CHANGES, "t", property_get_counter, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_WRITE_ERRORS, "t", property_get_counter, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_GUARD_TRIPS, "t", property_get_counter, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_KNOB_WRITES, "a" MTHP_DBUS_KNOB_WRITES_SIG, property_get_knob_writes, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_FAULT_COST, "d", property_get_fault_cost, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_RAISE_RATE, "d", property_get_fault_cost, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_LOWER_RATE, "d", property_get_fault_cost, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_RATES_BY, "s", property_get_fault_cost, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_MANAGED_CGROUPS, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_CGROUPS_REOPENED, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_CGROUPS_UNMONITORED, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_CGROUP_FDS, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_FD_LIMIT, "t", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_FD_RESERVE, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_GUARD_SCANNED, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_GUARD_LIMITED, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_GUARD_WEIGHED, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_GUARD_UNSEEN, "u", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_GUARD_SCAN, "t", property_get_coverage, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_HOST_BLOAT, "a" MTHP_DBUS_HOST_BLOAT_SIG, property_get_host_bloat, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_HOST_BLOAT_BUDGET, "t", property_get_host_bloat, 0, 0),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_LIST_KNOBS, SD_BUS_NO_ARGS, SD_BUS_RESULT("a" MTHP_DBUS_KNOB_SIG, knobs), method_list_knobs,
                                OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_EXPLAIN, SD_BUS_ARGS(MTHP_DBUS_EXPLAIN_ARGS, size), SD_BUS_RESULT("a" MTHP_DBUS_DECISION_SIG, decisions), method_explain,
                                OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_EXPLAIN_RULES, SD_BUS_ARGS(MTHP_DBUS_EXPLAIN_ARGS, size),
                                SD_BUS_RESULT("a" MTHP_DBUS_DECISION_RULES_SIG, decisions), method_explain_rules, OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_HISTORY, SD_BUS_ARGS(MTHP_DBUS_HISTORY_ARGS, max), SD_BUS_RESULT("a" MTHP_DBUS_CHANGE_SIG, changes), method_history,
                                OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_LIST_CGROUPS, SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a" MTHP_DBUS_CGROUP_SIG, cgroups), method_list_cgroups, OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_RELOAD, SD_BUS_NO_ARGS, SD_BUS_RESULT(MTHP_DBUS_RELOAD_RESULT, notes), method_reload,
                                OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_PIN, SD_BUS_ARGS("s", id, "s", value, "t", until) /* MTHP_DBUS_PIN_ARGS */, SD_BUS_NO_RESULT, method_pin,
                                OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_UNPIN, SD_BUS_ARGS(MTHP_DBUS_UNPIN_ARGS, id), SD_BUS_NO_RESULT, method_unpin, OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_SET_MODE, SD_BUS_ARGS(MTHP_DBUS_SET_MODE_ARGS, mode), SD_BUS_NO_RESULT, method_set_mode, OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_RESTORE, SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_restore, OPEN),
        SD_BUS_METHOD_WITH_ARGS(MTHP_DBUS_RESUME, SD_BUS_ARGS(MTHP_DBUS_RESUME_ARGS, id), SD_BUS_NO_RESULT, method_resume, OPEN),
        SD_BUS_SIGNAL_WITH_ARGS(MTHP_DBUS_KNOB_CHANGED,
                                SD_BUS_ARGS("t", time, "s", id, "s", old, "s", new, "s", reason), 0),
        SD_BUS_VTABLE_END,
};
#undef OPEN

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata);

static void schedule_retry(struct bus *b) {
        b->retry = sd_event_source_unref(b->retry);
        int r = sd_event_add_time_relative(b->daemon->event, &b->retry, CLOCK_MONOTONIC, b->retry_usec, 10000,
                                           on_retry, b);
        if (r < 0)
                mthp_log(LOG_ERR, "D-Bus: cannot schedule reconnecting: %s; mthpd runs on without its D-Bus interface",
                         strerror(-r));
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct bus *b = userdata;
        (void) m, (void) error;
        b->connected = false;
        b->failed_retries = 0;
        b->retry_usec = BUS_RETRY_FIRST_USEC;
        mthp_log(LOG_WARNING, "D-Bus: lost the system bus; reconnecting (mthpd carries on meanwhile)");
        /* the connection is closed in on_retry, not inside its own callback */
        schedule_retry(b);
        return 0;
}

static int bus_setup(struct bus *b, const char **step);
static const char *bus_errno_words(int r);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        struct bus *b = userdata;
        const char *step;
        (void) s, (void) usec;
        b->bus = sd_bus_flush_close_unref(b->bus);
        int r = bus_setup(b, &step);
        if (r < 0) {
                b->bus = sd_bus_flush_close_unref(b->bus);
                if (b->failed_retries++ == 0)
                        mthp_log(LOG_WARNING, "D-Bus: reconnecting failed: %s: %s; trying again, at most %llu s apart",
                                 step, bus_errno_words(r), BUS_RETRY_MAX_USEC / 1000000ULL);
                b->retry_usec = b->retry_usec * 2 > BUS_RETRY_MAX_USEC ? BUS_RETRY_MAX_USEC : b->retry_usec * 2;
                schedule_retry(b);
                return 0;
        }
        b->retry = sd_event_source_unref(b->retry);
        b->connected = true;
        b->emit_error_logged = false;
        mthp_log(LOG_NOTICE, "D-Bus: back on the system bus, serving %s at %s", MTHP_DBUS_NAME, MTHP_DBUS_PATH);
        return 0;
}

static int bus_setup(struct bus *b, const char **step) {
        int r;
        *step = "cannot connect to the system bus";
        r = sd_bus_open_system(&b->bus);
        if (r < 0)
                return r;
        (void) sd_bus_set_method_call_timeout(b->bus, BUS_CALL_TIMEOUT_USEC);
        /* a lost bus is a Disconnected message (on_disconnected), not an exit */
        (void) sd_bus_set_exit_on_disconnect(b->bus, false);
        *step = "cannot serve " MTHP_DBUS_PATH;
        r = sd_bus_add_object_vtable(b->bus, NULL, MTHP_DBUS_PATH, MTHP_DBUS_INTERFACE, manager_vtable, b->daemon);
        if (r < 0)
                return r;
        *step = "cannot watch the connection";
        r = sd_bus_match_signal(b->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_disconnected, b);
        if (r < 0)
                return r;
        *step = "cannot attach the bus to the event loop";
        r = sd_bus_attach_event(b->bus, b->daemon->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        /* last: callers may call as soon as the name appears */
        *step = "cannot own the name " MTHP_DBUS_NAME;
        return sd_bus_request_name(b->bus, MTHP_DBUS_NAME, 0);
}

static const char *bus_errno_words(int r) {
        switch (-r) {
        case ENOENT: return "no bus listens at the system bus address (ENOENT)";
        case ECONNREFUSED: return "nothing accepts connections at the system bus address (ECONNREFUSED)";
        case EEXIST: return "another process owns it (EEXIST)";
        case EACCES:
        case EPERM:
                return geteuid() == 0 ? "the bus policy does not allow it (install org.mthpd.mthpd1.conf in "
                                        "/usr/share/dbus-1/system.d, then reload dbus)"
                                      : "the bus policy does not allow it (only root may own the name: run as root)";
        default: return strerror(-r);
        }
}

static void bus_freep(struct bus **b) {
        bus_free(*b);
}

int bus_open(struct daemon *d, struct bus **ret) {
        _cleanup_(bus_freep) struct bus *b = calloc(1, sizeof(*b));
        const char *step = "cannot allocate";
        int r = b ? 0 : -ENOMEM;
        if (b) {
                b->daemon = d;
                r = bus_setup(b, &step);
        }
        if (r < 0) {
                mthp_log(LOG_WARNING, "D-Bus: %s: %s; mthpd runs without its D-Bus interface", step,
                         bus_errno_words(r));
                return r;
        }
        b->connected = true;
        mthp_log(LOG_INFO, "D-Bus: serving %s at %s on the system bus", MTHP_DBUS_NAME, MTHP_DBUS_PATH);
        *ret = b;
        b = NULL;
        return 0;
}

void bus_free(struct bus *b) {
        if (!b)
                return;
        sd_event_source_unref(b->retry);
        sd_bus_flush_close_unref(b->bus);
        free(b);
}

static void emit_failed(struct bus *b, const char *what, int r) {
        if (mthp_once_set(&b->emit_error_logged))
                mthp_log(LOG_WARNING, "D-Bus: cannot emit %s: %s", what, strerror(-r));
}

void bus_emit_knob_changed(struct bus *b, const struct mthp_change *c) {
        if (!b || !b->connected)
                return;
        int r = sd_bus_emit_signal(b->bus, MTHP_DBUS_PATH, MTHP_DBUS_INTERFACE, MTHP_DBUS_KNOB_CHANGED, MTHP_DBUS_KNOB_CHANGED_SIG,
                                   c->realtime_usec, clean(c->id), clean(c->old), clean(c->new), clean(c->reason));
        if (r < 0)
                emit_failed(b, MTHP_DBUS_KNOB_CHANGED, r);
}

void bus_emit_property_changed(struct bus *b, const char *property) {
        if (!b || !b->connected)
                return;
        int r = sd_bus_emit_properties_changed(b->bus, MTHP_DBUS_PATH, MTHP_DBUS_INTERFACE, property, NULL);
        if (r < 0)
                emit_failed(b, "PropertiesChanged", r);
}
