/* SPDX-License-Identifier: MIT */
/* Page-fault address sampling: one perf software event per online CPU, each
 * with its own ring; see include/mthp/faults.h. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mthp/faults.h"

struct fault_ring {
        int fd;
        uint64_t count;         /* the event's count at the last retune */
        uint64_t period;        /* faults per sample now */
        void *map;              /* metadata page + data pages */
        size_t map_len;
        unsigned char *data;
        uint64_t data_size;     /* a power of two */
        uint64_t head;          /* at a drain's start: where its data ends; the drain stops there */
        size_t held;            /* the samples it holds up to head */
};

struct mthp_fault_sampler {
        struct fault_ring *rings;
        size_t n_rings;
        bool enabled;
        unsigned target_hz;     /* samples a second per CPU the period is tuned for */
        uint64_t tuned_usec;    /* CLOCK_MONOTONIC of the last retune (0: none since enable) */
        uint64_t rng;           /* the period's jitter */
};

/* A fault storm's first tick: 4096 faults a sample is ~100 samples/s at
 * 400k faults/s, before the first retune knows the rate. */
#define FAULT_PERIOD_START 4099u      /* odd, no factor 3, 5 or 7: see retune() */

/* the record a sample is with sample_type TID | ADDR (no sample_id_all) */
struct fault_record {
        struct perf_event_header header;
        uint32_t pid, tid;
        uint64_t addr;
};

/* PERF_RECORD_LOST */
struct lost_record {
        struct perf_event_header header;
        uint64_t id, lost;
};

/* "0-3,5,7-8\n" into a bitmap of at most max CPUs; returns the highest CPU + 1
 * or a negative errno */
static int parse_cpu_list(const char *s, unsigned char *set, unsigned max) {
        unsigned top = 0;

        while (*s && *s != '\n') {
                char *end;
                unsigned long a, b;

                errno = 0;
                a = strtoul(s, &end, 10);
                if (end == s || errno)
                        return -EINVAL;
                b = a;
                if (*end == '-') {
                        s = end + 1;
                        b = strtoul(s, &end, 10);
                        if (end == s || errno || b < a)
                                return -EINVAL;
                }
                if (b >= max)
                        return -ERANGE;
                for (unsigned long c = a; c <= b; c++)
                        set[c] = 1;
                if (b + 1 > top)
                        top = (unsigned) b + 1;
                s = end;
                if (*s == ',')
                        s++;
                else if (*s && *s != '\n')
                        return -EINVAL;
        }
        return top ? (int) top : -EINVAL;
}

/* the online CPUs of the running kernel: the events are this kernel's, so no
 * host root applies */
static int online_cpus(unsigned char *set, unsigned max) {
        char buf[4096];
        int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

        if (fd >= 0) {
                ssize_t k = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (k > 0) {
                        buf[k] = 0;
                        int r = parse_cpu_list(buf, set, max);
                        if (r > 0)
                                return r;
                        memset(set, 0, max);
                }
        }
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n <= 0)
                n = 1;
        if ((unsigned long) n > max)
                n = max;
        memset(set, 1, (size_t) n);
        return (int) n;
}

/* perf_event_open(attr) on cpu (pid -1) and its ring mapped (map_len
 * bytes): 0, or -errno with nothing left open. */
static int open_mapped(struct perf_event_attr *attr, int cpu, size_t map_len, int *fd, void **map) {
        long f = syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (f < 0)
                return -errno;
        void *m = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, (int) f, 0);
        if (m == MAP_FAILED) {
                int r = -errno;
                close((int) f);
                return r;
        }
        *fd = (int) f;
        *map = m;
        return 0;
}

/* open_mapped's undo; nothing for what is not open (fd -1, map NULL) */
static void close_mapped(int fd, void *map, size_t map_len) {
        if (map)
                munmap(map, map_len);
        if (fd >= 0)
                close(fd);
}

/* One slot of slot_size per online CPU (*slots, calloc'd), opened by
 * open_one(slot, cpu, arg) in CPU order; *n: how many opened, the first *n
 * slots. A CPU gone offline since the list was read (-ENODEV) is skipped.
 * 0; -ENOMEM; open_one's first other error or -ENODEV when none opened (the
 * caller frees the *n opened and *slots either way). */
