/* SPDX-License-Identifier: MIT */
/* mthpctl: show what the host's mTHP knobs are doing and why; control mthpd
 * over D-Bus (ctl-bus.c); undo mthpd. Read-only commands work without the
 * daemon: they fall back to what the host, mthpd's state directory and the
 * journal show. */
#include "mthpctl.h"

static const struct command commands[] = {
        { "status", "[--sample TIME] [--json]",
          "every size x kind: setting, who set it, alloc and fallback rates",
          "For every size and kind: the current setting, who set it (original: the value\n"
          "mthpd found; mthpd; other: someone changed it after mthpd; pinned: an\n"
          "administrator pinned it), and the allocation and fallback rates measured over\n"
          "--sample; then the global knobs. While mthpd is on the bus, 'set by' and its\n"
          "decisions come from it; otherwise from the restore journal. Works without the\n"
          "daemon. For a knob someone else changed: when mthpd noticed and its likely\n"
          "writer; in observe mode, what mthpd would set next to what is set; last, the\n"
          "other deciders of THP: the kernel command line, tuned and its profile, units\n"
          "with MemoryTHP= or writing THP files.\n\n"
          "  --sample TIME   how long to measure rates (default 500ms; 0: none)\n"
          "  -j, --json      machine-readable output\n",
          O_JSON | O_SAMPLE, NULL, 0, 0, cmd_status },
        { "sizes", "[--json]",
          "per size: knobs, accepted values, settings, alloc/fallback counters",
          "For every folio size the kernel offers: its order, which kinds have a knob\n"
          "(8K has shmem only), the current setting, the values the kernel accepts, and\n"
          "the allocation and fallback counters since boot. Reads the host only.\n\n"
          "  -j, --json      machine-readable output (all stats counters of each size)\n",
          O_JSON, NULL, 0, 0, cmd_sizes },
        { "cgroups", "[--policy-dir DIR] [--sample TIME] [--json]",
          "managed cgroups by fault rate: policy, memory, pressure, density",
          "The cgroups that policy files manage (mthpd.policy(5)), highest fault rate\n"
          "first: the policy and its wishes (Anon=, Shmem=, Priority=), faults per second\n"
          "(memory.stat pgfault), memory in use and its limit, memory pressure (PSI some\n"
          "avg10) and DENSE: the largest size every sampled process of the cgroup touches\n"
          "densely enough for its MaxBloat (- when none was sampled). Without mthpd, the\n"
          "policy files and cgroups are read directly and rates measured over --sample;\n"
          "density is then unknown.\n\n"
          "  -p, --policy-dir DIR   policy files to use without mthpd (default\n"
          "                         " MTHP_SYSCONFDIR "/policy.d)\n"
          "  --sample TIME          how long to measure without mthpd (default 500ms)\n"
          "  -j, --json             machine-readable output\n",
          O_JSON | O_SAMPLE | O_POLICY_DIR, NULL, 0, 0, cmd_cgroups },
        { "explain", "[SIZE] [--json]",
          "mthpd's current decision and its reason per knob",
          "The running daemon's current decision for each knob it manages (or only those\n"
          "of SIZE, e.g. 64K) and the numbers behind it. Asks mthpd over the bus, else\n"
          "reads its status file. Exit status 3 if mthpd is not running.\n\n"
          "  -j, --json      machine-readable output\n",
          O_JSON, NULL, 0, 1, cmd_explain },
        { "history", "[-n N] [--since TIME] [--json]",
          "the knob changes mthpd made, oldest first",
          "The knob changes mthpd made, oldest first: time, knob, old and new value, and\n"
          "the reason. Asks mthpd over the bus (it remembers its last 256 changes); when\n"
          "it is not running, reads its entries from the journal (MESSAGE_ID=\n"
          MTHP_MESSAGE_CHANGE "; with --root DIR, the journal files under DIR).\n\n"
          "  -n, --lines N   only the last N changes\n"
          "  --since TIME    only changes since TIME: -1h, '30min ago', today, yesterday,\n"
          "                  '2025-11-30 10:00', 10:00, @EPOCH\n"
          "  -j, --json      machine-readable output\n",
          O_JSON | O_LINES | O_SINCE, NULL, 0, 0, cmd_history },
        { "metrics", "[--output FILE] [--json]",
          "Prometheus text exposition of knobs, counters, cgroups and mthpd's state",
          "Print the knobs, every per-size counter of the kernel, mthpd's state, counters\n"
          "and decisions and its managed cgroups in the Prometheus text exposition format\n"
          "(0.0.4): counters since boot or start in base units, no rates. For\n"
          "node_exporter's textfile collector (mthpd-metrics.timer does this):\n\n"
          "  mthpctl metrics --output /var/lib/prometheus/node-exporter/mthpd.prom\n\n"
          "  -o, --output FILE   replace FILE atomically (a temporary file in its\n"
          "                      directory, renamed) instead of printing\n"
          "  -j, --json          the same samples as JSON: families with name, type,\n"
          "                      help and samples (labels, value)\n",
          O_JSON | O_OUTPUT, NULL, 0, 0, cmd_metrics },
        { "top", "[--interval TIME] [--iterations N] [--json]",
          "live view: demand, PSI, sizes' settings and rates, top cgroups, reasons",
          "A full-screen view refreshed every interval: mthpd's mode and tick, fault\n"
          "demand and PSI, each size's anon and shmem setting with alloc and fallback\n"
          "rates, the managed cgroups with the highest fault rates, and mthpd's current\n"
          "decisions with their reasons. q or Ctrl-C quits. On a pipe, frames are\n"
          "printed one after another.\n\n"
          "  -i, --interval TIME   refresh period (default 1s, at least 100ms)\n"
          "  --iterations N        quit after N frames\n"
          "  -j, --json            one JSON object per frame and line (status --json's\n"
          "                        fields, cgroups and decisions)\n",
          O_INTERVAL | O_ITERATIONS | O_JSON, NULL, 0, 0, cmd_top },
        { "pin", "ID VALUE [--for DURATION | --until TIME]",
          "hold a knob at a value, overriding mthpd's decision (root)",
          "Hold knob ID (64K/anon, 2M/shmem, global/defrag; see 'mthpctl status') at\n"
          "VALUE, one of the values the kernel offers for it, until 'mthpctl unpin ID',\n"
          "for DURATION or until TIME. mthpd's decision for the knob is overridden and\n"
          "its reason says so. Needs root and a running mthpd.\n\n"
          "  --for DURATION   e.g. 30min, 2h, 1d\n"
          "  --until TIME     e.g. '2025-12-01 08:00', +2h, tomorrow\n",
          O_FOR | O_UNTIL, "pin knobs", 2, 2, cmd_pin },
        { "unpin", "ID", "give a pinned knob back to mthpd (root)",
          "Give knob ID back to mthpd's engine. Needs root and a running mthpd.\n", 0, "unpin knobs", 1, 1,
          cmd_unpin },
        { "resume", "ID", "manage again a knob someone else had changed (root)",
          "mthpd stops managing a knob someone else writes (status shows it as set by\n"
          "other). Resume hands it back: the value the other writer set becomes the one\n"
          "mthpd restores. Needs root and a running mthpd.\n",
          0, "resume knobs", 1, 1, cmd_resume },
        { "mode", "[manage|observe] [--json]", "print or set mthpd's mode (setting: root)",
          "Without an argument, print mthpd's mode: manage (it writes knobs) or observe\n"
          "(it decides and logs only). With one, switch: going to observe restores every\n"
          "knob mthpd changed first. Setting needs root; both need a running mthpd.\n\n"
          "  -j, --json      machine-readable output (reading)\n",
          O_JSON, "change mthpd's mode", 0, 1, cmd_mode },
        { "reload", "", "make mthpd re-read its configuration (root)",
          "mthpd re-reads its configuration: all of it or, if any line is wrong, none of\n"
          "it; every FILE:LINE: error is printed. Needs root and a running mthpd.\n",
          0, "reload mthpd's configuration", 0, 0, cmd_reload },
        { "restore", "", "put back every knob mthpd changed",
          "Put back every knob mthpd changed. With mthpd running, it restores them and\n"
          "switches to observe (root only). Without it, from its restore journal: every\n"
          "knob whose value is still what mthpd wrote; knobs someone else changed are left\n"
          "alone.\n",
          0, "restore knobs", 0, 0, cmd_restore },
        { "exec", "[--thp=disable|except-advised|inherit] -- CMD [ARG]...",
          "run CMD with THP disabled (or for madvised memory only)",
          "Run CMD with a THP policy of its own, inherited by its children over fork and\n"
          "exec (prctl PR_SET_THP_DISABLE; what systemd's MemoryTHP= does for services):\n\n"
          "  --thp=disable   no THP for CMD (default)\n"
          "  --thp=except-advised\n"
          "                  THP only where CMD asks with madvise(MADV_HUGEPAGE)\n"
          "                  (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18; also --thp=madvise)\n"
          "  --thp=inherit   clear an inherited setting: the host's policy applies\n\n"
          "A kernel without the policy asked for refuses it: mthpctl says so and runs\n"
          "nothing (exit status 1).\n"
          "Exit status: CMD's; 127 if CMD is not found, 126 if it cannot be run.\n",
          O_THP, NULL, 1, -1, cmd_exec },
        { "check", "[--type config|policy] [FILE|DIR...] [--json]", "validate mthpd.conf and policy files",
          "Validate configuration files without the daemon: mthpd.conf files and their\n"
          "drop-ins, policy files (*.policy, checked together so that a cgroup matched in\n"
          "two files is caught) and policy directories (every *.policy in it, as mthpd\n"
          "loads them). A file's type is told by its name (*.policy: a policy file, any\n"
          "other: an mthpd.conf) unless --type says it, as for a temporary file of a\n"
          "configuration management tool. A FILE is checked alone, without FILE.d/.\n"
          "Without FILE: the configuration mthpd reads by default, each file in the order\n"
          "read (mthpd.conf of " MTHP_SYSCONFDIR ", " MTHP_RUNDIR " or " MTHP_VENDORDIR ",\n"
          "then mthpd.conf.d/*.conf of all three), checked together, then its\n"
          "PolicyDirectory=.\n"
          "Policy files must be owned by root and not writable by group or others.\n"
          "Errors are printed as FILE:LINE: ...; exit status 1 if any file is invalid.\n\n"
          "  -t, --type TYPE  config or policy: every FILE is of that type\n"
          "  -j, --json       machine-readable output: each file, valid, its errors\n",
          O_JSON | O_TYPE, NULL, 0, -1, cmd_check },
        { "simulate", "FILE [--config CONF] [--policy-dir DIR] [--json]",
          "replay a recording (mthpd --record) through the engine",
          "Replay a recording made with 'mthpd --record FILE' through the engine, with\n"
          "CONF's thresholds (default: built-in) and DIR's policy files (default: none),\n"
          "and print each tick's knob changes with their reasons, then a summary.\n"
          "CONF's FaultCost=auto (the default) keeps the 4K fault cost the recording\n"
          "holds; a set FaultCost= replaces it; off makes it unknown.\n\n"
          "  -c, --config CONF      mthpd.conf to take the engine's settings from\n"
          "  -p, --policy-dir DIR   policy files to arbitrate with (mthpd.policy(5))\n"
          "  -j, --json          one JSON object per change, then the summary\n",
          O_JSON | O_CONFIG | O_POLICY_DIR, NULL, 1, 1, cmd_simulate },
};

