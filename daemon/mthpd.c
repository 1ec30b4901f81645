/* SPDX-License-Identifier: MIT */
/* mthpd: main, the signals, the loop and the watchdog. The manager
 * (manager.c) samples the host every interval, lets the engine decide the
 * mTHP knobs, applies what changed and explains it. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "bus.h"
#include "guard.h"
#include "daemon.h"
#include "mthp-config.h"
#include "mthp/escape.h"
#include "mthp/log.h"
#include "mthp/timespan.h"
#include "mthp/util.h"

#define DEFAULT_CONFIG MTHP_SYSCONFDIR "/mthpd.conf"

static void usage(FILE *f) {
        fprintf(f,
                "Usage: mthpd [OPTIONS]\n"
                "Tune Linux multi-size transparent hugepages (mTHP) from how workloads fault.\n\n"
                "  -c, --config FILE     configuration: FILE, then FILE.d/*.conf (default the\n"
                "                        first mthpd.conf of " MTHP_SYSCONFDIR ", " MTHP_RUNDIR ",\n"
                "                        " MTHP_VENDORDIR " (built-in defaults if none), then\n"
                "                        mthpd.conf.d/*.conf of all three by file name, the\n"
                "                        first directory's file masking the same name in the\n"
                "                        others; see mthpd.conf(5), FILES)\n"
                "  -i, --interval TIME   sampling interval (default 1s; e.g. 500ms, 2s)\n"
                "  -m, --mode MODE       manage (write the knobs) or observe (decide and explain,\n"
                "                        write nothing); default Mode= of the configuration\n"
                "  -n, --dry-run         the same as --mode observe\n"
                "  -1, --once            sample twice one interval apart, decide, apply, exit;\n"
                "                        the restore journal stays so 'mthpctl restore' undoes it\n"
                "  -r, --root DIR        host root for /sys, /proc and cgroups (default /)\n"
                "  -s, --state-dir DIR   restore journal and status (default /run/mthpd)\n"
                "  -v, --verbose         log every tick's reasoning\n"
                "      --record FILE     write every tick's snapshot to FILE, for\n"
                "                        'mthpctl simulate FILE'\n"
                "      --no-bus          do not serve org.mthpd.mthpd1 on the system bus\n"
                "  -p, --policy-dir DIR  per-cgroup policy files (default PolicyDirectory=,\n"
                "                        " MTHP_SYSCONFDIR "/policy.d)\n"
                "  -h, --help            this help\n"
                "      --version         print the version\n\n"
                "Signals: SIGTERM/SIGINT restore every knob and exit 0; SIGHUP reloads the\n"
                "configuration (all of it or none of it; a burst of SIGHUPs reloads at most\n"
                "every 250 ms and never delays a tick).\n"
                "Exit status: 0 stopped cleanly, or a kernel without per-size mTHP knobs (before\n"
                "Linux 6.8: nothing to manage), 1 failure, 2 wrong usage, 4 the knobs cannot be\n"
                "written (read-only /sys, EACCES) and observe mode was not asked for, 6 the\n"
                "restore journal of an earlier run cannot be restored (needs the administrator),\n"
                "78 the configuration or a policy file is invalid.\n"
                "See mthpd(8), mthpd.conf(5), mthpd.policy(5).\n");
}

/* when the tick timer last fired (CLOCK_MONOTONIC usec, 0 never): where a
 * reload puts the next regular tick */
static uint64_t last_timer_usec;

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct daemon *d = userdata;
        last_timer_usec = mthp_now_usec(CLOCK_MONOTONIC);
        uint64_t next = daemon_timer_tick(d, usec);
        if (d->once && d->snap.tick >= 1)
                return sd_event_exit(d->event, 0);
        return sd_event_source_set_time(s, next);
}

/* WATCHDOG=1 every third of WATCHDOG_USEC, from the event loop so that a
 * stuck tick stops it. sd_event_set_watchdog() pings anywhere between 1/2 and
 * 3/4 of the timeout, later than the half systemd asks for, and with the
 * default 1 s interval it did (0.7 s gaps for WATCHDOG_USEC=1 s). */
static uint64_t watchdog_usec;

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) userdata;
        sd_notify(0, "WATCHDOG=1");
        int r = sd_event_source_set_time(s, usec + watchdog_usec / 3);
        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* 0 when the manager asked for no watchdog (or for another PID's). */
static int watchdog_start(sd_event *e) {
        int r = sd_watchdog_enabled(false, &watchdog_usec);
        if (r <= 0)
                return r;
        return sd_event_add_time(e, NULL, CLOCK_MONOTONIC, mthp_now_usec(CLOCK_MONOTONIC), 1000, on_watchdog, NULL);
}

static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;
        (void) s;
        mthp_log(LOG_INFO, "%s: %s", si->ssi_signo == SIGINT ? "SIGINT" : "SIGTERM",
                 mthp_actuator_journal(d->act)->n ? "restoring every knob mthpd changed" : "stopping");
        sd_notify(0, "STOPPING=1\nSTATUS=restoring original settings");
        return sd_event_exit(d->event, 0);
}

