/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ini-util.h"
#include "mthp/config.h"
#include "mthp/safe-io.h"
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
        struct mthp_engine_config *e = &c->engine;
        /* Every size up to the PMD one: density sampling decides which pay
         * off (2M makes a dense fault loop 46x faster, DESIGN.md 3). */
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                e->min_kb[k] = 16;
                e->max_kb[k] = 2048;
        }
        e->max_bloat = 20;
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
        e->confirm_ticks = 2;
        /* a density sample of a process faulting densely is itself evidence */
        e->density_confirm_ticks = 1;
        e->lower_ticks = 10;
        e->dwell_ticks = 5;
        e->psi_some_max = 10;
        e->min_available = 10;
        e->max_fallback = 50;
        e->default_priority = 50;
}

int mthp_parse_decimal(const char *s, double *v, const char **end) {
        /* digits, an optional '.' and digits: what a person writes. strtod
         * also takes " +0x10", "0x1p3", "inf", "1e9" and leading spaces;
         * none of that is a value in these files. */
        const char *p = s;
        size_t ip = strspn(p, "0123456789");
        p += ip;
        size_t fp = 0;
        if (*p == '.') {
                fp = strspn(p + 1, "0123456789");
                if (fp == 0)
                        return -EINVAL;
                p += 1 + fp;
        }
        if (ip == 0 && fp == 0)
                return -EINVAL;
        char buf[64];
        if ((size_t) (p - s) >= sizeof(buf))
                return -ERANGE;
        memcpy(buf, s, (size_t) (p - s));
        buf[p - s] = 0;
        errno = 0;
        double d = strtod(buf, NULL);
        if (errno || !isfinite(d))
                return -ERANGE;
        *v = d;
        *end = p;
        return 0;
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

int mthp_parse_duration(const char *s, uint64_t *usec) {
        const char *end;
        double v;
        if (mthp_parse_decimal(s, &v, &end) < 0)
                return -EINVAL;
        double mult = 1e6;
        if (strcmp(end, "ms") == 0)
                mult = 1e3;
        else if (strcmp(end, "us") == 0)
                mult = 1;
        else if (strcmp(end, "min") == 0)
                mult = 60e6;
        else if (*end && strcmp(end, "s") != 0)
                return -EINVAL;
        if (v * mult >= 18446744073709551616.0) /* the cast would be undefined */
                return -ERANGE;
        *usec = (uint64_t) (v * mult);
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

#define BAD(what) \
        (mthp_ini_error(ini, "key '%s' in [%s]: expected %s, got '%s'", key, section, what, value), -EINVAL)

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

static int handler(struct mthp_ini *ini, const char *section, const char *key, const char *value) {
        struct mthp_config *c = ini->user;
        struct mthp_engine_config *e = &c->engine;

        if (!key) {
                if (strcmp(section, "Daemon") != 0 && strcmp(section, "Engine") != 0) {
                        mthp_ini_error(ini, "unknown section [%s]: expected [Daemon] or [Engine]", section);
                        return -EINVAL;
                }
                return 0;
        }

        if (strcmp(section, "Daemon") == 0) {
                if (strcmp(key, "Interval") == 0) {
                        uint64_t u;
                        if (mthp_parse_duration(value, &u) < 0 || u < 100000 || u > 3600000000ULL)
                                return BAD("a duration from 100ms to 1h (e.g. 1s, 500ms)");
                        c->interval_usec = u;
                        return 0;
                }
                if (strcmp(key, "Mode") == 0) {
                        if (strcmp(value, "manage") == 0)
                                c->mode = MTHP_MODE_MANAGE;
                        /* dry-run: the mode's old name, still accepted */
                        else if (strcmp(value, "observe") == 0 || strcmp(value, "dry-run") == 0)
                                c->mode = MTHP_MODE_DRY_RUN;
                        else
                                return BAD("manage or observe");
                        return 0;
                }
                if (strcmp(key, "Bus") == 0)
                        return mthp_parse_boolean(value, &c->bus) < 0 ? BAD("yes or no") : 0;
                if (strcmp(key, "PolicyDirectory") == 0)
                        return mthp_config_set_policy_dir(c, value) < 0
                                       ? BAD("an absolute directory path of less than 256 bytes")
                                       : 0;
                if (strcmp(key, "StateDirectory") == 0)
                        return mthp_config_set_state_dir(c, value) < 0
                                       ? BAD("an absolute directory path of at most 223 bytes")
                                       : 0;
        } else if (strcmp(section, "Engine") == 0) {
                if (strcmp(key, "AnonSizes") == 0 || strcmp(key, "ShmemSizes") == 0) {
                        int k = key[0] == 'A' ? MTHP_ANON : MTHP_SHMEM;
                        if (mthp_parse_size_range(value, &e->min_kb[k], &e->max_kb[k]) < 0)
                                return BAD("a size range like 16K-64K, one size like 64K (mTHP sizes: powers of two, 8K or more), or none");
                        return 0;
                }
                if (strcmp(key, "RaiseFaultRate") == 0)
                        return parse_rate(value, &e->raise_fault_rate) < 0 ? BAD("pages per second (e.g. 25000 or 25k)") : 0;
                if (strcmp(key, "LowerFaultRate") == 0)
                        return parse_rate(value, &e->lower_fault_rate) < 0 ? BAD("pages per second (e.g. 2500 or 2.5k)") : 0;
                if (strcmp(key, "ConfirmTicks") == 0)
                        return parse_count(value, 1, 100, &e->confirm_ticks) < 0 ? BAD("a whole number from 1 to 100") : 0;
                if (strcmp(key, "DensityConfirmTicks") == 0)
                        return parse_count(value, 1, 100, &e->density_confirm_ticks) < 0 ? BAD("a whole number from 1 to 100") : 0;
                if (strcmp(key, "LowerTicks") == 0)
                        return parse_count(value, 1, 1000, &e->lower_ticks) < 0 ? BAD("a whole number from 1 to 1000") : 0;
                if (strcmp(key, "DwellTicks") == 0)
                        return parse_count(value, 0, 1000, &e->dwell_ticks) < 0 ? BAD("a whole number from 0 to 1000") : 0;
                if (strcmp(key, "PressureMax") == 0)
                        return mthp_parse_percent(value, &e->psi_some_max) < 0 ? BAD("a percentage (PSI some avg10)") : 0;
                if (strcmp(key, "MinAvailable") == 0)
                        return mthp_parse_percent(value, &e->min_available) < 0 ? BAD("a percentage of MemTotal") : 0;
                if (strcmp(key, "MaxBloat") == 0)
                        return mthp_parse_max_bloat(value, &e->max_bloat) < 0
                                       ? BAD("a percentage of extra RSS, 0-10000 (e.g. 20%)")
                                       : 0;
                if (strcmp(key, "MinProcessFaultRate") == 0)
                        return parse_rate(value, &e->min_proc_fault_rate) < 0 ? BAD("faults per second (e.g. 100)") : 0;
                if (strcmp(key, "MinProcessShare") == 0)
                        return mthp_parse_percent(value, &e->min_proc_share) < 0 ? BAD("a percentage of the kind's faults") : 0;
                if (strcmp(key, "UnmeasuredMaxSize") == 0) {
                        unsigned kb;
                        if (strcasecmp(value, "none") == 0)
                                kb = 0;
                        else if (mthp_parse_ladder_size(value, &kb) < 0)
                                return BAD("an mTHP size like 64K (a power of two, 8K or more), or none");
                        e->unmeasured_max_kb = kb;
                        return 0;
                }
                if (strcmp(key, "CgroupHeadroom") == 0)
                        return mthp_parse_percent(value, &e->cgroup_headroom) < 0 ? BAD("a percentage of the cgroup's limit") : 0;
                if (strcmp(key, "GuardHeadroom") == 0) {
                        double v;
                        if (mthp_parse_percent(value, &v) < 0 || v <= 0 || v >= 100)
                                return BAD("a percentage of a limited cgroup's headroom, above 0 and below 100");
                        e->guard_headroom = v;
                        return 0;
                }
                if (strcmp(key, "GuardFloor") == 0) {
                        double v;
                        if (mthp_parse_percent(value, &v) < 0 || v > 100)
                                return BAD("a percentage of a limited cgroup's limit, 0-100");
                        e->guard_floor = v;
                        return 0;
                }
                if (strcmp(key, "MaxCompactionStall") == 0) {
                        uint64_t us;
                        if (mthp_parse_duration(value, &us) < 0 || us > 1000000)
                                return BAD("a stall per second, 0-1s (e.g. 50ms)");
                        e->max_compact_ms = (double) us / 1000.0;
                        return 0;
                }
                if (strcmp(key, "DefaultPriority") == 0)
                        return parse_count(value, 0, 100, &e->default_priority) < 0 ? BAD("a whole number from 0 to 100") : 0;
                if (strcmp(key, "CollapseBudget") == 0) {
                        unsigned kb;
                        if (strcasecmp(value, "none") == 0 || strcmp(value, "0") == 0)
                                kb = 0;
                        else if (strspn(value, "0123456789") == 0 || mthp_parse_size(value, &kb) < 0)
                                return BAD("a size per tick like 64M, or none");
                        c->collapse_budget_kb = kb;
                        return 0;
                }
                if (strcmp(key, "VerifyTicks") == 0)
                        return parse_count(value, 1, 100, &e->verify_ticks) < 0 ? BAD("a whole number from 1 to 100") : 0;
                if (strcmp(key, "MaxFallback") == 0)
                        return mthp_parse_percent(value, &e->max_fallback) < 0 ? BAD("a percentage of mTHP faults") : 0;
        } else {
                if (!*section) /* a key before any [Section] header */
                        mthp_ini_error(ini, "unknown section []: key '%s' must follow [Daemon] or [Engine]", key);
                return -EINVAL; /* others were reported once, at their header */
        }
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