static int open_per_cpu(size_t slot_size, void **slots, size_t *n, int (*open_one)(void *slot, int cpu, void *arg),
                        void *arg) {
        enum { MAX_CPUS = 8192 };
        int r = 0;
        *n = 0;
        unsigned char *set = calloc(MAX_CPUS, 1);
        if (!set)
                return -ENOMEM;
        int top = online_cpus(set, MAX_CPUS);
        *slots = calloc((size_t) top, slot_size);
        if (!*slots) {
                free(set);
                return -ENOMEM;
        }
        for (int cpu = 0; cpu < top; cpu++) {
                if (!set[cpu])
                        continue;
                r = open_one((unsigned char *) *slots + *n * slot_size, cpu, arg);
                if (r == -ENODEV)
                        continue;
                if (r < 0)
                        break;
                (*n)++;
        }
        free(set);
        if (r < 0 && r != -ENODEV)
                return r;
        return *n ? 0 : -ENODEV;
}

struct ring_arg {
        unsigned ring_pages;
        size_t page;
};

static int open_ring(void *slot, int cpu, void *arg) {
        struct fault_ring *ring = slot;
        const struct ring_arg *ra = arg;
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = PERF_COUNT_SW_PAGE_FAULTS_MIN,
                .sample_period = FAULT_PERIOD_START,
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ADDR,
                .disabled = 1,
                .exclude_hv = 1,
                .exclude_kernel = 0,
                .wakeup_events = 0,
        };
        ring->fd = -1;
        ring->map_len = (size_t) (ra->ring_pages + 1) * ra->page;
        int r = open_mapped(&attr, cpu, ring->map_len, &ring->fd, &ring->map);
        if (r < 0)
                return r;
        ring->period = FAULT_PERIOD_START;
        struct perf_event_mmap_page *meta = ring->map;
        uint64_t off = meta->data_offset, size = meta->data_size;
        if (!off || !size) {    /* kernels before 4.1 */
                off = ra->page;
                size = (uint64_t) ra->ring_pages * ra->page;
        }
        ring->data = (unsigned char *) ring->map + off;
        ring->data_size = size;
        return 0;
}

int mthp_fault_sampler_new(unsigned freq_hz, unsigned ring_pages, struct mthp_fault_sampler **ret) {
        long pg = sysconf(_SC_PAGESIZE);
        struct ring_arg ra = { .ring_pages = ring_pages, .page = pg > 0 ? (size_t) pg : 4096 };

        if (!ret || !freq_hz || freq_hz > 100000 || !ring_pages || (ring_pages & (ring_pages - 1)) || ring_pages > (1u << 20))
                return -EINVAL;
        struct mthp_fault_sampler *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->target_hz = freq_hz;
        s->rng = (uint64_t) getpid() * 0x9e3779b97f4a7c15ULL;
        void *rings = NULL;
        int r = open_per_cpu(sizeof(*s->rings), &rings, &s->n_rings, open_ring, &ra);
        s->rings = rings;
        if (r < 0) {
                mthp_fault_sampler_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int mthp_fault_sampler_enable(struct mthp_fault_sampler *s, bool on) {
        if (!s)
                return -EINVAL;
        if (s->enabled == on)
                return 0;
        unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
        for (size_t i = 0; i < s->n_rings; i++)
                if (ioctl(s->rings[i].fd, req, 0) < 0) {
                        int r = -errno;
                        /* leave none half on: undo what was done */
                        unsigned long undo = on ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE;
                        while (i-- > 0)
                                (void) ioctl(s->rings[i].fd, undo, 0);
                        return r;
                }
        s->enabled = on;
        s->tuned_usec = 0;
        for (size_t i = 0; on && i < s->n_rings; i++) {
                struct fault_ring *ring = &s->rings[i];
                struct perf_event_mmap_page *meta = ring->map;
                uint64_t c;
                if (read(ring->fd, &c, sizeof(c)) == (ssize_t) sizeof(c))
                        ring->count = c;
                /* what the last enabled spell left is not this one's */
                __atomic_store_n(&meta->data_tail, __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE),
                                 __ATOMIC_RELEASE);
        }
        if (on) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                s->tuned_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        }
        return 0;
}