enum { OPT_SAMPLE = 0x100, OPT_VERSION, OPT_SINCE, OPT_FOR, OPT_UNTIL, OPT_ITERATIONS, OPT_THP };

/* Every option a command may take; flag 0: any command. */
static const struct {
        struct option opt;
        unsigned flag;
        const char *letter;          /* getopt short form, or NULL */
} command_options[] = {
        { { "root", required_argument, NULL, 'r' }, 0, "r:" },
        { { "state-dir", required_argument, NULL, 's' }, 0, "s:" },
        { { "help", no_argument, NULL, 'h' }, 0, "h" },
        { { "json", no_argument, NULL, 'j' }, O_JSON, "j" },
        { { "sample", required_argument, NULL, OPT_SAMPLE }, O_SAMPLE, NULL },
        { { "lines", required_argument, NULL, 'n' }, O_LINES, "n:" },
        { { "since", required_argument, NULL, OPT_SINCE }, O_SINCE, NULL },
        { { "for", required_argument, NULL, OPT_FOR }, O_FOR, NULL },
        { { "until", required_argument, NULL, OPT_UNTIL }, O_UNTIL, NULL },
        { { "interval", required_argument, NULL, 'i' }, O_INTERVAL, "i:" },
        { { "iterations", required_argument, NULL, OPT_ITERATIONS }, O_ITERATIONS, NULL },
        { { "config", required_argument, NULL, 'c' }, O_CONFIG, "c:" },
        { { "thp", required_argument, NULL, OPT_THP }, O_THP, NULL },
        { { "policy-dir", required_argument, NULL, 'p' }, O_POLICY_DIR, "p:" },
        { { "output", required_argument, NULL, 'o' }, O_OUTPUT, "o:" },
        { { "type", required_argument, NULL, 't' }, O_TYPE, "t:" },
};
#define N_COMMAND_OPTIONS (sizeof(command_options) / sizeof(command_options[0]))

