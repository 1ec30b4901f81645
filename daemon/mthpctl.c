/* SPDX-License-Identifier: MIT */
/* mthpctl: show what the host's mTHP knobs are doing and why; control mthpd
 * over D-Bus (ctl-bus.c); undo mthpd. Read-only commands work without the
 * daemon: they fall back to what the host, mthpd's state directory and the
 * journal show. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mthp-config.h"
#include "mthp/actuator.h"
#include "mthp/cgmon.h"
#include "mthp/config.h"
#include "mthp/policy.h"
#include "mthp/engine.h"
#include "mthp/journal.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "mthp/record.h"
#include "mthp/sample.h"
#include "mthp/status.h"
#include "ctl-bus.h"

/* Linux 6.18 uapi; older headers lack it */
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

enum {
        EXIT_OK = 0,
        EXIT_FAIL = 1,
        EXIT_USAGE = 2,
        EXIT_NOT_RUNNING = 3,
        EXIT_DENIED = 4,
};

/* Options; which command accepts which is in the command table. */
enum {
        O_JSON = 1 << 0,
        O_SAMPLE = 1 << 1,
        O_LINES = 1 << 2,
        O_SINCE = 1 << 3,
        O_FOR = 1 << 4,
        O_UNTIL = 1 << 5,
        O_INTERVAL = 1 << 6,
        O_ITERATIONS = 1 << 7,
        O_CONFIG = 1 << 8,
        O_THP = 1 << 9,
        O_POLICY_DIR = 1 << 10,
};

struct command;

struct ctl {
        const struct command *cmd;
        const char *root;
        const char *state_dir;
        bool json;
        uint64_t sample_usec;
        /* command options */
        unsigned long lines;         /* history -n; 0 = all */
        bool since_set;
        uint64_t since_usec;         /* history --since, CLOCK_REALTIME */
        bool for_set, until_set;
        uint64_t for_usec, until_usec;
        uint64_t interval_usec;      /* top */
        unsigned long iterations;    /* top; 0 = until q */
        const char *config;          /* simulate */
        const char *thp;             /* exec */
        const char *policy_dir;      /* cgroups (without mthpd), simulate */
};

struct command {
        const char *name;
        const char *args;            /* synopsis after the name */
        const char *summary;         /* for mthpctl --help */
        const char *help;            /* for mthpctl COMMAND --help */
        unsigned opts;
        const char *root_only;       /* writes: what only root may do, for AccessDenied */
        int min_args, max_args;      /* positional; max -1 = any */
        int (*run)(struct ctl *c, int argc, char **argv);
};

/* ---- output ---------------------------------------------------------- */

static void json_str(const char *s) {
        putchar('"');
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if (ch == '"' || ch == '\\')
                        printf("\\%c", ch);
                else if (ch < 0x20)
                        printf("\\u%04x", ch);
                else
                        putchar(ch);
        }
        putchar('"');
}

static void json_str_or_null(const char *s) {
        if (s)
                json_str(s);
        else
                printf("null");
}

static void *xrealloc(void *p, size_t n) {
        p = realloc(p, n);
        if (!p) {
                fprintf(stderr, "mthpctl: out of memory\n");
                exit(EXIT_FAIL);
        }
        return p;
}

/* An aligned text table: cells are added row by row, widths come from the
 * widest cell; a header starting with '>' right-aligns its column
 * (numbers); the last column is not padded. */
#define TABLE_COLS_MAX 10
struct table {
        unsigned n_cols, n_cells;
        bool right[TABLE_COLS_MAX];
        char **cells;
};

static void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void table_cell(struct table *t, const char *fmt, ...) {
        va_list ap;
        char *s;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0) {
                fprintf(stderr, "mthpctl: out of memory\n");
                exit(EXIT_FAIL);
        }
        t->cells = xrealloc(t->cells, (t->n_cells + 1) * sizeof(*t->cells));
        t->cells[t->n_cells++] = s;
}

/* headers..., NULL */
static void table_init(struct table *t, ...) {
        va_list ap;
        const char *h;
        memset(t, 0, sizeof(*t));
        va_start(ap, t);
        while ((h = va_arg(ap, const char *)) && t->n_cols < TABLE_COLS_MAX) {
                t->right[t->n_cols++] = h[0] == '>';
                table_cell(t, "%s", h + (h[0] == '>'));
        }
        va_end(ap);
}

static void table_print(const struct table *t, FILE *f) {
        size_t w[TABLE_COLS_MAX] = { 0 };
        for (unsigned i = 0; i < t->n_cells; i++) {
                size_t l = strlen(t->cells[i]);
                if (l > w[i % t->n_cols])
                        w[i % t->n_cols] = l;
        }
        for (unsigned i = 0; i < t->n_cells; i++) {
                unsigned col = i % t->n_cols;
                bool last = col == t->n_cols - 1;
                if (col)
                        fputs("  ", f);
                if (t->right[col])
                        fprintf(f, "%*s", (int) w[col], t->cells[i]);
                else if (last)
                        fputs(t->cells[i], f);
                else
                        fprintf(f, "%-*s", (int) w[col], t->cells[i]);
                if (last)
                        fputc('\n', f);
        }
}

static void table_free(struct table *t) {
        for (unsigned i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
}

/* ---- time -------------------------------------------------------------- */

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static uint64_t realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* "90", "90s", "500ms", "5min", "1h30min", "2d", "1w": systemd's time spans
 * (a bare number is seconds). */
static int parse_timespan(const char *s, uint64_t *usec) {
        static const struct {
                const char *unit;
                double usec;
        } units[] = {
                { "usec", 1 },         { "us", 1 },         { "msec", 1e3 },      { "ms", 1e3 },
                { "seconds", 1e6 },    { "second", 1e6 },   { "sec", 1e6 },       { "s", 1e6 },
                { "minutes", 60e6 },   { "minute", 60e6 },  { "min", 60e6 },      { "m", 60e6 },
                { "hours", 3600e6 },   { "hour", 3600e6 },  { "hr", 3600e6 },     { "h", 3600e6 },
                { "days", 86400e6 },   { "day", 86400e6 },  { "d", 86400e6 },     { "weeks", 604800e6 },
                { "week", 604800e6 },  { "w", 604800e6 },
        };
        double total = 0;
        bool any = false;
        while (*s) {
                while (*s == ' ')
                        s++;
                if (!*s)
                        break;
                char *end;
                errno = 0;
                double v = strtod(s, &end);
                if (end == s || errno || v < 0 || !isfinite(v) || *s == '-' || *s == '+')
                        return -EINVAL;
                s = end;
                while (*s == ' ')
                        s++;
                double mult = 0;
                size_t ul = 0;
                for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                        size_t l = strlen(units[i].unit);
                        if (strncmp(s, units[i].unit, l) == 0 && !(s[l] >= 'a' && s[l] <= 'z')) {
                                mult = units[i].usec;
                                ul = l;
                                break;
                        }
                }
                if (!mult) {
                        if (*s && !(*s >= '0' && *s <= '9'))
                                return -EINVAL;
                        mult = 1e6;
                }
                s += ul;
                total += v * mult;
                any = true;
        }
        if (!any || total >= 1e18)
                return -EINVAL;
        *usec = (uint64_t) total;
        return 0;
}

/* Timestamps as journalctl --since takes them: "now", "today", "yesterday",
 * "-1h" / "+30min" / "1h ago" (relative to now), "@EPOCH", "YYYY-MM-DD
 * [HH:MM[:SS]]" (also with a 'T'), "HH:MM[:SS]" (today); local time. */
static int parse_timestamp(const char *s, uint64_t *usec) {
        uint64_t now = realtime_usec(), span;
        size_t l = strlen(s);
        if (strcmp(s, "now") == 0) {
                *usec = now;
                return 0;
        }
        if (s[0] == '-' || s[0] == '+') {
                if (parse_timespan(s + 1, &span) < 0 || (s[0] == '-' && span > now))
                        return -EINVAL;
                *usec = s[0] == '-' ? now - span : now + span;
                return 0;
        }
        if (l > 4 && strcmp(s + l - 4, " ago") == 0) {
                char buf[64];
                if (l - 4 >= sizeof(buf))
                        return -EINVAL;
                memcpy(buf, s, l - 4);
                buf[l - 4] = 0;
                if (parse_timespan(buf, &span) < 0 || span > now)
                        return -EINVAL;
                *usec = now - span;
                return 0;
        }
        if (s[0] == '@') {
                char *end;
                errno = 0;
                double v = strtod(s + 1, &end);
                if (end == s + 1 || *end || errno || v < 0 || v >= 1e12)
                        return -EINVAL;
                *usec = (uint64_t) (v * 1e6);
                return 0;
        }
        time_t t = (time_t) (now / 1000000);
        struct tm tm;
        localtime_r(&t, &tm);
        int days = strcmp(s, "today") == 0 ? 0 : strcmp(s, "yesterday") == 0 ? -1 : strcmp(s, "tomorrow") == 0 ? 1 : 2;
        if (days != 2) {
                tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
                tm.tm_mday += days;
        } else {
                static const char *const formats[] = {
                        "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M",
                        "%Y-%m-%d",          "%H:%M:%S",          "%H:%M",
                };
                size_t i;
                for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
                        struct tm try = tm;
                        try.tm_hour = try.tm_min = try.tm_sec = 0;
                        const char *end = strptime(s, formats[i], &try);
                        if (end && !*end) {
                                tm = try;
                                break;
                        }
                }
                if (i == sizeof(formats) / sizeof(formats[0]))
                        return -EINVAL;
        }
        tm.tm_isdst = -1;
        t = mktime(&tm);
        if (t == (time_t) -1 || t < 0)
                return -EINVAL;
        *usec = (uint64_t) t * 1000000;
        return 0;
}

/* Local time, "2025-11-30 07:01:02" or, for JSON, RFC 3339 with offset. */
static void format_time(uint64_t usec, bool rfc3339, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;
        char zone[8];
        localtime_r(&t, &tm);
        if (!rfc3339) {
                strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
                return;
        }
        strftime(zone, sizeof(zone), "%z", &tm); /* +0100: RFC 3339 wants +01:00 */
        char date[32];
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s%.3s:%.2s", date, zone, zone + 3);
}

static void format_span(uint64_t usec, char *buf, size_t size) {
        uint64_t s = usec / 1000000;
        if (s >= 86400)
                snprintf(buf, size, "%llud %lluh", (unsigned long long) (s / 86400),
                         (unsigned long long) (s % 86400 / 3600));
        else if (s >= 3600)
                snprintf(buf, size, "%lluh %llumin", (unsigned long long) (s / 3600),
                         (unsigned long long) (s % 3600 / 60));
        else if (s >= 60)
                snprintf(buf, size, "%llumin %llus", (unsigned long long) (s / 60), (unsigned long long) (s % 60));
        else
                snprintf(buf, size, "%llus", (unsigned long long) s);
}

/* ---- the host --------------------------------------------------------- */

static const struct mthp_counter *stat_counter(const struct mthp_caps *caps, const struct mthp_snapshot *s,
                                               unsigned i, const char *name) {
        int j = mthp_stat_index(&caps->sizes[i], name);
        return j < 0 || !s->size[i].stat[j].present ? NULL : &s->size[i].stat[j];
}

static double stat_rate(const struct mthp_caps *caps, const struct mthp_snapshot *s, unsigned i, const char *name) {
        const struct mthp_counter *c = stat_counter(caps, s, i, name);
        return c ? c->rate : 0;
}

