/* SPDX-License-Identifier: MIT */
#pragma once

/* The names and signatures of mthpd's D-Bus service (man/mthpd.dbus.5.scd),
 * in one place for both ends: mthpd serves them (daemon/bus.c), mthpctl
 * calls them (ctl/ctl-bus.c). A method whose signature changes here changes
 * on both sides at once; the man page says the same in prose.
 *
 * Each *_SIG is the signature of one element of a method's reply array
 * (the reply is "a" + *_SIG) or of a method's arguments. */

#define MTHP_DBUS_NAME "org.mthpd.mthpd1"
#define MTHP_DBUS_PATH "/org/mthpd/mthpd1"
#define MTHP_DBUS_INTERFACE "org.mthpd.Manager1"

/* errors of our own (the rest are org.freedesktop.DBus.Error.*) */
#define MTHP_DBUS_ERROR_INVALID_CONFIG "org.mthpd.Error.InvalidConfig"

/* properties */
#define MTHP_DBUS_PROP_VERSION "Version"              /* s */
#define MTHP_DBUS_PROP_MODE "Mode"                    /* s: manage | observe */
#define MTHP_DBUS_PROP_NOT_WRITABLE "NotWritable"     /* s: why the knobs cannot be written; "": they can */
#define MTHP_DBUS_PROP_INTERVAL "IntervalUSec"        /* t */
#define MTHP_DBUS_PROP_TICK "Tick"                    /* t */
#define MTHP_DBUS_PROP_FAULT_RATE "FaultPagesPerSecond" /* d */
#define MTHP_DBUS_PROP_CHANGES "Changes"              /* t */
#define MTHP_DBUS_PROP_WRITE_ERRORS "WriteErrors"     /* t: knob writes that failed since start */
#define MTHP_DBUS_PROP_GUARD_TRIPS "GuardTrips"       /* t: times the guard stepped sizes down */
#define MTHP_DBUS_PROP_KNOB_WRITES "KnobWrites"       /* a(stt): per knob id, writes and failed writes since start */
#define MTHP_DBUS_KNOB_WRITES_SIG "(stt)"
#define MTHP_DBUS_PROP_FAULT_COST "FaultCostNSec"     /* d: a 4K fault's cost the engine uses; 0: unknown */
#define MTHP_DBUS_PROP_RAISE_RATE "RaiseFaultRate"    /* d: the fault rate a raise needs, 4K pages/s */
#define MTHP_DBUS_PROP_LOWER_RATE "LowerFaultRate"    /* d: the rate a step-down falls below */
#define MTHP_DBUS_PROP_RATES_BY "FaultRatesBy"        /* s: RaiseFaultTime | RaiseFaultRate: which set them */
/* the managed cgroups' descriptors (mthp/cgmon.h): managed = held +
 * reopened (files opened, read, closed each tick) + unmonitored (not read:
 * that would eat into the reserve below the soft RLIMIT_NOFILE) */
#define MTHP_DBUS_PROP_MANAGED_CGROUPS "ManagedCgroups"                 /* u */
#define MTHP_DBUS_PROP_CGROUPS_REOPENED "ManagedCgroupsReopened"        /* u */
#define MTHP_DBUS_PROP_CGROUPS_UNMONITORED "ManagedCgroupsUnmonitored"  /* u */
#define MTHP_DBUS_PROP_CGROUP_FDS "CgroupDescriptors"                   /* u: descriptors the managed cgroups hold */
#define MTHP_DBUS_PROP_FD_LIMIT "DescriptorLimit"                       /* t: soft RLIMIT_NOFILE; 0: no cgroup monitor */
#define MTHP_DBUS_PROP_FD_RESERVE "DescriptorReserve"                   /* u: kept free below it */
/* the guard's last scan of the memory-limited cgroups (mthp/limits.h);
 * all 0 before the first */