/* The period for target_hz samples a second from a CPU faulting `rate`
 * times a second. A fixed period aliases with a program's fault pattern:
 * one shmem page to four anon ones, sampled every 5n faults, reads all
 * anon (measured: 8:1 and 12:1 in 2 runs of 10 with a period kept while
 * within a quarter). So it moves by up to 1/8 at every setting and is odd
 * and not a multiple of 3, 5 or 7: a loop of up to 10 pages is seen at
 * every step. */
static uint64_t period_for(struct mthp_fault_sampler *s, double rate) {
        double want = rate / s->target_hz;
        s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
        want *= 0.875 + 0.25 * (double) (s->rng >> 11) / (double) (1ULL << 53);
        uint64_t period = want < 1 ? 1 : want > 1e9 ? 1000000000u : (uint64_t) want;
        if (period > 1) {
                period |= 1;
                while (period % 3 == 0 || period % 5 == 0 || period % 7 == 0)
                        period += 2;
        }
        return period;
}

static int set_period(struct fault_ring *ring, uint64_t period) {
        if (ioctl(ring->fd, PERF_EVENT_IOC_PERIOD, &period) < 0)
                return -errno;
        ring->period = period;
        return 0;
}

/* The period for target_hz samples a second from the faults counted since
 * the last retune: the kernel's frequency mode overshoots (see faults.h), a
 * period set from the measured rate at every drain does not. An idle CPU
 * keeps its period: nothing to learn from no faults. */
static void retune(struct mthp_fault_sampler *s) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        if (!s->enabled || !s->tuned_usec || now <= s->tuned_usec)
                return;
        double dt = (double) (now - s->tuned_usec) / 1e6;
        s->tuned_usec = now;
        for (size_t i = 0; i < s->n_rings; i++) {
                struct fault_ring *ring = &s->rings[i];
                uint64_t c;
                if (read(ring->fd, &c, sizeof(c)) != (ssize_t) sizeof(c))
                        continue;
                uint64_t faults = c >= ring->count ? c - ring->count : 0;
                ring->count = c;
                if (faults == 0)
                        continue;
                (void) set_period(ring, period_for(s, (double) faults / dt));
        }
}

