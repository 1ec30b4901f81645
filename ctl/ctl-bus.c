/* SPDX-License-Identifier: MIT */
/* mthpctl's side of org.mthpd.Manager1 (man/mthpd.dbus.5.scd). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "ctl-bus.h"
#include "mthp/escape.h"
#include "mthp/util.h"

struct ctl_bus {
        sd_bus *bus;
        char owner[128];       /* mthpd's unique connection name */
        pid_t pid;
};

/* Text from mthpd is escaped (mthp_escape: valid UTF-8 for sd-bus): back
 * to the names and values themselves here, once for every caller, which a
 * table escapes once and JSON carries as they are. Kept as it came if it
 * is not mthpd's escaping. */
static void bus_text(char *dst, size_t size, const char *s) {
        if (mthp_unescape(dst, size, s) < 0)
                mthp_strcpy(dst, size, s);
}

static void error_set(struct ctl_bus_error *e, const char *name, const char *message) {
        mthp_strcpy(e->name, sizeof(e->name), name ? name : "");
        mthp_strcpy(e->message, sizeof(e->message), message ? message : "");
}

/* The errno mthpctl acts on for a failed call, with the bus's words kept. */
static int error_map(int r, const sd_bus_error *err, struct ctl_bus_error *e) {
        if (!sd_bus_error_is_set(err)) {
                error_set(e, NULL, strerror(-r));
                return r;
        }
        error_set(e, err->name, err->message ? err->message : err->name);
        static const struct {
                const char *name;
                int err;
        } map[] = {
                { SD_BUS_ERROR_ACCESS_DENIED, EACCES },
                { "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", EACCES },
                { SD_BUS_ERROR_SERVICE_UNKNOWN, ESRCH },      /* it went away: its unique name is gone */
                { SD_BUS_ERROR_NAME_HAS_NO_OWNER, ESRCH },
                { SD_BUS_ERROR_DISCONNECTED, ESRCH },
                { SD_BUS_ERROR_INVALID_ARGS, EINVAL },
                /* sd-bus maps Failed to EACCES: mthpd's own failures (a knob
                 * it cannot write) are not the caller's permission */
                { SD_BUS_ERROR_FAILED, EIO },
                { MTHP_DBUS_ERROR_INVALID_CONFIG, EINVAL },
                { SD_BUS_ERROR_UNKNOWN_METHOD, EOPNOTSUPP }, /* an mthpd older than this mthpctl */
                { SD_BUS_ERROR_UNKNOWN_OBJECT, EOPNOTSUPP },
                { SD_BUS_ERROR_UNKNOWN_INTERFACE, EOPNOTSUPP },
                { SD_BUS_ERROR_UNKNOWN_PROPERTY, EOPNOTSUPP },
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (sd_bus_error_has_name(err, map[i].name))
                        return -map[i].err;
        r = sd_bus_error_get_errno(err);
        return r > 0 ? -r : -EIO;
}

int ctl_bus_open(struct ctl_bus **ret, struct ctl_bus_error *e) {
        sd_bus_error err = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct ctl_bus *b;
        const char *owner;
        int r;

        error_set(e, NULL, NULL);
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        r = sd_bus_open_system(&b->bus);
        if (r < 0) {
                /* no system bus (or not ours to use): mthpd cannot be on it either */
                snprintf(e->message, sizeof(e->message), "cannot connect to the system bus: %s", strerror(-r));
                free(b);
                return -ESRCH;
        }
        r = sd_bus_call_method(b->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetNameOwner", &err, &reply, "s", MTHP_DBUS_NAME);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &owner);
        if (r < 0) {
                r = error_map(r, &err, e); /* NameHasNoOwner: -ESRCH, mthpd is not running */
                goto out;
        }
        mthp_strcpy(b->owner, sizeof(b->owner), owner);
        sd_bus_message_unref(reply);
        reply = NULL;
        /* only for display: a bus that will not tell is no error */
        uint32_t pid;
        if (sd_bus_call_method(b->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetConnectionUnixProcessID", NULL, &reply, "s", b->owner) >= 0 &&
            sd_bus_message_read(reply, "u", &pid) >= 0)
                b->pid = (pid_t) pid;
        r = 0;
out:
        sd_bus_error_free(&err);
        sd_bus_message_unref(reply);
        if (r < 0)
                ctl_bus_free(b);
        else
                *ret = b;
        return r;
}

void ctl_bus_free(struct ctl_bus *b) {
        if (!b)
                return;
        sd_bus_flush_close_unref(b->bus);
        free(b);
}

pid_t ctl_bus_pid(const struct ctl_bus *b) {
        return b->pid;
}

/* Call a method of Manager1 (or of another interface on mthpd's object). */
static int call(struct ctl_bus *b, const char *iface, const char *method, sd_bus_message **reply,
                struct ctl_bus_error *e, const char *types, ...) {
        sd_bus_error err = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL;
        va_list ap;
        int r;

        error_set(e, NULL, NULL);
        r = sd_bus_message_new_method_call(b->bus, &m, b->owner, MTHP_DBUS_PATH, iface, method);
        if (r >= 0 && types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call(b->bus, m, 0, &err, reply);
        if (r < 0)
                r = error_map(r, &err, e);
        sd_bus_error_free(&err);
        sd_bus_message_unref(m);
        return r < 0 ? r : 0;
}

/* A reply that does not have the signature the spec gives. */
static int bad_reply(int r, const char *method, struct ctl_bus_error *e) {
        snprintf(e->message, sizeof(e->message), "unexpected reply to %s: %s", method, strerror(-r));
        return -EBADMSG;
}

/* A number mthpctl prints (JSON has no NaN): finite and not negative, or
 * left alone. */
/* KnobWrites (a variant): at most MTHP_KNOBS_MAX knobs, the rest skipped. */
static int read_knob_writes(sd_bus_message *m, struct ctl_bus_props *p) {
        const char *id;
        uint64_t w, e;
        int r = sd_bus_message_enter_container(m, 'v', "a" MTHP_DBUS_KNOB_WRITES_SIG);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', MTHP_DBUS_KNOB_WRITES_SIG);
        while (r >= 0 && (r = sd_bus_message_read(m, MTHP_DBUS_KNOB_WRITES_SIG, &id, &w, &e)) > 0)
                if (p->n_knob_writes < MTHP_KNOBS_MAX) {
                        struct ctl_bus_knob_writes *k = &p->knob_writes[p->n_knob_writes++];
                        mthp_strcpy(k->id, sizeof(k->id), id);
                        k->writes = w;
                        k->errors = e;
                }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

/* HostBloat (a variant): at most 2 x MTHP_SIZES_MAX entries, the rest skipped. */
static int read_host_bloat(sd_bus_message *m, struct ctl_bus_props *p) {
        const char *kind, *size;
        uint64_t bytes;
        int r = sd_bus_message_enter_container(m, 'v', "a" MTHP_DBUS_HOST_BLOAT_SIG);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', MTHP_DBUS_HOST_BLOAT_SIG);
        while (r >= 0 && (r = sd_bus_message_read(m, MTHP_DBUS_HOST_BLOAT_SIG, &kind, &size, &bytes)) > 0)
                if (p->n_host_bloat < sizeof(p->host_bloat) / sizeof(p->host_bloat[0])) {
                        struct ctl_bus_host_bloat *h = &p->host_bloat[p->n_host_bloat++];
                        bus_text(h->kind, sizeof(h->kind), kind);
                        bus_text(h->size, sizeof(h->size), size);
                        h->bytes = bytes;
                }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

static int read_number(sd_bus_message *m, double *x, bool *ok) {
        double v;
        int r = sd_bus_message_read(m, "v", "d", &v);
        if (r >= 0 && isfinite(v) && v >= 0) {
                *x = v;
                if (ok)
                        *ok = true;
        }
        return r;
}

/* The coverage properties (mthp/status.h): true if name is one of them. */
static bool coverage_prop(const char *name, const char *contents, sd_bus_message *m, struct mthp_status_coverage *c,
                          int *r) {
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
        uint64_t t;
        if (strcmp(contents, "t") == 0 && (strcmp(name, MTHP_DBUS_PROP_FD_LIMIT) == 0 ||
                                           strcmp(name, MTHP_DBUS_PROP_GUARD_SCAN) == 0)) {
                if ((*r = sd_bus_message_read(m, "v", "t", &t)) >= 0) {
                        if (name[0] == 'D')
                                c->fd_limit = t;
                        else
                                c->scan_usec = t;
                }
                return true;
        }
        if (strcmp(contents, "u") != 0)
                return false;
        for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
                if (strcmp(name, u[i].name) == 0) {
                        *r = sd_bus_message_read(m, "v", "u", (uint32_t *) ((char *) c + u[i].offset));
                        return true;
                }
        return false;
}

int ctl_bus_get_props(struct ctl_bus *b, struct ctl_bus_props *p, struct ctl_bus_error *e) {
        sd_bus_message *m = NULL;
        bool raise_ok = false, lower_ok = false;
        int r;

        memset(p, 0, sizeof(*p));
        r = call(b, "org.freedesktop.DBus.Properties", "GetAll", &m, e, "s", MTHP_DBUS_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name, *contents, *s;
                char type;
                if ((r = sd_bus_message_read(m, "s", &name)) < 0 ||
                    (r = sd_bus_message_peek_type(m, &type, &contents)) < 0)
                        break;
                /* a property this mthpctl does not know, or of another type: skip it */
                if (strcmp(contents, "s") == 0 && (strcmp(name, MTHP_DBUS_PROP_VERSION) == 0 || strcmp(name, MTHP_DBUS_PROP_MODE) == 0 ||
                                                   strcmp(name, MTHP_DBUS_PROP_NOT_WRITABLE) == 0)) {
                        if ((r = sd_bus_message_read(m, "v", "s", &s)) < 0)
                                break;
                        if (name[0] == 'V')
                                bus_text(p->version, sizeof(p->version), s);
                        else if (name[0] == 'N')
                                bus_text(p->not_writable, sizeof(p->not_writable), s);
                        else
                                bus_text(p->mode, sizeof(p->mode), s);
                } else if (strcmp(contents, "t") == 0 && strcmp(name, MTHP_DBUS_PROP_INTERVAL) == 0)
                        r = sd_bus_message_read(m, "v", "t", &p->interval_usec);
                else if (strcmp(contents, "t") == 0 && strcmp(name, MTHP_DBUS_PROP_TICK) == 0)
                        r = sd_bus_message_read(m, "v", "t", &p->tick);
                else if (strcmp(contents, "t") == 0 && strcmp(name, MTHP_DBUS_PROP_CHANGES) == 0)
                        r = sd_bus_message_read(m, "v", "t", &p->changes);
                else if (strcmp(contents, "t") == 0 && strcmp(name, MTHP_DBUS_PROP_WRITE_ERRORS) == 0) {
                        if ((r = sd_bus_message_read(m, "v", "t", &p->write_errors)) >= 0)
                                p->counters_known = true;
                } else if (strcmp(contents, "t") == 0 && strcmp(name, MTHP_DBUS_PROP_GUARD_TRIPS) == 0)
                        r = sd_bus_message_read(m, "v", "t", &p->guard_trips);
                else if (strcmp(contents, "a" MTHP_DBUS_KNOB_WRITES_SIG) == 0 &&
                         strcmp(name, MTHP_DBUS_PROP_KNOB_WRITES) == 0)
                        r = read_knob_writes(m, p);
                else if (strcmp(contents, "d") == 0 && strcmp(name, MTHP_DBUS_PROP_FAULT_RATE) == 0)
                        r = sd_bus_message_read(m, "v", "d", &p->fault_pages_rate);
                else if (strcmp(contents, "d") == 0 && strcmp(name, MTHP_DBUS_PROP_FAULT_COST) == 0)
                        r = read_number(m, &p->fault_cost_ns, NULL);
                else if (strcmp(contents, "d") == 0 && strcmp(name, MTHP_DBUS_PROP_RAISE_RATE) == 0)
                        r = read_number(m, &p->raise_rate, &raise_ok);
                else if (strcmp(contents, "d") == 0 && strcmp(name, MTHP_DBUS_PROP_LOWER_RATE) == 0)
                        r = read_number(m, &p->lower_rate, &lower_ok);
                else if (strcmp(contents, "s") == 0 && strcmp(name, MTHP_DBUS_PROP_RATES_BY) == 0) {
                        if ((r = sd_bus_message_read(m, "v", "s", &s)) >= 0)
                                p->rates_by_time = strcmp(s, "RaiseFaultTime") == 0;
                } else if (strcmp(contents, "a" MTHP_DBUS_HOST_BLOAT_SIG) == 0 &&
                           strcmp(name, MTHP_DBUS_PROP_HOST_BLOAT) == 0)
                        r = read_host_bloat(m, p);
                else if (strcmp(contents, "t") == 0 && strcmp(name, MTHP_DBUS_PROP_HOST_BLOAT_BUDGET) == 0) {
                        if ((r = sd_bus_message_read(m, "v", "t", &p->host_bloat_budget)) >= 0)
                                p->host_bloat_known = true;
                } else if (coverage_prop(name, contents, m, &p->coverage, &r))
                        ;
                else
                        r = sd_bus_message_skip(m, "v");
                if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                        break;
        }
        p->coverage.cgroups_known = p->coverage.fd_limit > 0;
        p->coverage.guard_known = p->coverage.scanned > 0;
        /* both rates or none, as from the status file */
        p->rates_known = raise_ok && lower_ok;
        if (!p->rates_known)
                p->fault_cost_ns = p->raise_rate = p->lower_rate = 0;
        sd_bus_message_unref(m);
        return r < 0 ? bad_reply(r, "GetAll", e) : 0;
}

int ctl_bus_list_knobs(struct ctl_bus *b, struct ctl_bus_knob *k, unsigned max, unsigned *n,
                       struct ctl_bus_error *e) {
        sd_bus_message *m = NULL;
        int r;

        *n = 0;
        if ((r = call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_LIST_KNOBS, &m, e, NULL)) < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', MTHP_DBUS_KNOB_SIG);
        while (r >= 0) {
                const char *id, *kind, *value, *set_by, *decision;
                uint32_t size_kb;
                int pinned;
                r = sd_bus_message_read(m, MTHP_DBUS_KNOB_SIG, &id, &size_kb, &kind, &value, &set_by, &decision, &pinned);
                if (r <= 0)
                        break;
                if (*n >= max)
                        continue;
                struct ctl_bus_knob *o = &k[(*n)++];
                bus_text(o->id, sizeof(o->id), id);
                o->size_kb = size_kb;
                bus_text(o->kind, sizeof(o->kind), kind);
                bus_text(o->value, sizeof(o->value), value);
                bus_text(o->set_by, sizeof(o->set_by), set_by);
                bus_text(o->decision, sizeof(o->decision), decision);
                o->pinned = pinned;
        }
        sd_bus_message_unref(m);
        return r < 0 ? bad_reply(r, MTHP_DBUS_LIST_KNOBS, e) : 0;
}

int ctl_bus_explain(struct ctl_bus *b, const char *size, struct mthp_status_knob *k, unsigned max, unsigned *n,
                    struct ctl_bus_error *e) {
        sd_bus_message *m = NULL;
        int r;

        *n = 0;
        /* with the rules; an older mthpd has only Explain, and a bus policy
         * older than mthpd lets only root call ExplainRules */
        bool rules = true;
        r = call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_EXPLAIN_RULES, &m, e, MTHP_DBUS_EXPLAIN_ARGS, size);
        if (r == -EOPNOTSUPP || r == -EACCES) {
                rules = false;
                r = call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_EXPLAIN, &m, e, MTHP_DBUS_EXPLAIN_ARGS, size);
        }
        if (r < 0)
                return r;
        const char *method = rules ? MTHP_DBUS_EXPLAIN_RULES : MTHP_DBUS_EXPLAIN;
        r = sd_bus_message_enter_container(m, 'a', rules ? MTHP_DBUS_DECISION_RULES_SIG : MTHP_DBUS_DECISION_SIG);
        while (r >= 0) {
                const char *id, *decision, *reason, *rule = "", *size_rule = "";
                if (rules)
                        r = sd_bus_message_read(m, MTHP_DBUS_DECISION_RULES_SIG, &id, &decision, &reason, &rule,
                                                &size_rule);
                else
                        r = sd_bus_message_read(m, MTHP_DBUS_DECISION_SIG, &id, &decision, &reason);
                if (r <= 0)
                        break;
                if (*n >= max)
                        continue;
                struct mthp_status_knob *o = &k[(*n)++];
                memset(o, 0, sizeof(*o));
                bus_text(o->id, sizeof(o->id), id);
                bus_text(o->decision, sizeof(o->decision), decision);
                bus_text(o->reason, sizeof(o->reason), reason);
                bus_text(o->rule, sizeof(o->rule), rule);
                bus_text(o->size_rule, sizeof(o->size_rule), size_rule);
        }
        sd_bus_message_unref(m);
        return r < 0 ? bad_reply(r, method, e) : 0;
}

int ctl_bus_list_cgroups(struct ctl_bus *b, struct ctl_bus_cgroup **ret, unsigned *n, struct ctl_bus_error *e) {
        struct ctl_bus_cgroup *c = NULL;
        sd_bus_message *m = NULL;
        unsigned cap = 0;
        int r;

        *n = 0;
        *ret = NULL;
        if ((r = call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_LIST_CGROUPS, &m, e, NULL)) < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', MTHP_DBUS_CGROUP_SIG);
        while (r >= 0) {
                const char *path, *policy, *anon, *shmem;
                struct ctl_bus_cgroup x = { 0 };
                int collapse = 0;
                r = sd_bus_message_read(m, MTHP_DBUS_CGROUP_SIG, &path, &policy, &anon, &shmem, &x.priority,
                                        &x.fault_rate, &x.anon_kb, &x.shmem_kb, &x.usage_kb, &x.limit_kb, &x.psi_some,
                                        &x.dense_kb[0], &x.dense_kb[1], &collapse);
                if (r <= 0)
                        break;
                bus_text(x.path, sizeof(x.path), path);
                bus_text(x.policy, sizeof(x.policy), policy);
                bus_text(x.anon, sizeof(x.anon), anon);
                bus_text(x.shmem, sizeof(x.shmem), shmem);
                x.collapse = collapse;
                if (*n == cap) {
                        cap = cap ? 2 * cap : 16;
                        struct ctl_bus_cgroup *nc = realloc(c, cap * sizeof(*c));
                        if (!nc) {
                                r = -ENOMEM;
                                break;
                        }
                        c = nc;
                }
                c[(*n)++] = x;
        }
        sd_bus_message_unref(m);
        if (r < 0) {
                free(c);
                *n = 0;
                return bad_reply(r, MTHP_DBUS_LIST_CGROUPS, e);
        }
        *ret = c;
        return 0;
}

int ctl_bus_history(struct ctl_bus *b, uint32_t max, struct mthp_change **ret, bool **observing, unsigned *n,
                    struct ctl_bus_error *e) {
        struct mthp_change *c = NULL;
        sd_bus_message *m = NULL;
        unsigned cap = 0;
        int r;

        *n = 0;
        *ret = NULL;
        *observing = NULL;
        if ((r = call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_HISTORY, &m, e, MTHP_DBUS_HISTORY_ARGS, max)) < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', MTHP_DBUS_CHANGE_SIG);
        while (r >= 0) {
                const char *id, *old, *new, *reason;
                uint64_t t;
                int observed;
                r = sd_bus_message_read(m, MTHP_DBUS_CHANGE_SIG, &t, &id, &old, &new, &reason, &observed);
                if (r <= 0)
                        break;
                if (*n == cap) {
                        cap = cap ? 2 * cap : 64;
                        struct mthp_change *grown = realloc(c, cap * sizeof(*c));
                        bool *dry = grown ? realloc(*observing, cap * sizeof(**observing)) : NULL;
                        if (grown)
                                c = grown;
                        if (!dry) {
                                r = -ENOMEM;
                                break;
                        }
                        *observing = dry;
                }
                struct mthp_change *o = &c[*n];
                (*observing)[(*n)++] = observed;
                o->realtime_usec = t;
                bus_text(o->id, sizeof(o->id), id);
                bus_text(o->old, sizeof(o->old), old);
                bus_text(o->new, sizeof(o->new), new);
                bus_text(o->reason, sizeof(o->reason), reason);
        }
        sd_bus_message_unref(m);
        if (r < 0) {
                free(c);
                free(*observing);
                *observing = NULL;
                *n = 0;
                return bad_reply(r, MTHP_DBUS_HISTORY, e);
        }
        *ret = c;
        return 0;
}

int ctl_bus_reload(struct ctl_bus *b, char *notes, size_t size, struct ctl_bus_error *e) {
        sd_bus_message *m = NULL;
        const char *s;
        notes[0] = 0;
        int r = call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_RELOAD, &m, e, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, MTHP_DBUS_RELOAD_RESULT, &s);
        if (r >= 0)
                bus_text(notes, size, s);   /* s lives in m */
        sd_bus_message_unref(m);
        return r < 0 ? bad_reply(r, MTHP_DBUS_RELOAD, e) : 0;
}

int ctl_bus_pin(struct ctl_bus *b, const char *id, const char *value, uint64_t until_usec, struct ctl_bus_error *e) {
        return call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_PIN, NULL, e, MTHP_DBUS_PIN_ARGS, id, value, until_usec);
}

int ctl_bus_unpin(struct ctl_bus *b, const char *id, struct ctl_bus_error *e) {
        return call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_UNPIN, NULL, e, MTHP_DBUS_UNPIN_ARGS, id);
}

int ctl_bus_set_mode(struct ctl_bus *b, const char *mode, struct ctl_bus_error *e) {
        return call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_SET_MODE, NULL, e, MTHP_DBUS_SET_MODE_ARGS, mode);
}

int ctl_bus_restore(struct ctl_bus *b, struct ctl_bus_error *e) {
        return call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_RESTORE, NULL, e, NULL);
}

int ctl_bus_resume(struct ctl_bus *b, const char *id, struct ctl_bus_error *e) {
        return call(b, MTHP_DBUS_INTERFACE, MTHP_DBUS_RESUME, NULL, e, MTHP_DBUS_RESUME_ARGS, id);
}
