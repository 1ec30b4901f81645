/* SPDX-License-Identifier: MIT */
/* Per-cgroup policy files (mthpd.policy(5)): mthp_policy_load_string.
 * Built only once lib/policy.c exists. An accepted policy holds only values
 * the format allows (include/mthp/policy.h); matching never crashes. */
#include <math.h>

#include "fuzz-util.h"
#include "mthp/policy.h"

#define MAX_KB (16u * 1024 * 1024)

static void check_policy(const struct mthp_policy *p) {
        FUZZ_CHECK(fuzz_terminated(p->name, sizeof(p->name)) && fuzz_terminated(p->file, sizeof(p->file)),
                   "name/file");
        FUZZ_CHECK(p->n_cgroup <= MTHP_POLICY_MATCH_MAX && p->n_unit <= MTHP_POLICY_MATCH_MAX, "%u cgroups %u units",
                   p->n_cgroup, p->n_unit);
        for (unsigned i = 0; i < p->n_cgroup; i++)
                FUZZ_CHECK(fuzz_terminated(p->cgroup[i], MTHP_POLICY_PATTERN_MAX) && p->cgroup[i][0], "Cgroup %u", i);
        for (unsigned i = 0; i < p->n_unit; i++)
                FUZZ_CHECK(fuzz_terminated(p->unit[i], MTHP_POLICY_PATTERN_MAX) && p->unit[i][0], "Unit %u", i);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                FUZZ_CHECK(p->mode[k] >= MTHP_POLICY_AUTO && p->mode[k] <= MTHP_POLICY_NEVER, "mode %d",
                           (int) p->mode[k]);
                FUZZ_CHECK(mthp_policy_mode_name(p->mode[k]) != NULL, "mode name");
        }
        FUZZ_CHECK(p->min_kb <= p->max_kb && p->max_kb <= MAX_KB, "%u-%u", p->min_kb, p->max_kb);
        FUZZ_CHECK(p->priority <= 100, "%u", p->priority);
        FUZZ_CHECK(isnan(p->max_bloat) || (p->max_bloat >= 0 && isfinite(p->max_bloat)), "%g", p->max_bloat);
        FUZZ_CHECK(isnan(p->max_pressure) || (p->max_pressure >= 0 && p->max_pressure <= 100), "%g",
                   p->max_pressure);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const paths[] = { "/", "/system.slice", "/system.slice/db-1.service",
                                             "/user.slice/user-0.slice/session-1.scope/redis.service" };
        char *text = fuzz_strdup(data, size);
        struct mthp_policy *p = calloc(1, sizeof(*p));
        char err[4096];

        int r = mthp_policy_load_string("fuzz", text, p, err, sizeof(err));
        FUZZ_CHECK(r <= 0, "%d", r);
        FUZZ_CHECK(fuzz_terminated(err, sizeof(err)), "err");
        if (r < 0)
                FUZZ_CHECK(err[0], "refused without a message");
        else {
                check_policy(p);
                for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
                        (void) mthp_policy_matches(p, paths[i]);
                struct mthp_policy_set set = { .n = 1, .p = p };
                char managed[256];
                for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
                        int m = mthp_policy_match(&set, paths[i], managed, sizeof(managed));
                        FUZZ_CHECK(m == -1 || m == 0, "match %d", m);
                }
        }
        /* the verdict does not depend on the error buffer */
        struct mthp_policy *q = calloc(1, sizeof(*q));
        char *small = malloc(5);
        FUZZ_CHECK(mthp_policy_load_string("fuzz", text, q, small, 5) == r, "verdict depends on errsz");
        FUZZ_CHECK(fuzz_terminated(small, 5), "small err");
        free(small);
        free(q);
        free(p);
        free(text);
        return 0;
}
