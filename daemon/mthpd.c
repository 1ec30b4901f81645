/* SPDX-License-Identifier: MIT */
/* mthpd: samples the host every interval, lets the engine decide the mTHP
 * knobs, applies what changed and explains it. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "mthp-config.h"
#include "mthp/actuator.h"
#include "mthp/config.h"
#include "mthp/density.h"
#include "mthp/engine.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "mthp/procinfo.h"
#include "mthp/record.h"
#include "mthp/sample.h"
#include "mthp/status.h"

#define DEFAULT_CONFIG MTHP_SYSCONFDIR "/mthpd.conf"

struct daemon {
        const char *root;
        const char *config_file;
        bool config_explicit;
        bool once;
        bool dry_run_cli;
        uint64_t interval_cli;
        const char *state_dir_cli;
        struct mthp_config cfg;
        struct mthp_host *host;
        struct mthp_caps caps;
        struct mthp_sampler *sampler;
        struct mthp_density_sampler *density;
        struct mthp_procinfo *procinfo;
        struct mthp_actuator act;
        struct mthp_engine_state engine;
        struct mthp_snapshot snap;
        struct mthp_decision decisions[MTHP_KNOBS_MAX];
        int n_decisions;
        char last_error[MTHP_KNOBS_MAX][512]; /* rate-limit: log each distinct error once */
        unsigned changes;
        bool density_error_logged;
        const char *record_file;            /* --record */
        struct mthp_record_writer *recorder; /* NULL: not recording (or it failed) */
        sd_event *event;
        sd_event_source *timer;
        int lock_fd;
        int exit_code;
};

static void usage(FILE *f) {
        fprintf(f,
                "Usage: mthpd [OPTIONS]\n"
                "Tune Linux multi-size transparent hugepages (mTHP) from how workloads fault.\n\n"
                "  -c, --config FILE     configuration (default " DEFAULT_CONFIG "; built-in\n"
                "                        defaults if that file does not exist)\n"
                "  -i, --interval TIME   sampling interval (default 1s; e.g. 500ms, 2s)\n"
                "  -n, --dry-run         decide and log, write nothing\n"
                "  -1, --once            sample twice one interval apart, decide, apply, exit;\n"
                "                        the restore journal stays so 'mthpctl restore' undoes it\n"
                "  -r, --root DIR        host root for /sys, /proc and cgroups (default /)\n"
                "  -s, --state-dir DIR   restore journal and status (default /run/mthpd)\n"
                "  -v, --verbose         log every tick's reasoning\n"
                "      --record FILE     write every tick's snapshot to FILE, for\n"
                "                        'mthpctl simulate FILE'\n"
                "  -h, --help            this help\n"
                "      --version         print the version\n\n"
                "Signals: SIGTERM/SIGINT restore every knob and exit 0; SIGHUP reloads the\n"
                "configuration (all of it or none of it).\n"
                "See mthpd(8), mthpd.conf(5).\n");
}

static int load_config(struct daemon *d, struct mthp_config *out) {
        char err[4096];
        struct mthp_config c;
        mthp_config_defaults(&c);
        if (d->config_explicit || access(d->config_file, F_OK) == 0) {
                int r = mthp_config_load(d->config_file, &c, err, sizeof(err));
                if (r < 0) {
                        /* one line per error, each naming file and line */
                        for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"))
                                mthp_log(LOG_ERR, "%s", line);
                        return r;
                }
        }
        if (d->interval_cli)
                c.interval_usec = d->interval_cli;
        if (d->dry_run_cli)
                c.mode = MTHP_MODE_DRY_RUN;
        if (d->state_dir_cli)
                snprintf(c.state_dir, sizeof(c.state_dir), "%s", d->state_dir_cli);
        *out = c;
        return 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void apply(struct daemon *d) {
        for (int i = 0; i < d->n_decisions; i++) {
                const struct mthp_decision *dec = &d->decisions[i];
                char err[512];
                int r = mthp_knob_write(&d->act, dec->knob, dec->value, dec->reason, err, sizeof(err));
                if (r > 0)
                        d->changes++;
                if (r >= 0) {
                        d->last_error[dec->knob][0] = 0;
                        continue;
                }
                if (strcmp(d->last_error[dec->knob], err) != 0) {
                        mthp_log(LOG_ERR, "%s", err);
                        snprintf(d->last_error[dec->knob], sizeof(d->last_error[0]), "%s", err);
                }
        }
}

static void notify_status(struct daemon *d) {
        char s[256], top[_MTHP_KIND_MAX][16];
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n = mthp_engine_ladder(&d->cfg.engine, &d->caps, k, ladder);
                unsigned lvl = d->engine.kind[k].level;
                if (lvl && lvl <= n)
                        mthp_format_size(d->caps.sizes[ladder[lvl - 1]].kb, top[k], sizeof(top[k]));
                else
                        snprintf(top[k], sizeof(top[k]), "original");
        }
        snprintf(s, sizeof(s), "STATUS=%s: anon up to %s, shmem up to %s; %.0f fault pages/s; %u changes",
                 d->cfg.mode == MTHP_MODE_DRY_RUN ? "dry run" : "managing", top[MTHP_ANON], top[MTHP_SHMEM],
                 d->snap.fault_pages_rate, d->changes);
        sd_notify(0, s);
}