int mthp_fault_sampler_expect(struct mthp_fault_sampler *s, double faults_per_sec) {
        if (!s || !(faults_per_sec > 0) || !isfinite(faults_per_sec))
                return -EINVAL;
        int r = 0;
        for (size_t i = 0; i < s->n_rings; i++) {
                int q = set_period(&s->rings[i], period_for(s, faults_per_sec / (double) s->n_rings));
                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

bool mthp_fault_sampler_enabled(const struct mthp_fault_sampler *s) {
        return s && s->enabled;
}

static int cmp_sample(const void *a, const void *b) {
        const struct mthp_fault_sample *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        return 0;
}

/* copies len bytes at ring offset pos (mod size) into dst, across the end */
static void ring_copy(const struct fault_ring *ring, uint64_t pos, void *dst, size_t len) {
        uint64_t off = pos & (ring->data_size - 1);
        size_t first = len;

        if (off + len > ring->data_size)
                first = (size_t) (ring->data_size - off);
        memcpy(dst, ring->data + off, first);
        if (first < len)
                memcpy((unsigned char *) dst + first, ring->data, len - first);
}

/* Where a ring's data ends now (ring->head), and the samples it holds up
 * to there, counted record by record. Dividing its length by a sample's
 * size counted the kernel's LOST records (a sample's size) and THROTTLE
 * ones (a busy host) as samples, and the spread below then took fewer
 * than the ring's share: 15 of 16 and 3 of 4 beside two CPU hogs.
 * Samples written after are the next drain's. */
static void ring_held(struct fault_ring *ring) {
        const struct perf_event_mmap_page *meta = ring->map;
        ring->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        size_t n = 0;
        for (uint64_t t = meta->data_tail; t < ring->head;) {
                struct perf_event_header h;
                ring_copy(ring, t, &h, sizeof(h));
                if (h.size < sizeof(h) || h.size > ring->head - t)
                        break;  /* as the drain does */
                n += h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(struct fault_record);
                t += h.size;
        }
        ring->held = n;
}

/* How many samples each ring may give when out holds max: all of them if
 * they fit, else the same share of out for each (a ring holding fewer
 * leaves its part to the others), from ring->held. Drained in order until
 * out was full, the rings of the highest CPUs lost every sample, always the
 * same CPUs' (beyond ~33 CPUs at a 1 s interval). */
static size_t ring_quota(const struct mthp_fault_sampler *s, size_t max) {
        size_t total = 0, lo = 0, hi = max;
        for (size_t i = 0; i < s->n_rings; i++)
                total += s->rings[i].held;
        if (total <= max)
                return max;
        while (lo < hi) {   /* the largest quota whose samples fit */
                size_t q = lo + (hi - lo + 1) / 2, sum = 0;
                for (size_t i = 0; i < s->n_rings && sum <= max; i++)
                        sum += s->rings[i].held < q ? s->rings[i].held : q;
                if (sum <= max)
                        lo = q;
                else
                        hi = q - 1;
        }
        return lo ? lo : 1;
}

int mthp_fault_sampler_drain(struct mthp_fault_sampler *s, struct mthp_fault_sample *out, size_t max,
                             size_t *n, uint64_t *lost) {
        size_t k = 0;
        uint64_t dropped = 0;

        if (!s || !n || !lost || (max && !out))
                return -EINVAL;
        for (size_t i = 0; i < s->n_rings; i++)
                ring_held(&s->rings[i]);
        size_t quota = ring_quota(s, max);
        for (size_t i = 0; i < s->n_rings; i++) {
                struct fault_ring *ring = &s->rings[i];
                struct perf_event_mmap_page *meta = ring->map;
                uint64_t head = ring->head;
                uint64_t tail = meta->data_tail;
                /* a ring over its quota gives samples spread evenly over
                 * what it holds: its first ones only would leave out the
                 * end of every tick */
                size_t seen = 0, held = ring->held ? ring->held : 1;

                while (tail < head) {
                        struct perf_event_header h;
                        ring_copy(ring, tail, &h, sizeof(h));
                        if (h.size < sizeof(h) || h.size > head - tail)
                                break;  /* cannot happen; skip the rest rather than loop */
                        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(struct fault_record)) {
                                struct fault_record rec;
                                ring_copy(ring, tail, &rec, sizeof(rec));
                                bool take = held <= quota || (seen * quota) / held != ((seen + 1) * quota) / held;
                                seen++;
                                if (k < max && take)
                                        out[k++] = (struct mthp_fault_sample) {
                                                .pid = (int32_t) rec.pid,
                                                .addr = rec.addr,
                                        };
                                else
                                        dropped++;
                        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(struct lost_record)) {
                                struct lost_record rec;
                                ring_copy(ring, tail, &rec, sizeof(rec));
                                dropped += rec.lost;
                        }
                        tail += h.size;
                }
                __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
        }
        retune(s);
        if (k > 1)
                qsort(out, k, sizeof(*out), cmp_sample);
        *n = k;
        *lost += dropped;
        return 0;
}

void mthp_fault_sampler_free(struct mthp_fault_sampler *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_rings; i++)
                close_mapped(s->rings[i].fd, s->rings[i].map, s->rings[i].map_len);
        free(s->rings);
        free(s);
}

/* The fault-burst alarm: see include/mthp/faults.h. */
struct alarm_cpu {
        int fd;
        int cpu;
        uint64_t period;        /* faults to its next overflow, counted from its arm; 0: off */
        void *map;              /* metadata page + one data page */
        size_t map_len;
};

struct mthp_fault_alarm {
        struct alarm_cpu *cpus;
        size_t n;
};

static int open_alarm(void *slot, int cpu, void *arg) {
        struct alarm_cpu *c = slot;
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = PERF_COUNT_SW_PAGE_FAULTS,
                .sample_period = 1ULL << 40,    /* set by each arm */
                .sample_type = 0,               /* a sample is its header: only its coming counts */
                .disabled = 1,
                .exclude_hv = 1,
                .wakeup_events = 1,
        };
        /* without a ring, poll() on the event says EPOLLHUP at once */
        c->fd = -1;
        c->cpu = cpu;
        c->map_len = 2 * *(const size_t *) arg;
        return open_mapped(&attr, cpu, c->map_len, &c->fd, &c->map);
}

