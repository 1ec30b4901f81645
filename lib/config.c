/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ini-util.h"
#include "mthp/config.h"
#include "mthp/safe-io.h"
#include "mthp/timespan.h"
#include "mthp/util.h"
#include "mthp-config.h"

void mthp_config_defaults(struct mthp_config *c) {
        memset(c, 0, sizeof(*c));
        c->interval_usec = 1000000;
        c->mode = MTHP_MODE_MANAGE;
        snprintf(c->state_dir, sizeof(c->state_dir), "/run/mthpd");
        c->bus = true;
        snprintf(c->policy_dir, sizeof(c->policy_dir), "%s/policy.d", MTHP_SYSCONFDIR);
        c->collapse_budget_kb = 64 * 1024;
        c->shmem_collapse = true;
        /* 256 MB of windows a tick: ~80 ms of one core at the ~0.3 ms a MB
         * MADV_PAGEOUT costs (docs/kernel-bloat.md), spent only while a
         * grown, quiet process holds bloat; a 1 GiB sparse program is
         * given back in 4 ticks */
        c->give_back = true;
        c->give_back_budget_kb = 256 * 1024;
        c->collapse_cpu = 10;
        c->fault_sampling = true;
        c->fault_cost_auto = true;
        struct mthp_engine_config *e = &c->engine;
        /* Every size up to the PMD one: density sampling decides which pay
         * off (2M makes a dense fault loop 46x faster, DESIGN.md 3). */
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                e->min_kb[k] = 16;
                e->max_kb[k] = 2048;
        }
        e->max_bloat = 20;
        /* a compiler's few MB at 0.7 of each 16K block cost a few hundred
         * KB: no say of its own over the host's sizes */
        e->min_bloat_auto = true;
        e->min_proc_fault_rate = 100;
        /* a shell at 300 faults/s next to a workload at 300k must not veto */
        e->min_proc_share = 10;
        /* without a density sample (a fake host, processes that cannot be
         * read) stay where bloat is bounded at 16x per touched 4K page */
        e->unmeasured_max_kb = 64;
        e->verify_ticks = 3;
        e->cgroup_headroom = 10;
        e->guard_headroom = 25;
        e->guard_floor = 1;
        e->max_compact_ms = 50;      /* 5% of its time */
        e->raise_fault_rate = 25000;   /* ~100 MB/s of fresh memory */
        e->lower_fault_rate = 2500;
        /* 25000 pages/s at 1 us a fault (a server's 4K fault, zeroing
         * included): on such a host RaiseFaultRate decides as before; on one
         * where a fault takes 11 us (a VM without the shared zero page)
         * 2270 pages/s already take that share */
        e->raise_fault_time = 2.5;
        e->confirm_ticks = 2;
        /* a density sample of a process faulting densely is itself evidence */
        e->density_confirm_ticks = 1;
        e->lower_ticks = 10;
        e->dwell_ticks = 5;
        e->psi_some_max = 10;
        e->min_available = 10;
        e->max_fallback = 50;
        e->default_priority = 50;
        /* PostgreSQL maps its shared buffers within a second of its start;
         * a service that first loads data for longer has its say once it
         * faults (the say of any managed cgroup) */
        e->start_grace_usec = 30 * 1000000ULL;
        e->shmem_align = true;
}

int mthp_parse_whole(const char *s, unsigned lo, unsigned hi, unsigned *out) {
        size_t n = strspn(s, "0123456789");
        if (n == 0 || s[n] || n > 9)
                return -EINVAL;
        unsigned long v = strtoul(s, NULL, 10);
        if (v < lo || v > hi)
                return -ERANGE;
        *out = (unsigned) v;
        return 0;
}

int mthp_parse_ladder_size(const char *s, unsigned *kb) {
        unsigned v;
        int r = mthp_parse_size(s, &v);
        if (r < 0)
                return r;
        /* mTHP sizes are powers of two from 8K (order 1) up */
        if (v < 8 || (v & (v - 1)))
                return -EINVAL;
        *kb = v;
        return 0;
}

int mthp_parse_percent(const char *s, double *pct) {
        const char *end;
        double v;
        if (mthp_parse_decimal(s, &v, &end) < 0)
                return -EINVAL;
        if (*end == '%')
                end++;
        if (*end || v < 0 || v > 100)
                return -EINVAL;
        *pct = v;
        return 0;
}

