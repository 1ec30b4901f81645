/* SPDX-License-Identifier: MIT */
/* mthpctl simulate: replay a recording through the engine. */
#include "mthpctl.h"
#include "mthp/util.h"

/* The value a knob ends up with under a decision: "" is its original. */
static const char *decided_value(const char *decision, const char *original) {
        if (decision[0])
                return decision;
        return original[0] ? original : "original";
}

struct simulate_span {
        unsigned long long ticks, first_tick, last_tick;
        uint64_t first_usec, last_usec;
};

static void print_simulate_summary(bool json, const char *file, const struct mthp_engine_config *cfg,
                                   const struct mthp_caps *caps, const struct mthp_engine_state *st,
                                   const struct simulate_span *span, const unsigned *changes) {
        unsigned total = 0;
        for (unsigned i = 0; i < caps->n_knobs; i++)
                total += changes[i];
        if (json) {
                printf("{\"summary\":{\"file\":");
                json_str(file);
                printf(",\"ticks\":%llu", span->ticks);
                if (span->ticks)
                        printf(",\"first_tick\":%llu,\"last_tick\":%llu", span->first_tick, span->last_tick);
                printf(",\"changes\":%u,\"changes_per_knob\":{", total);
        } else {
                printf("%s: %llu tick(s)", file, span->ticks);
                if (span->ticks)
                        printf(" (%llu to %llu, %.1fs)", span->first_tick, span->last_tick,
                               (double) (span->last_usec - span->first_usec) / 1e6);
                printf(", %u change(s)\n", total);
        }
        bool first_item = true;
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                if (!changes[i])
                        continue;
                if (json) {
                        printf("%s", first_item ? "" : ",");
                        json_str(caps->knobs[i].id);
                        printf(":%u", changes[i]);
                } else
                        printf("  %-20s %u change(s)\n", caps->knobs[i].id, changes[i]);
                first_item = false;
        }
        printf(json ? "},\"final\":{" : "final levels:\n");
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n = mthp_engine_ladder(cfg, caps, k, ladder);
                unsigned level = st->kind[k].level;
                char top[16] = "";
                if (level && level <= n)
                        mthp_format_size(caps->sizes[ladder[level - 1]].kb, top, sizeof(top));
                if (json) {
                        printf("%s\"%s\":{\"level\":%u,\"levels\":%u,\"top\":", k ? "," : "", mthp_kind_name(k),
                               level, n);
                        if (top[0])
                                json_str(top);
                        else
                                printf("null");
                        printf("}");
                } else if (top[0])
                        printf("  %-6s level %u/%u: sizes up to %s always\n", mthp_kind_name(k), level, n, top);
                else
                        printf("  %-6s level 0/%u: every size at its original value\n", mthp_kind_name(k), n);
        }
        if (json)
                printf("}}}\n");
}

/* The 4K fault cost a replayed tick decides with (FaultCost= of CONF): a
 * set cost replaces the recorded one ("what if a fault cost 1 us"), off
 * makes it unknown, auto (the default) keeps what the daemon recorded:
 * its measurement on the host it ran on, which a replay cannot redo. */
static double replay_fault_cost(const struct mthp_config *cfg, double recorded_ns) {
        if (cfg->fault_cost_ns > 0)
                return cfg->fault_cost_ns;
        return cfg->fault_cost_auto ? recorded_ns : 0;
}

/* Replay a recording through the engine from a zero state, as mthpd would
 * have decided on those snapshots; print only decisions that change what a
 * knob holds. A knob mthpd leaves alone holds what the recording shows. */
int cmd_simulate(struct ctl *c, int argc, char **argv) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *rec = NULL;
        const char *conf = c->config, *file = argv[0];
        bool json = c->json;
        int r;
        (void) argc;

        struct mthp_config cfg;
        char err[8192], clean[4 * sizeof(err)];
        mthp_config_defaults(&cfg);
        if (conf && mthp_config_load(conf, &cfg, err, sizeof(err)) < 0) {
                print_errors(err);
                return EXIT_FAIL;
        }
        _cleanup_(mthp_policy_set_freep) struct mthp_policy_set *policies = NULL;
        if (c->policy_dir) {
                static char perr[65536];
                if (mthp_policy_load_dir(c->policy_dir, true, &policies, perr, sizeof(perr)) < 0) {
                        print_errors(perr);
                        return EXIT_FAIL;
                }
                cfg.engine.policies = policies;
        }
        struct mthp_caps caps;
        if ((r = mthp_record_open_read(file, &caps, &rec, err, sizeof(err))) < 0) {
                fprintf(stderr, "mthpctl: %s\n", mthp_escape_lines(clean, sizeof(clean), err));
                return EXIT_FAIL;
        }

        /* per knob: the last decision ("" = original) and, while mthpd leaves
         * the knob alone, the value it holds */
        static char decided[MTHP_KNOBS_MAX][MTHP_VALUE_MAX], original[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        static struct mthp_snapshot snap;
        struct mthp_engine_state st = { 0 }, next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        unsigned changes[MTHP_KNOBS_MAX] = { 0 };
        struct simulate_span span = { 0 };

        while ((r = mthp_record_read(rec, &snap, err, sizeof(err))) > 0) {
                if (span.ticks++ == 0) {
                        span.first_tick = snap.tick;
                        span.first_usec = snap.t_usec;
                }
                span.last_tick = snap.tick;
                span.last_usec = snap.t_usec;
                snap.fault_cost_ns = replay_fault_cost(&cfg, snap.fault_cost_ns);
                int n = mthp_engine_decide(&cfg.engine, &caps, &snap, &st, &next, dec, MTHP_KNOBS_MAX);
                st = next;
                for (int i = 0; i < n; i++) {
                        int k = dec[i].knob;
                        if (!decided[k][0])
                                snprintf(original[k], sizeof(original[k]), "%s", snap.knob[k]);
                        char old[MTHP_VALUE_MAX];
                        snprintf(old, sizeof(old), "%s", decided_value(decided[k], original[k]));
                        const char *new = decided_value(dec[i].value, original[k]);
                        snprintf(decided[k], sizeof(decided[k]), "%s", dec[i].value);
                        if (strcmp(old, new) == 0)
                                continue;
                        changes[k]++;
                        if (json) {
                                printf("{\"tick\":%llu,\"knob\":", (unsigned long long) snap.tick);
                                json_str(caps.knobs[k].id);
                                printf(",\"old\":");
                                json_str(old);
                                printf(",\"new\":");
                                json_str(new);
                                printf(",\"reason\":");
                                json_str(dec[i].reason);
                                printf("}\n");
                        } else {
                                /* the recording's bytes and the names in reasons, escaped */
                                char id[128], o[4 * MTHP_VALUE_MAX], n[4 * MTHP_VALUE_MAX];
                                printf("tick %llu: %s: %s -> %s: %s\n", (unsigned long long) snap.tick,
                                       mthp_escape(id, sizeof(id), caps.knobs[k].id), mthp_escape(o, sizeof(o), old),
                                       mthp_escape(n, sizeof(n), new), mthp_escape(clean, sizeof(clean), dec[i].reason));
                        }
                }
        }
        if (r < 0) {
                fflush(stdout);
                fprintf(stderr, "mthpctl: %s\n", mthp_escape_lines(clean, sizeof(clean), err));
                return EXIT_FAIL;
        }
        print_simulate_summary(json, file, &cfg.engine, &caps, &st, &span, changes);
        return EXIT_OK;
}