/* Reduce the density sampler's report to what the engine and a recording
 * need: the most faulting processes, per kind and size. */
static void density_view(struct daemon *d, const struct mthp_density_report *rep, struct mthp_density_view *v) {
        memset(v, 0, sizeof(*v));
        v->valid = true;
        v->usec = (double) rep->usec;
        for (unsigned i = 0; i < rep->n_procs && v->n_procs < MTHP_DENSITY_PROCS; i++) {
                const struct mthp_density_proc *p = &rep->procs[i];
                struct mthp_proc_density *o = &v->proc[v->n_procs++];
                o->pid = p->pid;
                mthp_strcpy(o->comm, sizeof(o->comm), p->comm);
                o->fault_rate = p->minflt_rate;
                o->new_proc = p->rate_from_lifetime;
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        o->rss_kb[k] = p->kind[k].rss_bytes / 1024;
                        for (unsigned j = 0; j < d->caps.n_sizes; j++) {
                                o->coverage[k][j] = NAN;
                                o->zero[k][j] = NAN;
                                o->blocks[k][j] = 0;
                                for (unsigned m = 0; m < rep->n_sizes; m++)
                                        if (p->kind[k].size[m].kb == d->caps.sizes[j].kb) {
                                                o->coverage[k][j] = p->kind[k].size[m].coverage;
                                                o->zero[k][j] = p->kind[k].size[m].zero_fraction;
                                                o->blocks[k][j] = (double) p->kind[k].size[m].blocks;
                                        }
                        }
                }
        }
}

/* --record: the snapshot exactly as the engine gets it. A failed write
 * stops the recording, never the daemon. */
static void record_tick(struct daemon *d) {
        if (!d->recorder)
                return;
        int r = mthp_record_write(d->recorder, &d->snap);
        if (r < 0) {
                mthp_log(LOG_ERR, "recording to %s failed: %s; recording stops, mthpd carries on", d->record_file,
                         mthp_errno_words(r));
                mthp_record_close_write(d->recorder);
                d->recorder = NULL;
        }
}

static int tick(struct daemon *d) {
        struct mthp_engine_state next;
        uint64_t t = now_usec();
        int r = mthp_sampler_take(d->sampler, t, &d->snap);
        if (r < 0) {
                mthp_log(LOG_ERR, "sampling failed: %s; keeping the current settings", mthp_errno_words(r));
                return 0;
        }
        if (d->density) {
                struct mthp_density_report rep;
                r = mthp_density_tick(d->density, t, &rep);
                if (r == 0) {
                        density_view(d, &rep, &d->snap.density);
                        mthp_procinfo_enrich(d->procinfo, &d->snap.density);
                }
                else if (!d->density_error_logged) {
                        mthp_log(LOG_WARNING, "density sampling failed: %s; deciding without it",
                                 mthp_errno_words(r));
                        d->density_error_logged = true;
                }
        }
        record_tick(d);
        mthp_actuator_check_foreign(&d->act, (const char(*)[MTHP_VALUE_MAX]) d->snap.knob);
        d->n_decisions = mthp_engine_decide(&d->cfg.engine, &d->caps, &d->snap, &d->engine, &next, d->decisions,
                                            MTHP_KNOBS_MAX);
        d->engine = next;
        for (int i = 0; i < d->n_decisions; i++)
                mthp_log(LOG_DEBUG, "tick %llu %s: %s", (unsigned long long) d->snap.tick,
                         d->caps.knobs[d->decisions[i].knob].id, d->decisions[i].reason);
        apply(d);
        (void) mthp_status_file_write(d->cfg.state_dir, &d->caps, &d->snap, d->decisions, d->n_decisions,
                                      d->cfg.mode == MTHP_MODE_DRY_RUN);
        notify_status(d);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct daemon *d = userdata;
        tick(d);
        if (d->once && d->snap.tick >= 1)
                return sd_event_exit(d->event, 0);
        return sd_event_source_set_time(s, usec + d->cfg.interval_usec);
}