/* The counters behind each kind's alloc and fallback columns. */
static const char *const kind_alloc_stat[_MTHP_KIND_MAX] = { "anon_fault_alloc", "shmem_alloc" };
static const char *const kind_fallback_stat[_MTHP_KIND_MAX] = { "anon_fault_fallback", "shmem_fallback" };

/* The host, what it offers and a first snapshot: where every command that
 * reads the host starts. NULL (said on stderr) if it cannot. */
struct host_view {
        struct mthp_host *h;
        struct mthp_caps caps;
        struct mthp_sampler *s;
        struct mthp_snapshot snap;
};

static void host_view_close(struct host_view *hv) {
        if (!hv)
                return;
        mthp_sampler_free(hv->s);
        mthp_host_free(hv->h);
        free(hv);
}

static struct host_view *host_view_open(const struct ctl *c) {
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
            (r = mthp_sampler_take(hv->s, now_usec(), &hv->snap)) < 0) {
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
static bool load_journal(const struct ctl *c, bool quiet, struct mthp_journal *j) {
        char path[MTHP_PATH_MAX + 32], err[512] = "";
        snprintf(path, sizeof(path), "%s/" MTHP_JOURNAL_FILE, c->state_dir);
        int r = mthp_journal_load(path, j, err, sizeof(err));
        if (r < 0) {
                if (r != -ENOENT && !quiet)
                        fprintf(stderr, "mthpctl: warning: %s", err[0] ? err : "cannot read the restore journal\n");
                memset(j, 0, sizeof(*j));
        }
        return r >= 0 || r == -ENOENT;
}

/* ---- the daemon ------------------------------------------------------- */

/* What mthpd says about itself: over the bus when it is there, else from
 * the status file it rewrites each tick (an mthpd without a bus). */
struct daemon_view {
        bool running, on_bus;
        int pid;
        char mode[16];                  /* manage | observe */
        char not_writable[512];         /* why mthpd cannot write the knobs; "": it can */
        char version[32];
        unsigned long long tick, changes;
        bool changes_known;
        double fault_pages_rate;
        uint64_t interval_usec;
        unsigned n_knobs;               /* on the bus: ListKnobs */
        struct ctl_bus_knob knob[MTHP_KNOBS_MAX];
        unsigned n_reasons;             /* Explain("") or the status file */
        struct mthp_status_knob reason[MTHP_KNOBS_MAX];
};

enum {
        LOOK_KNOBS = 1 << 0,    /* ListKnobs */
        LOOK_REASONS = 1 << 1,  /* Explain("") */
        LOOK_QUIET = 1 << 2,    /* no warnings (top owns the screen) */
};

/* For reads: NULL when mthpd is not on the bus. */
static struct ctl_bus *bus_open_for_read(bool quiet) {
        struct ctl_bus *b = NULL;
        struct ctl_bus_error e;
        int r = ctl_bus_open(&b, &e);
        if (r < 0 && r != -ESRCH && !quiet)
                fprintf(stderr, "mthpctl: warning: cannot reach mthpd on the bus: %s; showing what the host shows\n",
                        e.message);
        return r < 0 ? NULL : b;
}

static void daemon_look(const struct ctl *c, struct ctl_bus *bus, unsigned what, struct daemon_view *v) {
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
                v->fault_pages_rate = p.fault_pages_rate;
                v->interval_usec = p.interval_usec;
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
                mthp_strcpy(v->mode, sizeof(v->mode), st->dry_run ? "observe" : "manage");
                mthp_strcpy(v->not_writable, sizeof(v->not_writable), st->not_writable);
                v->tick = st->tick;
                v->fault_pages_rate = st->fault_pages_rate;
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

/* Per knob of caps: who set it, mthpd's decision (NULL: none known) and
 * whether an administrator pinned it. */
struct knob_owners {
        const char *set_by[MTHP_KNOBS_MAX];
        const char *decision[MTHP_KNOBS_MAX];
        bool pinned[MTHP_KNOBS_MAX];
};

static void knob_owners_fill(struct knob_owners *o, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                             const struct mthp_journal *j, const struct daemon_view *v) {
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                const struct ctl_bus_knob *bk = view_knob(v, caps->knobs[i].id);
                const struct mthp_status_knob *sk = view_reason(v, caps->knobs[i].id);
                o->set_by[i] = bk ? bk->set_by : mthp_knob_owner(j, &caps->knobs[i], snap->knob[i]);
                o->decision[i] = bk ? bk->decision : sk ? sk->decision : NULL;
                o->pinned[i] = bk && bk->pinned;
        }
}

/* "running (manage), pid 123, tick 45, 6 changes" */
static void print_daemon_line(FILE *f, const struct daemon_view *v) {
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
static int bus_fail(const struct ctl *c, int r, const struct ctl_bus_error *e) {
        const char *name = c->cmd->name;
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
static int bus_open_for_write(const struct ctl *c, struct ctl_bus **bus) {
        struct ctl_bus_error e;
        int r = ctl_bus_open(bus, &e);
        return r < 0 ? bus_fail(c, r, &e) : 0;
}

/* ---- status, sizes, explain ------------------------------------------ */

static void print_rate(struct table *t, const struct mthp_snapshot *snap, double rate) {
        if (snap->dt > 0)
                table_cell(t, "%.0f", rate);
        else
                table_cell(t, "-");
}

/* The size x kind table and the global knobs, as status and top show them. */
static void print_knobs(FILE *f, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
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
                        print_rate(&t, snap, stat_rate(caps, snap, i, kind_alloc_stat[k]));
                        print_rate(&t, snap, stat_rate(caps, snap, i, kind_fallback_stat[k]));
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
        if (v->version[0]) {
                printf(",\"version\":");
                json_str(v->version);
        }
}

/* The host, what mthpd says about each knob (if it is on the bus) and the
 * restore journal: what status and metrics both show. */
static int look_at_knobs(struct ctl *c, struct host_view **hv, struct daemon_view **v, struct mthp_journal *j,
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
static void json_status_fields(const struct ctl *c, const struct host_view *hv, const struct daemon_view *v,
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
                               stat_rate(&hv->caps, &hv->snap, (unsigned) si, kind_alloc_stat[kind]),
                               stat_rate(&hv->caps, &hv->snap, (unsigned) si, kind_fallback_stat[kind]));
                printf(",\"accepts\":");
                json_accepts(k);
                printf("}");
        }
        printf("]");
}

static int cmd_status(struct ctl *c, int argc, char **argv) {
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
                mthp_sampler_take(hv->s, now_usec(), &hv->snap);
        }
        static struct knob_owners o;
        knob_owners_fill(&o, &hv->caps, &hv->snap, &j, v);

        if (c->json) {
                printf("{");
                json_status_fields(c, hv, v, &o, &j, journal_ok);
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
                printf("; MemAvailable %llu MiB\n\n", (unsigned long long) hv->snap.mem.available_kb / 1024);
                print_knobs(stdout, &hv->caps, &hv->snap, &o);
                if (v->not_writable[0])
                        printf("note: mthpd cannot write the knobs (%s): it only observes\n", v->not_writable);
                for (unsigned i = 0; i < j.n; i++)
                        if (j.e[i].state == MTHP_ENTRY_FOREIGN)
                                printf("note: %s was changed by someone else to '%s'; mthpd no longer manages it "
                                       "('mthpctl resume %s' hands it back)\n",
                                       j.e[i].id, j.e[i].foreign_value, j.e[i].id);
                for (unsigned i = 0; i < hv->caps.n_knobs; i++) {
                        if (o.pinned[i])
                                printf("note: %s is pinned by an administrator ('mthpctl unpin %s' hands it back)\n",
                                       hv->caps.knobs[i].id, hv->caps.knobs[i].id);
                        else if (v->running && strcmp(v->mode, "observe") == 0 && o.decision[i] &&
                                 strcmp(o.decision[i], "original") != 0 && strcmp(o.decision[i], hv->snap.knob[i]) != 0)
                                printf("note: observe mode: mthpd would set %s to %s\n", hv->caps.knobs[i].id,
                                       o.decision[i]);
                }
        }
        free(v);
        host_view_close(hv);
        return EXIT_OK;
}

static int cmd_sizes(struct ctl *c, int argc, char **argv) {
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
                                if (a)
                                        printf("%llu", (unsigned long long) a->value);
                                else
                                        printf("null");
                                printf(",\"fallback\":");
                                if (f)
                                        printf("%llu", (unsigned long long) f->value);
                                else
                                        printf("null");
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

static int cmd_explain(struct ctl *c, int argc, char **argv) {
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
                        printf("}");
                } else
                        printf("%s: %s\n    %s\n", k->id, k->decision, k->reason);
                first = false;
        }
        if (c->json)
                printf("]}\n");
        else if (first)
                printf("mthpd manages no knob%s%s under its configuration\n", kb ? " of size " : "", want);
        free(v);
        return EXIT_OK;
}

/* ---- cgroups ----------------------------------------------------------- */

static int cmp_cgroup_rate(const void *a, const void *b) {
        const struct ctl_bus_cgroup *x = a, *y = b;
        return x->fault_rate < y->fault_rate ? 1 : x->fault_rate > y->fault_rate ? -1 : strcmp(x->path, y->path);
}

static const char *policy_dir_of(const struct ctl *c) {
        return c->policy_dir ? c->policy_dir : MTHP_SYSCONFDIR "/policy.d";
}

static bool managed_by(const char *path, void *user) {
        const struct mthp_policy_set *set = user;
        for (unsigned i = 0; i < set->n; i++)
                if (mthp_policy_matches(&set->p[i], path))
                        return true;
        return false;
}

/* Without mthpd: the policy files and the cgroups they match, measured over
 * --sample (no density: that is the daemon's memory). */
