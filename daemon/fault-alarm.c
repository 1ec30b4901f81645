/* SPDX-License-Identifier: MIT */
/* The fault-burst wakeup (FaultSampling=, real host): a tick brought
 * forward when the host starts to fault fast between two ticks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include "daemon.h"
#include "mthp/faults.h"
#include "mthp/host.h"
#include "mthp/log.h"
#include "mthp/util.h"

void daemon_alarm_free(struct daemon *d) {
        for (size_t i = 0; d->alarm_src && i < mthp_fault_alarm_n(d->alarm); i++)
                sd_event_source_disable_unref(d->alarm_src[i]);
        free(d->alarm_src);
        d->alarm_src = NULL;
        mthp_fault_alarm_free(d->alarm);
        d->alarm = NULL;
}

/* The host's faults so far (/proc/vmstat pgfault), as the sampler reads them. */
static int host_pgfault(const struct daemon *d, uint64_t *ret) {
        char buf[16384];
        uint64_t v[_MTHP_VM_MAX] = { 0 };
        bool seen[_MTHP_VM_MAX] = { false };
        int r = mthp_host_read(d->host, "/proc/vmstat", buf, sizeof(buf));
        if (r < 0)
                return r;
        mthp_parse_vmstat(buf, v, seen);
        if (!seen[MTHP_VM_PGFAULT])
                return -ENODATA;
        *ret = v[MTHP_VM_PGFAULT];
        return 0;
}

/* A CPU's event overflowed: one CPU took its count of faults since it was
 * armed. If the host as a whole has faulted at the raise rate since the
 * last tick, that tick's successor comes now (the timer is brought
 * forward, at least MTHP_TICK_EARLY_MIN_USEC after the last one) and the
 * alarm is off until a tick sets it again. Else the CPU counts again, to
 * twice its count (a host faulting a little below the raise rate would
 * ring it every quarter Interval), and after ALARM_FALSE_MAX such rings
 * since the last tick the alarm is off until the next: each costs a read
 * of /proc/vmstat, and a many-CPU host would ring them all. */
#define ALARM_FALSE_MAX 8
static int on_alarm(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct daemon *d = userdata;
        size_t i, n = mthp_fault_alarm_n(d->alarm);
        (void) fd;
        if (revents & (EPOLLHUP | EPOLLERR))   /* a dead event: level-triggered, it would wake the loop forever */
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        for (i = 0; i < n; i++)
                if (d->alarm_src[i] == s)
                        break;
        if (i >= n || !mthp_fault_alarm_fired(d->alarm, i) || !mthp_fault_alarm_period(d->alarm, i))
                return 0;
        uint64_t now = mthp_now_usec(CLOCK_MONOTONIC), pgfault, at;
        double rate;
        if (host_pgfault(d, &pgfault) < 0 || !mthp_tick_burst(&d->cfg.engine, &d->snap, now, pgfault, &rate, &at)) {
                uint64_t next = 2 * mthp_fault_alarm_period(d->alarm, i);
                if (++d->alarm_false >= ALARM_FALSE_MAX || next > MTHP_FAULT_ALARM_MAX)
                        (void) mthp_fault_alarm_disarm(d->alarm);
                else
                        (void) mthp_fault_alarm_rearm(d->alarm, i, next);
                return 0;
        }
        (void) mthp_fault_alarm_disarm(d->alarm);
        uint64_t due = 0;
        if (sd_event_source_get_time(d->timer, &due) < 0 || due <= at)
                return 0;   /* the tick comes as soon anyway */
        double raise, lower;
        mthp_engine_fault_rates(&d->cfg.engine, d->snap.fault_cost_ns, &raise, &lower);
        mthp_log(LOG_DEBUG, "tick %llu: woken by a fault burst on CPU %d: the host took %.0f faults/s since it "
                 "(a raise needs %.0f 4K pages/s); next tick in %llu ms instead of %llu",
                 (unsigned long long) d->snap.tick, mthp_fault_alarm_cpu(d->alarm, i), rate, raise,
                 (unsigned long long) (at > now ? at - now : 0) / 1000, (unsigned long long) (due - now) / 1000);
        d->tick_burst = true;
        return sd_event_source_set_time(d->timer, at);
}

static void alarm_open(struct daemon *d) {
        d->alarm_tried = true;
        int r = mthp_fault_alarm_new(&d->alarm);
        size_t n = mthp_fault_alarm_n(d->alarm);
        if (r == 0 && !(d->alarm_src = calloc(n, sizeof(*d->alarm_src))))
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++)
                r = sd_event_add_io(d->event, &d->alarm_src[i], mthp_fault_alarm_fd(d->alarm, i), EPOLLIN, on_alarm, d);
        if (r < 0) {
                daemon_alarm_free(d);
                mthp_log(LOG_INFO, "fault-burst wakeup unavailable: %s (perf_event_open needs CAP_PERFMON); "
                         "a workload that starts to fault is seen at the next tick", mthp_errno_words(r));
        }
}

void daemon_alarm_steer(struct daemon *d) {
        if (!d->cfg.fault_sampling || !d->host->real || d->once || !d->event) {
                daemon_alarm_free(d);
                d->alarm_tried = false;
                return;
        }
        if (!d->alarm_tried)
                alarm_open(d);
        if (!d->alarm)
                return;
        uint64_t period = mthp_tick_alarm_period(&d->cfg.engine, &d->caps, &d->snap, &d->engine, &d->plan,
                                                 d->cfg.interval_usec, (unsigned) mthp_fault_alarm_n(d->alarm));
        d->alarm_false = 0;
        int r = period ? mthp_fault_alarm_arm(d->alarm, period) : mthp_fault_alarm_disarm(d->alarm);
        if (r < 0) {
                mthp_log(LOG_WARNING, "fault-burst wakeup: %s; a workload that starts to fault is seen at the next tick",
                         mthp_errno_words(r));
                daemon_alarm_free(d);
        }
}
