/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "guard.h"
#include "mthp/limits.h"
#include "mthp/log.h"
#include "mthp/util.h"

#define GUARD_WATCHES 512
#define GUARD_ARMED (MTHP_SNAP_LIMITED + 16)
#define GUARD_NEW_KB (16 * 1024)   /* a new cgroup's probe threshold */
#define GUARD_POLL_MS 10           /* v2: reading memory.current of the armed cgroups */
#define GUARD_LAT_KEEP 256
#define GUARD_YOUNG 16
#define GUARD_YOUNG_USEC (60 * 1000000ULL) /* a new cgroup keeps a probe this long */

struct armed {
        char path[MTHP_CGROUP_PATH_MAX];   /* "": free */
        bool probe;                        /* a new cgroup's probe, limit unknown when armed */
        uint64_t armed_kb, threshold_kb;
        int efd;                           /* v1 eventfd, or v2 memory.events fd; -1 none */
        uint64_t ev_high, ev_max;          /* v2: memory.events counters when armed */
        sd_event_source *src;
        struct guard *g;
};

struct watch {
        int wd;
        char rel[MTHP_CGROUP_PATH_MAX];
};

struct guard {
        struct daemon *d;
        bool v1;
        const char *base;
        int ino_fd;
        sd_event_source *ino_src, *poll_src;
        /* the start grace's check for new cgroups: one at once, then at
         * most one per GUARD_CHECK_GAP_USEC however many cgroups come */
        sd_event_source *check_src;
        uint64_t last_check_usec;
        unsigned n_watches;
        struct watch watches[GUARD_WATCHES];
        struct armed armed[GUARD_ARMED];
        /* cgroups created lately (inotify): their limit and processes may
         * come after the next tick's scan, so each tick re-arms a probe */
        struct {
                char path[MTHP_CGROUP_PATH_MAX];
                uint64_t created_usec;
        } young[GUARD_YOUNG];
        uint64_t trips;
        unsigned n_lat;
        double lat_us[GUARD_LAT_KEEP];
        bool arm_error_logged;
        struct mthp_limits_stats scan;  /* the last scan's */
        bool scanned;                   /* scan holds one */
        uint64_t last_scan_usec;
        bool said_uncarried;
};

static void disarm(struct armed *a) {
        a->src = sd_event_source_disable_unref(a->src);
        if (a->efd >= 0)
                close(a->efd);
        a->efd = -1;
        a->path[0] = 0;
}

static void disarm_all(struct guard *g) {
        for (unsigned i = 0; i < GUARD_ARMED; i++)
                disarm(&g->armed[i]);
        if (g->poll_src)
                (void) sd_event_source_set_enabled(g->poll_src, SD_EVENT_OFF);
}

static bool raised(const struct daemon *d) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (d->engine.kind[k].level > 0)
                        return true;
        return false;
}

static int v2_events(struct guard *g, const char *path, uint64_t *high, uint64_t *max) {
        char f[PATH_MAX + 32], buf[512];
        if (snprintf(f, sizeof(f), "%s%s/memory.events", g->base, mthp_limits_resolve(path)) >= (int) sizeof(f))
                return -ENAMETOOLONG;
        int r = mthp_host_read_whole(g->d->host, f, buf, sizeof(buf));
        return r < 0 ? r : mthp_parse_memory_events(buf, high, max);
}

static void record_latency(struct guard *g, double us) {
        g->lat_us[g->n_lat % GUARD_LAT_KEEP] = us;
        g->n_lat++;
}