static int cgroups_from_host(struct ctl *c, struct ctl_bus_cgroup **ret, unsigned *n) {
        static char err[65536];
        struct mthp_policy_set *set = NULL;
        *ret = NULL;
        *n = 0;
        if (mthp_policy_load_dir(policy_dir_of(c), true, &set, err, sizeof(err)) < 0) {
                fputs(err, stderr);
                fprintf(stderr, "mthpctl: cgroups: the policy files in %s are invalid\n", policy_dir_of(c));
                return -EINVAL;
        }
        struct mthp_host *h = NULL;
        struct mthp_caps *caps = xrealloc(NULL, sizeof(*caps));
        struct mthp_cgmon *m = NULL;
        int r = mthp_host_open(c->root, &h);
        if (r >= 0)
                r = mthp_probe(h, caps);
        if (r >= 0)
                r = mthp_cgmon_new(h, caps, &m);
        if (r < 0) {
                fprintf(stderr, "mthpctl: cgroups: cannot read the cgroups under %s: %s\n", c->root, strerror(-r));
                goto out;
        }
        mthp_cgmon_set_match(m, managed_by, set);
        struct mthp_cgroup_view *v = xrealloc(NULL, MTHP_SNAP_CGROUPS * sizeof(*v));
        unsigned nv = 0;
        uint64_t t0 = now_usec();
        r = mthp_cgmon_tick(m, t0, v, MTHP_SNAP_CGROUPS, &nv);
        if (r >= 0 && c->sample_usec) {
                usleep((useconds_t) c->sample_usec);
                r = mthp_cgmon_tick(m, now_usec(), v, MTHP_SNAP_CGROUPS, &nv);
        }
        if (r >= 0) {
                *ret = xrealloc(NULL, (nv ? nv : 1) * sizeof(**ret));
                for (unsigned i = 0; i < nv; i++) {
                        struct ctl_bus_cgroup *o = &(*ret)[i];
                        int pi = mthp_policy_match(set, v[i].path, NULL, 0);
                        const struct mthp_policy *pol = pi >= 0 ? &set->p[pi] : NULL;
                        memset(o, 0, sizeof(*o));
                        mthp_strcpy(o->path, sizeof(o->path), v[i].path);
                        mthp_strcpy(o->policy, sizeof(o->policy), pol ? pol->name : "");
                        mthp_strcpy(o->anon, sizeof(o->anon), mthp_policy_mode_name(pol ? pol->mode[MTHP_ANON] : 0));
                        mthp_strcpy(o->shmem, sizeof(o->shmem), mthp_policy_mode_name(pol ? pol->mode[MTHP_SHMEM] : 0));
                        o->priority = pol ? pol->priority : 50;
                        o->collapse = pol && pol->collapse;
                        o->fault_rate = c->sample_usec && !v[i].new_cgroup ? v[i].fault_rate : -1;
                        o->anon_kb = v[i].anon_kb;
                        o->shmem_kb = v[i].shmem_kb;
                        o->usage_kb = v[i].usage_kb;
                        o->limit_kb = v[i].limit_kb;
                        o->psi_some = v[i].psi_present ? v[i].psi_some_avg10 : -1;
                        o->dense_kb[0] = o->dense_kb[1] = -1;
                }
                *n = nv;
        } else
                fprintf(stderr, "mthpctl: cgroups: sampling failed: %s\n", strerror(-r));
        free(v);
out:
        mthp_cgmon_free(m);
        mthp_host_free(h);
        free(caps);
        mthp_policy_set_free(set);
        return r < 0 ? r : 0;
}

static void fmt_kb(uint64_t kb, char *buf, size_t n) {
        if (kb >= 10ULL << 20)
                snprintf(buf, n, "%.1fG", (double) kb / (1 << 20));
        else if (kb >= 10ULL << 10)
                snprintf(buf, n, "%lluM", (unsigned long long) kb >> 10);
        else
                snprintf(buf, n, "%lluK", (unsigned long long) kb);
}

static void fmt_dense(int kb, char *buf, size_t n) {
        if (kb < 0)
                snprintf(buf, n, "-");
        else if (kb == 0)
                snprintf(buf, n, "4K");
        else
                mthp_format_size((unsigned) kb, buf, n);
}

/* A JSON array of cgroups (cgroups --json, top --json). */
static void json_cgroups(const struct ctl_bus_cgroup *cg, unsigned n) {
        printf("[");
        for (unsigned i = 0; i < n; i++) {
                const struct ctl_bus_cgroup *x = &cg[i];
                printf("%s{\"path\":", i ? "," : "");
                json_str(x->path);
                printf(",\"policy\":");
                json_str(x->policy);
                printf(",\"anon\":");
                json_str(x->anon);
                printf(",\"shmem\":");
                json_str(x->shmem);
                printf(",\"priority\":%u,\"collapse\":%s,\"fault_rate\":", x->priority,
                       x->collapse ? "true" : "false");
                if (x->fault_rate >= 0)
                        printf("%.1f", x->fault_rate);
                else
                        printf("null");
                printf(",\"anon_kb\":%llu,\"shmem_kb\":%llu,\"usage_kb\":%llu,\"limit_kb\":",
                       (unsigned long long) x->anon_kb, (unsigned long long) x->shmem_kb,
                       (unsigned long long) x->usage_kb);
                if (x->limit_kb)
                        printf("%llu", (unsigned long long) x->limit_kb);
                else
                        printf("null");
                printf(",\"psi_some_avg10\":");
                if (x->psi_some >= 0)
                        printf("%.2f", x->psi_some);
                else
                        printf("null");
                printf(",\"dense_kb\":{\"anon\":");
                if (x->dense_kb[0] >= 0)
                        printf("%d", x->dense_kb[0]);
                else
                        printf("null");
                printf(",\"shmem\":");
                if (x->dense_kb[1] >= 0)
                        printf("%d", x->dense_kb[1]);
                else
                        printf("null");
                printf("}}");
        }
        printf("]");
}

static int cmd_cgroups(struct ctl *c, int argc, char **argv) {
        (void) argc;
        (void) argv;
        struct ctl_bus_cgroup *cg = NULL;
        unsigned n = 0;
        bool from_daemon = false;
        struct ctl_bus *bus = bus_open_for_read(false);
        if (bus) {
                struct ctl_bus_error e;
                int r = ctl_bus_list_cgroups(bus, &cg, &n, &e);
                if (r < 0 && r != -ESRCH) {
                        ctl_bus_free(bus);
                        return bus_fail(c, r, &e);
                }
                from_daemon = r >= 0;
        }
        ctl_bus_free(bus);
        if (!from_daemon && cgroups_from_host(c, &cg, &n) < 0)
                return EXIT_FAIL;
        qsort(cg, n, sizeof(*cg), cmp_cgroup_rate);
        if (c->json) {
                printf("{\"source\":\"%s\",\"cgroups\":", from_daemon ? "mthpd" : "host");
                json_cgroups(cg, n);
                printf("}\n");
                free(cg);
                return EXIT_OK;
        }
        if (!n) {
                printf("no managed cgroups: %s\n", from_daemon ? "no policy file matches a cgroup that exists"
                                                               : "no policy file in the policy directory matches a "
                                                                 "cgroup that exists");
                free(cg);
                return EXIT_OK;
        }
        struct table t;
        table_init(&t, "CGROUP", "POLICY", "ANON", "SHMEM", ">PRIO", ">FAULTS/S", ">MEMORY", ">LIMIT", ">PSI",
                   "DENSE", NULL);
        for (unsigned i = 0; i < n; i++) {
                const struct ctl_bus_cgroup *x = &cg[i];
                char mem[16], lim[16], da[16], ds[16];
                fmt_kb(x->usage_kb, mem, sizeof(mem));
                if (x->limit_kb)
                        fmt_kb(x->limit_kb, lim, sizeof(lim));
                else
                        snprintf(lim, sizeof(lim), "-");
                fmt_dense(x->dense_kb[0], da, sizeof(da));
                fmt_dense(x->dense_kb[1], ds, sizeof(ds));
                table_cell(&t, "%s", x->path);
                table_cell(&t, "%s%s", x->policy, x->collapse ? " (collapse)" : "");
                table_cell(&t, "%s", x->anon);
                table_cell(&t, "%s", x->shmem);
                table_cell(&t, "%u", x->priority);
                if (x->fault_rate >= 0)
                        table_cell(&t, "%.0f", x->fault_rate);
                else
                        table_cell(&t, "-");
                table_cell(&t, "%s", mem);
                table_cell(&t, "%s", lim);
                if (x->psi_some >= 0)
                        table_cell(&t, "%.1f%%", x->psi_some);
                else
                        table_cell(&t, "-");
                table_cell(&t, "anon %s, shmem %s", da, ds);
        }
        table_print(&t, stdout);
        table_free(&t);
        if (!from_daemon)
                printf("(mthpd is not running: rates over %.1fs; density is known only to mthpd)\n",
                       (double) c->sample_usec / 1e6);
        free(cg);
        return EXIT_OK;
}

/* ---- history ---------------------------------------------------------- */

/* Just enough JSON for journalctl -o json: one flat object per line whose
 * values are strings, numbers, null, or arrays (binary or repeated
 * fields). Only string values are kept. */
static const char *json_ws(const char *p) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                p++;
        return p;
}

static void utf8_put(char *out, size_t size, size_t *o, unsigned cp) {
        char b[4];
        size_t n;
        if (cp < 0x80)
                b[0] = (char) cp, n = 1;
        else if (cp < 0x800)
                b[0] = (char) (0xc0 | cp >> 6), b[1] = (char) (0x80 | (cp & 0x3f)), n = 2;
        else if (cp < 0x10000)
                b[0] = (char) (0xe0 | cp >> 12), b[1] = (char) (0x80 | (cp >> 6 & 0x3f)),
                b[2] = (char) (0x80 | (cp & 0x3f)), n = 3;
        else
                b[0] = (char) (0xf0 | cp >> 18), b[1] = (char) (0x80 | (cp >> 12 & 0x3f)),
                b[2] = (char) (0x80 | (cp >> 6 & 0x3f)), b[3] = (char) (0x80 | (cp & 0x3f)), n = 4;
        if (*o + n < size) {
                memcpy(out + *o, b, n);
                *o += n;
        }
}

static int hex4(const char *p, unsigned *v) {
        *v = 0;
        for (int i = 0; i < 4; i++) {
                char ch = p[i];
                unsigned d = ch >= '0' && ch <= '9' ? (unsigned) (ch - '0')
                           : ch >= 'a' && ch <= 'f' ? (unsigned) (ch - 'a' + 10)
                           : ch >= 'A' && ch <= 'F' ? (unsigned) (ch - 'A' + 10) : 16;
                if (d > 15)
                        return -EINVAL;
                *v = *v << 4 | d;
        }
        return 0;
}

/* p at the opening quote; out may be NULL (skip). Returns past the closing
 * quote or NULL. Truncates to size. */