#define MTHP_DBUS_PROP_GUARD_SCANNED "GuardScannedCgroups"   /* u: cgroups visited */
#define MTHP_DBUS_PROP_GUARD_LIMITED "GuardLimitedCgroups"   /* u: memory-limited ones found */
#define MTHP_DBUS_PROP_GUARD_WEIGHED "GuardWeighedCgroups"   /* u: of them, weighed by the engine (least headroom) */
#define MTHP_DBUS_PROP_GUARD_UNSEEN "GuardUnseenCgroups"     /* u: directories no path can name, with their subtrees */
#define MTHP_DBUS_PROP_GUARD_SCAN "GuardScanUSec"            /* t: what the last scan cost (wall); 0: none yet */
/* the host's bloat budget (MaxHostBloat=, lib/engine-budget.c) */
#define MTHP_DBUS_PROP_HOST_BLOAT "HostBloat"                /* a(sst): kind, size, bytes of bloat at that level */
#define MTHP_DBUS_HOST_BLOAT_SIG "(sst)"
#define MTHP_DBUS_PROP_HOST_BLOAT_BUDGET "HostBloatBudget"   /* t: MaxHostBloat= in bytes; UINT64_MAX: none */

/* methods: name, arguments, reply */
#define MTHP_DBUS_LIST_KNOBS "ListKnobs"
/* id, size_kb, kind, value, set_by, decision, pinned */
#define MTHP_DBUS_KNOB_SIG "(sussssb)"
#define MTHP_DBUS_EXPLAIN "Explain"
#define MTHP_DBUS_EXPLAIN_ARGS "s"                    /* size, "" = every knob */
/* id, decision, reason */
#define MTHP_DBUS_DECISION_SIG "(sss)"
/* Explain with the rules behind each decision, by name (mthp_rule_name;
 * "pinned": an administrator's pin; "": none): Explain's reply is kept as
 * it was for older clients */
#define MTHP_DBUS_EXPLAIN_RULES "ExplainRules"
/* id, decision, reason, rule, size_rule */
#define MTHP_DBUS_DECISION_RULES_SIG "(sssss)"
#define MTHP_DBUS_HISTORY "History"
#define MTHP_DBUS_HISTORY_ARGS "u"                    /* max, 0 = all */
/* realtime_usec, id, old, new, reason, observed (mthpd observed and would
 * have made this change: nothing was written) */
#define MTHP_DBUS_CHANGE_SIG "(tssssb)"
#define MTHP_DBUS_LIST_CGROUPS "ListCgroups"
/* path, policy, anon, shmem, priority, fault rate, anon_kb, shmem_kb, usage_kb,
 * limit_kb, psi some avg10, dense anon kb, dense shmem kb, collapse */
#define MTHP_DBUS_CGROUP_SIG "(ssssudttttdiib)"
#define MTHP_DBUS_RELOAD "Reload"
#define MTHP_DBUS_RELOAD_RESULT "s"                   /* what was not applied and why, a line each; "" */
#define MTHP_DBUS_PIN "Pin"
#define MTHP_DBUS_PIN_ARGS "sst"                      /* id, value, until (CLOCK_REALTIME usec, 0 = until unpinned) */
#define MTHP_DBUS_UNPIN "Unpin"
#define MTHP_DBUS_UNPIN_ARGS "s"                      /* id */
#define MTHP_DBUS_SET_MODE "SetMode"
#define MTHP_DBUS_SET_MODE_ARGS "s"                   /* manage | observe */
#define MTHP_DBUS_RESTORE "Restore"
#define MTHP_DBUS_RESUME "Resume"
#define MTHP_DBUS_RESUME_ARGS "s"                     /* id */

/* signals */
#define MTHP_DBUS_KNOB_CHANGED "KnobChanged"
#define MTHP_DBUS_KNOB_CHANGED_SIG "tssss"            /* as MTHP_DBUS_CHANGE_SIG, unboxed, without observed: only writes */
