/* SPDX-License-Identifier: MIT */
#pragma once

/* The manager (manager.c): the state of a running mthpd and its
 * operations. mthpd.c is main, the signals, the loop and the watchdog;
 * bus.c (the D-Bus service) only marshals and checks access, and guard.c
 * steps down between ticks; what each operation means is decided in
 * manager.c. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "mthp/actuator.h"
#include "mthp/collapse.h"
#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/policy.h"
#include "mthp/record.h"
#include "mthp/observe.h"
#include "mthp/sample.h"
#include "mthp/status.h"
#include "mthp/util.h"

struct bus;

/* mthpd's exit status when the knobs cannot be written (read-only sysfs,
 * EACCES, EROFS) and observe mode was not asked for: the unit's
 * RestartPreventExitStatus= names it, as restarting cannot help. */
#define MTHPD_EXIT_NOT_WRITABLE 4

/* An administrator's Pin: the knob holds value whatever the engine decides. */
struct knob_pin {
        bool active;
        char value[MTHP_VALUE_MAX];
        uint64_t until_usec;                /* CLOCK_REALTIME; 0: until Unpin */
        uid_t uid;                          /* who pinned it, for the reason */
};

/* Exit status when a leftover restore journal cannot be restored: the
 * administrator must look (RestartPreventExitStatus= in the unit). */
#define MTHPD_EXIT_JOURNAL 6

/* Exit status when the configuration or a policy file is invalid at start
 * (EX_CONFIG of sysexits.h, "CONFIG" to systemd): a restart reads the same
 * file, so the unit's RestartPreventExitStatus= names it. */
#define MTHPD_EXIT_CONFIG 78