static const char *json_string(const char *p, char *out, size_t size) {
        size_t o = 0;
        if (*p++ != '"')
                return NULL;
        for (;;) {
                unsigned char ch = (unsigned char) *p++;
                unsigned cp;
                if (!ch)
                        return NULL;
                if (ch == '"')
                        break;
                if (ch != '\\') {
                        if (out && o + 1 < size)
                                out[o++] = (char) ch;
                        continue;
                }
                ch = (unsigned char) *p++;
                switch (ch) {
                case 'b': cp = '\b'; break;
                case 'f': cp = '\f'; break;
                case 'n': cp = '\n'; break;
                case 'r': cp = '\r'; break;
                case 't': cp = '\t'; break;
                case 'u':
                        if (hex4(p, &cp) < 0)
                                return NULL;
                        p += 4;
                        if (cp >= 0xd800 && cp < 0xdc00 && p[0] == '\\' && p[1] == 'u') {
                                unsigned lo;
                                if (hex4(p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                        p += 6;
                                }
                        }
                        break;
                case '"': case '\\': case '/': cp = ch; break;
                default: return NULL;
                }
                if (out)
                        utf8_put(out, size, &o, cp);
        }
        if (out && size)
                out[o < size ? o : size - 1] = 0;
        return p;
}

static const char *json_skip(const char *p) {
        p = json_ws(p);
        if (*p == '"')
                return json_string(p, NULL, 0);
        if (*p == '[' || *p == '{') {
                char close = *p == '[' ? ']' : '}';
                p = json_ws(p + 1);
                if (*p == close)
                        return p + 1;
                for (;;) {
                        if (close == '}') {
                                if (!(p = json_string(json_ws(p), NULL, 0)) || *(p = json_ws(p)) != ':')
                                        return NULL;
                                p++;
                        }
                        if (!(p = json_skip(p)))
                                return NULL;
                        p = json_ws(p);
                        if (*p == close)
                                return p + 1;
                        if (*p++ != ',')
                                return NULL;
                }
        }
        const char *start = p; /* number, true, false, null */
        while (*p && strchr("+-.0123456789eEtruefalsn", *p))
                p++;
        return p == start ? NULL : p;
}

/* One journal entry of a knob change; 0, or -EINVAL if it is not one. */
static int journal_change_parse(const char *line, struct mthp_change *c, bool *dry_run) {
        char key[64], ts[32] = "", dry[8] = "0";
        const char *p = json_ws(line);
        memset(c, 0, sizeof(*c));
        if (*p++ != '{')
                return -EINVAL;
        for (p = json_ws(p); *p != '}';) {
                if (!(p = json_string(p, key, sizeof(key))) || *(p = json_ws(p)) != ':')
                        return -EINVAL;
                p = json_ws(p + 1);
                struct {
                        const char *key;
                        char *buf;
                        size_t size;
                } fields[] = {
                        { "__REALTIME_TIMESTAMP", ts, sizeof(ts) },     { "MTHP_KNOB", c->id, sizeof(c->id) },
                        { "MTHP_OLD", c->old, sizeof(c->old) },         { "MTHP_NEW", c->new, sizeof(c->new) },
                        { "MTHP_REASON", c->reason, sizeof(c->reason) }, { "MTHP_DRY_RUN", dry, sizeof(dry) },
                };
                char *buf = NULL;
                size_t size = 0;
                for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
                        if (strcmp(key, fields[i].key) == 0)
                                buf = fields[i].buf, size = fields[i].size;
                p = buf && *p == '"' ? json_string(p, buf, size) : json_skip(p);
                if (!p)
                        return -EINVAL;
                p = json_ws(p);
                if (*p == ',')
                        p = json_ws(p + 1);
                else if (*p != '}')
                        return -EINVAL;
        }
        char *end;
        c->realtime_usec = strtoull(ts, &end, 10);
        if (!c->id[0] || !ts[0] || *end)
                return -EINVAL;
        *dry_run = strcmp(dry, "1") == 0;
        return 0;
}

struct history {
        const char *source;                   /* "bus" | "journal" */
        unsigned n, cap;
        struct mthp_change *c;
        bool *dry_run;                        /* journal only */
};

static void history_add(struct history *h, const struct mthp_change *c, bool dry_run) {
        if (h->n == h->cap) {
                h->cap = h->cap ? 2 * h->cap : 64;
                h->c = xrealloc(h->c, h->cap * sizeof(*h->c));
                h->dry_run = xrealloc(h->dry_run, h->cap * sizeof(*h->dry_run));
        }
        h->c[h->n] = *c;
        h->dry_run[h->n++] = dry_run;
}

/* Without the daemon: its change entries in the journal (MESSAGE_ID). */
static int history_from_journal(const struct ctl *c, struct history *h) {
        char since[64] = "", lines[32] = "";
        char *args[12];
        int n = 0, pfd[2];

        args[n++] = (char *) "journalctl";
        args[n++] = (char *) "-o";
        args[n++] = (char *) "json";
        args[n++] = (char *) "-q";
        args[n++] = (char *) "--no-pager";
        if (c->since_set) {
                snprintf(since, sizeof(since), "--since=@%llu", (unsigned long long) (c->since_usec / 1000000));
                args[n++] = since;
        }
        if (c->lines) {
                snprintf(lines, sizeof(lines), "--lines=%lu", c->lines);
                args[n++] = lines;
        }
        args[n++] = (char *) "MESSAGE_ID=" MTHP_MESSAGE_CHANGE;
        args[n] = NULL;

        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
                close(pfd[0]);
                close(pfd[1]);
                return -errno;
        }
        if (pid == 0) {
                dup2(pfd[1], STDOUT_FILENO);
                execvp(args[0], args);
                _exit(127);
        }
        close(pfd[1]);
        FILE *f = fdopen(pfd[0], "re");
        if (!f) {
                close(pfd[0]);
                waitpid(pid, NULL, 0);
                return -ENOMEM;
        }
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) >= 0) {
                struct mthp_change ch;
                bool dry;
                if (journal_change_parse(line, &ch, &dry) == 0 && ch.realtime_usec >= c->since_usec)
                        history_add(h, &ch, dry);
        }
        free(line);
        fclose(f);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
                fprintf(stderr, "mthpctl: history: mthpd is not on the bus and journalctl is not available\n");
                return -ENOENT;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "mthpctl: history: mthpd is not on the bus and journalctl failed (exit status %d)\n",
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                return -EIO;
        }
        return 0;
}

static int cmd_history(struct ctl *c, int argc, char **argv) {
        struct history h = { 0 };
        int r;
        (void) argc;
        (void) argv;

        struct ctl_bus *bus = bus_open_for_read(false);
        if (bus) {
                /* all the daemon remembers when filtering by time, else the last N */
                uint32_t max = c->lines && !c->since_set ? (uint32_t) c->lines : UINT32_MAX;
                struct mthp_change *ch;
                unsigned n;
                struct ctl_bus_error e;
                r = ctl_bus_history(bus, max, &ch, &n, &e);
                ctl_bus_free(bus);
                if (r >= 0) {
                        h.source = "bus";
                        for (unsigned i = 0; i < n; i++)
                                if (ch[i].realtime_usec >= c->since_usec)
                                        history_add(&h, &ch[i], false);
                }
                free(ch);
                if (r < 0 && r != -ESRCH) {
                        r = bus_fail(c, r, &e);
                        goto out;
                }
        }
        if (!h.source) {
                h.source = "journal";
                if (history_from_journal(c, &h) < 0) {
                        r = EXIT_FAIL;
                        goto out;
                }
        }
        /* the last N, oldest first */
        unsigned from = c->lines && h.n > c->lines ? h.n - (unsigned) c->lines : 0;
        bool journal = strcmp(h.source, "journal") == 0;
        char since[64] = "";
        if (c->since_set)
                format_time(c->since_usec, false, since, sizeof(since));
        if (c->json) {
                printf("{\"source\":\"%s\",\"changes\":[", h.source);
                for (unsigned i = from; i < h.n; i++) {
                        char t[64];
                        format_time(h.c[i].realtime_usec, true, t, sizeof(t));
                        printf("%s{\"time_usec\":%llu,\"time\":\"%s\",\"id\":", i > from ? "," : "",
                               (unsigned long long) h.c[i].realtime_usec, t);
                        json_str(h.c[i].id);
                        printf(",\"old\":");
                        json_str(h.c[i].old);
                        printf(",\"new\":");
                        json_str(h.c[i].new);
                        printf(",\"reason\":");
                        json_str(h.c[i].reason);
                        if (journal)
                                printf(",\"dry_run\":%s", h.dry_run[i] ? "true" : "false");
                        printf("}");
                }
                printf("]}\n");
        } else if (from == h.n) {
                if (journal)
                        printf("mthpd is not on the bus, and the journal holds no knob changes by mthpd%s%s\n",
                               since[0] ? " since " : "", since);
                else
                        printf("no knob changes%s%s (mthpd remembers its last %u)\n", since[0] ? " since " : "", since,
                               MTHP_HISTORY_MAX);
        } else {
                struct table t;
                if (journal)
                        printf("mthpd is not on the bus; its knob changes from the journal:\n");
                table_init(&t, "TIME", "KNOB", "OLD", "NEW", "REASON", NULL);
                for (unsigned i = from; i < h.n; i++) {
                        char tm[64];
                        format_time(h.c[i].realtime_usec, false, tm, sizeof(tm));
                        table_cell(&t, "%s", tm);
                        table_cell(&t, "%s", h.c[i].id);
                        table_cell(&t, "%s", h.c[i].old);
                        table_cell(&t, "%s", h.c[i].new);
                        table_cell(&t, "%s%s", journal && h.dry_run[i] ? "(dry run, not written) " : "",
                                   h.c[i].reason);
                }
                table_print(&t, stdout);
                table_free(&t);
        }
        r = EXIT_OK;
out:
        free(h.c);
        free(h.dry_run);
        return r;
}

/* ---- changing things: pin, unpin, resume, mode, reload, restore ------- */

static int cmd_pin(struct ctl *c, int argc, char **argv) {
        const char *id = argv[0], *value = argv[1];
        uint64_t until = 0, now = realtime_usec();
        struct ctl_bus *bus;
        struct ctl_bus_error e;
        (void) argc;

        if (c->for_set && c->until_set) {
                fprintf(stderr, "mthpctl: pin: give --for or --until, not both\n");
                return EXIT_USAGE;
        }
        if (c->for_set)
                until = now + c->for_usec;
        else if (c->until_set) {
                if (c->until_usec <= now) {
                        fprintf(stderr, "mthpctl: pin: --until must lie in the future\n");
                        return EXIT_USAGE;
                }
                until = c->until_usec;
        }
        int r = bus_open_for_write(c, &bus);
        if (r)
                return r;
        r = ctl_bus_pin(bus, id, value, until, &e);
        ctl_bus_free(bus);
        if (r < 0)
                return bus_fail(c, r, &e);
        if (until) {
                char t[64], span[32];
                format_time(until, false, t, sizeof(t));
                format_span(until - now, span, sizeof(span));
                printf("pinned %s to %s until %s (for %s)\n", id, value, t, span);
        } else
                printf("pinned %s to %s until 'mthpctl unpin %s'\n", id, value, id);
        return EXIT_OK;
}

typedef int (*simple_method)(struct ctl_bus *b, const char *arg, struct ctl_bus_error *e);

/* Call a method that takes a knob id (or nothing) and say what it did. */
static int call_and_say(struct ctl *c, struct ctl_bus *bus, simple_method method, const char *arg, const char *done) {
        struct ctl_bus_error e;
        int r = method(bus, arg, &e);
        ctl_bus_free(bus);
        if (r < 0)
                return bus_fail(c, r, &e);
        printf("%s\n", done);
        return EXIT_OK;
}

static int simple_call(struct ctl *c, simple_method method, const char *arg, const char *done) {
        struct ctl_bus *bus;
        int r = bus_open_for_write(c, &bus);
        return r ? r : call_and_say(c, bus, method, arg, done);
}

static int cmd_unpin(struct ctl *c, int argc, char **argv) {
        char done[128];
        (void) argc;
        snprintf(done, sizeof(done), "unpinned %s: mthpd decides it again", argv[0]);
        return simple_call(c, ctl_bus_unpin, argv[0], done);
}

static int cmd_resume(struct ctl *c, int argc, char **argv) {
        char done[160];
        (void) argc;
        snprintf(done, sizeof(done), "mthpd manages %s again (its current value is now the one to restore)", argv[0]);
        return simple_call(c, ctl_bus_resume, argv[0], done);
}

static int reload_method(struct ctl_bus *b, const char *arg, struct ctl_bus_error *e) {
        (void) arg;
        return ctl_bus_reload(b, e);
}

static int cmd_reload(struct ctl *c, int argc, char **argv) {
        struct ctl_bus *bus;
        struct ctl_bus_error e;
        (void) argc;
        (void) argv;
        int r = bus_open_for_write(c, &bus);
        if (r)
                return r;
        r = reload_method(bus, NULL, &e);
        ctl_bus_free(bus);
        if (r == -EINVAL) {
                /* InvalidConfig carries every FILE:LINE: error, one per line */
                fprintf(stderr, "mthpctl: reload: the configuration is invalid; mthpd keeps running the old one:\n");
                for (char *l = strtok(e.message, "\n"); l; l = strtok(NULL, "\n"))
                        fprintf(stderr, "  %s\n", l);
                return EXIT_FAIL;
        }
        if (r < 0)
                return bus_fail(c, r, &e);
        printf("mthpd reloaded its configuration\n");
        return EXIT_OK;
}