int mthp_fault_alarm_new(struct mthp_fault_alarm **ret) {
        long pg = sysconf(_SC_PAGESIZE);
        size_t page = pg > 0 ? (size_t) pg : 4096;

        if (!ret)
                return -EINVAL;
        struct mthp_fault_alarm *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        void *cpus = NULL;
        int r = open_per_cpu(sizeof(*a->cpus), &cpus, &a->n, open_alarm, &page);
        a->cpus = cpus;
        if (r < 0) {
                mthp_fault_alarm_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

size_t mthp_fault_alarm_n(const struct mthp_fault_alarm *a) {
        return a ? a->n : 0;
}

int mthp_fault_alarm_fd(const struct mthp_fault_alarm *a, size_t i) {
        return a && i < a->n ? a->cpus[i].fd : -EINVAL;
}

int mthp_fault_alarm_cpu(const struct mthp_fault_alarm *a, size_t i) {
        return a && i < a->n ? a->cpus[i].cpu : -EINVAL;
}

/* what the ring holds is read: the next overflow wakes poll() again */
static bool alarm_consume(struct alarm_cpu *c) {
        struct perf_event_mmap_page *meta = c->map;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        bool any = head != meta->data_tail;
        __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
        return any;
}

/* Disabled, a new period, enabled: the kernel restarts a software event's
 * count toward its period when it is enabled with a period just set
 * (PERF_EVENT_IOC_PERIOD on an enabled one would overflow at its next
 * fault). Off on failure. */
static int alarm_arm_cpu(struct alarm_cpu *c, uint64_t period) {
        int r = 0;
        if (ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0) < 0 || ioctl(c->fd, PERF_EVENT_IOC_PERIOD, &period) < 0)
                r = -errno;
        c->period = 0;
        (void) alarm_consume(c);
        if (r == 0 && ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
                r = -errno;
        if (r == 0)
                c->period = period;
        return r;
}

static int alarm_off_cpu(struct alarm_cpu *c) {
        if (!c->period)
                return 0;
        c->period = 0;
        return ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0) < 0 ? -errno : 0;
}

int mthp_fault_alarm_arm(struct mthp_fault_alarm *a, uint64_t faults_per_cpu) {
        if (!a || !faults_per_cpu || faults_per_cpu > MTHP_FAULT_ALARM_MAX)
                return -EINVAL;
        for (size_t i = 0; i < a->n; i++) {
                if (a->cpus[i].period == faults_per_cpu) {
                        (void) alarm_consume(&a->cpus[i]);   /* a ring not yet read is the last interval's */
                        continue;
                }
                int r = alarm_arm_cpu(&a->cpus[i], faults_per_cpu);
                if (r < 0) {   /* none left on */
                        (void) mthp_fault_alarm_disarm(a);
                        return r;
                }
        }
        return 0;
}

int mthp_fault_alarm_rearm(struct mthp_fault_alarm *a, size_t i, uint64_t faults) {
        if (!a || i >= a->n || !faults || faults > MTHP_FAULT_ALARM_MAX)
                return -EINVAL;
        return alarm_arm_cpu(&a->cpus[i], faults);
}

int mthp_fault_alarm_disarm(struct mthp_fault_alarm *a) {
        int r = 0;
        if (!a)
                return -EINVAL;
        for (size_t i = 0; i < a->n; i++) {
                int q = alarm_off_cpu(&a->cpus[i]);
                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

bool mthp_fault_alarm_armed(const struct mthp_fault_alarm *a) {
        for (size_t i = 0; a && i < a->n; i++)
                if (a->cpus[i].period)
                        return true;
        return false;
}

uint64_t mthp_fault_alarm_period(const struct mthp_fault_alarm *a, size_t i) {
        return a && i < a->n ? a->cpus[i].period : 0;
}

bool mthp_fault_alarm_fired(struct mthp_fault_alarm *a, size_t i) {
        if (!a || i >= a->n)
                return false;
        return alarm_consume(&a->cpus[i]);
}

void mthp_fault_alarm_free(struct mthp_fault_alarm *a) {
        if (!a)
                return;
        for (size_t i = 0; i < a->n; i++)
                close_mapped(a->cpus[i].fd, a->cpus[i].map, a->cpus[i].map_len);
        free(a->cpus);
        free(a);
}