int mthp_parse_size_range(const char *s, unsigned *min_kb, unsigned *max_kb) {
        char a[32], *dash;
        if (strcasecmp(s, "none") == 0) {
                *min_kb = *max_kb = 0;
                return 0;
        }
        if (strlen(s) >= sizeof(a))
                return -EINVAL;
        strcpy(a, s);
        dash = strchr(a, '-');
        if (dash)
                *dash = 0;
        int r = mthp_parse_ladder_size(a, min_kb);
        if (r < 0)
                return r;
        r = dash ? mthp_parse_ladder_size(dash + 1, max_kb) : (*max_kb = *min_kb, 0);
        if (r < 0)
                return r;
        return *min_kb <= *max_kb ? 0 : -ERANGE;
}

int mthp_parse_boolean(const char *s, bool *b) {
        static const char *const yes[] = { "yes", "true", "on", "1" }, *const no[] = { "no", "false", "off", "0" };
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
                        *b = strcasecmp(s, yes[i]) == 0;
                        return 0;
                }
        }
        return -EINVAL;
}

static int parse_count(const char *s, unsigned lo, unsigned hi, unsigned *out) {
        return mthp_parse_whole(s, lo, hi, out);
}

int mthp_parse_max_bloat(const char *s, double *out) {
        const char *end;
        double v;
        if (mthp_parse_decimal(s, &v, &end) < 0 || (*end && strcmp(end, "%") != 0) || !(v >= 0 && v <= 10000))
                return -EINVAL;
        *out = v;
        return 0;
}

static int parse_rate(const char *s, double *out) {
        const char *end;
        double v;
        if (mthp_parse_decimal(s, &v, &end) < 0)
                return -EINVAL;
        if (*end == 'k' || *end == 'K')
                v *= 1000, end++;
        if (*end || !isfinite(v)) /* "1e308k" */
                return -EINVAL;
        *out = v;
        return 0;
}

/* Parser state: the config and where each key was set, so that a repeated
 * key is an error naming both lines, as in policy files (it silently
 * overrode). */
#define SEEN_MAX 64
struct parse {
        struct mthp_config *c;
        unsigned n_seen;
        struct {
                char section[8], key[32];
                unsigned line;
        } seen[SEEN_MAX];
};

static int handler(struct mthp_ini *ini, const char *section, const char *key, const char *value);

static int handler_once(struct mthp_ini *ini, const char *section, const char *key, const char *value) {
        struct parse *ps = ini->user;
        if (key && (strcmp(section, "Daemon") == 0 || strcmp(section, "Engine") == 0)) {
                for (unsigned i = 0; i < ps->n_seen; i++)
                        if (strcmp(ps->seen[i].section, section) == 0 && strcmp(ps->seen[i].key, key) == 0) {
                                mthp_ini_error(ini, "key '%s' in [%s]: already set at line %u", key, section,
                                               ps->seen[i].line);
                                return -EINVAL;
                        }
        }
        ini->user = ps->c;
        int r = handler(ini, section, key, value);
        ini->user = ps;
        /* known keys only (unknown ones were errors already) */
        if (r == 0 && key && ps->n_seen < SEEN_MAX && strlen(key) < sizeof(ps->seen[0].key)) {
                mthp_strcpy(ps->seen[ps->n_seen].section, sizeof(ps->seen[0].section), section);
                mthp_strcpy(ps->seen[ps->n_seen].key, sizeof(ps->seen[0].key), key);
                ps->seen[ps->n_seen++].line = ini->line;
        }
        return r;
}

/* The keys of mthpd.conf: where each value goes, how it is read and what
 * the error says was expected. A parser returns 0 or < 0 for a bad value. */
struct key {
        const char *section, *name;
        int (*parse)(const struct key *k, struct mthp_config *c, const char *value);
        size_t offset;                  /* of the field in struct mthp_config */
        unsigned lo, hi;                /* key_count's range; key_sizes' kind */
        const char *expected;
};

#define FIELD(c, k, type) ((type *) ((char *) (c) + (k)->offset))
#define ENGINE(field) offsetof(struct mthp_config, engine.field)