static int cmd_mode(struct ctl *c, int argc, char **argv) {
        if (argc == 0) {
                struct ctl_bus *bus = bus_open_for_read(false);
                struct daemon_view *v = xrealloc(NULL, sizeof(*v));
                daemon_look(c, bus, 0, v);
                ctl_bus_free(bus);
                int r = EXIT_OK;
                if (!v->running) {
                        fprintf(stderr, "mthpctl: mode: mthpd is not running\n");
                        r = EXIT_NOT_RUNNING;
                } else if (c->json) {
                        printf("{\"mode\":\"%s\",\"source\":\"%s\"}\n", v->mode, v->on_bus ? "bus" : "status-file");
                } else
                        printf("%s\n", v->mode);
                free(v);
                return r;
        }
        if (c->json) {
                fprintf(stderr, "mthpctl: mode: --json is for reading the mode\n");
                return EXIT_USAGE;
        }
        const char *mode = argv[0];
        if (strcmp(mode, "manage") != 0 && strcmp(mode, "observe") != 0) {
                fprintf(stderr, "mthpctl: mode: expected manage or observe, got '%s'\n", mode);
                return EXIT_USAGE;
        }
        return simple_call(c, ctl_bus_set_mode, mode,
                           strcmp(mode, "observe") == 0
                                   ? "mode: observe (every knob mthpd changed is back; it decides and logs only)"
                                   : "mode: manage (mthpd writes knobs)");
}

static int restore_method(struct ctl_bus *b, const char *arg, struct ctl_bus_error *e) {
        (void) arg;
        return ctl_bus_restore(b, e);
}

/* Without a daemon: put back what the restore journal holds. */
static int restore_from_journal(struct ctl *c) {
        char path[MTHP_PATH_MAX + 32], err[1024];
        struct mthp_journal j;
        struct mthp_host *h;
        unsigned n = 0;

        snprintf(path, sizeof(path), "%s/" MTHP_JOURNAL_FILE, c->state_dir);
        int r = mthp_journal_load(path, &j, err, sizeof(err));
        if (r == -ENOENT) {
                printf("nothing to restore: no journal at %s\n", path);
                return EXIT_OK;
        }
        if (r < 0) {
                fprintf(stderr, "mthpctl: cannot read %s: %s", path, err[0] ? err : "invalid journal\n");
                return EXIT_FAIL;
        }
        /* a running mthpd holds STATE/lock and would write again: refuse */
        char lock[MTHP_PATH_MAX + 8];
        snprintf(lock, sizeof(lock), "%s/lock", c->state_dir);
        int lfd = open(lock, O_RDWR | O_CLOEXEC);
        if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
                fprintf(stderr, "mthpctl: mthpd is running (it holds %s) but not on the bus; stop it first: it "
                        "restores everything itself when stopped\n", lock);
                close(lfd);
                return EXIT_FAIL;
        }
        /* the journal's paths belong to the root it was written for */
        const char *root = strcmp(c->root, "/") ? c->root : (j.root[0] ? j.root : "/");
        if ((r = mthp_host_open(root, &h)) < 0) {
                fprintf(stderr, "mthpctl: cannot open host root %s: %s\n", root, mthp_errno_words(r));
                if (lfd >= 0)
                        close(lfd);
                return EXIT_FAIL;
        }
        r = mthp_journal_restore(h, path, &n);
        mthp_host_free(h);
        if (lfd >= 0)
                close(lfd);
        if (r != 0) {
                fprintf(stderr, "mthpctl: restored %u knob(s); %d could not be restored (see above); the journal "
                        "%s keeps them\n", n, r < 0 ? -1 : r, path);
                return EXIT_FAIL;
        }
        printf("restored %u knob(s)\n", n);
        return EXIT_OK;
}

static int cmd_restore(struct ctl *c, int argc, char **argv) {
        struct ctl_bus *bus = NULL;
        struct ctl_bus_error e;
        (void) argc;
        (void) argv;
        int r = ctl_bus_open(&bus, &e);
        if (r == -ESRCH)
                return restore_from_journal(c);
        if (r < 0)
                return bus_fail(c, r, &e);
        return call_and_say(c, bus, restore_method, NULL,
                           "mthpd restored every knob it changed and now observes ('mthpctl mode manage' to "
                           "let it manage again)");
}

/* ---- check, simulate --------------------------------------------------- */

static bool is_policy_file(const char *path) {
        size_t n = strlen(path);
        return n > 7 && strcmp(path + n - 7, ".policy") == 0;
}

static bool is_dir(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Errors of a set of policy files come as one text: each file's are the
 * lines that start with its name. */
static void print_check(struct ctl *c, const char *file, bool valid, const char *err, bool *first_file) {
        if (!c->json) {
                if (valid)
                        printf("%s: ok\n", file);
                return;
        }
        printf("%s{\"file\":", *first_file ? "" : ",");
        *first_file = false;
        json_str(file);
        printf(",\"valid\":%s,\"errors\":[", valid ? "true" : "false");
        bool first = true;
        size_t fl = strlen(file);
        for (const char *l = err; l && *l;) {
                size_t len = strcspn(l, "\n");
                if (len && strncmp(l, file, fl) == 0 && (l[fl] == ':')) {
                        char line[2048];
                        snprintf(line, sizeof(line), "%.*s", (int) len, l);
                        printf(first ? "" : ",");
                        json_str(line);
                        first = false;
                }
                l += len + (l[len] == '\n');
        }
        printf("]}");
}

static void policy_setp(struct mthp_policy_set **p) {
        mthp_policy_set_free(*p);
}

static int cmd_check(struct ctl *c, int argc, char **argv) {
        int bad = 0;
        bool first_file = true;
        const char **policies = NULL;
        size_t n_policies = 0;
        if (c->json)
                printf("{\"files\":[");
        for (int i = 0; i < argc; i++) {
                if (is_dir(argv[i])) {
                        /* a policy directory: every *.policy in it, as mthpd loads them */
                        struct mthp_policy_set *set = NULL;
                        static char err[65536];
                        err[0] = 0;
                        int r = mthp_policy_load_dir(argv[i], true, &set, err, sizeof(err));
                        bad += r < 0;
                        if (r == 0) {
                                for (unsigned j = 0; j < set->n; j++)
                                        print_check(c, set->p[j].file, true, "", &first_file);
                                if (!set->n && !c->json)
                                        printf("%s: ok (no *.policy files)\n", argv[i]);
                                mthp_policy_set_free(set);
                        } else if (c->json)
                                print_check(c, argv[i], false, err, &first_file);
                        else
                                fputs(err, stderr);
                        continue;
                }
                if (is_policy_file(argv[i])) {
                        policies = xrealloc(policies, (n_policies + 1) * sizeof(*policies));
                        policies[n_policies++] = argv[i];
                        continue;
                }
                struct mthp_config cfg;
                char err[8192] = "";
                mthp_config_defaults(&cfg);
                bool valid = mthp_config_load(argv[i], &cfg, err, sizeof(err)) == 0;
                bad += !valid;
                if (!valid && !c->json)
                        fputs(err, stderr);
                print_check(c, argv[i], valid, err, &first_file);
        }
        if (n_policies) {
                /* together, so that a pattern in two files is caught */
                struct mthp_policy_set *set = NULL;
                static char err[65536];
                err[0] = 0;
                int r = mthp_policy_load_files(policies, n_policies, true, &set, err, sizeof(err));
                if (r < 0 && !c->json)
                        fputs(err, stderr);
                for (size_t j = 0; j < n_policies; j++) {
                        bool valid = r == 0;
                        if (!valid) {
                                /* only the files named in the errors are invalid */
                                size_t fl = strlen(policies[j]);
                                valid = true;
                                for (const char *l = err; *l && valid;) {
                                        size_t len = strcspn(l, "\n");
                                        if (strncmp(l, policies[j], fl) == 0 && l[fl] == ':')
                                                valid = false;
                                        l += len + (l[len] == '\n');
                                }
                        }
                        bad += !valid;
                        print_check(c, policies[j], valid, err, &first_file);
                }
                if (r < 0 && bad == 0)
                        bad = 1; /* e.g. too many files */
                mthp_policy_set_free(set);
                free(policies);
        }
        if (c->json)
                printf("]}\n");
        return bad ? EXIT_FAIL : EXIT_OK;
}

/* The value a knob ends up with under a decision: "" is its original. */
static const char *decided_value(const char *decision, const char *original) {
        if (decision[0])
                return decision;
        return original[0] ? original : "original";
}

struct simulate_span {
        unsigned long long ticks, first_tick, last_tick;
        uint64_t first_usec, last_usec;
};

static void print_simulate_summary(bool json, const char *file, const struct mthp_engine_config *cfg,
                                   const struct mthp_caps *caps, const struct mthp_engine_state *st,
                                   const struct simulate_span *span, const unsigned *changes) {
        unsigned total = 0;
        for (unsigned i = 0; i < caps->n_knobs; i++)
                total += changes[i];
        if (json) {
                printf("{\"summary\":{\"file\":");
                json_str(file);
                printf(",\"ticks\":%llu", span->ticks);
                if (span->ticks)
                        printf(",\"first_tick\":%llu,\"last_tick\":%llu", span->first_tick, span->last_tick);
                printf(",\"changes\":%u,\"changes_per_knob\":{", total);
        } else {
                printf("%s: %llu tick(s)", file, span->ticks);
                if (span->ticks)
                        printf(" (%llu to %llu, %.1fs)", span->first_tick, span->last_tick,
                               (double) (span->last_usec - span->first_usec) / 1e6);
                printf(", %u change(s)\n", total);
        }
        bool first_item = true;
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                if (!changes[i])
                        continue;
                if (json) {
                        printf("%s", first_item ? "" : ",");
                        json_str(caps->knobs[i].id);
                        printf(":%u", changes[i]);
                } else
                        printf("  %-20s %u change(s)\n", caps->knobs[i].id, changes[i]);
                first_item = false;
        }
        printf(json ? "},\"final\":{" : "final levels:\n");
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n = mthp_engine_ladder(cfg, caps, k, ladder);
                unsigned level = st->kind[k].level;
                char top[16] = "";
                if (level && level <= n)
                        mthp_format_size(caps->sizes[ladder[level - 1]].kb, top, sizeof(top));
                if (json) {
                        printf("%s\"%s\":{\"level\":%u,\"levels\":%u,\"top\":", k ? "," : "", mthp_kind_name(k),
                               level, n);
                        if (top[0])
                                json_str(top);
                        else
                                printf("null");
                        printf("}");
                } else if (top[0])
                        printf("  %-6s level %u/%u: sizes up to %s always\n", mthp_kind_name(k), level, n, top);
                else
                        printf("  %-6s level 0/%u: every size at its original value\n", mthp_kind_name(k), n);
        }
        if (json)
                printf("}}}\n");
}

/* Replay a recording through the engine from a zero state, as mthpd would
 * have decided on those snapshots; print only decisions that change what a
 * knob holds. A knob mthpd leaves alone holds what the recording shows. */