/* A threshold fired (or the v2 poll saw one crossed): step down at once. */
static void trip(struct guard *g, struct armed *a, uint64_t t_wake, uint64_t usage_kb, uint64_t limit_kb,
                 const char *what) {
        struct daemon *d = g->d;
        struct mthp_guard_trip tr = { .usage_kb = usage_kb, .limit_kb = limit_kb, .armed_usage_kb = a->armed_kb,
                                      .threshold_kb = a->threshold_kb, .what = what,
                                      .hit_limit = strncmp(what, "memory.events", 13) == 0 };
        mthp_strcpy(tr.path, sizeof(tr.path), a->path);
        tr.latency_us = (double) (mthp_now_usec(CLOCK_MONOTONIC) - t_wake);
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n = mthp_engine_guard(&d->cfg.engine, &d->caps, &tr, &d->engine, &next, dec, MTHP_KNOBS_MAX);
        d->engine = next;
        unsigned written = 0;
        double first = 0;
        (void) mthp_actuator_batch(d->act, true);
        for (int i = 0; i < n; i++) {
                char err[512];
                if (d->pin[dec[i].knob].active)
                        continue; /* the administrator's pin holds */
                if (daemon_knob_write(d, dec[i].knob, dec[i].value, dec[i].reason, err, sizeof(err)) < 0)
                        mthp_log(LOG_ERR, "guard: %s", err);
                else if (written++ == 0)
                        first = (double) (mthp_now_usec(CLOCK_MONOTONIC) - t_wake);
        }
        double lat = (double) (mthp_now_usec(CLOCK_MONOTONIC) - t_wake);
        int r = mthp_actuator_batch(d->act, false);
        if (r < 0)
                mthp_log(LOG_ERR, "guard: saving the restore journal %s failed: %s", mthp_actuator_journal_file(d->act),
                         strerror(-r));
        if (n > 0) {
                g->trips++;
                record_latency(g, first);
                mthp_log(LOG_NOTICE,
                         "guard: limited cgroup %s at %.0f of %.0f MiB crossed its %s at %.0f MiB (armed at %.0f "
                         "MiB): %d size knob(s) stepped down (%u written), the largest %.0f us and the last %.0f us after "
                         "the wake-up",
                         a->path, (double) usage_kb / 1024, (double) limit_kb / 1024, what,
                         (double) a->threshold_kb / 1024, (double) a->armed_kb / 1024, n, written, first, lat);
        } else
                mthp_log(LOG_INFO, "guard: cgroup %s crossed its %s (%.0f of %.0f MiB); the sizes in use fit it",
                         a->path, what, (double) usage_kb / 1024, (double) limit_kb / 1024);
        /* a check at once: fresh figures, new thresholds; the step-down
         * is the guard's, and the check counts towards no streak */
        daemon_run_check(d);
}

/* Check one armed cgroup; returns true if it tripped (the tick re-armed everything). */
static bool check(struct guard *g, struct armed *a, uint64_t t_wake, const char *what) {
        uint64_t usage_kb, limit_kb;
        int r = mthp_limits_read(g->d->host, &g->d->caps, a->path, &usage_kb, &limit_kb);
        if (r < 0) {
                /* only a cgroup that is gone is disarmed; a read that failed
                 * once (a file caught while it was rewritten) is tried again
                 * at the next poll, or the guard would sleep until the tick */
                if (r == -ENOENT)
                        disarm(a);
                return false;
        }
        bool crossed = usage_kb >= a->threshold_kb;
        if (!g->v1) {
                uint64_t high, max;
                if (v2_events(g, a->path, &high, &max) == 0 && (high > a->ev_high || max > a->ev_max)) {
                        crossed = true;
                        what = max > a->ev_max ? "memory.events max" : "memory.events high";
                        a->ev_high = high;
                        a->ev_max = max;
                }
        }
        if (!crossed)
                return false;
        if (!limit_kb) {
                /* a new cgroup without a limit: nothing to protect (the next
                 * scan sees it if one is set later) */
                disarm(a);
                return false;
        }
        trip(g, a, t_wake, usage_kb, limit_kb, a->probe ? "new-cgroup probe threshold" : what);
        return true;
}

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct armed *a = userdata;
        uint64_t t = mthp_now_usec(CLOCK_MONOTONIC);
        (void) s;
        (void) revents;
        if (a->g->v1) {
                uint64_t v;
                if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                        return 0;
        }
        (void) check(a->g, a, t, a->g->v1 ? "usage threshold" : "memory.events");
        return 0;
}