static int key_count(const struct key *k, struct mthp_config *c, const char *value) {
        return parse_count(value, k->lo, k->hi, FIELD(c, k, unsigned));
}

static int key_rate(const struct key *k, struct mthp_config *c, const char *value) {
        return parse_rate(value, FIELD(c, k, double));
}

static int key_percent(const struct key *k, struct mthp_config *c, const char *value) {
        return mthp_parse_percent(value, FIELD(c, k, double));
}

static int key_boolean(const struct key *k, struct mthp_config *c, const char *value) {
        return mthp_parse_boolean(value, FIELD(c, k, bool));
}

static int key_max_bloat(const struct key *k, struct mthp_config *c, const char *value) {
        return mthp_parse_max_bloat(value, FIELD(c, k, double));
}

static int key_interval(const struct key *k, struct mthp_config *c, const char *value) {
        uint64_t u;
        (void) k;
        if (mthp_timespan_parse(value, &u) < 0 || u < MTHP_INTERVAL_MIN_USEC || u > MTHP_INTERVAL_MAX_USEC)
                return -EINVAL;
        c->interval_usec = u;
        return 0;
}

static int key_mode(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        if (strcmp(value, "manage") == 0)
                c->mode = MTHP_MODE_MANAGE;
        /* dry-run: the mode's old name, still accepted */
        else if (strcmp(value, "observe") == 0 || strcmp(value, "dry-run") == 0)
                c->mode = MTHP_MODE_OBSERVE;
        else
                return -EINVAL;
        c->mode_set = true;
        return 0;
}

static int key_policy_dir(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        return mthp_config_set_policy_dir(c, value);
}

static int key_state_dir(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        return mthp_config_set_state_dir(c, value);
}

static int key_sizes(const struct key *k, struct mthp_config *c, const char *value) {
        return mthp_parse_size_range(value, &c->engine.min_kb[k->lo], &c->engine.max_kb[k->lo]);
}

static int key_unmeasured_max(const struct key *k, struct mthp_config *c, const char *value) {
        unsigned kb;
        (void) k;
        if (strcasecmp(value, "none") == 0)
                kb = 0;
        else if (mthp_parse_ladder_size(value, &kb) < 0)
                return -EINVAL;
        c->engine.unmeasured_max_kb = kb;
        return 0;
}

static int key_guard_headroom(const struct key *k, struct mthp_config *c, const char *value) {
        double v;
        (void) k;
        if (mthp_parse_percent(value, &v) < 0 || v <= 0 || v >= 100)
                return -EINVAL;
        c->engine.guard_headroom = v;
        return 0;
}

static int key_guard_floor(const struct key *k, struct mthp_config *c, const char *value) {
        double v;
        (void) k;
        if (mthp_parse_percent(value, &v) < 0 || v > 100)
                return -EINVAL;
        c->engine.guard_floor = v;
        return 0;
}

static int key_compaction_stall(const struct key *k, struct mthp_config *c, const char *value) {
        uint64_t us;
        (void) k;
        if (mthp_timespan_parse(value, &us) < 0 || us > 1000000)
                return -EINVAL;
        c->engine.max_compact_ms = (double) us / 1000.0;
        return 0;
}

static int key_start_grace(const struct key *k, struct mthp_config *c, const char *value) {
        uint64_t us;
        (void) k;
        if (mthp_timespan_parse(value, &us) < 0 || us > MTHP_START_GRACE_MAX_USEC)
                return -EINVAL;
        c->engine.start_grace_usec = us;
        return 0;
}

/* A size a tick like 64M, or none (0). */
static int parse_budget(const char *value, uint64_t *ret) {
        unsigned kb;
        if (strcasecmp(value, "none") == 0 || strcmp(value, "0") == 0)
                kb = 0;
        else if (strspn(value, "0123456789") == 0 || mthp_parse_size(value, &kb) < 0)
                return -EINVAL;
        *ret = kb;
        return 0;
}