static int cmd_simulate(struct ctl *c, int argc, char **argv) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *rec = NULL;
        const char *conf = c->config, *file = argv[0];
        bool json = c->json;
        int r;
        (void) argc;

        struct mthp_config cfg;
        char err[8192];
        mthp_config_defaults(&cfg);
        if (conf && mthp_config_load(conf, &cfg, err, sizeof(err)) < 0) {
                fputs(err, stderr);
                return EXIT_FAIL;
        }
        _cleanup_(policy_setp) struct mthp_policy_set *policies = NULL;
        if (c->policy_dir) {
                static char perr[65536];
                if (mthp_policy_load_dir(c->policy_dir, true, &policies, perr, sizeof(perr)) < 0) {
                        fputs(perr, stderr);
                        return EXIT_FAIL;
                }
                cfg.engine.policies = policies;
        }
        struct mthp_caps caps;
        if ((r = mthp_record_open_read(file, &caps, &rec, err, sizeof(err))) < 0) {
                fprintf(stderr, "mthpctl: %s\n", err);
                return EXIT_FAIL;
        }

        /* per knob: the last decision ("" = original) and, while mthpd leaves
         * the knob alone, the value it holds */
        static char decided[MTHP_KNOBS_MAX][MTHP_VALUE_MAX], original[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        static struct mthp_snapshot snap;
        struct mthp_engine_state st = { 0 }, next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        unsigned changes[MTHP_KNOBS_MAX] = { 0 };
        struct simulate_span span = { 0 };

        while ((r = mthp_record_read(rec, &snap, err, sizeof(err))) > 0) {
                if (span.ticks++ == 0) {
                        span.first_tick = snap.tick;
                        span.first_usec = snap.t_usec;
                }
                span.last_tick = snap.tick;
                span.last_usec = snap.t_usec;
                int n = mthp_engine_decide(&cfg.engine, &caps, &snap, &st, &next, dec, MTHP_KNOBS_MAX);
                st = next;
                for (int i = 0; i < n; i++) {
                        int k = dec[i].knob;
                        if (!decided[k][0])
                                snprintf(original[k], sizeof(original[k]), "%s", snap.knob[k]);
                        char old[MTHP_VALUE_MAX];
                        snprintf(old, sizeof(old), "%s", decided_value(decided[k], original[k]));
                        const char *new = decided_value(dec[i].value, original[k]);
                        snprintf(decided[k], sizeof(decided[k]), "%s", dec[i].value);
                        if (strcmp(old, new) == 0)
                                continue;
                        changes[k]++;
                        if (json) {
                                printf("{\"tick\":%llu,\"knob\":", (unsigned long long) snap.tick);
                                json_str(caps.knobs[k].id);
                                printf(",\"old\":");
                                json_str(old);
                                printf(",\"new\":");
                                json_str(new);
                                printf(",\"reason\":");
                                json_str(dec[i].reason);
                                printf("}\n");
                        } else
                                printf("tick %llu: %s: %s -> %s: %s\n", (unsigned long long) snap.tick,
                                       caps.knobs[k].id, old, new, dec[i].reason);
                }
        }
        if (r < 0) {
                fflush(stdout);
                fprintf(stderr, "mthpctl: %s\n", err);
                return EXIT_FAIL;
        }
        print_simulate_summary(json, file, &cfg.engine, &caps, &st, &span, changes);
        return EXIT_OK;
}


/* ---- exec ------------------------------------------------------------- */

/* THP policy for a command and its children: PR_SET_THP_DISABLE is
 * inherited over fork and execve, which is how systemd's MemoryTHP= does it
 * for services. */
static int cmd_exec(struct ctl *c, int argc, char **argv) {
        const char *thp = c->thp ? c->thp : "disable";
        int r;
        (void) argc;

        if (strcmp(thp, "inherit") == 0)
                r = prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
        else if (strcmp(thp, "madvise") == 0) {
                r = prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
                if (r < 0 && errno == EINVAL) {
                        fprintf(stderr, "mthpctl: exec: warning: this kernel does not offer THP for madvised memory "
                                "only (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18); disabling THP completely\n");
                        r = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
                }
        } else
                r = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        if (r < 0) {
                fprintf(stderr, "mthpctl: exec: prctl(PR_SET_THP_DISABLE): %s\n", strerror(errno));
                return EXIT_FAIL;
        }
        fflush(stdout);
        execvp(argv[0], argv);
        int e = errno;
        fprintf(stderr, "mthpctl: exec: %s: %s\n", argv[0], strerror(e));
        return e == ENOENT ? 127 : 126; /* as env(1) and the shells */
}

/* ---- metrics ---------------------------------------------------------- */

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

static int cmd_metrics(struct ctl *c, int argc, char **argv) {
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

/* ---- top -------------------------------------------------------------- */

static volatile sig_atomic_t top_quit, top_resized, top_suspend;

static void top_signal(int sig) {
        if (sig == SIGWINCH)
                top_resized = 1;
        else if (sig == SIGTSTP)
                top_suspend = 1;
        else
                top_quit = 1;
}

struct top_term {
        bool tty_out, raw;
        struct termios saved;
};

static void top_term_setup(struct top_term *t) {
        t->tty_out = isatty(STDOUT_FILENO);
        if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
                /* keys without Enter, no echo; ISIG stays: Ctrl-C is SIGINT */
                struct termios raw = t->saved;
                raw.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
                raw.c_cc[VMIN] = 1;
                raw.c_cc[VTIME] = 0;
                t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        if (t->tty_out)
                fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, hide the cursor */
}

static void top_term_restore(const struct top_term *t) {
        if (t->tty_out)
                fputs("\033[?25h\033[?1049l", stdout);
        fflush(stdout);
        if (t->raw)
                tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
}

#define TOP_CGROUPS 5

static void top_render(FILE *f, const struct ctl *c, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                       const struct daemon_view *v, const struct knob_owners *o, const struct ctl_bus_cgroup *cg,
                       unsigned n_cg) {
        char now[32], interval[32];
        format_time(realtime_usec(), false, now, sizeof(now));
        snprintf(interval, sizeof(interval), "%.1fs", (double) c->interval_usec / 1e6);
        fprintf(f, "mthpctl top - %s, every %s - q quits\n", now, interval);
        print_daemon_line(f, v);
        fputc('\n', f);
        fprintf(f, "demand %.0f pages/s", v->on_bus ? v->fault_pages_rate : snap->fault_pages_rate);
        if (snap->psi.present)
                fprintf(f, " | PSI memory some %.2f%% full %.2f%%", snap->psi.some_avg10, snap->psi.full_avg10);
        else
                fprintf(f, " | PSI absent");
        fprintf(f, " | MemAvailable %llu MiB\n\n", (unsigned long long) snap->mem.available_kb / 1024);
        print_knobs(f, caps, snap, o);
        fputc('\n', f);
        if (n_cg) {
                struct table t;
                table_init(&t, "CGROUP", "POLICY", ">PRIO", ">FAULTS/S", ">MEMORY", ">PSI", "DENSE", NULL);
                for (unsigned i = 0; i < n_cg && i < TOP_CGROUPS; i++) {
                        const struct ctl_bus_cgroup *x = &cg[i];
                        char mem[16], da[16], ds[16];
                        fmt_kb(x->usage_kb, mem, sizeof(mem));
                        fmt_dense(x->dense_kb[0], da, sizeof(da));
                        fmt_dense(x->dense_kb[1], ds, sizeof(ds));
                        table_cell(&t, "%s", x->path);
                        table_cell(&t, "%s (anon %s, shmem %s)", x->policy, x->anon, x->shmem);
                        table_cell(&t, "%u", x->priority);
                        table_cell(&t, "%.0f", x->fault_rate);
                        table_cell(&t, "%s", mem);
                        if (x->psi_some >= 0)
                                table_cell(&t, "%.1f%%", x->psi_some);
                        else
                                table_cell(&t, "-");
                        table_cell(&t, "anon %s, shmem %s", da, ds);
                }
                table_print(&t, f);
                if (n_cg > TOP_CGROUPS)
                        fprintf(f, "... %u more managed cgroups ('mthpctl cgroups')\n", n_cg - TOP_CGROUPS);
                table_free(&t);
                fputc('\n', f);
        }
        if (!v->running) {
                fprintf(f, "mthpd is not running: no decisions to explain\n");
                return;
        }
        if (!v->n_reasons) {
                fprintf(f, "mthpd manages no knob under its configuration\n");
                return;
        }
        struct table t;
        table_init(&t, "KNOB", "DECISION", "REASON", NULL);
        /* knobs mthpd sets first: on a short screen they are what is cut last */
        for (int pass = 0; pass < 2; pass++)
                for (unsigned i = 0; i < v->n_reasons; i++) {
                        if ((strcmp(v->reason[i].decision, "original") == 0) != (pass == 1))
                                continue;
                        table_cell(&t, "%s", v->reason[i].id);
                        table_cell(&t, "%s", v->reason[i].decision);
                        table_cell(&t, "%s", v->reason[i].reason);
                }
        table_print(&t, f);
        table_free(&t);
}

/* Draw a frame over the last one, cut to the terminal; on a pipe, print it. */
static void top_emit(const char *frame, bool tty) {
        if (!tty) {
                fputs(frame, stdout);
                fputc('\n', stdout);
                fflush(stdout);
                return;
        }
        struct winsize ws;
        unsigned rows = 24, cols = 80;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
                rows = ws.ws_row, cols = ws.ws_col;
        fputs("\033[H", stdout);
        const char *p = frame;
        for (unsigned line = 0; *p && line < rows; line++) {
                size_t l = strcspn(p, "\n"), cut = l;
                if (cut > cols) {
                        cut = cols;
                        while (cut && ((unsigned char) p[cut] & 0xc0) == 0x80) /* not inside a UTF-8 character */
                                cut--;
                }
                if (line)
                        fputc('\n', stdout); /* never after the last row: that would scroll */
                fwrite(p, 1, cut, stdout);
                fputs("\033[K", stdout);
                p += l + (p[l] == '\n');
        }
        fputs("\033[J", stdout);
        fflush(stdout);
}

/* Wait until deadline (CLOCK_MONOTONIC µs) for 'q', a signal or a resize.
 * Returns true to quit. */
static bool top_wait(uint64_t deadline, bool *stdin_open, const char *frame, struct top_term *term) {
        for (;;) {
                if (top_quit)
                        return true;
                if (top_suspend) {
                        /* Ctrl-Z: give the shell its terminal back while stopped */
                        top_suspend = 0;
                        top_term_restore(term);
                        raise(SIGSTOP);
                        top_term_setup(term);
                        top_resized = 1;
                }
                if (top_resized) {
                        top_resized = 0;
                        top_emit(frame, term->tty_out);
                }
                uint64_t now = now_usec();
                if (now >= deadline)
                        return false;
                struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
                int timeout = (int) ((deadline - now + 999) / 1000);
                int r = poll(&pfd, *stdin_open ? 1 : 0, timeout);
                if (r < 0 && errno != EINTR)
                        return true;
                if (r > 0) {
                        char buf[64];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
                        if (n <= 0)
                                *stdin_open = false; /* EOF (not a terminal): only signals stop us */
                        else if (memchr(buf, 'q', (size_t) n) || memchr(buf, 'Q', (size_t) n))
                                return true;
                }
        }
}

static int cmd_top(struct ctl *c, int argc, char **argv) {
        static struct mthp_journal j;
        static struct knob_owners o;
        struct top_term term = { 0 };
        struct ctl_bus *bus = NULL;
        bool stdin_open = true;
        int ret = EXIT_OK;
        (void) argc;
        (void) argv;

        struct host_view *hv = host_view_open(c);
        if (!hv)
                return EXIT_FAIL;
        struct sigaction sa = { .sa_handler = top_signal }; /* no SA_RESTART: poll returns */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGWINCH, &sa, NULL);
        sigaction(SIGTSTP, &sa, NULL);
        if (!c->json)
                top_term_setup(&term);

        struct daemon_view *v = xrealloc(NULL, sizeof(*v));
        char *frame = NULL;
        for (unsigned long n = 1; !top_quit; n++) {
                uint64_t deadline = now_usec() + c->interval_usec;
                if (!bus)
                        bus = bus_open_for_read(true); /* mthpd may have started */
                daemon_look(c, bus, LOOK_KNOBS | LOOK_REASONS | LOOK_QUIET, v);
                if (bus && !v->on_bus) {
                        ctl_bus_free(bus); /* it went away; look again next time */
                        bus = NULL;
                }
                bool journal_ok = load_journal(c, true, &j);
                knob_owners_fill(&o, &hv->caps, &hv->snap, &j, v);
                struct ctl_bus_cgroup *cg = NULL;
                unsigned n_cg = 0;
                struct ctl_bus_error e;
                if (bus && v->on_bus && ctl_bus_list_cgroups(bus, &cg, &n_cg, &e) < 0)
                        n_cg = 0;

                if (c->json) {
                        /* one JSON object per frame and line (NDJSON) */
                        printf("{\"time_usec\":%llu,", (unsigned long long) realtime_usec());
                        json_status_fields(c, hv, v, &o, &j, journal_ok);
                        printf(",\"cgroups\":");
                        json_cgroups(cg, n_cg);
                        printf(",\"decisions\":[");
                        for (unsigned i = 0; v->running && i < v->n_reasons; i++) {
                                printf("%s{\"id\":", i ? "," : "");
                                json_str(v->reason[i].id);
                                printf(",\"decision\":");
                                json_str(v->reason[i].decision);
                                printf(",\"reason\":");
                                json_str(v->reason[i].reason);
                                printf("}");
                        }
                        printf("]}\n");
                        fflush(stdout);
                        free(cg);
                } else {
                        size_t len;
                        free(frame);
                        frame = NULL;
                        FILE *f = open_memstream(&frame, &len);
                        if (!f) {
                                free(cg);
                                ret = EXIT_FAIL;
                                break;
                        }
                        top_render(f, c, &hv->caps, &hv->snap, v, &o, cg, n_cg);
                        fclose(f);
                        free(cg);
                        top_emit(frame, term.tty_out);
                }
                if (c->iterations && n >= c->iterations)
                        break;
                if (top_wait(deadline, &stdin_open, frame ? frame : "", &term))
                        break;
                mthp_sampler_take(hv->s, now_usec(), &hv->snap);
        }
        top_term_restore(&term);
        free(frame);
        free(v);
        ctl_bus_free(bus);
        host_view_close(hv);
        return ret;
}