static int on_poll(sd_event_source *s, uint64_t usec, void *userdata) {
        struct guard *g = userdata;
        uint64_t t = mthp_now_usec(CLOCK_MONOTONIC);
        bool any = false;
        for (unsigned i = 0; i < GUARD_ARMED; i++) {
                struct armed *a = &g->armed[i];
                if (!a->path[0] || (g->v1 && a->efd >= 0))
                        continue; /* its eventfd wakes us */
                if (check(g, a, t, "usage threshold"))
                        return 0; /* the tick re-armed (and re-timed) everything */
                any = any || a->path[0];
        }
        if (any) {
                (void) sd_event_source_set_time(s, usec + GUARD_POLL_MS * 1000);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        }
        return 0;
}

static struct armed *arm(struct guard *g, const char *path, uint64_t usage_kb, uint64_t threshold_kb, bool probe) {
        struct armed *a = NULL;
        for (unsigned i = 0; i < GUARD_ARMED && !a; i++)
                if (!g->armed[i].path[0])
                        a = &g->armed[i];
        if (!a)
                return NULL;
        mthp_strcpy(a->path, sizeof(a->path), path);
        a->probe = probe;
        a->armed_kb = usage_kb;
        a->threshold_kb = threshold_kb;
        a->g = g;
        int r = 0;
        if (g->v1) {
                a->efd = mthp_limits_arm_v1(g->d->host, &g->d->caps, path, threshold_kb * 1024);
                if (a->efd >= 0)
                        r = sd_event_add_io(g->d->event, &a->src, a->efd, EPOLLIN, on_event, a);
                else {
                        /* e.g. EROFS under the unit's ProtectControlGroups=yes:
                         * read its usage every GUARD_POLL_MS instead */
                        if (mthp_once_set(&g->arm_error_logged))
                                mthp_log(LOG_INFO, "guard: no usage threshold on cgroup %s (%s): reading its usage "
                                         "every %d ms instead", path, mthp_errno_words(a->efd), GUARD_POLL_MS);
                        a->efd = -1;
                }
        } else {
                char f[PATH_MAX + 32];
                snprintf(f, sizeof(f), "%s%s/memory.events", g->base, mthp_limits_resolve(path));
                (void) v2_events(g, path, &a->ev_high, &a->ev_max);
                a->efd = mthp_host_open_file(g->d->host, f, O_RDONLY | O_CLOEXEC);
                r = 0;
                if (a->efd >= 0)
                        r = sd_event_add_io(g->d->event, &a->src, a->efd, EPOLLPRI, on_event, a);
                if (r == -EPERM) {
                        /* not pollable (a fake host's plain file): the poll below does it */
                        close(a->efd);
                        a->efd = -1;
                        r = 0;
                }
        }
        /* v2 always (memory.events only says high/max), v1 without a threshold */
        if ((!g->v1 || a->efd < 0) && g->poll_src) {
                (void) sd_event_source_set_time(g->poll_src, mthp_now_usec(CLOCK_MONOTONIC) + GUARD_POLL_MS * 1000);
                (void) sd_event_source_set_enabled(g->poll_src, SD_EVENT_ON);
        }
        if (r < 0)
                mthp_log(LOG_WARNING, "guard: cannot watch cgroup %s: %s", path, mthp_errno_words(r));
        return a;
}