static int key_min_bloat(const struct key *k, struct mthp_config *c, const char *value) {
        unsigned kb;
        (void) k;
        if (strcmp(value, "auto") == 0) {
                c->engine.min_bloat_auto = true;
                c->engine.min_bloat_kb = 0;
                return 0;
        }
        if (strcmp(value, "0") == 0)
                kb = 0;
        else if (strspn(value, "0123456789") == 0 || mthp_parse_size(value, &kb) < 0)
                return -EINVAL;
        c->engine.min_bloat_auto = false;
        c->engine.min_bloat_kb = kb;
        return 0;
}

/* MaxHostBloat=: auto, infinity, a percent of MemTotal (2.5%) or a size
 * (600M; 0: no bloat at all). */
static int key_max_host_bloat(const struct key *k, struct mthp_config *c, const char *value) {
        struct mthp_engine_config *e = &c->engine;
        size_t len = strlen(value);
        (void) k;
        if (strcmp(value, "auto") == 0) {
                e->max_host_bloat_set = e->max_host_bloat_is_pct = false;
                e->max_host_bloat_pct = 0;
                e->max_host_bloat_kb = 0;
                return 0;
        }
        if (strcmp(value, "infinity") == 0) {
                e->max_host_bloat_set = true;
                e->max_host_bloat_is_pct = false;
                e->max_host_bloat_kb = UINT64_MAX;
                return 0;
        }
        if (len > 1 && value[len - 1] == '%') {
                double v;
                if (strspn(value, "0123456789") == 0 || mthp_parse_percent(value, &v) < 0 || !(v > 0) || v > 100)
                        return -EINVAL;
                e->max_host_bloat_set = e->max_host_bloat_is_pct = true;
                e->max_host_bloat_pct = v;
                return 0;
        }
        unsigned kb;
        if (strcmp(value, "0") == 0)
                kb = 0;
        else if (strspn(value, "0123456789") == 0 || mthp_parse_size(value, &kb) < 0)
                return -EINVAL;
        e->max_host_bloat_set = true;
        e->max_host_bloat_is_pct = false;
        e->max_host_bloat_kb = kb;
        return 0;
}

static int key_collapse_budget(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        return parse_budget(value, &c->collapse_budget_kb);
}

static int key_give_back(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        if (strcmp(value, "auto") == 0)
                c->give_back = true;
        else if (strcmp(value, "no") == 0)
                c->give_back = false;
        else
                return -EINVAL;
        return 0;
}

static int key_give_back_budget(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        return parse_budget(value, &c->give_back_budget_kb);
}

static int key_collapse_cpu(const struct key *k, struct mthp_config *c, const char *value) {
        double v;
        (void) k;
        /* 0 would be no time at all: CollapseBudget=none turns collapsing off */
        if (mthp_parse_percent(value, &v) < 0 || v <= 0 || v > 100)
                return -EINVAL;
        c->collapse_cpu = v;
        return 0;
}

static int key_fault_cost(const struct key *k, struct mthp_config *c, const char *value) {
        (void) k;
        if (strcmp(value, "auto") == 0) {
                c->fault_cost_ns = 0;
                c->fault_cost_auto = true;
                return 0;
        }
        if (strcmp(value, "off") == 0) {
                c->fault_cost_ns = 0;
                c->fault_cost_auto = false;
                return 0;
        }
        /* a unit is required ("12" would be 12 s as a duration elsewhere);
         * ns, as a server's fault takes well under 1 us */
        const char *end;
        double v;
        if (mthp_parse_decimal(value, &v, &end) < 0)
                return -EINVAL;
        static const struct {
                const char *unit;
                double ns;
        } units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
        size_t u = 0;
        while (u < sizeof(units) / sizeof(units[0]) && strcmp(end, units[u].unit) != 0)
                u++;
        if (u == sizeof(units) / sizeof(units[0]))
                return -EINVAL;
        v *= units[u].ns;
        if (v < 1 || v > 1e9)
                return -EINVAL;
        c->fault_cost_ns = v;
        c->fault_cost_auto = false;
        return 0;
}