/* ---- commands and options ---------------------------------------------- */

static const struct command commands[] = {
        { "status", "[--sample TIME] [--json]",
          "every size x kind: setting, who set it, alloc and fallback rates",
          "For every size and kind: the current setting, who set it (original: the value\n"
          "mthpd found; mthpd; other: someone changed it after mthpd; pinned: an\n"
          "administrator pinned it), and the allocation and fallback rates measured over\n"
          "--sample; then the global knobs. While mthpd is on the bus, 'set by' and its\n"
          "decisions come from it; otherwise from the restore journal. Works without the\n"
          "daemon.\n\n"
          "  --sample TIME   how long to measure rates (default 500ms; 0: none)\n"
          "  -j, --json      machine-readable output\n",
          O_JSON | O_SAMPLE, NULL, 0, 0, cmd_status },
        { "sizes", "[--json]",
          "per size: knobs, accepted values, settings, alloc/fallback counters",
          "For every folio size the kernel offers: its order, which kinds have a knob\n"
          "(8K has shmem only), the current setting, the values the kernel accepts, and\n"
          "the allocation and fallback counters since boot. Reads the host only.\n\n"
          "  -j, --json      machine-readable output (all stats counters of each size)\n",
          O_JSON, NULL, 0, 0, cmd_sizes },
        { "cgroups", "[--policy-dir DIR] [--sample TIME] [--json]",
          "managed cgroups by fault rate: policy, memory, pressure, density",
          "The cgroups that policy files manage (mthpd.policy(5)), highest fault rate\n"
          "first: the policy and its wishes (Anon=, Shmem=, Priority=), faults per second\n"
          "(memory.stat pgfault), memory in use and its limit, memory pressure (PSI some\n"
          "avg10) and DENSE: the largest size every sampled process of the cgroup touches\n"
          "densely enough for its MaxBloat (- when none was sampled). Without mthpd, the\n"
          "policy files and cgroups are read directly and rates measured over --sample;\n"
          "density is then unknown.\n\n"
          "  -p, --policy-dir DIR   policy files to use without mthpd (default\n"
          "                         " MTHP_SYSCONFDIR "/policy.d)\n"
          "  --sample TIME          how long to measure without mthpd (default 500ms)\n"
          "  -j, --json             machine-readable output\n",
          O_JSON | O_SAMPLE | O_POLICY_DIR, NULL, 0, 0, cmd_cgroups },
        { "explain", "[SIZE] [--json]",
          "mthpd's current decision and its reason per knob",
          "The running daemon's current decision for each knob it manages (or only those\n"
          "of SIZE, e.g. 64K) and the numbers behind it. Asks mthpd over the bus, else\n"
          "reads its status file. Exit status 3 if mthpd is not running.\n\n"
          "  -j, --json      machine-readable output\n",
          O_JSON, NULL, 0, 1, cmd_explain },
        { "history", "[-n N] [--since TIME] [--json]",
          "the knob changes mthpd made, oldest first",
          "The knob changes mthpd made, oldest first: time, knob, old and new value, and\n"
          "the reason. Asks mthpd over the bus (it remembers its last 256 changes); when\n"
          "it is not running, reads its entries from the journal (journalctl -o json\n"
          "MESSAGE_ID=" MTHP_MESSAGE_CHANGE ").\n\n"
          "  -n, --lines N   only the last N changes\n"
          "  --since TIME    only changes since TIME: -1h, '30min ago', today, yesterday,\n"
          "                  '2025-11-30 10:00', 10:00, @EPOCH\n"
          "  -j, --json      machine-readable output\n",
          O_JSON | O_LINES | O_SINCE, NULL, 0, 0, cmd_history },
        { "metrics", "[--json]",
          "Prometheus text exposition of knobs, counters, cgroups and mthpd's state",
          "Print the knobs, the per-size allocation and fallback counters, page faults,\n"
          "PSI, mthpd's state and its managed cgroups in the Prometheus text exposition\n"
          "format (0.0.4), e.g. for node_exporter's textfile collector:\n\n"
          "  mthpctl metrics > /var/lib/node_exporter/mthp.prom.$$ &&\n"
          "    mv /var/lib/node_exporter/mthp.prom.$$ /var/lib/node_exporter/mthp.prom\n\n"
          "  -j, --json      the same samples as JSON: families with name, type, help\n"
          "                  and samples (labels, value)\n",
          O_JSON, NULL, 0, 0, cmd_metrics },
        { "top", "[--interval TIME] [--iterations N] [--json]",
          "live view: demand, PSI, sizes' settings and rates, top cgroups, reasons",
          "A full-screen view refreshed every interval: mthpd's mode and tick, fault\n"
          "demand and PSI, each size's anon and shmem setting with alloc and fallback\n"
          "rates, the managed cgroups with the highest fault rates, and mthpd's current\n"
          "decisions with their reasons. q or Ctrl-C quits. On a pipe, frames are\n"
          "printed one after another.\n\n"
          "  -i, --interval TIME   refresh period (default 1s, at least 100ms)\n"
          "  --iterations N        quit after N frames\n"
          "  -j, --json            one JSON object per frame and line (status --json's\n"
          "                        fields, cgroups and decisions)\n",
          O_INTERVAL | O_ITERATIONS | O_JSON, NULL, 0, 0, cmd_top },
        { "pin", "ID VALUE [--for DURATION | --until TIME]",
          "hold a knob at a value, overriding mthpd's decision (root)",
          "Hold knob ID (64K/anon, 2M/shmem, global/defrag; see 'mthpctl status') at\n"
          "VALUE, one of the values the kernel offers for it, until 'mthpctl unpin ID',\n"
          "for DURATION or until TIME. mthpd's decision for the knob is overridden and\n"
          "its reason says so. Needs root and a running mthpd.\n\n"
          "  --for DURATION   e.g. 30min, 2h, 1d\n"
          "  --until TIME     e.g. '2025-12-01 08:00', +2h, tomorrow\n",
          O_FOR | O_UNTIL, "pin knobs", 2, 2, cmd_pin },
        { "unpin", "ID", "give a pinned knob back to mthpd (root)",
          "Give knob ID back to mthpd's engine. Needs root and a running mthpd.\n", 0, "unpin knobs", 1, 1,
          cmd_unpin },
        { "resume", "ID", "manage again a knob someone else had changed (root)",
          "mthpd stops managing a knob someone else writes (status shows it as set by\n"
          "other). Resume hands it back: the value the other writer set becomes the one\n"
          "mthpd restores. Needs root and a running mthpd.\n",
          0, "resume knobs", 1, 1, cmd_resume },
        { "mode", "[manage|observe] [--json]", "print or set mthpd's mode (setting: root)",
          "Without an argument, print mthpd's mode: manage (it writes knobs) or observe\n"
          "(it decides and logs only). With one, switch: going to observe restores every\n"
          "knob mthpd changed first. Setting needs root; both need a running mthpd.\n\n"
          "  -j, --json      machine-readable output (reading)\n",
          O_JSON, "change mthpd's mode", 0, 1, cmd_mode },
        { "reload", "", "make mthpd re-read its configuration (root)",
          "mthpd re-reads its configuration: all of it or, if any line is wrong, none of\n"
          "it; every FILE:LINE: error is printed. Needs root and a running mthpd.\n",
          0, "reload mthpd's configuration", 0, 0, cmd_reload },
        { "restore", "", "put back every knob mthpd changed",
          "Put back every knob mthpd changed. With mthpd running, it restores them and\n"
          "switches to observe (root only). Without it, from its restore journal: every\n"
          "knob whose value is still what mthpd wrote; knobs someone else changed are left\n"
          "alone.\n",
          0, "restore knobs", 0, 0, cmd_restore },
        { "exec", "[--thp=disable|madvise|inherit] -- CMD [ARG]...",
          "run CMD with THP disabled (or for madvised memory only)",
          "Run CMD with a THP policy of its own, inherited by its children over fork and\n"
          "exec (prctl PR_SET_THP_DISABLE; what systemd's MemoryTHP= does for services):\n\n"
          "  --thp=disable   no THP for CMD (default)\n"
          "  --thp=madvise   THP only where CMD asks with madvise(MADV_HUGEPAGE) (Linux\n"
          "                  6.18, PR_THP_DISABLE_EXCEPT_ADVISED; older kernels: disable,\n"
          "                  with a warning)\n"
          "  --thp=inherit   clear an inherited setting: the host's policy applies\n\n"
          "Exit status: CMD's; 127 if CMD is not found, 126 if it cannot be run.\n",
          O_THP, NULL, 1, -1, cmd_exec },
        { "check", "FILE|DIR... [--json]", "validate mthpd.conf and policy files",
          "Validate configuration files without the daemon: mthpd.conf files, policy\n"
          "files (*.policy, checked together so that a cgroup matched in two files is\n"
          "caught) and policy directories (every *.policy in it, as mthpd loads them).\n"
          "Policy files must be owned by root and not writable by group or others.\n"
          "Errors are printed as FILE:LINE: ...; exit status 1 if any file is invalid.\n\n"
          "  -j, --json      machine-readable output: each file, valid, its errors\n",
          O_JSON, NULL, 1, -1, cmd_check },
        { "simulate", "FILE [--config CONF] [--policy-dir DIR] [--json]",
          "replay a recording (mthpd --record) through the engine",
          "Replay a recording made with 'mthpd --record FILE' through the engine, with\n"
          "CONF's thresholds (default: built-in) and DIR's policy files (default: none),\n"
          "and print each tick's knob changes with their reasons, then a summary.\n\n"
          "  -c, --config CONF      mthpd.conf to take the engine's settings from\n"
          "  -p, --policy-dir DIR   policy files to arbitrate with (mthpd.policy(5))\n"
          "  -j, --json          one JSON object per change, then the summary\n",
          O_JSON | O_CONFIG | O_POLICY_DIR, NULL, 1, 1, cmd_simulate },
};