static void usage(FILE *f) {
        fprintf(f, "Usage: mthpctl [OPTIONS] COMMAND [ARGS]\n"
                   "Show and control mthpd, the mTHP tuning daemon.\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
        fprintf(f,
                "\n'mthpctl COMMAND --help' describes a command and its options.\n\n"
                "Options (before or after the command):\n"
                "  -j, --json            machine-readable output (queries)\n"
                "  -r, --root DIR        host root (default /)\n"
                "  -s, --state-dir DIR   mthpd state directory (default /run/mthpd)\n"
                "      --sample TIME     how long 'status' measures rates (default 500ms; 0: none)\n"
                "  -h, --help            this help\n"
                "      --version         print the version\n\n"
                "mthpctl talks to mthpd on the system bus (org.mthpd.mthpd1). Queries fall back\n"
                "to the host, mthpd's state directory and the journal when it is not running.\n\n"
                "Exit status: 0 success; 1 failure (for check and simulate: an invalid file);\n"
                "2 usage error; 3 mthpd is not running, or runs but is not on the bus (commands\n"
                "that need it); 4 permission denied (run as root).\n"
                "See mthpctl(8), mthpd.dbus(5).\n");
}

static void command_help(const struct command *cmd) {
        printf("Usage: mthpctl %s%s%s\n\n%s", cmd->name, cmd->args[0] ? " " : "", cmd->args, cmd->help);
        printf("\nAlso: -r/--root DIR, -s/--state-dir DIR, -h/--help; see 'mthpctl --help'.\n");
}

static int bad_value(const struct command *cmd, const char *opt, const char *expected, const char *got) {
        fprintf(stderr, "mthpctl: %s: %s: expected %s, got '%s'\n", cmd->name, opt, expected, got);
        return EXIT_USAGE;
}

static int parse_count(const char *s, unsigned long max, unsigned long *v) {
        char *end;
        errno = 0;
        *v = strtoul(s, &end, 10);
        return end == s || *end || errno || *s == '-' || *v == 0 || *v > max ? -EINVAL : 0;
}

/* Parse the command's options (the global ones may follow the command too)
 * and check its arguments. Returns -1 to run it, else an exit status. */
static int parse_command(struct ctl *c, const struct command *cmd, int argc, char **argv, int *first) {
        struct option longopts[N_COMMAND_OPTIONS + 1] = { 0 };
        char shortopts[64] = "", name[64];
        size_t n = 0;
        int o;

        /* exec: options end at CMD, whose own options are its business */
        if (cmd->run == cmd_exec)
                strcat(shortopts, "+");
        for (size_t i = 0; i < N_COMMAND_OPTIONS; i++) {
                if (command_options[i].flag && !(cmd->opts & command_options[i].flag))
                        continue;
                longopts[n++] = command_options[i].opt;
                if (command_options[i].letter)
                        strcat(shortopts, command_options[i].letter);
        }
        snprintf(name, sizeof(name), "mthpctl %s", cmd->name);
        argv[0] = name; /* for getopt's messages */
        optind = 0;     /* glibc: start over */
        while ((o = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                switch (o) {
                case 'r': c->root = optarg; break;
                case 's': c->state_dir = optarg; break;
                case 'j': c->json = true; break;
                case 'h': command_help(cmd); return EXIT_OK;
                case OPT_SAMPLE:
                        if (mthp_timespan_parse(optarg, &c->sample_usec) < 0 || c->sample_usec > 60000000)
                                return bad_value(cmd, "--sample", "a duration up to 60s", optarg);
                        break;
                case 'n':
                        if (parse_count(optarg, 1000000, &c->lines) < 0)
                                return bad_value(cmd, "--lines", "a count from 1", optarg);
                        break;
                case OPT_SINCE:
                        if (mthp_timestamp_parse(optarg, mthp_now_usec(CLOCK_REALTIME), &c->since_usec) < 0)
                                return bad_value(cmd, "--since", "a time like -1h, today or '2025-11-30 10:00'",
                                                 optarg);
                        c->since_set = true;
                        break;
                case OPT_FOR:
                        if (mthp_timespan_parse(optarg, &c->for_usec) < 0 || c->for_usec == 0)
                                return bad_value(cmd, "--for", "a duration like 30min, 2h or 1d", optarg);
                        c->for_set = true;
                        break;
                case OPT_UNTIL:
                        if (mthp_timestamp_parse(optarg, mthp_now_usec(CLOCK_REALTIME), &c->until_usec) < 0)
                                return bad_value(cmd, "--until", "a time like '2025-12-01 08:00', +2h or tomorrow",
                                                 optarg);
                        c->until_set = true;
                        break;
                case 'i':
                        if (mthp_timespan_parse(optarg, &c->interval_usec) < 0 ||
                            c->interval_usec < MTHP_INTERVAL_MIN_USEC || c->interval_usec > MTHP_INTERVAL_MAX_USEC)
                                return bad_value(cmd, "--interval", "a duration from 100ms to 1h", optarg);
                        break;
                case OPT_ITERATIONS:
                        if (parse_count(optarg, ULONG_MAX, &c->iterations) < 0)
                                return bad_value(cmd, "--iterations", "a count from 1", optarg);
                        break;
                case 'c': c->config = optarg; break;
                case 'p': c->policy_dir = optarg; break;
                case 'o': c->output = optarg; break;
                case 't':
                        if (strcmp(optarg, "config") != 0 && strcmp(optarg, "policy") != 0)
                                return bad_value(cmd, "--type", "config (an mthpd.conf) or policy (a policy file)",
                                                 optarg);
                        c->type = optarg;
                        break;
                case OPT_THP:
                        if (strcmp(optarg, "disable") != 0 && strcmp(optarg, "except-advised") != 0 &&
                            strcmp(optarg, "madvise") != 0 && strcmp(optarg, "inherit") != 0)
                                return bad_value(cmd, "--thp", "disable, except-advised or inherit", optarg);
                        c->thp = optarg;
                        break;
                default:
                        fprintf(stderr, "See 'mthpctl %s --help'.\n", cmd->name);
                        return EXIT_USAGE;
                }
        }
        if (c->json && !(cmd->opts & O_JSON)) {
                fprintf(stderr, "mthpctl: %s: has no JSON output\n", cmd->name);
                return EXIT_USAGE;
        }
        int left = argc - optind;
        if (left < cmd->min_args || (cmd->max_args >= 0 && left > cmd->max_args)) {
                fprintf(stderr, "mthpctl: %s: %s; usage: mthpctl %s %s\n", cmd->name,
                        left < cmd->min_args ? "missing arguments" : "too many arguments", cmd->name, cmd->args);
                return EXIT_USAGE;
        }
        *first = optind;
        return -1;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },  { "root", required_argument, NULL, 'r' },
                { "state-dir", required_argument, NULL, 's' }, { "sample", required_argument, NULL, OPT_SAMPLE },
                { "help", no_argument, NULL, 'h' },  { "version", no_argument, NULL, OPT_VERSION }, {},
        };
        struct ctl c = { .root = "/", .state_dir = "/run/mthpd", .sample_usec = 500000, .interval_usec = 1000000 };
        int o;

        while ((o = getopt_long(argc, argv, "+jr:s:h", opts, NULL)) >= 0) {
                switch (o) {
                case 'j': c.json = true; break;
                case 'r': c.root = optarg; break;
                case 's': c.state_dir = optarg; break;
                case OPT_SAMPLE:
                        if (mthp_timespan_parse(optarg, &c.sample_usec) < 0 || c.sample_usec > 60000000) {
                                fprintf(stderr, "mthpctl: --sample: expected a duration up to 60s, got '%s'\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'h': usage(stdout); return EXIT_OK;
                case OPT_VERSION: printf("mthpctl %s\n", MTHP_VERSION); return EXIT_OK;
                default: usage(stderr); return EXIT_USAGE;
                }
        }
        mthp_log_init("mthpctl", false);
        if (optind >= argc) {
                usage(stderr);
                return EXIT_USAGE;
        }
        int at = optind; /* getopt's optind starts over for the command */
        const char *name = argv[at];
        if (strcmp(name, "help") == 0) {
                usage(stdout);
                return EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                if (strcmp(name, commands[i].name) != 0)
                        continue;
                int first, r;
                c.cmd = &commands[i];
                /* the command's argv: its name, then what follows it */
                r = parse_command(&c, c.cmd, argc - at, argv + at, &first);
                if (r >= 0)
                        return r;
                /* a path that does not fit is refused, never cut: a cut
                 * --state-dir named another journal ("nothing to restore") */
                if (strlen(c.state_dir) > MTHP_STATE_DIR_MAX) {
                        fprintf(stderr, "mthpctl: --state-dir %s: expected a path of at most %d bytes\n", c.state_dir,
                                MTHP_STATE_DIR_MAX);
                        return EXIT_USAGE;
                }
                if (c.policy_dir && strlen(c.policy_dir) >= MTHP_PATH_MAX) {
                        fprintf(stderr, "mthpctl: --policy-dir %s: expected a path of less than %d bytes\n",
                                c.policy_dir, MTHP_PATH_MAX);
                        return EXIT_USAGE;
                }
                return c.cmd->run(&c, argc - at - first, argv + at + first);
        }
        fprintf(stderr, "mthpctl: unknown command '%s'; see 'mthpctl --help'\n", name);
        return EXIT_USAGE;
}