struct daemon {
        const char *root;
        const char *config_file;
        bool config_explicit;
        bool once;
        bool no_bus_cli;                    /* --no-bus */
        /* --dry-run, SetMode and Restore: a mode that outlives reloads
         * (-1: Mode= of the configuration file applies); mode_override_by
         * names who set it, for a reload that does not apply Mode= */
        int mode_override;
        char mode_override_by[64];
        /* the running configuration was read from config_file (else the
         * built-in defaults: the default file did not exist) */
        bool config_from_file;
        uint64_t interval_cli;
        const char *state_dir_cli;
        const char *policy_dir_cli;         /* --policy-dir */
        struct mthp_config cfg;
        /* the policy files in force; cfg.engine.policies points here */
        struct mthp_policy_set *policies;
        struct mthp_collapser *collapser;   /* NULL: MADV_COLLAPSE unavailable */
        struct mthp_collapse_result collapse_last; /* the last tick's collapse work */
        struct mthp_collapse_result collapse_total;
        int collapse_error;                 /* the last distinct error logged, for rate-limiting */
        /* the give-back (giveback-tick.c): the last tick's work, and all
         * that was given since the start */
        struct daemon_give_back {
                unsigned scanned;           /* stat files read for growth */
                uint64_t scan_usec;
                unsigned candidates;        /* grown, quiet processes */
                unsigned windows;           /* 2M windows read */
                unsigned processes;         /* total: processes given back */
                uint64_t advised_kb, freed_kb, usec;
        } give_back_last, give_back_total;
        int give_back_error;                /* the last distinct error logged */
        bool give_back_swap_logged;         /* "swap: not paging out", once */
        /* memory.reclaim with swap (giveback-tick.c): the last distinct
         * error logged; -EINVAL (no swappiness= key) or -EOPNOTSUPP: not tried again */
        int give_back_reclaim_error;
        /* the shmem repair's bookkeeping (collapse-tick.c): kB collapsed
         * per process and mapping, and the passes in a row that found
         * nothing left; the snapshot carries kb to the engine */
        struct daemon_shm_repair {
                int pid;                    /* 0: free */
                uint64_t addr;              /* the mapping's start */
                uint64_t bytes;             /* its length */
                char comm[MTHP_PROC_COMM_MAX];
                char cgroup[MTHP_CGROUP_PATH_MAX];
                uint64_t starttime;         /* the process's, from stat: a reused PID is not it */
                uint64_t kb;
                uint8_t quiet;
                uint64_t tick;              /* last worked on */
        } shm_repair[MTHP_ENGINE_PROCS];
        struct mthp_host *host;
        struct mthp_caps caps;
        struct mthp_observer *observer;     /* the samplers: each tick's snapshot */
        /* the fault-burst wakeup (fault-alarm.c, also FaultSampling=): a tick
         * brought forward when the host starts to fault fast; NULL: off or
         * unavailable */
        struct mthp_fault_alarm *alarm;
        sd_event_source **alarm_src;        /* one per CPU's event */
        bool alarm_tried;                   /* opened, or failed and logged once */
        unsigned alarm_false;               /* rings since the last tick that were no burst */
        bool tick_burst;                    /* the timer was brought forward for a burst */
        /* what the last tick decided with (before the first: the
         * configuration's, a set FaultCost= included): the bus and the
         * status file say these, not a reload's that no tick used yet */
        struct mthp_status_rates rates;
        struct mthp_actuator *act;          /* opaque: mthp/actuator.h */
        struct mthp_engine_state engine;
        struct mthp_snapshot snap;
        struct mthp_decision decisions[MTHP_KNOBS_MAX]; /* last tick's, pins applied */
        int n_decisions;
        /* the engine's own choice per knob at the last tick, before pins
         * ("" = its original value, also for knobs the engine leaves alone) */
        char engine_value[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        struct knob_pin pin[MTHP_KNOBS_MAX];
        /* what each knob holds as far as mthpd knows: sampled at each tick,
         * then what it wrote (the knob view's current without reading) */
        char known[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        char last_error[MTHP_KNOBS_MAX][512]; /* rate-limit: log each distinct error once */
        /* why the knobs cannot be written, found at start (or when asked to
         * manage); "": they can. Only an observing mthpd runs with it set. */
        char not_writable[512];
        uint64_t ticks;                     /* ticks since start */
        /* the timer's schedule (mthp_tick_next): an early tick after one
         * that started to await fault samples (awaits: the last tick's) */
        struct mthp_tick_plan plan;
        bool awaits;
        double awaits_rate;                 /* the faults/s of the processes it awaits */
        bool tick_early;                    /* the tick running now is an early one */
        uint64_t last_tick_usec;            /* what the last tick cost (wall), for the status file */
        uint64_t changes;                   /* knob writes since start */
        uint64_t write_errors;              /* knob writes that failed since start */
        uint64_t knob_writes[MTHP_KNOBS_MAX], knob_write_errors[MTHP_KNOBS_MAX]; /* the same per knob */
        uint64_t sample_failures;           /* ticks in a row whose sampling failed (logged once) */
        const char *record_file;            /* --record */
        struct mthp_record_writer *recorder; /* NULL: not recording (or it failed) */
        struct bus *bus;                    /* NULL: no D-Bus service */
        struct guard *guard;                /* NULL: no memory cgroup hierarchy (guard.h) */
        sd_event *event;
        sd_event_source *timer;
        int lock_fd;
        int exit_code;                      /* set by startup() when it fails for a reason with its own status */
        char start_failure[512];            /* STATUS= sentence of that failure */
};

/* One knob as mthpd shows it, the one place that says who set it and
 * whether it is pinned: the status file, ListKnobs and Explain on the bus,
 * apply() and the guard all go through it. */
struct daemon_knob_view {
        const struct mthp_knob *knob;
        char current[MTHP_VALUE_MAX];           /* what the knob holds (see DAEMON_VIEW_READ) */
        const char *set_by;                     /* "original", "mthpd", "other" or "pinned" */
        const char *engine_value;               /* the engine's own choice at the last tick; "original" */
        bool pinned;                            /* an administrator's Pin is in force */
        const struct mthp_decision *decision;   /* the last tick's, pins and failed writes applied; NULL: none */
        /* the rules behind it by name (mthp_rule_name): "pinned" while an
         * administrator's pin holds the knob; "": none */
        const char *rule, *size_rule;
};
/* Read the knob now (unreadable: as mthpd knows it); without it, current
 * is the value sampled at the last tick, or what mthpd wrote since. */
#define DAEMON_VIEW_READ 1u
void daemon_knob_view(const struct daemon *d, int knob, unsigned flags, struct daemon_knob_view *v);
bool daemon_knob_pinned(const struct daemon *d, int knob);

/* One managed cgroup as ListCgroups shows it: what the last tick sampled,
 * the policy that manages it and the density the engine remembers of its
 * processes. */
struct daemon_cgroup_view {
        const struct mthp_cgroup_view *cgroup;
        const struct mthp_policy *policy;       /* NULL: none (then "auto" and DefaultPriority=) */
        const char *mode[_MTHP_KIND_MAX];       /* the policy's Anon= and Shmem= */
        unsigned priority;
        int dense_kb[_MTHP_KIND_MAX];
};
/* i < d->snap.n_cgroups */
void daemon_cgroup_view(const struct daemon *d, unsigned i, struct daemon_cgroup_view *v);

/* What mthpd can and cannot watch now (mthp/status.h): the managed
 * cgroups' descriptors and the guard's last scan. */
void daemon_coverage(const struct daemon *d, struct mthp_status_coverage *c);

/* calloc'd with the defaults of the command line (root /, no lock). */
int daemon_new(struct daemon **ret);
/* NULL is fine. */
void daemon_free(struct daemon *d);
MTHP_DEFINE_FREEP(struct daemon, daemon_free, daemon_freep)
/* The configuration, host, probe, state directory and lock, actuator (and
 * a leftover journal restored), samplers. On failure d->exit_code may hold
 * the exit status for the reason and d->start_failure the sentence. */
int daemon_startup(struct daemon *d);
/* After the event loop: restores the knobs (not with --once), removes the
 * status file; returns the exit status (exit_code, or 1 if the restore failed). */
int daemon_stop(struct daemon *d, int exit_code);

/* Pins (pins.c), for the tick: drop the pins whose time is up; remember
 * the engine's choice per knob, then let pins override it (also for knobs
 * the engine leaves alone). */
void daemon_expire_pins(struct daemon *d);
void daemon_apply_pins(struct daemon *d);
/* The knob with this id, or -EINVAL with a sentence in err. */
int daemon_find_knob(const struct daemon *d, const char *id, char *err, size_t errsz);

/* guard.c's way in: the one knob writer (counts Changes), and a check
 * between ticks (a new cgroup's start grace; fresh thresholds after a
 * step-down): a tick that counts towards none of the engine's streaks
 * unless it changed something. */
int daemon_knob_write(struct daemon *d, int knob, const char *value, const char *reason, char *err, size_t errsz);
void daemon_run_check(struct daemon *d);
/* The timer's tick, scheduled for usec: runs it and returns when the next
 * one is due (an Interval later, or sooner: mthp_tick_next). */
uint64_t daemon_timer_tick(struct daemon *d, uint64_t usec);
/* guard.c: a memory cgroup was created (inotify). True when a policy that
 * says always manages it, so a tick now can set its sizes (its start
 * grace, mthpd.conf StartGrace=) before its process maps memory. */
bool daemon_cgroup_created(struct daemon *d, const char *path);
/* giveback-tick.c: the tick's give-back (GiveBack=, GiveBackBudget=) to
 * the grown, quiet processes the observer found; nothing while observing
 * or where the host has swap */
void daemon_give_back(struct daemon *d);
/* collapse-tick.c: one tick's MADV_COLLAPSE work (Collapse=yes, shmem repair),
 * within the tick's budget; nothing while observing */
void daemon_collapse(struct daemon *d, uint64_t t);
/* The collapser, budgeted from the configuration (CollapseBudget= a tick,
 * Interval= x CollapseCPU= of time a tick): daemon_collapse_open makes it
 * at startup (d->collapser NULL if it cannot be had), daemon_collapse_config
 * gives the one there a reloaded configuration's budget, keeping what it
 * remembers. Both log the budget in force (at a reload, if it changed). */
void daemon_collapse_open(struct daemon *d);
void daemon_collapse_config(struct daemon *d);
/* Fill the snapshot's sampled processes' shm_repaired_kb from the shmem
 * repair's bookkeeping, before the engine (and --record) sees it. */
void daemon_collapse_fill(struct daemon *d);
/* The fault-burst wakeup: after each timer tick, arm it or leave it off
 * (mthp_tick_alarm_period; opened on the first call with FaultSampling=yes
 * on a real host, freed with no); free at the end. */
void daemon_alarm_steer(struct daemon *d);
void daemon_alarm_free(struct daemon *d);

/* "manage" or "observe" (MTHP_MODE_OBSERVE), as the D-Bus Mode property says. */
const char *daemon_mode_name(enum mthp_mode mode);
int daemon_mode_from_name(const char *name, enum mthp_mode *ret);

/* What the D-Bus service may ask for, on behalf of uid. Each returns 0 or a
 * negative errno with a sentence for the caller in err: -EINVAL means the
 * arguments were wrong; daemon_reload fails only for the configuration,
 * with every FILE:LINE error, one per line (a file that is gone counts: the
 * running configuration stays). A reload that succeeds leaves in err what
 * it did not apply and why ("" when it applied everything), one per line. */
int daemon_reload(struct daemon *d, char *err, size_t errsz);
int daemon_set_mode(struct daemon *d, enum mthp_mode mode, uid_t uid, char *err, size_t errsz);
int daemon_restore(struct daemon *d, uid_t uid, char *err, size_t errsz);
int daemon_pin(struct daemon *d, const char *id, const char *value, uint64_t until_usec, uid_t uid, char *err,
               size_t errsz);
int daemon_unpin(struct daemon *d, const char *id, uid_t uid, char *err, size_t errsz);
int daemon_resume(struct daemon *d, const char *id, uid_t uid, char *err, size_t errsz);
