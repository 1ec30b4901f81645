/* SPDX-License-Identifier: MIT */
#pragma once
/* Page-fault address sampling with perf_event_open: which addresses the host
 * is faulting on, so that demand can be attributed to the mapping kind (anon,
 * shmem) of the faults themselves rather than to what the faulting process
 * holds.
 *
 * One software event (PERF_COUNT_SW_PAGE_FAULTS_MIN) per online CPU, pid -1:
 * per CPU and not per process because a per-process event sees neither the
 * threads nor the processes that appear after it was opened (inherit only
 * follows children created later, and costs an event per task); one event per
 * CPU sees every fault on the host with a fixed number of fds and rings.
 *
 * A fixed period, retuned at every drain for about target_hz samples a
 * second per CPU (lib/faults.c retune(): moved by up to 1/8, kept odd and off
 * multiples of 3, 5 and 7 so that it does not alias with a program's fault
 * pattern; 4099 until a drain has measured the rate), so the ring traffic
 * and the drain work stay bounded under a fault storm. Samples are uniform
 * over faults while the rate is steady; when it jumps, a tick gets more or
 * fewer (lost samples are counted). The kernel's
 * frequency mode (attr.freq) went seconds without a sample under a steady
 * fault storm. Do not add PERF_SAMPLE_PERIOD with a fixed period: the
 * kernel then samples every fault. An enabled event costs faulting work
 * nothing above the noise; the measurements are in docs/fault-kinds.md.
 *
 * Needs CAP_PERFMON (or CAP_SYS_ADMIN) for a CPU-wide event whenever
 * /proc/sys/kernel/perf_event_paranoid > 0 (Debian's default is 2 or more);
 * otherwise mthp_fault_sampler_new() returns -EACCES or -EPERM. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mthp_fault_sample {
        int32_t pid;            /* the thread group id (the process) */
        uint32_t pad_;
        uint64_t addr;          /* the faulting virtual address */
};

struct mthp_fault_sampler;

/* One software minor-page-fault event (PERF_TYPE_SOFTWARE,
 * PERF_COUNT_SW_PAGE_FAULTS_MIN) per online CPU (pid -1, cpu i), its period
 * retuned at each drain for about freq_hz samples a second per CPU (above),
 * sample_type PERF_SAMPLE_TID |
 * PERF_SAMPLE_ADDR, exclude_hv, kernel-mode faults included (a fault the
 * kernel takes on user memory, e.g. read() into a fresh buffer, is a fault of
 * that memory), a ring of ring_pages data pages (a power of two) each; created
 * disabled. 0 or negative errno: -EACCES/-EPERM without CAP_PERFMON under
 * perf_event_paranoid > 0, -ENOENT/-ENOSYS/-EOPNOTSUPP where perf is absent,
 * -EINVAL for freq_hz 0 or above 100000, or
 * ring_pages not a power of two. The online CPUs come from
 * /sys/devices/system/cpu/online of the running kernel (not through a host
 * root: the events are this kernel's), else sysconf(_SC_NPROCESSORS_ONLN). */
int mthp_fault_sampler_new(unsigned freq_hz, unsigned ring_pages, struct mthp_fault_sampler **ret);

/* PERF_EVENT_IOC_ENABLE / DISABLE on every CPU's event. The state is
 * remembered: calling it every tick with an unchanged value makes no syscall. */
int mthp_fault_sampler_enable(struct mthp_fault_sampler *s, bool on);
bool mthp_fault_sampler_enabled(const struct mthp_fault_sampler *s);

/* The host is faulting about faults_per_sec (all CPUs): every CPU's period
 * is set for that share of it, so that the first drain after an enable
 * brings about freq_hz samples a second per CPU instead of what the period
 * the events were left at gives (4099 at start: 12 samples a second from a
 * CPU faulting 50,000 times). The rate is split evenly between the CPUs:
 * a storm on one CPU is sampled at up to N times freq_hz until the next
 * drain retunes from the counts as usual (the ring may drop some: they are
 * counted as lost). 0, -EINVAL (not a positive finite rate), or the first
 * PERF_EVENT_IOC_PERIOD error (the others are still set). */