static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;
        (void) s;
        mthp_log(LOG_INFO, "%s: restoring every knob mthpd changed", si->ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
        sd_notify(0, "STOPPING=1\nSTATUS=restoring original settings");
        return sd_event_exit(d->event, 0);
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;
        struct mthp_config c;
        char buf[64];
        (void) s;
        (void) si;
        snprintf(buf, sizeof(buf), "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long) now_usec());
        sd_notify(0, buf);
        if (load_config(d, &c) < 0)
                mthp_log(LOG_ERR, "reload of %s failed: keeping the running configuration", d->config_file);
        else {
                bool dir_changed = strcmp(c.state_dir, d->cfg.state_dir) != 0;
                if (dir_changed) {
                        mthp_log(LOG_WARNING, "StateDirectory cannot change on reload; keeping %s", d->cfg.state_dir);
                        snprintf(c.state_dir, sizeof(c.state_dir), "%s", d->cfg.state_dir);
                }
                if (c.mode != d->cfg.mode && c.mode == MTHP_MODE_DRY_RUN) {
                        /* going to dry-run: put the host back first */
                        mthp_actuator_restore(&d->act);
                }
                d->act.dry_run = c.mode == MTHP_MODE_DRY_RUN;
                d->cfg = c;
                sd_event_source_set_time(d->timer, now_usec() + d->cfg.interval_usec);
                mthp_log(LOG_INFO, "reloaded %s", d->config_file);
        }
        sd_notify(0, "READY=1");
        notify_status(d);
        return 0;
}

static int take_lock(struct daemon *d) {
        char path[MTHP_PATH_MAX + 8];
        snprintf(path, sizeof(path), "%s/lock", d->cfg.state_dir);
        d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (d->lock_fd < 0)
                return -errno;
        if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        return 0;
}

static int startup(struct daemon *d) {
        int r;
        char buf[4096];

        if (load_config(d, &d->cfg) < 0)
                return -EINVAL;
        r = mthp_host_open(d->root, &d->host);
        if (r < 0) {
                mthp_log(LOG_ERR, "cannot open host root %s: %s", d->root, mthp_errno_words(r));
                return r;
        }
        r = mthp_probe(d->host, &d->caps);
        if (r < 0) {
                mthp_log(LOG_ERR, "no transparent hugepage support under %s" MTHP_THP_DIR ": %s", d->root,
                         mthp_errno_words(r));
                return r;
        }
        mthp_caps_describe(&d->caps, buf, sizeof(buf));
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
                mthp_log(LOG_INFO, "probe: %s", line);

        bool dry = d->cfg.mode == MTHP_MODE_DRY_RUN;
        if (mkdir(d->cfg.state_dir, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                if (!dry) {
                        /* without a journal we could not undo our writes: refuse */
                        mthp_log(LOG_ERR, "cannot create state directory %s: %s; refusing to change knobs "
                                 "without a restore journal", d->cfg.state_dir, mthp_errno_words(r));
                        return r;
                }
        } else {
                r = take_lock(d);
                if (r < 0) {
                        mthp_log(LOG_ERR, "another mthpd holds %s/lock: %s", d->cfg.state_dir, mthp_errno_words(r));
                        return r;
                }
        }
        r = mthp_actuator_init(&d->act, d->host, &d->caps, d->cfg.state_dir, dry);
        if (r < 0) {
                mthp_log(LOG_ERR, "cannot prepare %s: %s", d->cfg.state_dir, mthp_errno_words(r));
                return r;
        }
        if (access(d->act.journal_file, F_OK) == 0) {
                /* the last run died without restoring: put things back first */
                unsigned n = 0;
                mthp_log(LOG_WARNING, "found restore journal %s from a run that did not stop cleanly; restoring",
                         d->act.journal_file);
                r = mthp_journal_restore(d->host, d->act.journal_file, &n);
                if (r != 0) {
                        mthp_log(LOG_ERR, "could not restore everything from %s (%d left); fix it or run "
                                 "'mthpctl restore', then start again", d->act.journal_file, r < 0 ? -1 : r);
                        return r < 0 ? r : -EIO;
                }
                mthp_log(LOG_INFO, "restored %u knobs from the previous run", n);
        }
        r = mthp_sampler_new(d->host, &d->caps, &d->sampler);
        if (r < 0)
                return r;
        unsigned sizes[MTHP_SIZES_MAX], n = 0;
        for (unsigned i = 0; i < d->caps.n_sizes; i++)
                if (d->caps.sizes[i].kb <= MTHP_DENSITY_MAX_KB)
                        sizes[n++] = d->caps.sizes[i].kb;
        r = mthp_procinfo_new(d->host, &d->caps, &d->procinfo);
        if (r < 0)
                return r;
        r = mthp_density_new(d->host, sizes, n, NULL, &d->density);
        if (r < 0) {
                mthp_log(LOG_WARNING, "density sampler unavailable: %s; sizes above %uK stay off",
                         mthp_errno_words(r), d->cfg.engine.unmeasured_max_kb);
                d->density = NULL;
        }
        return 0;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' }, { "interval", required_argument, NULL, 'i' },
                { "dry-run", no_argument, NULL, 'n' },      { "once", no_argument, NULL, '1' },
                { "root", required_argument, NULL, 'r' },   { "state-dir", required_argument, NULL, 's' },
                { "verbose", no_argument, NULL, 'v' },      { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },      { "record", required_argument, NULL, 'R' },
                {},
        };
        struct daemon d = { .root = "/", .config_file = DEFAULT_CONFIG, .lock_fd = -1 };
        bool verbose = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "c:i:n1r:s:vh", opts, NULL)) >= 0) {
                switch (c) {
                case 'c': d.config_file = optarg; d.config_explicit = true; break;
                case 'i':
                        if (mthp_parse_duration(optarg, &d.interval_cli) < 0 || d.interval_cli < 100000) {
                                fprintf(stderr, "mthpd: --interval: expected a duration of at least 100ms, got '%s'\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'n': d.dry_run_cli = true; break;
                case '1': d.once = true; break;
                case 'r': d.root = optarg; break;
                case 's': d.state_dir_cli = optarg; break;
                case 'v': verbose = true; break;
                case 'R': d.record_file = optarg; break;
                case 'h': usage(stdout); return 0;
                case 'V': printf("mthpd %s\n", MTHP_VERSION); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "mthpd: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        mthp_log_init("mthpd", verbose);

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = startup(&d);
        if (r < 0) {
                sd_notifyf(0, "STATUS=failed to start: %s\nERRNO=%d", mthp_errno_words(r), -r);
                return 1;
        }
        if (d.record_file && (r = mthp_record_open_write(d.record_file, &d.caps, &d.recorder)) < 0) {
                mthp_log(LOG_ERR, "cannot record to %s: %s", d.record_file, mthp_errno_words(r));
                return 1;
        }
        mthp_log(LOG_INFO, "%s every %.1fs (%s; state in %s)",
                 d.cfg.mode == MTHP_MODE_DRY_RUN ? "dry run: deciding without writing" : "managing mTHP knobs",
                 (double) d.cfg.interval_usec / 1e6, d.once ? "once" : "until stopped", d.cfg.state_dir);

        if ((r = sd_event_default(&d.event)) < 0 ||
            (r = sd_event_add_signal(d.event, NULL, SIGTERM, on_stop, &d)) < 0 ||
            (r = sd_event_add_signal(d.event, NULL, SIGINT, on_stop, &d)) < 0 ||
            (r = sd_event_add_signal(d.event, NULL, SIGHUP, on_reload, &d)) < 0 ||
            (r = sd_event_add_time(d.event, &d.timer, CLOCK_MONOTONIC, now_usec(), 0, on_timer, &d)) < 0 ||
            (r = sd_event_source_set_enabled(d.timer, SD_EVENT_ON)) < 0 ||
            /* pings WATCHDOG=1 at WATCHDOG_USEC/2 when the manager asks for it */
            (r = sd_event_set_watchdog(d.event, true)) < 0) {
                mthp_log(LOG_ERR, "event loop setup failed: %s", strerror(-r));
                return 1;
        }
        sd_event_source_set_time_accuracy(d.timer, 1000);
        sd_notify(0, "READY=1");

        r = sd_event_loop(d.event);
        if (r < 0)
                mthp_log(LOG_ERR, "event loop failed: %s", strerror(-r));

        d.exit_code = r < 0 ? 1 : 0;
        if (!d.once) {
                sd_notify(0, "STOPPING=1");
                int left = mthp_actuator_restore(&d.act);
                if (left != 0) {
                        mthp_log(LOG_ERR, "%d knob(s) could not be restored; the journal %s keeps their originals",
                                 left < 0 ? -1 : left, d.act.journal_file);
                        d.exit_code = 1;
                } else
                        mthp_log(LOG_INFO, "all knobs restored; exiting");
        } else if (d.act.journal.n > 0)
                mthp_log(LOG_INFO, "--once: leaving %u knob(s) set; 'mthpctl restore' puts them back",
                         d.act.journal.n);
        mthp_status_file_remove(d.cfg.state_dir);
        sd_event_source_unref(d.timer);
        sd_event_unref(d.event);
        if (mthp_record_close_write(d.recorder) < 0)
                mthp_log(LOG_WARNING, "closing the recording %s failed; its last tick may be missing", d.record_file);
        mthp_sampler_free(d.sampler);
        mthp_density_free(d.density);
        mthp_procinfo_free(d.procinfo);
        mthp_host_free(d.host);
        if (d.lock_fd >= 0)
                close(d.lock_fd);
        return d.exit_code;
}