static const struct key keys[] = {
        { "Daemon", "Interval", key_interval, 0, 0, 0, "a duration from 100ms to 1h (e.g. 1s, 500ms, 1min 30s)" },
        { "Daemon", "Mode", key_mode, 0, 0, 0, "manage or observe" },
        { "Daemon", "Bus", key_boolean, offsetof(struct mthp_config, bus), 0, 0, "yes or no" },
        { "Daemon", "PolicyDirectory", key_policy_dir, 0, 0, 0, "an absolute directory path of less than 256 bytes" },
        { "Daemon", "StateDirectory", key_state_dir, 0, 0, 0, "an absolute directory path of at most 223 bytes" },
        { "Daemon", "OverrideThpOff", key_boolean, offsetof(struct mthp_config, engine.override_thp_off), 0, 0,
          "yes or no" },
        { "Engine", "AnonSizes", key_sizes, 0, MTHP_ANON, 0,
          "a size range like 16K-64K, one size like 64K (mTHP sizes: powers of two, 8K or more), or none" },
        { "Engine", "ShmemSizes", key_sizes, 0, MTHP_SHMEM, 0,
          "a size range like 16K-64K, one size like 64K (mTHP sizes: powers of two, 8K or more), or none" },
        { "Engine", "RaiseFaultRate", key_rate, ENGINE(raise_fault_rate), 0, 0,
          "pages per second (e.g. 25000 or 25k)" },
        { "Engine", "LowerFaultRate", key_rate, ENGINE(lower_fault_rate), 0, 0,
          "pages per second (e.g. 2500 or 2.5k)" },
        { "Engine", "RaiseFaultTime", key_percent, ENGINE(raise_fault_time), 0, 0,
          "a share of one core, 0-100% (e.g. 2.5%; 0 = off)" },
        { "Engine", "FaultCost", key_fault_cost, 0, 0, 0,
          "auto, off, or the CPU time of one 4K page fault from 1ns to 1s (e.g. 800ns, 12us)" },
        { "Engine", "ConfirmTicks", key_count, ENGINE(confirm_ticks), 1, 100, "a whole number from 1 to 100" },
        { "Engine", "DensityConfirmTicks", key_count, ENGINE(density_confirm_ticks), 1, 100,
          "a whole number from 1 to 100" },
        { "Engine", "LowerTicks", key_count, ENGINE(lower_ticks), 1, 1000, "a whole number from 1 to 1000" },
        { "Engine", "DwellTicks", key_count, ENGINE(dwell_ticks), 0, 1000, "a whole number from 0 to 1000" },
        { "Engine", "PressureMax", key_percent, ENGINE(psi_some_max), 0, 0, "a percentage (PSI some avg10)" },
        { "Engine", "MinAvailable", key_percent, ENGINE(min_available), 0, 0, "a percentage of MemTotal" },
        { "Engine", "MaxBloat", key_max_bloat, ENGINE(max_bloat), 0, 0,
          "a percentage of extra RSS, 0-10000 (e.g. 20%)" },
        { "Engine", "MinBloatBytes", key_min_bloat, 0, 0, 0, "auto, 0, or a size like 16M" },
        { "Engine", "MaxHostBloat", key_max_host_bloat, 0, 0, 0,
          "auto, infinity, a percentage of MemTotal above 0 up to 100% (e.g. 2.5%), or a size like 600M" },
        { "Engine", "MinProcessFaultRate", key_rate, ENGINE(min_proc_fault_rate), 0, 0,
          "faults per second (e.g. 100)" },
        { "Engine", "MinProcessShare", key_percent, ENGINE(min_proc_share), 0, 0, "a percentage of the kind's faults" },
        { "Engine", "UnmeasuredMaxSize", key_unmeasured_max, 0, 0, 0,
          "an mTHP size like 64K (a power of two, 8K or more), or none" },
        { "Engine", "CgroupHeadroom", key_percent, ENGINE(cgroup_headroom), 0, 0,
          "a percentage of the cgroup's limit" },
        { "Engine", "GuardHeadroom", key_guard_headroom, 0, 0, 0,
          "a percentage of a limited cgroup's headroom, above 0 and below 100" },
        { "Engine", "GuardFloor", key_guard_floor, 0, 0, 0, "a percentage of a limited cgroup's limit, 0-100" },
        { "Engine", "MaxCompactionStall", key_compaction_stall, 0, 0, 0, "a stall per second, 0-1s (e.g. 50ms)" },
        { "Engine", "StartGrace", key_start_grace, 0, 0, 0, "a duration from 0 (off) to 1h (e.g. 30s)" },
        { "Engine", "DefaultPriority", key_count, ENGINE(default_priority), 0, 100, "a whole number from 0 to 100" },
        { "Engine", "CollapseBudget", key_collapse_budget, 0, 0, 0, "a size per tick like 64M, or none" },
        { "Engine", "CollapseCPU", key_collapse_cpu, 0, 0, 0,
          "a share of one core above 0% and at most 100% (e.g. 2% or 0.5%)" },
        { "Engine", "GiveBack", key_give_back, 0, 0, 0, "auto or no" },
        { "Engine", "GiveBackBudget", key_give_back_budget, 0, 0, 0, "a size per tick like 256M, or none" },
        { "Engine", "ShmemCollapse", key_boolean, offsetof(struct mthp_config, shmem_collapse), 0, 0, "yes or no" },
        { "Engine", "ShmemAlign", key_boolean, ENGINE(shmem_align), 0, 0, "yes or no" },
        { "Engine", "FaultSampling", key_boolean, offsetof(struct mthp_config, fault_sampling), 0, 0, "yes or no" },
        { "Engine", "VerifyTicks", key_count, ENGINE(verify_ticks), 1, 100, "a whole number from 1 to 100" },
        { "Engine", "MaxFallback", key_percent, ENGINE(max_fallback), 0, 0, "a percentage of mTHP faults" },
};

