/* SPDX-License-Identifier: MIT */
/* FaultSampling=: page-fault addresses (lib/faults.c, perf) for the density
 * sampler, which counts them by the kind of mapping they fall in, so that
 * the engine splits a process's faults between anon and shmem by what it
 * faults, not by what it holds (issue 12). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include "daemon.h"
#include "mthp/density.h"
#include "mthp/faults.h"
#include "mthp/host.h"
#include "mthp/log.h"
#include "mthp/util.h"

#define FAULT_FREQ_HZ 250        /* samples per second and CPU, about (lib/faults.c retunes the period) */
#define FAULT_RING_PAGES 8       /* 32 KiB a CPU: 1,300 samples, 5 s of them */
#define FAULT_BUF 8192           /* samples handed over a tick */
#define FAULT_OFF_TICKS 10       /* ticks without a faulting process holding shmem before sampling stops */

void daemon_faults_open(struct daemon *d) {
        if (!d->cfg.fault_sampling || !d->host->real || !d->density || d->faults_tried)
                return;   /* a fake host tree has no faults of its own to sample */
        d->faults_tried = true;
        int r = mthp_fault_sampler_new(FAULT_FREQ_HZ, FAULT_RING_PAGES, &d->faults);
        if (r == 0) {
                d->fault_buf = calloc(FAULT_BUF, sizeof(*d->fault_buf));
                if (!d->fault_buf)
                        r = -ENOMEM;
        }
        if (r < 0) {
                mthp_fault_sampler_free(d->faults);
                d->faults = NULL;
                mthp_log(LOG_INFO, "fault sampling unavailable: %s (perf_event_open needs CAP_PERFMON); "
                         "faults are split between anon and shmem by the memory each process holds",
                         mthp_errno_words(r));
        }
}

void daemon_faults_free(struct daemon *d) {
        mthp_fault_sampler_free(d->faults);
        d->faults = NULL;
        free(d->fault_buf);
        d->fault_buf = NULL;
}

/* Before a density tick: the faults sampled since the last one. */
void daemon_faults_give(struct daemon *d) {
        size_t n = 0;
        uint64_t lost = 0;
        if (!d->faults || !mthp_fault_sampler_enabled(d->faults))
                return;
        if (mthp_fault_sampler_drain(d->faults, d->fault_buf, FAULT_BUF, &n, &lost) < 0)
                return;
        d->faults_lost += lost;
        mthp_density_set_fault_samples(d->density, d->fault_buf, n);
}

/* After it: the samples are needed only where memory held cannot split a
 * process's faults, a faulting process holding shared memory (a database
 * backend: shared buffers and a heap; a process churning its heap beside a
 * segment, which may hold no anon at the instant it is read). Elsewhere the
 * events stay off, and a fault costs nothing more. */
void daemon_faults_steer(struct daemon *d) {
        const struct mthp_density_view *v = &d->snap.density;
        int mixed = -1;
        if (!d->cfg.fault_sampling) {   /* turned off by a reload */
                daemon_faults_free(d);
                d->faults_tried = false;
                return;
        }
        daemon_faults_open(d);          /* turned on by a reload; tried once */
        if (!d->faults)
                return;
        for (unsigned i = 0; v->valid && i < v->n_procs && mixed < 0; i++) {
                const struct mthp_proc_density *p = &v->proc[i];
                if (p->fault_rate >= d->cfg.engine.min_proc_fault_rate && p->rss_kb[MTHP_SHMEM] >= MTHP_FAULT_SHARED_KB)
                        mixed = (int) i;
        }
        /* off after FAULT_OFF_TICKS without one: a process between two
         * samples of it, or a tick without density, is no reason to stop */
        if (mixed >= 0)
                d->faults_mixed_tick = d->ticks;
        bool on = mthp_fault_sampler_enabled(d->faults);
        bool want = mixed >= 0 || (on && d->ticks < d->faults_mixed_tick + FAULT_OFF_TICKS);
        if (want != on) {
                /* the period for the host's fault rate now, so that the
                 * next tick has the samples the engine waits for (a
                 * process holding shared memory has no demand say until then) */
                double rate = d->snap.vm[MTHP_VM_PGFAULT].rate;
                if (want && rate > 0)
                        (void) mthp_fault_sampler_expect(d->faults, rate);
                int r = mthp_fault_sampler_enable(d->faults, want);
                if (r < 0) {
                        mthp_log(LOG_WARNING, "fault sampling: %s; faults are split by memory held",
                                 mthp_errno_words(r));
                        daemon_faults_free(d);
                        return;
                }
                if (want)
                        mthp_log(LOG_INFO,
                                 "fault sampling on: pid %d (%s) faults and holds %llu MiB anon and %llu MiB shmem",
                                 v->proc[mixed].pid, v->proc[mixed].comm,
                                 (unsigned long long) v->proc[mixed].rss_kb[MTHP_ANON] >> 10,
                                 (unsigned long long) v->proc[mixed].rss_kb[MTHP_SHMEM] >> 10);
                else
                        mthp_log(LOG_INFO,
                                 "fault sampling off: no faulting process held shared memory for %u ticks "
                                 "(%llu samples lost so far)",
                                 FAULT_OFF_TICKS, (unsigned long long) d->faults_lost);
        }
        /* the engine waits for such a process's samples (a tick) */
        d->snap.density.fault_sampling = v->valid;
}

/* An early tick is due (mthp_tick_next), share of an Interval from now:
 * the period for the host's fault rate (at least the awaited processes'
 * own: one that started just before this tick is not in the host's rate
 * yet) scaled by share, so that the early tick gets about the samples a
 * whole Interval would bring; the first drain retunes it to FAULT_FREQ_HZ. */
void daemon_faults_expect(struct daemon *d, double awaited_rate, double share) {
        double rate = d->snap.vm[MTHP_VM_PGFAULT].rate;
        if (awaited_rate > rate)
                rate = awaited_rate;
        if (!d->faults || !mthp_fault_sampler_enabled(d->faults) || !(rate > 0) || !(share > 0) || share >= 1)
                return;
        (void) mthp_fault_sampler_expect(d->faults, rate * share);
}

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
