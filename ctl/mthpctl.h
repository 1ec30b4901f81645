/* SPDX-License-Identifier: MIT */
#pragma once
/* What the parts of mthpctl share (internal to ctl/): the command table's
 * types, the options every command sees, the host and daemon views, the
 * table printer. mthpctl.c holds main and the command table; each verb
 * family has its own verb-*.c. */
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
#include "mthp/escape.h"
#include "mthp/journal.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "mthp/record.h"
#include "mthp/safe-io.h"
#include "mthp/sample.h"
#include "mthp/status.h"
#include "mthp/timespan.h"
#include "mthp/util.h"
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
        O_OUTPUT = 1 << 11,
        O_TYPE = 1 << 12,
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
        const char *output;          /* metrics --output: the file to replace atomically */
        const char *type;            /* check --type: "config", "policy" or NULL (by the name) */
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

/* ---- output.c ---- */
#define TABLE_COLS_MAX 10
struct table {
        unsigned n_cols, n_cells;
        bool right[TABLE_COLS_MAX];
        char **cells;
};

/* a JSON string: the text mthp_escape() gives (valid UTF-8, control
 * characters as \xNN), with " and \\ escaped for JSON */
void json_fstr(FILE *f, const char *s);
void json_str(const char *s);  /* on stdout */
void json_str_or_null(const char *s);
/* v as a JSON number, or null when it is not known */
void json_u64_or_null(bool known, uint64_t v);
void *xrealloc(void *p, size_t n);
void print_errors(const char *err); /* FILE:LINE: errors on stderr, escaped */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A text mthpd composed (a reason, whose names it escaped): as it is when
 * it is clean text, else escaped; composed_text into buf, table_text_cell
 * as a cell after prefix (mthpctl's own words). */
const char *composed_text(char *buf, size_t size, const char *s);
void table_text_cell(struct table *t, const char *prefix, const char *s);
void table_init(struct table *t, ...);
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);

/* ---- views.c ---- */
/* The host, what it offers and a first snapshot: where every command that
 * reads the host starts. NULL (said on stderr) if it cannot. */
struct host_view {
        struct mthp_host *h;
        struct mthp_caps caps;
        struct mthp_sampler *s;
        struct mthp_snapshot snap;
};

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
        bool counters_known;            /* write_errors and guard_trips: from an mthpd that says them */
        unsigned long long write_errors, guard_trips;
        unsigned n_knob_writes;         /* KnobWrites, from an mthpd that says them */
        struct ctl_bus_knob_writes knob_writes[MTHP_KNOBS_MAX];
        double fault_pages_rate;
        uint64_t interval_usec;
        bool rates_known;               /* from an mthpd that says them */
        double fault_cost_ns;           /* the 4K fault cost it decides with; 0: unknown */
        double raise_rate, lower_rate;  /* 4K pages/s: a raise needs, a step-down falls below */
        bool rates_by_time;             /* RaiseFaultTime= at that cost set them */
        struct mthp_status_coverage coverage; /* the managed cgroups' descriptors, the guard's scan */
        bool host_bloat_known;          /* on the bus, from an mthpd that says HostBloat */
        uint64_t host_bloat_budget;     /* bytes; UINT64_MAX: none */
        unsigned n_host_bloat;
        struct ctl_bus_host_bloat host_bloat[2 * MTHP_SIZES_MAX];
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

/* Per knob of caps: who set it, mthpd's decision (NULL: none known) and
 * whether an administrator pinned it. */
struct knob_owners {
        const char *set_by[MTHP_KNOBS_MAX];
        const char *decision[MTHP_KNOBS_MAX];
        bool pinned[MTHP_KNOBS_MAX];
};

/* The managed cgroups that hold their own descriptors (the figures come
 * from different moments of mthpd's tick: never below 0). */
static inline unsigned coverage_held(const struct mthp_status_coverage *c) {
        unsigned without = c->reopened + c->unmonitored;
        return c->managed > without ? c->managed - without : 0;
}

