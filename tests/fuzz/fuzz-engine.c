/* SPDX-License-Identifier: MIT */
/* The policy engine (lib/engine.c) on arbitrary recordings: what the
 * 'mthp-record 1' reader accepts is replayed tick by tick through
 * mthp_engine_decide, as `mthpctl simulate` does, twice: on the built-in
 * defaults and under two conflicting policy files. The seeds are recordings
 * of real workloads; mutating one is what the engine meets on a real host
 * (pids reused or exec'd under another comm, cgroups that come and go,
 * counters that jump, NaNs). Checked on every tick: no crash or sanitizer
 * report, the previous state is left alone, every decision names a knob of
 * the caps with a value that knob accepts (or "" for its original) and a
 * reason, and the levels stay within the ladder. */
#include <math.h>

#include "fuzz-util.h"
#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/policy.h"
#include "mthp/record.h"

#define MAX_TICKS 64

static const char *const policy_text[2] = {
        /* the dense side: wants every size, high priority, collapses */
        "[Match]\nCgroup=/a*\n[Policy]\nAnon=always\nShmem=always\nPriority=80\nCollapse=yes\nMaxPressure=30\n",
        /* the sparse side: no anon, bounded shmem, lower priority, narrow sizes */
        "[Match]\nCgroup=/process_api/*\nCgroup=/b*\n[Policy]\nAnon=never\nShmem=auto\nSizes=16K-64K\n"
        "Priority=20\nMaxBloat=10\n",
};

static struct mthp_policy_set *load_policies(void) {
        char dir[256], path[300], err[4096];
        struct mthp_policy_set *set = NULL;
        fuzz_tmpdir(dir, sizeof(dir), "engine");
        for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "%s/%d.policy", dir, i);
                FILE *f = fopen(path, "w");
                FUZZ_CHECK(f && fputs(policy_text[i], f) >= 0 && fclose(f) == 0, "%s", path);
        }
        FUZZ_CHECK(mthp_policy_load_dir(dir, false, &set, err, sizeof(err)) == 0, "policies: %s", err);
        for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "%s/%d.policy", dir, i);
                unlink(path);
        }
        rmdir(dir);
        return set;
}

static void check_tick(const struct mthp_caps *caps, const struct mthp_engine_state *next,
                       const struct mthp_decision *dec, int n) {
        FUZZ_CHECK(n >= 0 && n <= MTHP_KNOBS_MAX, "%d decisions", n);
        for (int i = 0; i < n; i++) {
                const struct mthp_decision *d = &dec[i];
                FUZZ_CHECK(d->knob >= 0 && d->knob < (int) caps->n_knobs, "decision %d: knob %d", i, d->knob);
                FUZZ_CHECK(fuzz_terminated(d->value, sizeof(d->value)), "decision %d: value", i);
                FUZZ_CHECK(fuzz_terminated(d->reason, sizeof(d->reason)) && d->reason[0], "decision %d: reason", i);
                FUZZ_CHECK(!d->value[0] || mthp_knob_allows(&caps->knobs[d->knob], d->value),
                           "decision %d: %s = '%s', which the knob does not accept", i, caps->knobs[d->knob].id,
                           d->value);
        }
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                FUZZ_CHECK(next->kind[k].level <= MTHP_SIZES_MAX, "%s level %u", mthp_kind_name(k),
                           next->kind[k].level);
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                FUZZ_CHECK(fuzz_terminated(next->proc[j].comm, sizeof(next->proc[j].comm)), "proc slot %u", j);
        /* a pid is remembered once */
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                for (unsigned i = 0; next->proc[j].pid && i < j; i++)
                        FUZZ_CHECK(next->proc[i].pid != next->proc[j].pid, "pid %d in slots %u and %u",
                                   (int) next->proc[j].pid, i, j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct fuzz_file in;
        static struct mthp_config defaults;
        static struct mthp_policy_set *policies;
        static struct mthp_snapshot snap;
        static struct mthp_engine_state st[2], next, before;
        static struct mthp_decision dec[MTHP_KNOBS_MAX];
        if (in.path[0] == 0) {
                fuzz_file_init(&in, "engine-in");
                mthp_config_defaults(&defaults);
                policies = load_policies();
        }
        struct mthp_engine_config cfg[2] = { defaults.engine, defaults.engine };
        cfg[1].policies = policies;

        fuzz_file_set(&in, data, size);
        struct mthp_caps caps;
        struct mthp_record_reader *r = NULL;
        char err[512];
        if (mthp_record_open_read(in.path, &caps, &r, err, sizeof(err)) < 0)
                return 0;
        memset(st, 0, sizeof(st));
        unsigned ticks = 0;
        while (ticks++ < MAX_TICKS && mthp_record_read(r, &snap, err, sizeof(err)) == 1) {
                for (int v = 0; v < 2; v++) {
                        before = st[v];
                        memset(&next, 0x5a, sizeof(next));
                        int n = mthp_engine_decide(&cfg[v], &caps, &snap, &st[v], &next, dec, MTHP_KNOBS_MAX);
                        FUZZ_CHECK(memcmp(&before, &st[v], sizeof(before)) == 0, "the previous state was written");
                        check_tick(&caps, &next, dec, n);
                        st[v] = next;
                }
        }
        mthp_record_close_read(r);
        return 0;
}
