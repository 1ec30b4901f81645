/* SPDX-License-Identifier: MIT */
#pragma once

/* The other deciders of THP on this host, read (never touched) through the
 * host root, so fake trees can carry them:
 *  - the boot command line (/proc/cmdline): transparent_hugepage=,
 *    transparent_hugepage_shmem=, transparent_hugepage_tmpfs=, thp_anon=,
 *    thp_shmem= (Documentation/admin-guide/mm/transhuge.rst, 6.18; thp_anon
 *    and thp_shmem take "16K-64K:always;128K,512K:inherit" groups);
 *  - tuned: running when a process named tuned is in /proc (comm or argv),
 *    its active profile (/etc/tuned/active_profile) and the THP lines of the
 *    profile's tuned.conf and of the profiles it includes ([vm]
 *    transparent_hugepages=, transparent_hugepage.defrag=, [sysfs] lines on
 *    THP paths; globs as tuned takes them);
 *  - systemd units (/etc/systemd/system, /usr/lib/systemd/system,
 *    /lib/systemd/system and their .d drop-ins) with MemoryTHP= (a per-process
 *    opt-out: no knob) or an Exec*= line writing a THP sysfs file (MongoDB
 *    8's unit writes enabled, defrag and khugepaged/max_ptes_none).
 * PID 1 need not be systemd (this VM): unit files are read, not asked.
 *  - boot-time writers: "w" lines of tmpfiles.d(5) (/etc, /run, /usr/lib:
 *    the first directory's file of a name wins), sysfsutils'
 *    /etc/sysfs.conf and the .conf files of /etc/sysfs.d, udev rules (/etc, /run,
 *    /usr/lib udev/rules.d) with ATTR{THP path}= or a RUN writing one, and
 *    /etc/rc.local; only lines naming transparent_hugepage are looked at.
 *
 * Every setting knows the knobs it writes (a mask over caps->knobs), so a
 * knob another writer took can be given its most likely writer: a running
 * tuned's profile, a unit's line, the command line, the one whose value is
 * what the knob now reads first. The daemon notes when it noticed each such
 * change in StateDirectory/foreign (mthpctl status shows it). */

#include <stdbool.h>
#include <stdint.h>
#include "mthp/config.h"
#include "mthp/host.h"
#include "mthp/types.h"

#define MTHP_DECIDERS_MAX 48
#define MTHP_DECIDER_TEXT_MAX 192
#define MTHP_DECIDERS_FOREIGN_FILE "foreign"

enum mthp_decider_source {
        MTHP_DECIDER_CMDLINE,
        MTHP_DECIDER_TUNED,
        MTHP_DECIDER_UNIT,
        MTHP_DECIDER_TMPFILES,          /* a "w" line of tmpfiles.d */
        MTHP_DECIDER_SYSFSUTILS,        /* /etc/sysfs.conf, /etc/sysfs.d */
        MTHP_DECIDER_UDEV,              /* a udev rule's ATTR{} or RUN */
        MTHP_DECIDER_RCLOCAL,           /* /etc/rc.local */
};
/* "cmdline", "tuned", "unit", "tmpfiles", "sysfsutils", "udev", "rc.local" */
const char *mthp_decider_source_name(enum mthp_decider_source s);

struct mthp_decider_setting {
        enum mthp_decider_source source;
        char origin[MTHP_DECIDER_TEXT_MAX];     /* "kernel command line", "tuned profile 'x' (FILE)", "mongod.service (FILE)" */
        char text[MTHP_DECIDER_TEXT_MAX];       /* the setting as written: "thp_anon=16K-64K:always" */
        char value[MTHP_VALUE_MAX];             /* what it sets ("" if it names no single value) */
        uint64_t knobs;                         /* bit i: writes caps->knobs[i] (0: per-process, tmpfs...) */
};

struct mthp_deciders {
        bool tuned_installed;                   /* /etc/tuned or a tuned profile directory exists */
        int tuned_pid;                          /* 0: not running */
        char tuned_profile[128];                /* active_profile ("" if none) */
        unsigned n_units_scanned;
        unsigned n_boot_scanned;                /* tmpfiles.d, sysfs, udev and rc.local files read */
        unsigned n;
        struct mthp_decider_setting s[MTHP_DECIDERS_MAX];
};

/* Read all of them; what cannot be read is left out (a host without tuned
 * or /proc/cmdline is a host without those deciders). Returns 0. */
int mthp_deciders_read(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d);

/* Parse one command line (exposed for tests); appends to d. */
void mthp_deciders_parse_cmdline(const char *cmdline, const struct mthp_caps *caps, struct mthp_deciders *d);

/* The administrator's THP off, into e->thp_off and e->thp_off_kb
 * (mthp/config.h): anon is off when the command line's last
 * transparent_hugepage= is never, or (no such parameter) when global
 * enabled reads never now (enabled_now: at mthpd's start; NULL: not
 * known); shmem only when transparent_hugepage_shmem= is never or deny
 * (shmem_enabled never is the kernel's default, no one's choice).
 * thp_anon=/thp_shmem= groups with never put their sizes in thp_off_kb
 * (a later group of the same size takes it out again). */
void mthp_deciders_thp_off(const struct mthp_deciders *d, const struct mthp_caps *caps, const char *enabled_now,
                           struct mthp_engine_config *e);

/* The setting that most likely wrote value to caps->knobs[knob], or NULL. */
const struct mthp_decider_setting *mthp_deciders_likely_writer(const struct mthp_deciders *d, int knob,
                                                                const char *value);
/* "tuned profile 'x' (FILE): [sysfs] ...": who, for messages. */
void mthp_decider_describe(const struct mthp_decider_setting *s, char *buf, size_t size);

/* For the daemon: one log line per setting found (at start), and, when a
 * knob mthpd manages was changed by someone else, a log line naming its
 * likely writer and a note in state_dir. */
void mthp_deciders_log(const struct mthp_host *h, const struct mthp_caps *caps);
int mthp_deciders_foreign_noticed(const struct mthp_host *h, const struct mthp_caps *caps, const char *state_dir,
                                  const struct mthp_knob *k, const char *value);

/* StateDirectory/foreign: one line per knob another writer took:
 * "ID<TAB>USEC<TAB>VALUE<TAB>WRITER". note replaces the knob's line. */
struct mthp_foreign_note {
        char id[32];
        uint64_t usec;                          /* CLOCK_REALTIME, when mthpd noticed */
        char value[MTHP_VALUE_MAX];
        char writer[2 * MTHP_DECIDER_TEXT_MAX]; /* "" if unknown */
};
int mthp_foreign_note_save(const char *state_dir, const struct mthp_foreign_note *n);
/* Fills up to max notes; returns how many, or -errno (-ENOENT: none yet). */
int mthp_foreign_notes_load(const char *state_dir, struct mthp_foreign_note *n, unsigned max);