static int handler(struct mthp_ini *ini, const char *section, const char *key, const char *value) {
        struct mthp_config *c = ini->user;

        if (!key) {
                if (strcmp(section, "Daemon") != 0 && strcmp(section, "Engine") != 0) {
                        mthp_ini_error(ini, "unknown section [%s]: expected [Daemon] or [Engine]", section);
                        return -EINVAL;
                }
                return 0;
        }
        if (strcmp(section, "Daemon") != 0 && strcmp(section, "Engine") != 0) {
                if (!*section) /* a key before any [Section] header */
                        mthp_ini_error(ini, "unknown section []: key '%s' must follow [Daemon] or [Engine]", key);
                return -EINVAL; /* others were reported once, at their header */
        }
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, key) == 0)
                        return keys[i].parse(&keys[i], c, value) < 0
                                       ? mthp_ini_bad(ini, section, key, value, keys[i].expected)
                                       : 0;
        mthp_ini_error(ini, "unknown key '%s' in [%s]", key, section);
        return -EINVAL;
}

static int finish(struct mthp_config *tmp, struct mthp_config *c, const char *name, int r, char *err, size_t errsz) {
        if (r == 0 && tmp->engine.lower_fault_rate >= tmp->engine.raise_fault_rate) {
                if (err)
                        snprintf(err, errsz,
                                 "%s: LowerFaultRate (%.0f) must be below RaiseFaultRate (%.0f), or mthpd would flap\n",
                                 name, tmp->engine.lower_fault_rate, tmp->engine.raise_fault_rate);
                r = -EINVAL;
        }
        if (r == 0)
                *c = *tmp;
        return r;
}

int mthp_config_set_state_dir(struct mthp_config *c, const char *path) {
        /* room for "/restore.journal.tmp" and the like below it */
        if (path[0] != '/' || strlen(path) > MTHP_STATE_DIR_MAX)
                return -ENAMETOOLONG;
        return mthp_strcpy(c->state_dir, sizeof(c->state_dir), path);
}

int mthp_config_set_policy_dir(struct mthp_config *c, const char *path) {
        if (path[0] != '/' || strlen(path) >= sizeof(c->policy_dir))
                return -ENAMETOOLONG;
        return mthp_strcpy(c->policy_dir, sizeof(c->policy_dir), path);
}

int mthp_config_load(const char *file, struct mthp_config *c, char *err, size_t errsz) {
        struct mthp_config tmp = *c;
        struct parse ps = { .c = &tmp };
        int r = mthp_ini_parse_file(file, MTHP_SAFE_OWNER, handler_once, &ps, err, errsz);
        return finish(&tmp, c, file, r, err, errsz);
}

int mthp_config_load_string(const char *name, const char *text, struct mthp_config *c, char *err, size_t errsz) {
        struct mthp_config tmp = *c;
        struct parse ps = { .c = &tmp };
        int r = mthp_ini_parse_string(name, text, handler_once, &ps, err, errsz);
        return finish(&tmp, c, name, r, err, errsz);
}

