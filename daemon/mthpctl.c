/* SPDX-License-Identifier: MIT */
/* mthpctl: show what the host's mTHP knobs are doing and why; undo mthpd. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mthp-config.h"
#include "mthp/actuator.h"
#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/journal.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "mthp/record.h"
#include "mthp/sample.h"
#include "mthp/status.h"

struct ctl {
        const char *root;
        const char *state_dir;
        bool json;
        uint64_t sample_usec;
};

static void usage(FILE *f) {
        fprintf(f,
                "Usage: mthpctl [OPTIONS] COMMAND [ARGS]\n"
                "Show and control mthpd, the mTHP tuning daemon.\n\n"
                "Commands:\n"
                "  status            every size x kind: setting, who set it (original, mthpd,\n"
                "                    other), alloc and fallback rates; works without the daemon\n"
                "  explain [SIZE]    the daemon's current decision and its reason per knob\n"
                "  restore           put back every knob mthpd changed, from its restore\n"
                "                    journal (works without the daemon; stop mthpd first)\n"
                "  check FILE...     validate mthpd.conf files; exit 0 if all are valid\n"
                "  simulate FILE [--config CONF] [--json]\n"
                "                    replay a recording (mthpd --record FILE) through the\n"
                "                    engine, with CONF's thresholds (default: built-in), and\n"
                "                    print each tick's knob changes with their reasons, then\n"
                "                    a summary\n\n"
                "Options:\n"
                "  -j, --json            machine-readable output\n"
                "  -r, --root DIR        host root (default /)\n"
                "  -s, --state-dir DIR   mthpd state directory (default /run/mthpd)\n"
                "      --sample TIME     how long 'status' measures rates (default 500ms; 0: none)\n"
                "  -h, --help            this help\n"
                "      --version         print the version\n\n"
                "Exit status: 0 success, 1 failure (or invalid file for check and simulate),\n"
                "2 usage error.\n"
                "See mthpctl(8).\n");
}

static void json_str(const char *s) {
        putchar('"');
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if (ch == '"' || ch == '\\')
                        printf("\\%c", ch);
                else if (ch < 0x20)
                        printf("\\u%04x", ch);
                else
                        putchar(ch);
        }
        putchar('"');
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static double stat_rate(const struct mthp_caps *caps, const struct mthp_snapshot *s, unsigned i, const char *name) {
        int j = mthp_stat_index(&caps->sizes[i], name);
        return j < 0 ? 0 : s->size[i].stat[j].rate;
}

static int open_host(const struct ctl *c, struct mthp_host **h, struct mthp_caps *caps) {
        int r = mthp_host_open(c->root, h);
        if (r < 0) {
                fprintf(stderr, "mthpctl: cannot open host root %s: %s\n", c->root, mthp_errno_words(r));
                return r;
        }
        r = mthp_probe(*h, caps);
        if (r < 0) {
                fprintf(stderr, "mthpctl: no transparent hugepage support under %s%s: %s\n",
                        strcmp(c->root, "/") ? c->root : "", MTHP_THP_DIR, mthp_errno_words(r));
                mthp_host_free(*h);
                return r;
        }
        return 0;
}

static int cmd_status(struct ctl *c) {
        struct mthp_host *h;
        struct mthp_caps caps;
        struct mthp_sampler *s;
        struct mthp_snapshot snap;
        struct mthp_journal j;
        struct mthp_status st;
        char path[MTHP_PATH_MAX + 32], err[512];
        int r;

        if ((r = open_host(c, &h, &caps)) < 0)
                return 1;
        snprintf(path, sizeof(path), "%s/" MTHP_JOURNAL_FILE, c->state_dir);
        r = mthp_journal_load(path, &j, err, sizeof(err));
        if (r < 0 && r != -ENOENT)
                fprintf(stderr, "mthpctl: warning: %s", err[0] ? err : "cannot read the restore journal\n");
        bool daemon = mthp_status_file_read(c->state_dir, &st) == 0;

        if ((r = mthp_sampler_new(h, &caps, &s)) < 0 || (r = mthp_sampler_take(s, now_usec(), &snap)) < 0) {
                fprintf(stderr, "mthpctl: sampling failed: %s\n", mthp_errno_words(r));
                return 1;
        }
        if (c->sample_usec) {
                usleep((useconds_t) c->sample_usec);
                mthp_sampler_take(s, now_usec(), &snap);
        }

        if (c->json) {
                printf("{\"root\":");
                json_str(c->root);
                printf(",\"daemon\":%s,\"pid\":%d,\"dry_run\":%s,\"sample_seconds\":%.3f,\"fault_pages_per_s\":%.0f,",
                       daemon ? "true" : "false", daemon ? st.pid : 0, daemon && st.dry_run ? "true" : "false",
                       snap.dt, snap.fault_pages_rate);
                printf("\"psi\":");
                if (snap.psi.present)
                        printf("{\"some_avg10\":%.2f,\"full_avg10\":%.2f}", snap.psi.some_avg10, snap.psi.full_avg10);
                else
                        printf("null");
                printf(",\"mem_available_kb\":%llu,\"cgroup_layout\":\"%s\",\"knobs\":[",
                       (unsigned long long) snap.mem.available_kb, mthp_cg_layout_name(caps.cg_layout));
        } else {
                printf("mthpd: %s", daemon ? (st.dry_run ? "running (dry run)" : "running") : "not running");
                if (daemon)
                        printf(", pid %d", st.pid);
                printf("; %u knob(s) in the restore journal", j.n);
                printf("\nfault demand: %.0f pages/s over %.1fs; PSI memory some: ", snap.fault_pages_rate, snap.dt);
                if (snap.psi.present)
                        printf("%.2f%%", snap.psi.some_avg10);
                else
                        printf("absent");
                printf("; MemAvailable %llu MiB\n\n", (unsigned long long) snap.mem.available_kb / 1024);
                printf("%-6s %-12s %-9s %-12s %-9s %10s %10s %10s %10s\n", "SIZE", "ANON", "SET BY", "SHMEM",
                       "SET BY", "ANON/s", "A-FALLB/s", "SHMEM/s", "S-FALLB/s");
        }

        bool first = true;
        for (unsigned i = 0; i < caps.n_sizes; i++) {
                char size[16];
                const char *val[_MTHP_KIND_MAX], *owner[_MTHP_KIND_MAX];
                mthp_format_size(caps.sizes[i].kb, size, sizeof(size));
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        int kn = caps.sizes[i].knob[k];
                        val[k] = kn >= 0 ? snap.knob[kn] : "-";
                        owner[k] = kn >= 0 ? mthp_knob_owner(&j, &caps.knobs[kn], snap.knob[kn]) : "-";
                }
                double ra = stat_rate(&caps, &snap, i, "anon_fault_alloc"),
                       rf = stat_rate(&caps, &snap, i, "anon_fault_fallback"),
                       sa = stat_rate(&caps, &snap, i, "shmem_alloc"), sf = stat_rate(&caps, &snap, i, "shmem_fallback");
                if (c->json) {
                        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                                int kn = caps.sizes[i].knob[k];
                                if (kn < 0)
                                        continue;
                                printf("%s{\"id\":", first ? "" : ",");
                                first = false;
                                json_str(caps.knobs[kn].id);
                                printf(",\"size_kb\":%u,\"kind\":\"%s\",\"value\":", caps.sizes[i].kb, mthp_kind_name(k));
                                json_str(val[k]);
                                printf(",\"set_by\":\"%s\",\"alloc_per_s\":%.1f,\"fallback_per_s\":%.1f", owner[k],
                                       k == MTHP_ANON ? ra : sa, k == MTHP_ANON ? rf : sf);
                                printf(",\"accepts\":[");
                                for (unsigned a = 0; a < caps.knobs[kn].n_allowed; a++) {
                                        printf(a ? "," : "");
                                        json_str(caps.knobs[kn].allowed[a]);
                                }
                                printf("]}");
                        }
                } else
                        printf("%-6s %-12s %-9s %-12s %-9s %10.0f %10.0f %10.0f %10.0f\n", size, val[0], owner[0],
                               val[1], owner[1], ra, rf, sa, sf);
        }
        for (unsigned i = 0; i < caps.n_knobs; i++) {
                const struct mthp_knob *k = &caps.knobs[i];
                if (k->size_kb)
                        continue;
                const char *owner = mthp_knob_owner(&j, k, snap.knob[i]);
                if (c->json) {
                        printf("%s{\"id\":", first ? "" : ",");
                        first = false;
                        json_str(k->id);
                        printf(",\"size_kb\":0,\"kind\":\"global\",\"value\":");
                        json_str(snap.knob[i]);
                        printf(",\"set_by\":\"%s\",\"accepts\":[", owner);
                        for (unsigned a = 0; a < k->n_allowed; a++) {
                                printf(a ? "," : "");
                                json_str(k->allowed[a]);
                        }
                        printf("]}");
                } else {
                        if (i == 0 || caps.knobs[i - 1].size_kb)
                                printf("\n");
                        printf("%-22s %-14s set by %s\n", k->id, snap.knob[i], owner);
                }
        }
        if (c->json)
                printf("]}\n");
        for (unsigned i = 0; i < j.n && !c->json; i++)
                if (j.e[i].state == MTHP_ENTRY_FOREIGN)
                        printf("note: %s was changed by someone else to '%s'; mthpd no longer manages it\n",
                               j.e[i].id, j.e[i].foreign_value);
        mthp_sampler_free(s);
        mthp_host_free(h);
        return 0;
}

static int cmd_explain(struct ctl *c, const char *filter) {
        struct mthp_status st;
        unsigned kb = 0;
        if (filter && mthp_parse_size(filter, &kb) < 0) {
                fprintf(stderr, "mthpctl: explain: expected a size like 64K or 2M, got '%s'\n", filter);
                return 2;
        }
        if (mthp_status_file_read(c->state_dir, &st) < 0) {
                fprintf(stderr, "mthpctl: mthpd is not running (no live %s/" MTHP_STATUS_FILE "): nothing to explain\n",
                        c->state_dir);
                return 1;
        }
        char want[16] = "";
        if (kb)
                mthp_format_size(kb, want, sizeof(want));
        if (c->json)
                printf("{\"pid\":%d,\"tick\":%llu,\"dry_run\":%s,\"knobs\":[", st.pid, st.tick,
                       st.dry_run ? "true" : "false");
        bool first = true;
        for (unsigned i = 0; i < st.n; i++) {
                size_t wl = strlen(want);
                if (kb && (strncmp(st.k[i].id, want, wl) != 0 || st.k[i].id[wl] != '/'))
                        continue;
                if (c->json) {
                        printf("%s{\"id\":", first ? "" : ",");
                        json_str(st.k[i].id);
                        printf(",\"decision\":");
                        json_str(st.k[i].decision);
                        printf(",\"reason\":");
                        json_str(st.k[i].reason);
                        printf("}");
                } else
                        printf("%s: %s\n    %s\n", st.k[i].id, st.k[i].decision, st.k[i].reason);
                first = false;
        }
        if (c->json)
                printf("]}\n");
        else if (first)
                printf("mthpd manages no knob%s%s under its configuration\n", kb ? " of size " : "", want);
        return 0;
}

static int cmd_restore(struct ctl *c) {
        char path[MTHP_PATH_MAX + 32], err[1024];
        struct mthp_journal j;
        struct mthp_host *h;
        unsigned n = 0;

        snprintf(path, sizeof(path), "%s/" MTHP_JOURNAL_FILE, c->state_dir);
        int r = mthp_journal_load(path, &j, err, sizeof(err));
        if (r == -ENOENT) {
                printf("nothing to restore: no journal at %s\n", path);
                return 0;
        }
        if (r < 0) {
                fprintf(stderr, "mthpctl: cannot read %s: %s", path, err[0] ? err : "invalid journal\n");
                return 1;
        }
        /* a running mthpd holds STATE/lock and would write again: refuse */
        char lock[MTHP_PATH_MAX + 8];
        snprintf(lock, sizeof(lock), "%s/lock", c->state_dir);
        int lfd = open(lock, O_RDWR | O_CLOEXEC);
        if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
                fprintf(stderr, "mthpctl: mthpd is running (it holds %s); stop it first: it restores everything "
                        "itself when stopped\n", lock);
                close(lfd);
                return 1;
        }
        /* the journal's paths belong to the root it was written for */
        const char *root = strcmp(c->root, "/") ? c->root : (j.root[0] ? j.root : "/");
        if ((r = mthp_host_open(root, &h)) < 0) {
                fprintf(stderr, "mthpctl: cannot open host root %s: %s\n", root, mthp_errno_words(r));
                return 1;
        }
        r = mthp_journal_restore(h, path, &n);
        mthp_host_free(h);
        if (lfd >= 0)
                close(lfd);
        if (r != 0) {
                fprintf(stderr, "mthpctl: restored %u knob(s); %d could not be restored (see above); the journal "
                        "%s keeps them\n", n, r < 0 ? -1 : r, path);
                return 1;
        }
        printf("restored %u knob(s)\n", n);
        return 0;
}

