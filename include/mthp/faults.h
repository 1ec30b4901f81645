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
 * Frequency mode (attr.freq): the kernel retunes the sampling period so that
 * each CPU writes about freq_hz samples per second whatever the fault rate,
 * so the ring traffic and the drain work stay bounded under a fault storm and
 * an idle host yields few samples. Samples are uniform over faults only while
 * the rate is steady.
 * Caveat, measured on this project's 6.18 VM: the kernel's period estimate
 * overshoots after an enable. Under a steady ~400k faults/s on one CPU the
 * period went to 403015 faults at 1000 Hz (no sample for ~1.3 s, then ~1000/s
 * at a period of ~450) and to 9501085 at 250 Hz (no sample for the next 40
 * passes of 16384 faults; a 2 s run often got 0 or 1 sample). Do not expect
 * samples in the first second; at 250 Hz expect runs with none.
 *
 * Cost (2-vCPU VM shared with other work, kernel 6.18, 4K anon faults; tests/
 * density/bench-fault-sampler.c, 5 interleaved reps, medians): an enabled
 * event adds no cost that rises above the noise. mthp-workload --kind anon
 * --pattern dense -t 2 -s 3: 901560 pages/s without, 864933 at 250 Hz,
 * 915883 at 1000 Hz (~1750 samples/s; rep-to-rep spread 814k-966k). One
 * thread faulting 64 MiB over and over: 2381 ns/fault without, 2308 at 250 Hz,
 * 2448 at 1000 Hz, 2391 at 10000 Hz (~5500 samples/s); spread 1830-2636.
 * A drain of ~940 samples takes 132 us (median of 10, 123-152), ~1 us empty.
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
 * PERF_COUNT_SW_PAGE_FAULTS_MIN) per online CPU (pid -1, cpu i), frequency
 * mode (sample_freq = freq_hz per CPU), sample_type PERF_SAMPLE_TID |
 * PERF_SAMPLE_ADDR, exclude_hv, kernel-mode faults included (a fault the
 * kernel takes on user memory, e.g. read() into a fresh buffer, is a fault of
 * that memory), a ring of ring_pages data pages (a power of two) each; created
 * disabled. 0 or negative errno: -EACCES/-EPERM without CAP_PERFMON under
 * perf_event_paranoid > 0, -ENOENT/-ENOSYS/-EOPNOTSUPP where perf is absent,
 * -EINVAL for freq_hz 0 or above kernel.perf_event_max_sample_rate, or
 * ring_pages not a power of two. The online CPUs come from
 * /sys/devices/system/cpu/online of the running kernel (not through a host
 * root: the events are this kernel's), else sysconf(_SC_NPROCESSORS_ONLN). */
int mthp_fault_sampler_new(unsigned freq_hz, unsigned ring_pages, struct mthp_fault_sampler **ret);

/* PERF_EVENT_IOC_ENABLE / DISABLE on every CPU's event. The state is
 * remembered: calling it every tick with an unchanged value makes no syscall. */
int mthp_fault_sampler_enable(struct mthp_fault_sampler *s, bool on);
bool mthp_fault_sampler_enabled(const struct mthp_fault_sampler *s);

/* Moves every sample the rings hold into out (at most max), sorted by pid then
 * addr; *n is the number written. The rings are emptied in any case: what did
 * not fit is counted in *lost, which also adds the kernel's PERF_RECORD_LOST
 * counts (samples dropped because a ring was full). *lost is added to, not
 * reset. Other record types (throttling) are skipped. */
int mthp_fault_sampler_drain(struct mthp_fault_sampler *s, struct mthp_fault_sample *out, size_t max,
                             size_t *n, uint64_t *lost);

/* NULL is fine; closes the fds, unmaps the rings. */
void mthp_fault_sampler_free(struct mthp_fault_sampler *s);
