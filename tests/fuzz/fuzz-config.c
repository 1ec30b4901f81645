/* SPDX-License-Identifier: MIT */
/* mthpd.conf: mthp_config_load_string on arbitrary text. Checks that a
 * failed parse leaves the config untouched and says why as "NAME:LINE: ...",
 * that an accepted one holds only values in the documented ranges
 * (mthpd.conf(5)), and that the error buffer is never overrun. */
#include <math.h>

#include "fuzz-util.h"
#include "mthp/config.h"

#define MAX_KB (16u * 1024 * 1024)

static int pct_ok(double v) {
        return isfinite(v) && v >= 0 && v <= 100;
}

static int rate_ok(double v) {
        return isfinite(v) && v >= 0;
}

static void check_config(const struct mthp_config *c) {
        const struct mthp_engine_config *e = &c->engine;
        FUZZ_CHECK(c->interval_usec >= 100000 && c->interval_usec <= 3600000000ULL, "%llu",
                   (unsigned long long) c->interval_usec);
        FUZZ_CHECK(c->mode == MTHP_MODE_MANAGE || c->mode == MTHP_MODE_OBSERVE, "%d", (int) c->mode);
        FUZZ_CHECK(fuzz_terminated(c->state_dir, sizeof(c->state_dir)), "state_dir");
        FUZZ_CHECK(c->state_dir[0] == '/' && strlen(c->state_dir) < sizeof(c->state_dir) - 32, "'%s'", c->state_dir);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                FUZZ_CHECK(e->min_kb[k] <= e->max_kb[k] && e->max_kb[k] <= MAX_KB, "%u-%u", e->min_kb[k],
                           e->max_kb[k]);
                FUZZ_CHECK((e->min_kb[k] == 0) == (e->max_kb[k] == 0), "%u-%u", e->min_kb[k], e->max_kb[k]);
        }
        FUZZ_CHECK(rate_ok(e->raise_fault_rate) && rate_ok(e->lower_fault_rate), "%g %g", e->raise_fault_rate,
                   e->lower_fault_rate);
        FUZZ_CHECK(e->lower_fault_rate < e->raise_fault_rate, "%g %g", e->lower_fault_rate, e->raise_fault_rate);
        FUZZ_CHECK(pct_ok(e->raise_fault_time), "%g", e->raise_fault_time);
        /* FaultCost=: auto and off are 0; a duration is 1ns..1s */
        FUZZ_CHECK(c->fault_cost_ns == 0 || (c->fault_cost_ns >= 1 && c->fault_cost_ns <= 1e9 && !c->fault_cost_auto),
                   "%g %d", c->fault_cost_ns, (int) c->fault_cost_auto);
        FUZZ_CHECK(e->confirm_ticks >= 1 && e->confirm_ticks <= 100, "%u", e->confirm_ticks);
        FUZZ_CHECK(e->density_confirm_ticks >= 1 && e->density_confirm_ticks <= 100, "%u", e->density_confirm_ticks);
        FUZZ_CHECK(e->lower_ticks >= 1 && e->lower_ticks <= 1000, "%u", e->lower_ticks);
        FUZZ_CHECK(e->dwell_ticks <= 1000, "%u", e->dwell_ticks);
        FUZZ_CHECK(e->verify_ticks >= 1 && e->verify_ticks <= 100, "%u", e->verify_ticks);
        FUZZ_CHECK(pct_ok(e->psi_some_max) && pct_ok(e->min_available) && pct_ok(e->max_fallback) &&
                           pct_ok(e->min_proc_share) && pct_ok(e->cgroup_headroom),
                   "%g %g %g %g %g", e->psi_some_max, e->min_available, e->max_fallback, e->min_proc_share,
                   e->cgroup_headroom);
        FUZZ_CHECK(isfinite(e->max_bloat) && e->max_bloat >= 0 && e->max_bloat <= 10000, "%g", e->max_bloat);
        FUZZ_CHECK(rate_ok(e->min_proc_fault_rate), "%g", e->min_proc_fault_rate);
        FUZZ_CHECK(e->unmeasured_max_kb <= MAX_KB, "%u", e->unmeasured_max_kb);
        FUZZ_CHECK(isfinite(e->max_compact_ms) && e->max_compact_ms >= 0 && e->max_compact_ms <= 1000, "%g",
                   e->max_compact_ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_strdup(data, size);
        struct mthp_config c, before, again;
        char err[4096];

        mthp_config_defaults(&c);
        check_config(&c);
        before = c;
        int r = mthp_config_load_string("fuzz", text, &c, err, sizeof(err));
        FUZZ_CHECK(r == 0 || r == -EINVAL, "%d", r);
        FUZZ_CHECK(fuzz_terminated(err, sizeof(err)), "err");
        if (r < 0) {
                FUZZ_CHECK(memcmp(&c, &before, sizeof(c)) == 0, "a failed parse changed the config");
                FUZZ_CHECK(strncmp(err, "fuzz:", 5) == 0, "error without NAME:LINE: '%s'", err);
        } else
                check_config(&c);

        /* The same verdict with a tiny error buffer (heap, exact size: ASan
         * sees an overrun) and without one. */
        char *small = malloc(7);
        mthp_config_defaults(&again);
        FUZZ_CHECK(mthp_config_load_string("fuzz", text, &again, small, 7) == r, "verdict depends on errsz");
        FUZZ_CHECK(fuzz_terminated(small, 7), "small err");
        free(small);
        mthp_config_defaults(&again);
        FUZZ_CHECK(mthp_config_load_string("fuzz", text, &again, NULL, 0) == r, "verdict depends on err");
        FUZZ_CHECK(memcmp(&c, &again, sizeof(c)) == 0, "two parses of one text differ");

        /* Parsing over a parsed config: what the daemon does on reload. */
        if (r == 0) {
                struct mthp_config twice = c;
                FUZZ_CHECK(mthp_config_load_string("fuzz", text, &twice, NULL, 0) == 0, "reparse failed");
                FUZZ_CHECK(memcmp(&c, &twice, sizeof(c)) == 0, "parse is not idempotent");
        }
        free(text);
        return 0;
}