static void watch_dir(const char *host_path, void *user) {
        struct guard *g = user;
        if (g->ino_fd < 0)
                return;
        if (g->n_watches >= GUARD_WATCHES)
                return; /* before the search: a scan of 10,000 cgroups calls this for each */
        size_t blen = strlen(g->base);
        const char *rel = strncmp(host_path, g->base, blen) == 0 ? host_path + blen : host_path;
        if (strlen(rel) >= sizeof(g->watches[0].rel))
                return; /* its children's paths could not be named in an event */
        for (unsigned i = 0; i < g->n_watches; i++)
                if (strcmp(g->watches[i].rel, rel[0] ? rel : "/") == 0)
                        return;
        _cleanup_close_ int fd = mthp_host_open_file(g->d->host, host_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        int wd = inotify_add_watch(g->ino_fd, p, IN_CREATE | IN_ONLYDIR);
        if (wd < 0)
                return;
        struct watch *w = &g->watches[g->n_watches++];
        w->wd = wd;
        mthp_strcpy(w->rel, sizeof(w->rel), rel[0] ? rel : "/");
}

/* The cgroup a directory-creation event names (path relative to the
 * hierarchy root), or false for other events. */
static bool created_cgroup(const struct guard *g, const struct inotify_event *ev, char *rel, size_t size) {
        if (!(ev->mask & IN_ISDIR) || !(ev->mask & IN_CREATE) || !ev->len)
                return false;
        for (unsigned i = 0; i < g->n_watches; i++) {
                if (g->watches[i].wd != ev->wd)
                        continue;
                int w = snprintf(rel, size, "%s/%s", strcmp(g->watches[i].rel, "/") == 0 ? "" : g->watches[i].rel,
                                 ev->name);
                return w > 0 && w < (int) size;
        }
        return false;
}

/* New cgroups are checked in bursts, as SIGHUPs are reloaded
 * (daemon/mthpd.c): the first at once, and while one is due every later
 * one waits for it; a check runs at least GUARD_CHECK_GAP_USEC after the
 * last. A user who makes and removes a cgroup every 2 ms gets 4 checks a
 * second, not 500 ticks, and a check is no tick to the engine's streaks
 * (daemon_run_check). */
#define GUARD_CHECK_GAP_USEC 250000ULL

static int on_check(sd_event_source *s, uint64_t usec, void *userdata) {
        struct guard *g = userdata;
        (void) s;
        (void) usec;
        daemon_run_check(g->d);
        g->last_check_usec = mthp_now_usec(CLOCK_MONOTONIC);
        return 0;
}

static void check_soon(struct guard *g) {
        int on = SD_EVENT_OFF;
        uint64_t now = mthp_now_usec(CLOCK_MONOTONIC), at = g->last_check_usec + GUARD_CHECK_GAP_USEC;
        if (g->check_src && sd_event_source_get_enabled(g->check_src, &on) >= 0 && on != SD_EVENT_OFF)
                return; /* one is due: it covers this cgroup too */
        if (!g->check_src || !g->last_check_usec || at <= now) {
                daemon_run_check(g->d);
                g->last_check_usec = mthp_now_usec(CLOCK_MONOTONIC);
                return;
        }
        (void) sd_event_source_set_time(g->check_src, at);
        (void) sd_event_source_set_enabled(g->check_src, SD_EVENT_ONESHOT);
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct guard *g = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        char rel[MTHP_CGROUP_PATH_MAX];
        (void) s;
        (void) revents;
        ssize_t len = read(fd, buf, sizeof(buf));
        /* a service a policy wants always for: a check now sets its sizes
         * (its start grace) before it maps memory, not up to an interval
         * later; and the probes below then see the levels it left */
        bool check_now = false;
        for (char *p = buf; len > 0 && p < buf + len && !check_now;) {
                const struct inotify_event *ev = (const struct inotify_event *) p;
                p += sizeof(*ev) + ev->len;
                check_now = created_cgroup(g, ev, rel, sizeof(rel)) && daemon_cgroup_created(g->d, rel);
        }
        if (check_now)
                check_soon(g);
        for (char *p = buf; len > 0 && p < buf + len;) {
                const struct inotify_event *ev = (const struct inotify_event *) p;
                p += sizeof(*ev) + ev->len;
                if (!created_cgroup(g, ev, rel, sizeof(rel)) || !raised(g->d) || mthp_actuator_observing(g->d->act))
                        continue;
                (void) arm(g, rel, 0, GUARD_NEW_KB, true);
                unsigned y = 0;
                for (unsigned k = 1; k < GUARD_YOUNG; k++)
                        if (g->young[k].created_usec < g->young[y].created_usec)
                                y = k; /* the oldest (or a free) slot */
                mthp_strcpy(g->young[y].path, sizeof(g->young[y].path), rel);
                g->young[y].created_usec = mthp_now_usec(CLOCK_MONOTONIC);
        }
        return 0;
}

int guard_new(struct daemon *d, struct guard **ret) {
        struct guard *g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->d = d;
        for (unsigned i = 0; i < GUARD_ARMED; i++)
                g->armed[i].efd = -1;
        g->base = mthp_limits_base(&d->caps, &g->v1);
        if (!g->base) {
                free(g);
                return -ENOENT;
        }
        g->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (g->ino_fd >= 0 && sd_event_add_io(d->event, &g->ino_src, g->ino_fd, EPOLLIN, on_inotify, g) < 0) {
                close(g->ino_fd);
                g->ino_fd = -1;
        }
        if (sd_event_add_time(d->event, &g->poll_src, CLOCK_MONOTONIC, UINT64_MAX, 1000, on_poll, g) >= 0)
                (void) sd_event_source_set_enabled(g->poll_src, SD_EVENT_OFF);
        if (sd_event_add_time(d->event, &g->check_src, CLOCK_MONOTONIC, UINT64_MAX, 1000, on_check, g) >= 0)
                (void) sd_event_source_set_enabled(g->check_src, SD_EVENT_OFF);
        *ret = g;
        return 0;
}

void guard_free(struct guard *g) {
        if (!g)
                return;
        disarm_all(g);
        sd_event_source_disable_unref(g->poll_src);
        sd_event_source_disable_unref(g->check_src);
        sd_event_source_disable_unref(g->ino_src);
        if (g->ino_fd >= 0)
                close(g->ino_fd);
        free(g);
}

/* Does this tick's decision need the memory-limited cgroups? The walk
 * cost ~40 us a cgroup on the 2-vCPU test VM, every tick (~22 us since
 * lib/limits.c lists only cgroups with children and reads each file
 * once): beside 200 memory cgroups an idle mthpd used 0.77% of a core,
 * 0.09% without them.
 * Not needed while nothing is raised (no threshold to arm, no level a
 * limit could force down), no policy file is loaded (a policy raises its
 * sizes when its cgroup appears, with no demand), and no kind's demand
 * reaches the raise rate (the engine raises on nothing less; the host's
 * rate bounds every kind's demand). Every GUARD_IDLE_SCAN_TICKS-th tick walks
 * anyway: the engine forgets a cgroup not seen for PROC_FORGET_TICKS (5)
 * ticks, and one it forgot would come back on the raise tick with no
 * growth (R its floor); and the inotify watches need new directories. A
 * tick that skips records 'not scanned': the engine keeps what it knew,
 * and takes all a cgroup grew since the last walk as a tick's growth (R),
 * which errs towards holding a size back. The one size idle ticks hold
 * away from its value, ShmemAlign's top shmem size at advise, is then
 * judged on cgroups up to 3 ticks old. */
#define GUARD_IDLE_SCAN_TICKS 4

static bool scan_wanted(const struct daemon *d) {
        if (raised(d) || (d->policies && d->policies->n) || d->snap.tick % GUARD_IDLE_SCAN_TICKS == 0)
                return true;
        /* not the density back-off: a tick that skips density may still
         * raise on the processes the last sample saw */
        double raise, lower;
        (void) mthp_engine_fault_rates(&d->cfg.engine, d->snap.fault_cost_ns, &raise, &lower);
        return d->snap.dt > 0 && d->snap.fault_pages_rate >= raise;
}

/* A scan that sees every cgroup costs in proportion to them (~14 us of CPU
 * a cgroup on a fake tree, bench-limits; 10,000 cgroups: ~140 ms): at most
 * 1/GUARD_SCAN_COST_FACTOR of the time since the last one is spent on it,
 * the ticks in between record 'not scanned' as above (a few hundred
 * cgroups scan in a few ms: every tick, as before). */
#define GUARD_SCAN_COST_FACTOR 20

void guard_scan(struct guard *g) {
        if (!g || !scan_wanted(g->d))
                return;
        uint64_t now = mthp_now_usec(CLOCK_MONOTONIC);
        if (g->last_scan_usec && now - g->last_scan_usec < GUARD_SCAN_COST_FACTOR * g->scan.usec)
                return;
        g->last_scan_usec = now;
        struct mthp_limits_stats st;
        int r = mthp_limits_scan_ex(g->d->host, &g->d->caps, &g->d->snap, watch_dir, g, &st);
        if (r < 0) {
                mthp_log(LOG_DEBUG, "guard: scanning the memory-limited cgroups failed: %s", mthp_errno_words(r));
                return;
        }
        if (st.unseen && st.unseen != g->scan.unseen)
                mthp_log(LOG_WARNING, "guard: %u cgroup directories have paths longer than %d characters: their "
                         "limits (and their subtrees') are not seen", st.unseen, PATH_MAX - 1);
        /* the engine weighs MTHP_SNAP_LIMITED of them, the ones with the least
         * headroom; the others have more: said once when that starts */
        bool uncarried = st.limited > st.carried;
        if (uncarried && !g->said_uncarried)
                mthp_log(LOG_INFO, "guard: %u memory-limited cgroups; the %u with the least headroom are weighed, "
                         "the other %u have %.0f MiB or more", st.limited, st.carried, st.limited - st.carried,
                         (double) st.least_uncarried_kb / 1024);
        g->said_uncarried = uncarried;
        mthp_log(LOG_DEBUG, "guard: scan of %u cgroups in %.1f ms: %u limited, %u weighed (%u under an alias)",
                 st.dirs, (double) st.usec / 1000, st.limited, st.carried, st.aliased);
        g->scan = st;
        g->scanned = true;
}

void guard_arm(struct guard *g) {
        if (!g)
                return;
        struct daemon *d = g->d;
        disarm_all(g);
        if (!raised(d) || mthp_actuator_observing(d->act))
                return; /* observing writes nothing, not even cgroup.event_control */
        const struct mthp_engine_state *st = &d->engine;
        for (unsigned i = 0; i < MTHP_SNAP_LIMITED; i++) {
                const struct mthp_engine_limited *c = &st->limited[i];
                if (!mthp_engine_limited_at_risk(&d->cfg.engine, &d->caps, st, i))
                        continue;
                uint64_t headroom = c->limit_kb > c->usage_kb ? c->limit_kb - c->usage_kb : 0;
                uint64_t thr = c->usage_kb + (uint64_t) ((double) headroom * d->cfg.engine.guard_headroom / 100.0);
                (void) arm(g, c->path, c->usage_kb, thr, false);
        }
        /* young cgroups not armed above: a probe 16 MiB above their usage */
        uint64_t now = mthp_now_usec(CLOCK_MONOTONIC);
        for (unsigned y = 0; y < GUARD_YOUNG; y++) {
                if (!g->young[y].path[0] || now > g->young[y].created_usec + GUARD_YOUNG_USEC) {
                        g->young[y].path[0] = 0;
                        continue;
                }
                bool armed = false;
                for (unsigned i = 0; i < GUARD_ARMED && !armed; i++)
                        armed = g->armed[i].path[0] && strcmp(g->armed[i].path, g->young[y].path) == 0;
                uint64_t usage_kb, limit_kb;
                if (armed || mthp_limits_read(d->host, &d->caps, g->young[y].path, &usage_kb, &limit_kb) < 0)
                        continue;
                (void) arm(g, g->young[y].path, usage_kb, usage_kb + GUARD_NEW_KB, true);
        }
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

uint64_t guard_trips(const struct guard *g) {
        return g ? g->trips : 0;
}

void guard_describe(const struct guard *g, char *buf, size_t size) {
        if (!g || !g->n_lat) {
                snprintf(buf, size, "%llu trips", g ? (unsigned long long) g->trips : 0ULL);
                return;
        }
        unsigned n = g->n_lat < GUARD_LAT_KEEP ? g->n_lat : GUARD_LAT_KEEP;
        double v[GUARD_LAT_KEEP];
        memcpy(v, g->lat_us, n * sizeof(double));
        qsort(v, n, sizeof(double), cmp_double);
        snprintf(buf, size, "%llu trips, largest size stepped down %.0f us median, %.0f us max after the wake-up",
                 (unsigned long long) g->trips, v[(n - 1) / 2], v[n - 1]);
}

void guard_coverage(const struct guard *g, struct mthp_status_coverage *c) {
        c->guard_known = g && g->scanned;
        if (!c->guard_known)
                return;
        c->scanned = g->scan.dirs;
        c->limited = g->scan.limited;
        c->weighed = g->scan.carried;
        c->unseen = g->scan.unseen;
        c->scan_usec = g->scan.usec;
}