/* The counters behind each kind's alloc and fallback columns. */
extern const char *const kind_alloc_stat[_MTHP_KIND_MAX];
extern const char *const kind_fallback_stat[_MTHP_KIND_MAX];
const struct mthp_counter *stat_counter(const struct mthp_caps *caps, const struct mthp_snapshot *s,
                                        unsigned i, const char *name);
void host_view_close(struct host_view *hv);
struct host_view *host_view_open(const struct ctl *c);
bool load_journal(const struct ctl *c, bool quiet, struct mthp_journal *j);
struct ctl_bus *bus_open_for_read(bool quiet);
void daemon_look(const struct ctl *c, struct ctl_bus *bus, unsigned what, struct daemon_view *v);
void knob_owners_fill(struct knob_owners *o, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                      const struct mthp_journal *j, const struct daemon_view *v);
void print_daemon_line(FILE *f, const struct daemon_view *v);
int bus_fail(const struct ctl *c, int r, const struct ctl_bus_error *e);
int bus_open_for_write(const struct ctl *c, struct ctl_bus **bus);

/* ---- the verbs (verb-*.c), for the command table ---- */
void print_knobs(FILE *f, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                 const struct knob_owners *o);
int look_at_knobs(struct ctl *c, struct host_view **hv, struct daemon_view **v, struct mthp_journal *j,
                  bool *journal_ok);
void json_status_fields(const struct ctl *c, const struct host_view *hv, const struct daemon_view *v,
                        const struct knob_owners *o, const struct mthp_journal *j, bool journal_ok);
/* deciders-view.c: the other deciders of THP (mthp/deciders.h) */
struct mthp_deciders;
struct mthp_foreign_note;
void print_deciders(FILE *f, const struct mthp_caps *caps, const struct mthp_deciders *d);
void json_deciders(const struct mthp_caps *caps, const struct mthp_deciders *d);
/* The administrator's THP off (mthp_deciders_thp_off): a note per kind;
 * JSON "thp_off":{"anon":WHY|null,"shmem":WHY|null}. */
void print_thp_off(FILE *f, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                   const struct mthp_deciders *d);
void json_thp_off(const struct mthp_caps *caps, const struct mthp_snapshot *snap, const struct mthp_deciders *d);
const struct mthp_foreign_note *foreign_note_find(const struct mthp_foreign_note *n, int nn, const char *id);
/* Into buf: who most likely wrote value to knob ("" if nobody is known). */
void likely_writer(const struct mthp_deciders *d, const struct mthp_foreign_note *note, int knob, const char *value,
                   char *buf, size_t size);
int cmd_status(struct ctl *c, int argc, char **argv);
int cmd_sizes(struct ctl *c, int argc, char **argv);
int cmd_explain(struct ctl *c, int argc, char **argv);
void fmt_kb(uint64_t kb, char *buf, size_t n);
void fmt_dense(int kb, char *buf, size_t n);
void json_cgroups(const struct ctl_bus_cgroup *cg, unsigned n);
int cmd_cgroups(struct ctl *c, int argc, char **argv);
int cmd_history(struct ctl *c, int argc, char **argv);
int cmd_pin(struct ctl *c, int argc, char **argv);
int cmd_unpin(struct ctl *c, int argc, char **argv);
int cmd_resume(struct ctl *c, int argc, char **argv);
int cmd_reload(struct ctl *c, int argc, char **argv);
int cmd_mode(struct ctl *c, int argc, char **argv);
int cmd_restore(struct ctl *c, int argc, char **argv);
int cmd_check(struct ctl *c, int argc, char **argv);
int cmd_simulate(struct ctl *c, int argc, char **argv);
int cmd_exec(struct ctl *c, int argc, char **argv);
int cmd_metrics(struct ctl *c, int argc, char **argv);
int cmd_top(struct ctl *c, int argc, char **argv);