static int cmd_check(int argc, char **argv) {
        int bad = 0;
        if (argc < 1) {
                fprintf(stderr, "mthpctl: check: expected one or more files\n");
                return 2;
        }
        for (int i = 0; i < argc; i++) {
                struct mthp_config cfg;
                char err[8192];
                mthp_config_defaults(&cfg);
                if (mthp_config_load(argv[i], &cfg, err, sizeof(err)) < 0) {
                        fputs(err, stderr);
                        bad++;
                } else
                        printf("%s: ok\n", argv[i]);
        }
        return bad ? 1 : 0;
}

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

/* Replay a recording through the engine from a zero state, as mthpd would
 * have decided on those snapshots; print only decisions that change what a
 * knob holds. A knob mthpd leaves alone holds what the recording shows. */
static int cmd_simulate(struct ctl *c, int argc, char **argv) {
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' }, { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },         {},
        };
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *rec = NULL;
        const char *conf = NULL;
        bool json = c->json;
        int o, r;

        argv[0] = (char *) "mthpctl simulate"; /* for getopt's messages */
        optind = 0;                            /* parse simulate's own options */
        while ((o = getopt_long(argc, argv, "c:jh", opts, NULL)) >= 0) {
                switch (o) {
                case 'c': conf = optarg; break;
                case 'j': json = true; break;
                case 'h': usage(stdout); return 0;
                default: return 2;
                }
        }
        if (argc - optind != 1) {
                fprintf(stderr, "mthpctl: simulate: expected one recording FILE (from mthpd --record)\n");
                return 2;
        }
        const char *file = argv[optind];

        struct mthp_config cfg;
        char err[8192];
        mthp_config_defaults(&cfg);
        if (conf && mthp_config_load(conf, &cfg, err, sizeof(err)) < 0) {
                fputs(err, stderr);
                return 1;
        }
        struct mthp_caps caps;
        if ((r = mthp_record_open_read(file, &caps, &rec, err, sizeof(err))) < 0) {
                fprintf(stderr, "mthpctl: %s\n", err);
                return 1;
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
                        } else
                                printf("tick %llu: %s: %s -> %s: %s\n", (unsigned long long) snap.tick,
                                       caps.knobs[k].id, old, new, dec[i].reason);
                }
        }
        if (r < 0) {
                fflush(stdout);
                fprintf(stderr, "mthpctl: %s\n", err);
                return 1;
        }
        print_simulate_summary(json, file, &cfg.engine, &caps, &st, &span, changes);
        return 0;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },  { "root", required_argument, NULL, 'r' },
                { "state-dir", required_argument, NULL, 's' }, { "sample", required_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },  { "version", no_argument, NULL, 'V' }, {},
        };
        struct ctl c = { .root = "/", .state_dir = "/run/mthpd", .sample_usec = 500000 };
        int o;

        while ((o = getopt_long(argc, argv, "+jr:s:h", opts, NULL)) >= 0) {
                switch (o) {
                case 'j': c.json = true; break;
                case 'r': c.root = optarg; break;
                case 's': c.state_dir = optarg; break;
                case 'S':
                        if (mthp_parse_duration(optarg, &c.sample_usec) < 0 || c.sample_usec > 60000000) {
                                fprintf(stderr, "mthpctl: --sample: expected a duration up to 60s, got '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'h': usage(stdout); return 0;
                case 'V': printf("mthpctl %s\n", MTHP_VERSION); return 0;
                default: usage(stderr); return 2;
                }
        }
        mthp_log_init("mthpctl", false);
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        const char *cmd = argv[optind++];
        if (strcmp(cmd, "status") == 0)
                return cmd_status(&c);
        if (strcmp(cmd, "explain") == 0)
                return cmd_explain(&c, optind < argc ? argv[optind] : NULL);
        if (strcmp(cmd, "restore") == 0)
                return cmd_restore(&c);
        if (strcmp(cmd, "check") == 0)
                return cmd_check(argc - optind, argv + optind);
        if (strcmp(cmd, "simulate") == 0)
                return cmd_simulate(&c, argc - optind + 1, argv + optind - 1);
        if (strcmp(cmd, "help") == 0) {
                usage(stdout);
                return 0;
        }
        fprintf(stderr, "mthpctl: unknown command '%s'; see 'mthpctl --help'\n", cmd);
        return 2;
}