/* SIGHUP: reloads are coalesced and spaced. A signal only arms the reload
 * timer; the reload runs once, for every SIGHUP that came before it, at
 * least RELOAD_GAP_USEC after the previous one ended. And a reload never
 * puts off the next regular tick: it sets the tick timer a whole interval
 * ahead (the next tick a regular one), which a SIGHUP every few ms turned
 * into no tick at all (1,500 SIGHUPs: 23 s without one); the timer goes
 * back to one interval after the last tick when that is sooner. */
#define RELOAD_GAP_USEC 250000ULL

static sd_event_source *reload_src;
static uint64_t last_reload_usec;

static int on_reload_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct daemon *d = userdata;
        char err[4096];
        (void) s;
        (void) usec;
        (void) daemon_reload(d, err, sizeof(err));
        uint64_t now = mthp_now_usec(CLOCK_MONOTONIC), next;
        uint64_t regular = last_timer_usec + d->cfg.interval_usec;
        if (last_timer_usec && sd_event_source_get_time(d->timer, &next) >= 0 && next > regular)
                (void) sd_event_source_set_time(d->timer, regular > now ? regular : now);
        last_reload_usec = now;
        return 0;
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) s;
        (void) si;
        (void) userdata;
        int on = SD_EVENT_OFF;
        if (sd_event_source_get_enabled(reload_src, &on) >= 0 && on != SD_EVENT_OFF)
                return 0; /* one is due: it covers this signal too */
        uint64_t now = mthp_now_usec(CLOCK_MONOTONIC), at = last_reload_usec + RELOAD_GAP_USEC;
        (void) sd_event_source_set_time(reload_src, last_reload_usec && at > now ? at : now);
        (void) sd_event_source_set_enabled(reload_src, SD_EVENT_ONESHOT);
        return 0;
}

/* Descriptors: the cgroup monitor keeps up to 5 per managed cgroup and
 * stops short of the soft RLIMIT_NOFILE by a reserve for the knob writes
 * (mthp/cgmon.h), so the soft limit is what bounds it. mthpd waits on
 * descriptors only through epoll (sd-event), never select(), so numbers
 * above 1,024 are safe: raise the soft limit to the hard one (the unit's
 * LimitNOFILE=) before anything is opened. */
static void raise_nofile(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        rlim_t was = rl.rlim_cur;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
                        mthp_log(LOG_DEBUG, "descriptors: cannot raise the soft RLIMIT_NOFILE %llu to %llu: %s",
                                 (unsigned long long) was, (unsigned long long) rl.rlim_max, mthp_errno_words(-errno));
                        return;
                }
        }
        mthp_log(LOG_DEBUG, "descriptors: soft RLIMIT_NOFILE %llu (was %llu)", (unsigned long long) rl.rlim_cur,
                 (unsigned long long) was);
}

/* A directory option is used whole or refused here, at once: the path is
 * copied into the configuration later, and an error quoting a path of
 * thousands of bytes was itself cut before it said what was expected. */
static bool dir_option_fits(const char *option, const char *path, size_t max) {
        size_t len = strlen(path);
        if (path[0] == '/' && len <= max)
                return true;
        /* at most 512 bytes of it quoted: the rest of the line must show */
        static char shown[4 * 512 + 1];
        mthp_escape_n(shown, sizeof(shown), path, 512);
        fprintf(stderr, "mthpd: %s %s%s: expected an absolute path of at most %zu bytes, got %zu bytes\n", option,
                shown, len > 512 ? "..." : "", max, len);
        return false;
}

/* The command line into d; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct daemon *d, bool *verbose) {
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' }, { "interval", required_argument, NULL, 'i' },
                { "dry-run", no_argument, NULL, 'n' },      { "once", no_argument, NULL, '1' },
                { "root", required_argument, NULL, 'r' },   { "state-dir", required_argument, NULL, 's' },
                { "verbose", no_argument, NULL, 'v' },      { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },      { "record", required_argument, NULL, 'R' },
                { "no-bus", no_argument, NULL, 'B' },       { "policy-dir", required_argument, NULL, 'p' },
                { "mode", required_argument, NULL, 'm' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "c:i:m:n1p:r:s:vh", opts, NULL)) >= 0) {
                switch (c) {
                case 'c': d->config_file = optarg; d->config_explicit = true; break;
                case 'i':
                        if (mthp_timespan_parse(optarg, &d->interval_cli) < 0 ||
                            d->interval_cli < MTHP_INTERVAL_MIN_USEC || d->interval_cli > MTHP_INTERVAL_MAX_USEC) {
                                fprintf(stderr, "mthpd: --interval: expected a duration from 100ms to 1h (e.g. 1s, "
                                        "500ms, 1min 30s), got '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'm': {
                        enum mthp_mode mode;
                        if (daemon_mode_from_name(optarg, &mode) < 0) {
                                fprintf(stderr, "mthpd: --mode: expected manage or observe, got '%s'\n", optarg);
                                return 2;
                        }
                        d->mode_override = (int) mode;
                        break;
                }
                case 'n': d->mode_override = MTHP_MODE_OBSERVE; break;
                case '1': d->once = true; break;
                case 'r': d->root = optarg; break;
                case 's':
                        if (!dir_option_fits("--state-dir", optarg, MTHP_STATE_DIR_MAX))
                                return 2;
                        d->state_dir_cli = optarg;
                        break;
                case 'v': *verbose = true; break;
                case 'R': d->record_file = optarg; break;
                case 'B': d->no_bus_cli = true; break;
                case 'p':
                        if (!dir_option_fits("--policy-dir", optarg, MTHP_PATH_MAX - 1))
                                return 2;
                        d->policy_dir_cli = optarg;
                        break;
                case 'h': usage(stdout); return 0;
                case 'V': printf("mthpd %s\n", MTHP_VERSION); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "mthpd: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        return -1;
}

/* The signals, the tick timer and the watchdog on d->event, then the guard
 * and the bus, which live on it. */
