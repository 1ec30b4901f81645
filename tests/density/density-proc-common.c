/* SPDX-License-Identifier: MIT */
/* What test-density-proc.c and test-density-shm.c share: children that map
 * and touch memory in a given pattern, one tick of the sampler restricted to
 * one of them, and the host both programs sample. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "density-proc-common.h"

/* the /dev/shm file of a SHM_FILE child (the parent unlinks it) */
void shm_file_name(pid_t pid, char *buf, size_t n) {
        snprintf(buf, n, "/dev/shm/mthpd-density-test.%d", (int) pid);
}

struct mthp_host *host;
const unsigned sizes[] = { 16, 64, 2048 };

uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

void touch(char *m, uint64_t len, uint64_t stride) {
        for (uint64_t off = 0; off < len; off += stride)
                m[off] = 1;
}

static __attribute__((noreturn)) void child_main(int wfd, enum pattern p, uint64_t len, unsigned exit_after_us) {
        int flags = MAP_PRIVATE | MAP_ANONYMOUS;
        uint64_t maplen = len;
        char *m;

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* keep the host's THP settings (others may change them meanwhile)
         * out of the coverage tests: 4K folios only */
        bool thp = p == THP_SPARSE || p == ADVISED || p == THP_HALF || p == THP_ZEROS_DATA1 || p == THP_ZEROS_DATA4;
        if (!thp)
                prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        if (p == SHMEM_DENSE)
                flags = MAP_SHARED | MAP_ANONYMOUS;
        if (p == RESERVE)
                flags |= MAP_NORESERVE;
        if (p == THP_SPARSE || p == ADVISED || p == THP_HALF)
                maplen = len + 2 * MiB;   /* aligned below */
        if (p == SHM_HALF_PMD || p == SHM_WHOLE_PMD || p == SHM_ZERO_HALF_PMD || p == SHM_PMD_HOLE) {
                char *r = mmap(NULL, len + 2 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (r == MAP_FAILED)
                        _exit(2);
                uintptr_t a = ((uintptr_t) r + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1);
                m = mmap((void *) a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        } else if (p == THP_ZEROS_DATA1 || p == THP_ZEROS_DATA4) {
                /* [zeros: len][PROT_NONE: 2M][data: 2 or 8 MiB], 2M-aligned:
                 * the gap keeps the two mappings apart */
                uint64_t data = p == THP_ZEROS_DATA1 ? 2 * MiB : 8 * MiB;
                char *r = mmap(NULL, len + data + 4 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (r == MAP_FAILED)
                        _exit(2);
                uintptr_t a = ((uintptr_t) r + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1);
                m = mmap((void *) a, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
                char *d = mmap((void *) (a + len + 2 * MiB), data, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
                if (m == MAP_FAILED || d == MAP_FAILED || madvise(m, len, MADV_HUGEPAGE) < 0 ||
                    madvise(d, data, MADV_HUGEPAGE) < 0)
                        _exit(2);
                for (uint64_t off = 0; off < len; off += P4K)
                        ((volatile char *) m)[off] = 0;   /* page_fault1's store */
                touch(d, data, 2 * P4K);                  /* every other page nonzero */
        } else if (p == SHM_MISALIGNED || p == SHM_ZERO_MISALIGNED) {
                char *r = mmap(NULL, len + 4 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (r == MAP_FAILED)
                        _exit(2);
                uintptr_t a = (((uintptr_t) r + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1)) + 8192;
                m = mmap((void *) a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        } else if (p == SHM_FILE) {
                char name[64];
                shm_file_name(getpid(), name, sizeof(name));
                int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
                if (fd < 0 || ftruncate(fd, (off_t) len) < 0)
                        _exit(2);
                m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        } else if (p == SHM_SYSV) {
                int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
                if (id < 0)
                        _exit(2);
                m = shmat(id, NULL, 0);
                shmctl(id, IPC_RMID, NULL);   /* gone when we are */
                if (m == (void *) -1)
                        _exit(2);
        } else if (p == MEMFD_SPARSE) {
                int fd = memfd_create("density-test", 0);
                if (fd < 0 || ftruncate(fd, (off_t) len) < 0)
                        _exit(2);
                m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        } else
                m = mmap(NULL, maplen, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (m == MAP_FAILED)
                _exit(2);
        if (p == THP_SPARSE || p == THP_HALF) {
                m = (char *) (((uintptr_t) m + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1));
                madvise(m, len, MADV_HUGEPAGE);
        }
        if (p == ADVISED) {
                m = (char *) (((uintptr_t) m + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1));
                if (madvise(m, len / 2, MADV_NOHUGEPAGE) < 0 || madvise(m + len / 2, len / 2, MADV_HUGEPAGE) < 0)
                        _exit(2);
        }
        switch (p) {
        case DENSE:
        case SHMEM_DENSE:
        case CHURN:
        case ADVISED:
        case SHM_MISALIGNED:
        case SHM_FILE:
        case SHM_SYSV:
                touch(m, len, P4K);
                break;
        case SHM_HALF_PMD:
        case SHM_WHOLE_PMD:
                touch(m, len, P4K);   /* 4K folios: THP is off for us */
                /* MADV_COLLAPSE ignores the sysfs knobs, not the prctl;
                 * the parent checks smaps for the result */
                prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
                (void) madvise(m, p == SHM_HALF_PMD ? len / 2 : len, 25 /* MADV_COLLAPSE */);
                break;
        case SHM_PMD_HOLE:
                touch(m, len, P4K);
                prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
                (void) madvise(m, 4 * MiB, 25 /* MADV_COLLAPSE */);
                (void) madvise(m + 6 * MiB, len - 6 * MiB, 25 /* MADV_COLLAPSE */);
                break;
        case SHM_ZERO_MISALIGNED:
                memset(m, 0, len);
                touch(m, len, 8 * P4K);
                break;
        case SHM_ZERO_HALF_PMD:
                touch(m, len / 2, 8 * P4K);
                memset(m + len / 2, 0, len / 2);
                touch(m + len / 2, len / 2, 8 * P4K);
                prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
                (void) madvise(m, len / 2, 25 /* MADV_COLLAPSE */);
                break;
        case SPARSE:
        case MEMFD_SPARSE:
        case THP_SPARSE:
                touch(m, len, 64 * 1024);
                break;
        case THP_HALF:
                touch(m, len / 2, P4K);
                for (uint64_t off = len / 2; off < len; off += 2 * MiB)
                        ((volatile char *) m)[off] = 0;
                break;
        case ZEROS:
                for (uint64_t off = 0; off < len; off += P4K)
                        ((volatile char *) m)[off] = 0;   /* page_fault1's store */
                break;
        case ZERO15:
                memset(m, 0, len);             /* every page allocated, all zeros */
                touch(m, len, 16 * P4K);       /* then 1 in 16 made nonzero */
                break;
        case THP_ZEROS_DATA1:
        case THP_ZEROS_DATA4:
                break;   /* written where mapped, above */
        case RESERVE:
                touch(m, 64 * MiB, P4K);
                for (int i = 1; i <= 4; i++)
                        m[(uint64_t) i * 16 * GiB - 8 * MiB] = 1;
                break;
        }
        uint64_t addr = (uintptr_t) m;
        if (write(wfd, &addr, sizeof(addr)) != sizeof(addr))
                _exit(2);
        close(wfd);
        if (exit_after_us) {
                usleep(exit_after_us);
                _exit(0);
        }
        for (;;) {
                if (p != CHURN) {
                        pause();
                        continue;
                }
                char *c = mmap(NULL, 16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (c != MAP_FAILED) {
                        touch(c, 16 * MiB, P4K);
                        munmap(c, 16 * MiB);
                }
        }
}

/* exit_after_us: 0 = stay until killed; else exit that long after ready */
struct child spawn(enum pattern p, uint64_t len, unsigned exit_after_us) {
        struct child c = { .len = len };
        int fds[2];
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        c.pid = fork();
        assert_true(c.pid >= 0);
        if (c.pid == 0) {
                close(fds[0]);
                child_main(fds[1], p, len, exit_after_us);
        }
        close(fds[1]);
        ssize_t n = read(fds[0], &c.addr, sizeof(c.addr));
        close(fds[0]);
        assert_int_equal(n, sizeof(c.addr));
        return c;
}

void reap(struct child *c) {
        kill(c->pid, SIGKILL);
        assert_int_equal(waitpid(c->pid, NULL, 0), c->pid);
}

struct mthp_density_budget roomy(void) {
        struct mthp_density_budget b;
        mthp_density_budget_default(&b);
        b.max_usec = 2000000;   /* tests assert values, not speed; ASan and load are slow */
        b.max_pages_per_proc = 65536;   /* 64 MiB mappings are read whole */
        b.measure_thp_disabled = true;  /* the children keep 4K folios with PR_SET_THP_DISABLE */
        return b;
}

/* One tick restricted to the child (and to its mapping if ranged). */
const struct mthp_density_proc *sample(const struct child *c, bool ranged, const struct mthp_density_budget *b,
                                              struct mthp_density_sampler **sp, struct mthp_density_report *rep) {
        struct mthp_density_target t = { .pid = c->pid };
        if (ranged) {
                t.start = c->addr;
                t.end = c->addr + c->len;
        }
        assert_int_equal(mthp_density_new(host, sizes, 3, b, sp), 0);
        assert_int_equal(mthp_density_set_targets(*sp, &t, 1), 0);
        assert_int_equal(mthp_density_tick(*sp, now_usec(), rep), 0);
        assert_int_equal(rep->n_procs, 1);
        assert_int_equal(rep->procs[0].pid, c->pid);
        return &rep->procs[0];
}

void print_kind(const char *what, const struct mthp_density_proc *p, int kind) {
        const struct mthp_density_kind *k = &p->kind[kind];
        printf("# %s %s: windows %u%s, examined %llu pages, read %llu, %llu us\n", what, mthp_kind_name(kind),
               k->windows, k->census ? " (all)" : "", (unsigned long long) p->pages_examined,
               (unsigned long long) p->pages_read, (unsigned long long) p->usec);
        for (unsigned i = 0; i < 3; i++)
                printf("#   %4uK: blocks %llu coverage %.4f full %llu read %llu (zero %llu, in 4K folios %llu) "
                       "zero %.4f\n", k->size[i].kb,
                       (unsigned long long) k->size[i].blocks, k->size[i].coverage,
                       (unsigned long long) k->size[i].full_blocks, (unsigned long long) k->size[i].read_pages,
                       (unsigned long long) k->size[i].zero_pages, (unsigned long long) k->size[i].zero_base_pages,
                       k->size[i].zero_fraction);
}

/* Can the sampler tell folios apart: kpageflags readable and PFNs in
 * pagemap (CAP_SYS_ADMIN)? Checked on a page of our own. */
bool pfns_visible(void) {
        static volatile char page[4096] __attribute__((aligned(4096)));
        uint64_t e = 0;
        page[0] = 1;
        int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || access("/proc/kpageflags", R_OK) != 0) {
                if (fd >= 0)
                        close(fd);
                return false;
        }
        ssize_t n = pread(fd, &e, sizeof(e), (off_t) ((uintptr_t) page / 4096 * sizeof(e)));
        close(fd);
        return n == (ssize_t) sizeof(e) && (e & ((1ULL << 55) - 1)) != 0;
}

int group_setup(void **state) {
        (void) state;
        return mthp_host_open("/", &host);
}

int group_teardown(void **state) {
        (void) state;
        mthp_host_free(host);
        return 0;
}

struct child spawn_pair(const struct pair_opts *o, pid_t *a) {
        struct child c = { .len = o->len };
        uint64_t len = o->len;
        uint64_t msg[2];
        int fds[2];
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        *a = fork();
        assert_true(*a >= 0);
        if (*a == 0) {
                close(fds[0]);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);   /* 4K folios whatever the knobs */
                char *m, *at = NULL;
                int flags = 0;
                if (o->align) {
                        char *r = mmap(NULL, len + 2 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                        if (r == MAP_FAILED)
                                _exit(2);
                        at = (char *) (((uintptr_t) r + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1));
                        flags = MAP_FIXED;
                }
                if (o->memfd) {
                        int fd = memfd_create("density-pair", 0);
                        if (fd < 0 || ftruncate(fd, (off_t) len) < 0)
                                _exit(2);
                        m = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd, 0);
                } else
                        m = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | flags, -1, 0);
                if (m == MAP_FAILED)
                        _exit(2);
                touch(m, o->a_len, o->a_stride * P4K);
                pid_t b = fork();
                if (b < 0)
                        _exit(2);
                if (b == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        if (o->b_thp)
                                prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
                        touch(m, o->b_len ? o->b_len : len, o->b_stride * P4K);
                        msg[0] = (uint64_t) getpid();
                        msg[1] = (uintptr_t) m;
                        if (write(fds[1], msg, sizeof(msg)) != sizeof(msg))
                                _exit(2);
                        close(fds[1]);
                        for (;;)
                                pause();
                }
                close(fds[1]);
                for (;;)
                        pause();
        }
        close(fds[1]);
        ssize_t n = read(fds[0], msg, sizeof(msg));
        close(fds[0]);
        assert_int_equal(n, sizeof(msg));
        c.pid = (pid_t) msg[0];
        c.addr = msg[1];
        return c;
}

void reap_pair(struct child *b, pid_t a) {
        kill(b->pid, SIGKILL);   /* A's child: A reaps it, or init once A is gone */
        kill(a, SIGKILL);
        assert_int_equal(waitpid(a, NULL, 0), a);
}