enum { OPT_SAMPLE = 0x100, OPT_VERSION, OPT_SINCE, OPT_FOR, OPT_UNTIL, OPT_ITERATIONS, OPT_THP };

/* Every option a command may take; flag 0: any command. */
static const struct {
        struct option opt;
        unsigned flag;
        const char *letter;          /* getopt short form, or NULL */
} command_options[] = {
        { { "root", required_argument, NULL, 'r' }, 0, "r:" },
        { { "state-dir", required_argument, NULL, 's' }, 0, "s:" },
        { { "help", no_argument, NULL, 'h' }, 0, "h" },
        { { "json", no_argument, NULL, 'j' }, O_JSON, "j" },
        { { "sample", required_argument, NULL, OPT_SAMPLE }, O_SAMPLE, NULL },
        { { "lines", required_argument, NULL, 'n' }, O_LINES, "n:" },
        { { "since", required_argument, NULL, OPT_SINCE }, O_SINCE, NULL },
        { { "for", required_argument, NULL, OPT_FOR }, O_FOR, NULL },
        { { "until", required_argument, NULL, OPT_UNTIL }, O_UNTIL, NULL },
        { { "interval", required_argument, NULL, 'i' }, O_INTERVAL, "i:" },
        { { "iterations", required_argument, NULL, OPT_ITERATIONS }, O_ITERATIONS, NULL },
        { { "config", required_argument, NULL, 'c' }, O_CONFIG, "c:" },
        { { "thp", required_argument, NULL, OPT_THP }, O_THP, NULL },
        { { "policy-dir", required_argument, NULL, 'p' }, O_POLICY_DIR, "p:" },
};
#define N_COMMAND_OPTIONS (sizeof(command_options) / sizeof(command_options[0]))

static void usage(FILE *f) {
        fprintf(f, "Usage: mthpctl [OPTIONS] COMMAND [ARGS]\n"
                   "Show and control mthpd, the mTHP tuning daemon.\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
        fprintf(f,
                "\n'mthpctl COMMAND --help' describes a command and its options.\n\n"
                "Options (before or after the command):\n"
                "  -j, --json            machine-readable output (queries)\n"
                "  -r, --root DIR        host root (default /)\n"
                "  -s, --state-dir DIR   mthpd state directory (default /run/mthpd)\n"
                "      --sample TIME     how long 'status' measures rates (default 500ms; 0: none)\n"
                "  -h, --help            this help\n"
                "      --version         print the version\n\n"
                "mthpctl talks to mthpd on the system bus (org.mthpd.mthpd1). Queries fall back\n"
                "to the host, mthpd's state directory and the journal when it is not running.\n\n"
                "Exit status: 0 success; 1 failure (for check and simulate: an invalid file);\n"
                "2 usage error; 3 mthpd is not running, or runs but is not on the bus (commands\n"
                "that need it); 4 permission denied (run as root).\n"
                "See mthpctl(8), mthpd.dbus(5).\n");
}

static void command_help(const struct command *cmd) {
        printf("Usage: mthpctl %s%s%s\n\n%s", cmd->name, cmd->args[0] ? " " : "", cmd->args, cmd->help);
        printf("\nAlso: -r/--root DIR, -s/--state-dir DIR, -h/--help; see 'mthpctl --help'.\n");
}

static int bad_value(const struct command *cmd, const char *opt, const char *expected, const char *got) {
        fprintf(stderr, "mthpctl: %s: %s: expected %s, got '%s'\n", cmd->name, opt, expected, got);
        return EXIT_USAGE;
}

static int parse_count(const char *s, unsigned long max, unsigned long *v) {
        char *end;
        errno = 0;
        *v = strtoul(s, &end, 10);
        return end == s || *end || errno || *s == '-' || *v == 0 || *v > max ? -EINVAL : 0;
}

/* Parse the command's options (the global ones may follow the command too)
 * and check its arguments. Returns -1 to run it, else an exit status. */
static int parse_command(struct ctl *c, const struct command *cmd, int argc, char **argv, int *first) {
        struct option longopts[N_COMMAND_OPTIONS + 1] = { 0 };
        char shortopts[64] = "", name[64];
        size_t n = 0;
        int o;

        /* exec: options end at CMD, whose own options are its business */
        if (cmd->run == cmd_exec)
                strcat(shortopts, "+");
        for (size_t i = 0; i < N_COMMAND_OPTIONS; i++) {
                if (command_options[i].flag && !(cmd->opts & command_options[i].flag))
                        continue;
                longopts[n++] = command_options[i].opt;
                if (command_options[i].letter)
                        strcat(shortopts, command_options[i].letter);
        }
        snprintf(name, sizeof(name), "mthpctl %s", cmd->name);
        argv[0] = name; /* for getopt's messages */
        optind = 0;     /* glibc: start over */
        while ((o = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                switch (o) {
                case 'r': c->root = optarg; break;
                case 's': c->state_dir = optarg; break;
                case 'j': c->json = true; break;
                case 'h': command_help(cmd); return EXIT_OK;
                case OPT_SAMPLE:
                        if (mthp_parse_duration(optarg, &c->sample_usec) < 0 || c->sample_usec > 60000000)
                                return bad_value(cmd, "--sample", "a duration up to 60s", optarg);
                        break;
                case 'n':
                        if (parse_count(optarg, 1000000, &c->lines) < 0)
                                return bad_value(cmd, "--lines", "a count from 1", optarg);
                        break;
                case OPT_SINCE:
                        if (parse_timestamp(optarg, &c->since_usec) < 0)
                                return bad_value(cmd, "--since", "a time like -1h, today or '2025-11-30 10:00'",
                                                 optarg);
                        c->since_set = true;
                        break;
                case OPT_FOR:
                        if (parse_timespan(optarg, &c->for_usec) < 0 || c->for_usec == 0)
                                return bad_value(cmd, "--for", "a duration like 30min, 2h or 1d", optarg);
                        c->for_set = true;
                        break;
                case OPT_UNTIL:
                        if (parse_timestamp(optarg, &c->until_usec) < 0)
                                return bad_value(cmd, "--until", "a time like '2025-12-01 08:00', +2h or tomorrow",
                                                 optarg);
                        c->until_set = true;
                        break;
                case 'i':
                        if (parse_timespan(optarg, &c->interval_usec) < 0 || c->interval_usec < 100000 ||
                            c->interval_usec > 3600000000ULL)
                                return bad_value(cmd, "--interval", "a duration from 100ms to 1h", optarg);
                        break;
                case OPT_ITERATIONS:
                        if (parse_count(optarg, ULONG_MAX, &c->iterations) < 0)
                                return bad_value(cmd, "--iterations", "a count from 1", optarg);
                        break;
                case 'c': c->config = optarg; break;
                case 'p': c->policy_dir = optarg; break;
                case OPT_THP:
                        if (strcmp(optarg, "disable") != 0 && strcmp(optarg, "madvise") != 0 &&
                            strcmp(optarg, "inherit") != 0)
                                return bad_value(cmd, "--thp", "disable, madvise or inherit", optarg);
                        c->thp = optarg;
                        break;
                default:
                        fprintf(stderr, "See 'mthpctl %s --help'.\n", cmd->name);
                        return EXIT_USAGE;
                }
        }
        if (c->json && !(cmd->opts & O_JSON)) {
                fprintf(stderr, "mthpctl: %s: has no JSON output\n", cmd->name);
                return EXIT_USAGE;
        }
        int left = argc - optind;
        if (left < cmd->min_args || (cmd->max_args >= 0 && left > cmd->max_args)) {
                fprintf(stderr, "mthpctl: %s: %s; usage: mthpctl %s %s\n", cmd->name,
                        left < cmd->min_args ? "missing arguments" : "too many arguments", cmd->name, cmd->args);
                return EXIT_USAGE;
        }
        *first = optind;
        return -1;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },  { "root", required_argument, NULL, 'r' },
                { "state-dir", required_argument, NULL, 's' }, { "sample", required_argument, NULL, OPT_SAMPLE },
                { "help", no_argument, NULL, 'h' },  { "version", no_argument, NULL, OPT_VERSION }, {},
        };
        struct ctl c = { .root = "/", .state_dir = "/run/mthpd", .sample_usec = 500000, .interval_usec = 1000000 };
        int o;

        while ((o = getopt_long(argc, argv, "+jr:s:h", opts, NULL)) >= 0) {
                switch (o) {
                case 'j': c.json = true; break;
                case 'r': c.root = optarg; break;
                case 's': c.state_dir = optarg; break;
                case OPT_SAMPLE:
                        if (mthp_parse_duration(optarg, &c.sample_usec) < 0 || c.sample_usec > 60000000) {
                                fprintf(stderr, "mthpctl: --sample: expected a duration up to 60s, got '%s'\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'h': usage(stdout); return EXIT_OK;
                case OPT_VERSION: printf("mthpctl %s\n", MTHP_VERSION); return EXIT_OK;
                default: usage(stderr); return EXIT_USAGE;
                }
        }
        mthp_log_init("mthpctl", false);
        if (optind >= argc) {
                usage(stderr);
                return EXIT_USAGE;
        }
        int at = optind; /* getopt's optind starts over for the command */
        const char *name = argv[at];
        if (strcmp(name, "help") == 0) {
                usage(stdout);
                return EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                if (strcmp(name, commands[i].name) != 0)
                        continue;
                int first, r;
                c.cmd = &commands[i];
                /* the command's argv: its name, then what follows it */
                r = parse_command(&c, c.cmd, argc - at, argv + at, &first);
                if (r >= 0)
                        return r;
                return c.cmd->run(&c, argc - at - first, argv + at + first);
        }
        fprintf(stderr, "mthpctl: unknown command '%s'; see 'mthpctl --help'\n", name);
        return EXIT_USAGE;
}
