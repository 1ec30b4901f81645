/* SPDX-License-Identifier: MIT */
#pragma once

/* mthpctl's client of mthpd's D-Bus interface (mthpd.dbus(5)): bus name
 * org.mthpd.mthpd1 on the system bus (sd_bus_open_system honours
 * DBUS_SYSTEM_BUS_ADDRESS), object /org/mthpd/mthpd1, interface
 * org.mthpd.Manager1.
 *
 * Every function returns 0 or a negative errno, and fills a ctl_bus_error
 * with the D-Bus error's name and message when there is one. Errnos with a
 * meaning of their own:
 *   -ESRCH   mthpd is not on the bus (no bus at all, no owner of the name,
 *            or it went away during the call)
 *   -EACCES  AccessDenied: the method needs root
 *   -EINVAL  the daemon rejected the arguments (InvalidArgs, InvalidConfig) */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mthp/actuator.h"
#include "mthp/dbus.h"
#include "mthp/status.h"


struct ctl_bus_error {
        char name[128];       /* "" when the failure was not a D-Bus error */
        char message[4096];
};

struct ctl_bus;

/* Connects and finds mthpd's connection; calls then go to that connection
 * (its unique name), so a read never starts the daemon by bus activation
 * and every call of one mthpctl run talks to the same instance. */
int ctl_bus_open(struct ctl_bus **ret, struct ctl_bus_error *e);
void ctl_bus_free(struct ctl_bus *b);
/* The pid of mthpd's connection (0 if the bus would not say). */
pid_t ctl_bus_pid(const struct ctl_bus *b);

struct ctl_bus_props {
        char version[32];
        char mode[16];                 /* manage | observe */
        char not_writable[512];        /* why mthpd cannot write the knobs; "": it can */
        uint64_t interval_usec;
        uint64_t tick;
        double fault_pages_rate;
        uint64_t changes;
        bool counters_known;           /* an mthpd that says WriteErrors and GuardTrips */
        uint64_t write_errors, guard_trips;
        unsigned n_knob_writes;        /* KnobWrites: per knob id */
        struct ctl_bus_knob_writes {
                char id[32];
                uint64_t writes, errors;
        } knob_writes[MTHP_KNOBS_MAX];
        bool rates_known;              /* an mthpd that says RaiseFaultRate and LowerFaultRate */
        double fault_cost_ns, raise_rate, lower_rate;
        bool rates_by_time;            /* FaultRatesBy: RaiseFaultTime set them */
        /* ManagedCgroups... and Guard...Cgroups: all false/0 from an mthpd
         * that does not say them (cgroups_known: DescriptorLimit > 0,
         * guard_known: GuardScannedCgroups > 0) */
        struct mthp_status_coverage coverage;
        /* HostBloat and HostBloatBudget (bytes, UINT64_MAX: none), from an
         * mthpd that says them (host_bloat_known) */
        bool host_bloat_known;
        uint64_t host_bloat_budget;
        unsigned n_host_bloat;
        struct ctl_bus_host_bloat {
                char kind[8], size[16];
                uint64_t bytes;
        } host_bloat[2 * MTHP_SIZES_MAX];
};
int ctl_bus_get_props(struct ctl_bus *b, struct ctl_bus_props *p, struct ctl_bus_error *e);

struct ctl_bus_knob {
        char id[32];
        unsigned size_kb;
        char kind[16];                 /* anon | shmem | global */
        char value[MTHP_VALUE_MAX];
        char set_by[16];               /* original | mthpd | other | pinned */
        char decision[MTHP_VALUE_MAX]; /* "original" or a value */
        bool pinned;
};
int ctl_bus_list_knobs(struct ctl_bus *b, struct ctl_bus_knob *k, unsigned max, unsigned *n,
                       struct ctl_bus_error *e);
/* size: "64K", or "" for every managed knob. Entries as in the status file,
 * their rules from an mthpd that offers ExplainRules ("" from an older one). */
int ctl_bus_explain(struct ctl_bus *b, const char *size, struct mthp_status_knob *k, unsigned max, unsigned *n,
                    struct ctl_bus_error *e);
/* The last max changes, oldest first, in an array to free(); observing (also
 * to free()): per change, whether mthpd observed it (would have made it,
 * wrote nothing). */
int ctl_bus_history(struct ctl_bus *b, uint32_t max, struct mthp_change **c, bool **observing, unsigned *n,
                    struct ctl_bus_error *e);

/* A managed cgroup, as ListCgroups gives it. */
struct ctl_bus_cgroup {
        char path[256];
        char policy[64];
        char anon[16], shmem[16];      /* auto | always | madvise | never */
        unsigned priority;
        double fault_rate;
        uint64_t anon_kb, shmem_kb, usage_kb, limit_kb;
        double psi_some;               /* -1: no memory.pressure */
        int dense_kb[2];               /* anon, shmem: -1 unknown */
        bool collapse;
};
/* In an array to free(). */
int ctl_bus_list_cgroups(struct ctl_bus *b, struct ctl_bus_cgroup **c, unsigned *n, struct ctl_bus_error *e);

/* notes: what mthpd did not apply and why, a line each ("" when all of it). */
int ctl_bus_reload(struct ctl_bus *b, char *notes, size_t size, struct ctl_bus_error *e);
/* until_usec: CLOCK_REALTIME µs; 0 = until unpinned */
int ctl_bus_pin(struct ctl_bus *b, const char *id, const char *value, uint64_t until_usec, struct ctl_bus_error *e);
int ctl_bus_unpin(struct ctl_bus *b, const char *id, struct ctl_bus_error *e);
int ctl_bus_set_mode(struct ctl_bus *b, const char *mode, struct ctl_bus_error *e);
int ctl_bus_restore(struct ctl_bus *b, struct ctl_bus_error *e);
int ctl_bus_resume(struct ctl_bus *b, const char *id, struct ctl_bus_error *e);