int mthp_fault_sampler_expect(struct mthp_fault_sampler *s, double faults_per_sec);

/* Moves every sample the rings hold into out (at most max; when they hold
 * more, each CPU's ring gives the same share, a ring holding fewer leaving
 * its part to the others, so that no CPU's samples are always the ones
 * left out), sorted by pid then addr; *n is the number written. The
 * rings are emptied in any case, up to where their data ended when the
 * drain began (what comes after is the next drain's): what did not fit is
 * counted in *lost, which also adds the kernel's PERF_RECORD_LOST
 * counts (samples dropped because a ring was full). *lost is added to, not
 * reset. Other record types (throttling) are skipped. */
int mthp_fault_sampler_drain(struct mthp_fault_sampler *s, struct mthp_fault_sample *out, size_t max,
                             size_t *n, uint64_t *lost);

/* NULL is fine; closes the fds, unmaps the rings. */
void mthp_fault_sampler_free(struct mthp_fault_sampler *s);

/* The fault-burst alarm: a wakeup when the host starts to fault fast, so
 * that mthpd need not wait for its next tick to see it (up to a whole
 * Interval: pgbench ran its first ~1.3 s at 4K). One software event
 * (PERF_COUNT_SW_PAGE_FAULTS: every fault, as /proc/vmstat pgfault counts
 * them) per online CPU, pid -1, counting only: no sample is read, a ring
 * of one page is there for poll() (an event without one says EPOLLHUP).
 * Each CPU's event, once armed, overflows after its count of faults on
 * that CPU (and every count after), and its fd becomes readable
 * (wakeup_events 1). The overflow says only that one CPU took that many
 * faults since it was armed: the caller asks the host's fault rate itself,
 * then re-arms that CPU (a larger count backs it off) or disarms. Off, an
 * event counts nothing; while any page-fault event is open (the fault
 * sampler's are, with FaultSampling=yes) the kernel's software-event hook
 * runs on every fault, a check per fault (bench-fault-sampler: below the
 * noise, docs/fault-kinds.md).
 *
 * Needs what the fault sampler needs (CAP_PERFMON under perf_event_paranoid
 * > 0); same errors as mthp_fault_sampler_new(). Created disarmed. */
#define MTHP_FAULT_ALARM_MAX (1ULL << 40)
struct mthp_fault_alarm;
int mthp_fault_alarm_new(struct mthp_fault_alarm **ret);
/* The number of CPUs' events, and the fd of the i-th (for poll: readable
 * after an overflow; read it with mthp_fault_alarm_fired()). */
size_t mthp_fault_alarm_n(const struct mthp_fault_alarm *a);
int mthp_fault_alarm_fd(const struct mthp_fault_alarm *a, size_t i);
/* The CPU the i-th event counts on; -EINVAL past the last. */
int mthp_fault_alarm_cpu(const struct mthp_fault_alarm *a, size_t i);
/* Every CPU's event on with the count faults_per_cpu (1 .. 
 * MTHP_FAULT_ALARM_MAX). A CPU already on with that count is left as it
 * is (its count goes on: no syscall); the others count from 0. 0 or the
 * first ioctl error (then none is left on). */
int mthp_fault_alarm_arm(struct mthp_fault_alarm *a, uint64_t faults_per_cpu);
/* The i-th CPU's event on with the count faults, from 0. 0 or an ioctl
 * error (then it is off). */
int mthp_fault_alarm_rearm(struct mthp_fault_alarm *a, size_t i, uint64_t faults);
/* Every event off; nothing for those off already. */
int mthp_fault_alarm_disarm(struct mthp_fault_alarm *a);
/* Is any CPU's event on? */
bool mthp_fault_alarm_armed(const struct mthp_fault_alarm *a);
/* The i-th CPU's count; 0 when it is off. */
uint64_t mthp_fault_alarm_period(const struct mthp_fault_alarm *a, size_t i);
/* Did the i-th CPU's event overflow since the last call (or its last arm)?
 * Empties its ring, so that poll() waits for the next overflow. */
bool mthp_fault_alarm_fired(struct mthp_fault_alarm *a, size_t i);
/* NULL is fine. */
void mthp_fault_alarm_free(struct mthp_fault_alarm *a);