static int setup_loop(struct daemon *d) {
        int r;
        if ((r = sd_event_default(&d->event)) < 0 ||
            (r = sd_event_add_signal(d->event, NULL, SIGTERM, on_stop, d)) < 0 ||
            (r = sd_event_add_signal(d->event, NULL, SIGINT, on_stop, d)) < 0 ||
            (r = sd_event_add_signal(d->event, NULL, SIGHUP, on_reload, d)) < 0 ||
            (r = sd_event_add_time(d->event, &reload_src, CLOCK_MONOTONIC, UINT64_MAX, 1000, on_reload_timer, d)) < 0 ||
            (r = sd_event_source_set_enabled(reload_src, SD_EVENT_OFF)) < 0 ||
            (r = sd_event_source_set_floating(reload_src, true)) < 0 ||   /* the loop owns it */
            (r = sd_event_add_time(d->event, &d->timer, CLOCK_MONOTONIC, mthp_now_usec(CLOCK_MONOTONIC), 0, on_timer, d)) < 0 ||
            (r = sd_event_source_set_enabled(d->timer, SD_EVENT_ON)) < 0 ||
            (r = watchdog_start(d->event)) < 0) {
                mthp_log(LOG_ERR, "event loop setup failed: %s", strerror(-r));
                return r;
        }
        sd_event_source_set_time_accuracy(d->timer, 1000);
        if (guard_new(d, &d->guard) < 0)
                mthp_log(LOG_WARNING, "no memory cgroup hierarchy: the limited-cgroup guard is off");
        if (d->cfg.bus)
                (void) bus_open(d, &d->bus); /* it says why not; mthpd works without it */
        return 0;
}

int main(int argc, char **argv) {
        _cleanup_(daemon_freep) struct daemon *d = NULL;
        bool verbose = false;
        int r;

        if (daemon_new(&d) < 0) {
                fprintf(stderr, "mthpd: out of memory\n");
                return 1;
        }
        d->config_file = DEFAULT_CONFIG;
        r = parse_args(argc, argv, d, &verbose);
        if (r >= 0)
                return r;
        mthp_log_init("mthpd", verbose);
        raise_nofile();

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = daemon_startup(d);
        if (r == -EOPNOTSUPP && d->host && !d->caps.n_sizes) {
                /* a kernel without mTHP (open_host said it): exit 0, so that
                 * a unit started at install is neither failed nor restarted */
                sd_notifyf(0, "READY=1\nSTATUS=not running: %s", d->start_failure);
                return 0;
        }
        if (r < 0) {
                if (d->exit_code == MTHPD_EXIT_NOT_WRITABLE)
                        sd_notifyf(0, "STATUS=not started: cannot write the mTHP knobs (%s); --mode observe only "
                                   "decides and explains\nERRNO=%d", d->not_writable, -r);
                else
                        sd_notifyf(0, "STATUS=failed to start: %s\nERRNO=%d",
                                   d->start_failure[0] ? d->start_failure : mthp_errno_words(r), -r);
                return d->exit_code ? d->exit_code : 1;
        }
        if (d->record_file && (r = mthp_record_open_write(d->record_file, &d->caps, &d->recorder)) < 0) {
                mthp_log(LOG_ERR, "cannot record to %s: %s", d->record_file, strerror(-r));
                return 1;
        }
        mthp_log(LOG_INFO, "%s every %.1fs (%s; state in %s)",
                 d->cfg.mode == MTHP_MODE_OBSERVE ? "observing: deciding and explaining without writing"
                                                  : "managing mTHP knobs",
                 (double) d->cfg.interval_usec / 1e6, d->once ? "once" : "until stopped", d->cfg.state_dir);

        if (setup_loop(d) < 0)
                return 1;
        sd_notify(0, "READY=1");

        r = sd_event_loop(d->event);
        if (r < 0)
                mthp_log(LOG_ERR, "event loop failed: %s", strerror(-r));
        return daemon_stop(d, r < 0 ? 1 : 0);
}