const char *const mthp_config_default_dirs[] = { MTHP_SYSCONFDIR, MTHP_RUNDIR, MTHP_VENDORDIR, NULL };

void mthp_config_files_free(struct mthp_config_files *f) {
        mthp_conf_files_free(f->path, f->n);
        f->path = NULL;
        f->n = 0;
        f->main = false;
}

/* main (may be NULL: none) first, then the drop-ins */
static int files_make(const char *main, const char *const *dropin_dirs, struct mthp_config_files *f, char *err,
                      size_t errsz) {
        char **p = NULL;
        size_t n = 0;
        memset(f, 0, sizeof(*f));
        int r = mthp_conf_files_list(dropin_dirs, ".conf", &p, &n, err, errsz);
        if (r < 0)
                return r;
        if (main) {
                char **q = realloc(p, (n + 1) * sizeof(*p));
                char *m = strdup(main);
                if (!q || !m) {
                        free(m);
                        mthp_conf_files_free(q ? q : p, n);
                        return -ENOMEM;
                }
                memmove(q + 1, q, n * sizeof(*q));
                q[0] = m;
                p = q;
                n++;
        }
        f->path = p;
        f->n = n;
        f->main = main != NULL;
        return 0;
}

int mthp_config_files_find(const char *const *dirs, struct mthp_config_files *f, char *err, size_t errsz) {
        char main[MTHP_PATH_MAX], *dropin[MTHP_CONFIG_DIRS_MAX + 1] = { NULL };
        const char *found = NULL;
        int r = 0;
        size_t i;
        for (i = 0; dirs[i] && i < MTHP_CONFIG_DIRS_MAX; i++) {
                if (asprintf(&dropin[i], "%s/" MTHP_CONFIG_NAME ".d", dirs[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (found || !dirs[i][0])
                        continue;
                /* the first that exists; a /dev/null one masks those after it */
                if (mthp_path_join(main, sizeof(main), dirs[i], MTHP_CONFIG_NAME) < 0) {
                        r = -ENAMETOOLONG;
                        break;
                }
                int m = mthp_conf_file_masked(main, false);
                if (m == -ENOENT)
                        continue;
                found = m == 1 ? "" : main;
        }
        if (r == 0)
                r = files_make(found && *found ? found : NULL, (const char *const *) dropin, f, err, errsz);
        else if (err && errsz)
                snprintf(err, errsz, "%s: %s\n", dirs[i], strerror(-r));
        for (i = 0; i < MTHP_CONFIG_DIRS_MAX; i++)
                free(dropin[i]);
        return r;
}

int mthp_config_files_explicit(const char *file, struct mthp_config_files *f, char *err, size_t errsz) {
        char *dir = NULL;
        if (asprintf(&dir, "%s.d", file) < 0)
                return -ENOMEM;
        const char *dirs[] = { dir, NULL };
        int r = files_make(file, dirs, f, err, errsz);
        free(dir);
        return r;
}

int mthp_config_load_files(const struct mthp_config_files *f, struct mthp_config *c, char *err, size_t errsz) {
        struct mthp_config tmp = *c;
        int r = 0;
        size_t len = 0;
        bool e = err && errsz;
        if (e)
                err[0] = 0;
        /* every file, each error of each: a later file's key overrides an
         * earlier one's, twice in one file is still an error */
        for (size_t i = 0; i < f->n; i++) {
                struct parse ps = { .c = &tmp };
                int q = mthp_ini_parse_file(f->path[i], MTHP_SAFE_OWNER, handler_once, &ps, e ? err + len : NULL,
                                            e ? errsz - len : 0);
                if (e)
                        len += strlen(err + len);
                if (q < 0 && r == 0)
                        r = q;
        }
        if (r < 0)
                return r;
        char name[MTHP_PATH_MAX + 32];
        if (f->n == 0)
                snprintf(name, sizeof(name), "the built-in configuration");
        else
                snprintf(name, sizeof(name), "%s%s", f->path[0], f->n > 1 ? " and its drop-ins" : "");
        return finish(&tmp, c, name, r, err, errsz);
}
