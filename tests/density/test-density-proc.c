/* SPDX-License-Identifier: MIT */
/* Density sampler against real child processes on this kernel: dense and
 * sparse anon and shmem, zero-filled pages, a sparse terabyte-scale
 * reservation, processes exiting mid-tick, and host-wide selection by fault
 * rate. Needs root (pagemap of another process, process_vm_readv); else 77. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/shm.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "mthp/density.h"

#define P4K 4096u
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

enum pattern {
        DENSE,          /* every 4K page written nonzero */
        SPARSE,         /* one page per 64K */
        ZERO15,         /* every page written, only 1 in 16 nonzero */
        ZEROS,          /* every page written with 0 (calloc, memset, page_fault1) */
        SHMEM_DENSE,    /* MAP_SHARED|MAP_ANONYMOUS, every page */
        MEMFD_SPARSE,   /* memfd, one page per 64K */
        RESERVE,        /* 64 GiB NORESERVE: first 64 MiB dense, 4 lone pages far apart */
        THP_SPARSE,     /* MADV_HUGEPAGE, one page per 64K: 2M folios if the host gives them */
        CHURN,          /* keeps mapping, touching, unmapping: a steady fault rate */
        ADVISED,        /* first half MADV_NOHUGEPAGE, second half MADV_HUGEPAGE, every page */
        SHM_MISALIGNED, /* MAP_SHARED|MAP_ANONYMOUS 8K past a 2M boundary, every page */
        SHM_FILE,       /* a /dev/shm file, linked while mapped, every page */
        SHM_SYSV,       /* a SysV segment, every page */
        SHM_HALF_PMD,   /* MAP_SHARED|MAP_ANONYMOUS at a 2M boundary, every page at 4K,
                         * then its first half collapsed (MADV_COLLAPSE): PMD-mapped */
        SHM_WHOLE_PMD,  /* the same, all of it collapsed: every whole 2M block
                         * PMD-mapped, a tail short of 2M left at 4K */
};

/* the /dev/shm file of a SHM_FILE child (the parent unlinks it) */
static void shm_file_name(pid_t pid, char *buf, size_t n) {
        snprintf(buf, n, "/dev/shm/mthpd-density-test.%d", (int) pid);
}

struct child {
        pid_t pid;
        uint64_t addr, len;
};

static struct mthp_host *host;
static const unsigned sizes[] = { 16, 64, 2048 };

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void touch(char *m, uint64_t len, uint64_t stride) {
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
        if (p != THP_SPARSE && p != ADVISED)
                prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        if (p == SHMEM_DENSE)
                flags = MAP_SHARED | MAP_ANONYMOUS;
        if (p == RESERVE)
                flags |= MAP_NORESERVE;
        if (p == THP_SPARSE || p == ADVISED)
                maplen = len + 2 * MiB;
        if (p == SHM_HALF_PMD || p == SHM_WHOLE_PMD) {
                char *r = mmap(NULL, len + 2 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (r == MAP_FAILED)
                        _exit(2);
                uintptr_t a = ((uintptr_t) r + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1);
                m = mmap((void *) a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        } else if (p == SHM_MISALIGNED) {
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
        if (p == THP_SPARSE) {
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
        case SPARSE:
        case MEMFD_SPARSE:
        case THP_SPARSE:
                touch(m, len, 64 * 1024);
                break;
        case ZEROS:
                for (uint64_t off = 0; off < len; off += P4K)
                        ((volatile char *) m)[off] = 0;   /* page_fault1's store */
                break;
        case ZERO15:
                memset(m, 0, len);             /* every page allocated, all zeros */
                touch(m, len, 16 * P4K);       /* then 1 in 16 made nonzero */
                break;
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
static struct child spawn(enum pattern p, uint64_t len, unsigned exit_after_us) {
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

static void reap(struct child *c) {
        kill(c->pid, SIGKILL);
        assert_int_equal(waitpid(c->pid, NULL, 0), c->pid);
}

static struct mthp_density_budget roomy(void) {
        struct mthp_density_budget b;
        mthp_density_budget_default(&b);
        b.max_usec = 2000000;   /* tests assert values, not speed; ASan and load are slow */
        b.max_pages_per_proc = 65536;   /* 64 MiB mappings are read whole */
        b.measure_thp_disabled = true;  /* the children keep 4K folios with PR_SET_THP_DISABLE */
        return b;
}

/* One tick restricted to the child (and to its mapping if ranged). */
static const struct mthp_density_proc *sample(const struct child *c, bool ranged, const struct mthp_density_budget *b,
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

static void print_kind(const char *what, const struct mthp_density_proc *p, int kind) {
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

static void test_dense_anon(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(DENSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("dense", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->census);
        assert_true(k->mapped_bytes == 64 * MiB);
        for (unsigned i = 0; i < 3; i++) {
                assert_true(k->size[i].coverage >= 0.95);
                assert_true(k->size[i].read_pages > 0);
                assert_true(k->size[i].zero_fraction <= 0.05);
        }
        assert_int_equal(k->size[1].blocks, 1024);   /* every 64K block of the mapping */
        assert_int_equal(p->kind[MTHP_SHMEM].windows, 0);
        assert_true(rep.pages_examined <= b.max_pages_per_tick);
        mthp_density_free(s);
        reap(&c);
}

static void test_sparse_anon(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(SPARSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("sparse", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->size[1].coverage <= 0.1);
        assert_true(fabs(k->size[1].coverage - 1.0 / 16) < 1e-9);   /* read whole: exact */
        assert_true(fabs(k->size[0].coverage - 0.25) < 1e-9);
        assert_true(fabs(k->size[2].coverage - 1.0 / 16) < 1e-9);
        assert_int_equal(k->size[1].full_blocks, 0);
        assert_true(isnan(k->size[1].zero_fraction));   /* no full block: nothing to read */
        mthp_density_free(s);
        reap(&c);
}

/* Can the sampler tell folios apart: kpageflags readable and PFNs in
 * pagemap (CAP_SYS_ADMIN)? Checked on a page of our own. */
static bool pfns_visible(void) {
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

/* Every page written, 15 in 16 with zeros only, in 4K folios (the child
 * has THP disabled): the zeros are pages it touched, and a larger folio
 * would add nothing there, so they are no bloat. (Zeros inside large
 * folios are: test_thp_bloat.) Without /proc/kpageflags the sampler cannot
 * tell a base page from a large folio's subpage and counts every zero. */
static void test_zero_fraction(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        bool kpf = pfns_visible();
        struct child c = spawn(ZERO15, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("zero15", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        if (!kpf)
                printf("# kpageflags or PFNs not visible here (CAP_SYS_ADMIN): every zero counts\n");
        for (unsigned i = 0; i < 3; i++) {
                assert_true(k->size[i].coverage >= 0.95);   /* every page is there... */
                assert_true(k->size[i].read_pages >= 100);
                /* ...15 in 16 hold nothing... */
                assert_true(k->size[i].zero_pages >= k->size[i].read_pages * 85 / 100);
                if (kpf) {   /* ...but were written, in 4K folios */
                        assert_int_equal(k->size[i].zero_base_pages, k->size[i].zero_pages);
                        assert_true(k->size[i].zero_fraction <= 0.05);
                } else {
                        assert_int_equal(k->size[i].zero_base_pages, 0);
                        assert_true(k->size[i].zero_fraction >= 0.85);
                }
        }
        assert_true(p->pages_read > 0 && rep.pages_read == p->pages_read);
        mthp_density_free(s);
        reap(&c);
}

/* A tick whose time budget is gone before a process's first window (its
 * first-sight smaps read can take it all: 9-32 ms for a 1 GiB shared
 * segment) still measures it in a few windows of each kind: a process
 * sampled with no block says nothing, and pgbench's backends were raised
 * for two ticks late for it. 1 us is spent before any window here. */
static void test_floor_past_budget(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        b.max_usec = 1;
        for (unsigned kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct child c = spawn(kind == MTHP_ANON ? DENSE : SHMEM_DENSE, 64 * MiB, 0);
                const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
                print_kind("past budget", p, (int) kind);
                const struct mthp_density_kind *k = &p->kind[kind];
                assert_true(rep.budget_exhausted);
                assert_false(k->census);
                assert_int_equal(k->windows, 4);
                for (unsigned i = 0; i < 3; i++) {
                        assert_true(k->size[i].blocks > 0);
                        assert_true(k->size[i].coverage >= 0.95);
                }
                mthp_density_free(s);
                reap(&c);
        }
}

/* Content is not use: a process that writes zeros to every page touched
 * them all. Its zeros are no bloat, so no zero_fraction may say "unused"
 * (it said 1.00, and the engine held will-it-scale page_fault1 at 4K). */
static void test_zero_writer(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(ZEROS, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("zeros", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        for (unsigned i = 0; i < 3; i++) {
                assert_true(k->size[i].coverage >= 0.95);     /* every page touched */
                assert_true(k->size[i].read_pages >= 100);    /* and read... */
                assert_true(isnan(k->size[i].zero_fraction)); /* ...but zeros alone say nothing */
        }
        mthp_density_free(s);
        reap(&c);
}

/* Budgets too small to read the mapping whole: 64 MiB (32 populated
 * windows) is listed and 8 of them chosen uniformly; 1 GiB (512, more than
 * the listing pays for) gets 8 random draws. */
static void test_sampled_modes(void **state) {
        (void) state;
        const enum pattern pat[] = { DENSE, SPARSE, ZERO15 };
        const uint64_t len[] = { 64 * MiB, 1 * GiB };
        for (unsigned m = 0; m < 2; m++)
                for (unsigned j = 0; j < 3; j++) {
                        struct mthp_density_budget b = roomy();
                        struct mthp_density_sampler *s;
                        struct mthp_density_report rep;
                        b.max_pages_per_proc = 8 * (512 + b.reads_per_window);
                        struct child c = spawn(pat[j], len[m], 0);
                        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
                        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
                        print_kind(m ? "drawn" : "listed", p, MTHP_ANON);
                        assert_false(k->census);
                        assert_int_equal(k->windows, 8);
                        assert_true(p->pages_examined + p->pages_read <= b.max_pages_per_proc);
                        if (pat[j] == SPARSE)
                                assert_true(fabs(k->size[1].coverage - 1.0 / 16) < 1e-9);
                        else
                                assert_true(k->size[1].coverage >= 0.95);
                        if (pat[j] == ZERO15)   /* zeros read (in 4K folios: test_zero_fraction) */
                                assert_true(k->size[1].zero_pages >= k->size[1].read_pages * 85 / 100);
                        mthp_density_free(s);
                        reap(&c);
                }
}

static void test_whole_process(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(DENSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, false, &b, &s, &rep);
        print_kind("whole", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->mapped_bytes >= 64 * MiB);
        assert_true(k->rss_bytes >= 64 * MiB);
        assert_true(k->windows > 0);
        assert_true(k->size[2].coverage > 0 && k->size[2].coverage <= 1);
        assert_true(rep.kind[MTHP_ANON].size[2].coverage == k->size[2].coverage);   /* one process */
        assert_true(p->usec <= rep.usec);
        mthp_density_free(s);
        reap(&c);
}

/* 64 GiB reserved, 64 MiB + 4 pages touched: the walk hops over the holes,
 * so the sample is exact and cheap. */
static void test_sparse_reservation(void **state) {
        (void) state;
        struct utsname u;
        unsigned major = 0, minor = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 || major * 100 + minor < 607)
                skip();   /* no PAGEMAP_SCAN to hop over holes: 64 GiB is too much to list */
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(RESERVE, 64 * GiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("reserve", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        assert_true(k->census);
        assert_int_equal(k->windows, 32 + 4);
        assert_int_equal(k->size[2].blocks, 32 + 4);
        assert_true(fabs(k->size[2].coverage - (16384.0 + 4) / (36 * 512)) < 1e-9);
        assert_true(fabs(k->size[1].coverage - (16384.0 + 4) / (1028 * 16)) < 1e-9);
        assert_true(p->pages_examined == 36 * 512);
        mthp_density_free(s);

        /* too few draws to read all 36: a uniform choice among them */
        b.max_pages_per_proc = 4 * (512 + b.reads_per_window);
        p = sample(&c, true, &b, &s, &rep);
        print_kind("reserve, 4 draws", p, MTHP_ANON);
        assert_false(p->kind[MTHP_ANON].census);
        assert_int_equal(p->kind[MTHP_ANON].windows, 4);
        mthp_density_free(s);
        reap(&c);
}

static void test_shmem(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(SHMEM_DENSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("shmem dense", p, MTHP_SHMEM);
        assert_int_equal(p->kind[MTHP_ANON].mapped_bytes, 0);
        assert_true(p->kind[MTHP_SHMEM].mapped_bytes == 64 * MiB);
        assert_true(p->kind[MTHP_SHMEM].rss_bytes >= 64 * MiB);
        for (unsigned i = 0; i < 3; i++)
                assert_true(p->kind[MTHP_SHMEM].size[i].coverage >= 0.95);
        mthp_density_free(s);
        reap(&c);

        c = spawn(MEMFD_SPARSE, 64 * MiB, 0);
        p = sample(&c, true, &b, &s, &rep);
        print_kind("memfd sparse", p, MTHP_SHMEM);
        assert_true(p->kind[MTHP_SHMEM].size[1].coverage <= 0.1);
        assert_true(rep.kind[MTHP_SHMEM].size[1].coverage <= 0.1);
        mthp_density_free(s);
        reap(&c);
}

/* Two processes share a segment: A writes every `a_stride`-th page of its
 * first a_len bytes, then forks B (a shared mapping's PTEs are not copied:
 * B starts with none), which writes every `b_stride`-th page of all of it.
 * B is returned (addr, len); *a gets A. memfd: a memfd instead of
 * MAP_SHARED|MAP_ANONYMOUS. */
static struct child spawn_pair(bool memfd, uint64_t len, uint64_t a_len, uint64_t a_stride, uint64_t b_stride,
                               pid_t *a) {
        struct child c = { .len = len };
        uint64_t msg[2];
        int fds[2];
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        *a = fork();
        assert_true(*a >= 0);
        if (*a == 0) {
                close(fds[0]);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);   /* 4K folios whatever the knobs */
                char *m;
                if (memfd) {
                        int fd = memfd_create("density-pair", 0);
                        if (fd < 0 || ftruncate(fd, (off_t) len) < 0)
                                _exit(2);
                        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                } else
                        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        _exit(2);
                touch(m, a_len, a_stride * P4K);
                pid_t b = fork();
                if (b < 0)
                        _exit(2);
                if (b == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        touch(m, len, b_stride * P4K);
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

/* In a child without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE (no
 * /proc/PID/map_files), B's shmem 16K coverage and object windows. */
/* Refuse the system calls in nrs with EPERM, as the unit's
 * SystemCallFilter= does (SystemCallErrorNumber=EPERM); 0 or -errno. */
static int refuse_syscalls(const long *nrs, unsigned n) {
        struct sock_filter f[2 + 2 * 4];
        unsigned k = 0;
        if (n > 4)
                return -EINVAL;
        f[k++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (unsigned i = 0; i < n; i++) {
                f[k++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) nrs[i], 0, 1);
                f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
        }
        f[k++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { (unsigned short) k, f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
}

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
enum { NO_MAP_FILES = 1, NO_CACHESTAT = 2, NO_MINCORE = 4, NO_PFNS = 8, WHOLE = 16 };

/* Drops cap_a and cap_b (-1: none) from this process's effective set; -1
 * if it cannot. */
static int drop_caps(int cap_a, int cap_b) {
        struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &hdr, d) < 0)
                return -1;
        d[CAP_TO_INDEX(cap_a)].effective &= ~CAP_TO_MASK(cap_a);
        if (cap_b >= 0)
                d[CAP_TO_INDEX(cap_b)].effective &= ~CAP_TO_MASK(cap_b);
        return syscall(SYS_capset, &hdr, d) < 0 ? -1 : 0;
}

/* What a child's sampler saw of c's segment: its shmem 16K coverage and
 * object windows (-1: none), and its largest shmem mapping. */
struct restricted {
        double cov, obj;
        struct mthp_shm_mapping shm;
};

/* One sample of c's segment (WHOLE: of the whole process) in a child that
 * lacks what `without` says: CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE (so
 * map_files), CAP_SYS_ADMIN alone (so PFNs, as under the unit, whose
 * CapabilityBoundingSet= lacks it), or cachestat or mincore, refused as a
 * seccomp filter refuses them. */
static struct restricted sample_restricted(const struct child *c, const struct mthp_density_budget *b,
                                           unsigned without) {
        struct restricted msg = { .cov = NAN, .obj = -1, .shm = { .reach = UINT_MAX } };
        int fds[2];
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct mthp_density_sampler *s;
                struct mthp_density_report rep;
                struct mthp_density_target t = { .pid = c->pid, .start = c->addr, .end = c->addr + c->len };
                if (without & WHOLE)
                        t = (struct mthp_density_target) { .pid = c->pid };
                if ((without & NO_MAP_FILES) && drop_caps(CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE) < 0)
                        _exit(2);
                if ((without & NO_PFNS) && drop_caps(CAP_SYS_ADMIN, -1) < 0)
                        _exit(2);
                long nrs[2];
                unsigned n = 0;
                if (without & NO_CACHESTAT)
                        nrs[n++] = SYS_cachestat;
                if (without & NO_MINCORE)
                        nrs[n++] = SYS_mincore;
                if (n && refuse_syscalls(nrs, n) < 0)
                        _exit(2);
                if (mthp_density_new(host, sizes, 3, b, &s) == 0 && mthp_density_set_targets(s, &t, 1) == 0 &&
                    mthp_density_tick(s, now_usec(), &rep) == 0 && rep.n_procs == 1) {
                        msg.cov = rep.procs[0].kind[MTHP_SHMEM].size[0].coverage;
                        msg.obj = rep.procs[0].kind[MTHP_SHMEM].object_windows;
                        msg.shm = rep.procs[0].shm;
                }
                _exit(write(fds[1], &msg, sizeof(msg)) == sizeof(msg) ? 0 : 2);
        }
        close(fds[1]);
        ssize_t n = read(fds[0], &msg, sizeof(msg));
        close(fds[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(n, sizeof(msg));
        return msg;
}

static void reap_pair(struct child *b, pid_t a) {
        kill(b->pid, SIGKILL);   /* A's child: A reaps it, or init once A is gone */
        kill(a, SIGKILL);
        assert_int_equal(waitpid(a, NULL, 0), a);
}

/* A process's share of a shared segment is not its density (issue 12):
 * what a larger shmem folio costs is the object's page cache, shared by
 * every process mapping it. B maps 1 page in 4 of a segment A filled: its
 * PTEs say 0.25, the page cache says full. Control: a segment of which
 * only 1 page in 16 was ever written by anyone stays sparse. */
static void test_shmem_shared_object(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        pid_t a;

        /* the object is read through map_files: CAP_SYS_ADMIN or
         * CAP_CHECKPOINT_RESTORE */
        char *probe = mmap(NULL, P4K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(probe != MAP_FAILED);
        char name[80];
        snprintf(name, sizeof(name), "/proc/self/map_files/%lx-%lx", (unsigned long) probe,
                 (unsigned long) (probe + P4K));
        int pfd = open(name, O_RDONLY | O_CLOEXEC);
        int err = errno;
        munmap(probe, P4K);
        if (pfd < 0) {
                printf("# skipped: %s: %s (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)\n", name, strerror(err));
                skip();
        }
        close(pfd);

        for (int memfd = 0; memfd < 2; memfd++) {
                const char *what = memfd ? "memfd" : "MAP_SHARED anon";
                /* the memfd's last 2M is left to B: the object is not
                 * whole, so its windows are read one by one (cachestat,
                 * mincore) */
                struct child c = spawn_pair(memfd, 64 * MiB, memfd ? 62 * MiB : 64 * MiB, 1, 4, &a);
                const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
                char label[64];
                snprintf(label, sizeof(label), "%s, B maps 1/4 of a segment A filled", what);
                print_kind(label, p, MTHP_SHMEM);
                printf("#   object windows %u of %u\n", p->kind[MTHP_SHMEM].object_windows, p->kind[MTHP_SHMEM].windows);
                assert_true(p->kind[MTHP_SHMEM].windows > 0);
                assert_true(p->kind[MTHP_SHMEM].size[0].coverage >= 0.95);   /* 16K */
                assert_true(p->kind[MTHP_SHMEM].size[1].coverage >= 0.95);   /* 64K */
                assert_true(rep.kind[MTHP_SHMEM].size[1].coverage >= 0.95);
                mthp_density_free(s);
                struct restricted r;
                if (!memfd) {
                        /* without map_files: the PTE view, as before */
                        r = sample_restricted(&c, &b, NO_MAP_FILES);
                        printf("#   without map_files: 16K coverage %.4f, object windows %.0f\n", r.cov, r.obj);
                        assert_true(r.obj == 0);
                        assert_true(r.cov > 0.2 && r.cov < 0.3);
                } else {
                        /* the unit on Debian 12: its systemd cannot name
                         * cachestat, so the filter refuses it; mincore
                         * alone reads the page cache */
                        r = sample_restricted(&c, &b, NO_CACHESTAT);
                        printf("#   cachestat refused: 16K coverage %.4f, object windows %.0f\n", r.cov, r.obj);
                        assert_true(r.obj > 0);
                        assert_true(r.cov >= 0.95);
                        /* mincore refused too (the unit's filter before it
                         * named mincore): back to the PTE view, this
                         * process's share of the segment */
                        r = sample_restricted(&c, &b, NO_CACHESTAT | NO_MINCORE);
                        printf("#   cachestat and mincore refused: 16K coverage %.4f, object windows %.0f\n", r.cov,
                               r.obj);
                        assert_true(r.cov < 0.95);
                }
                reap_pair(&c, a);

                c = spawn_pair(memfd, 64 * MiB, 64 * MiB, 16, 32, &a);
                p = sample(&c, true, &b, &s, &rep);
                snprintf(label, sizeof(label), "%s, 1/16 written by anyone", what);
                print_kind(label, p, MTHP_SHMEM);
                assert_true(p->kind[MTHP_SHMEM].windows > 0);
                assert_true(p->kind[MTHP_SHMEM].size[1].coverage <= 0.1);
                assert_true(rep.kind[MTHP_SHMEM].size[1].coverage <= 0.1);
                mthp_density_free(s);
                reap_pair(&c, a);
        }
}

/* Each process's largest shmem mapping: which knobs reach it and the
 * largest folio its alignment allows (README, "Shmem as it really behaves"),
 * and, where kpageflags is readable, its folios (4K: the child has THP off). */
static void test_shm_mapping(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        bool kpf = pfns_visible();

        struct child c = spawn(SHM_MISALIGNED, 16 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, false, &b, &s, &rep);
        printf("# misaligned: reach %u addr %#llx bytes %llu align %uK folios %u/%u large\n", p->shm.reach,
               (unsigned long long) p->shm.addr, (unsigned long long) p->shm.bytes, p->shm.align_kb, p->shm.large,
               p->shm.sampled);
        assert_int_equal(p->shm.reach, MTHP_SHM_PER_SIZE);
        assert_int_equal(p->shm.addr, c.addr);
        assert_int_equal(p->shm.bytes, 16 * MiB);
        assert_int_equal(p->shm.align_kb, 8);
        if (kpf) {
                assert_int_equal(p->shm.sampled, MTHP_DENSITY_SHM_PROBES);
                assert_int_equal(p->shm.large, 0);
        } else
                printf("# /proc/kpageflags not readable here: folio sizes not checked\n");
        mthp_density_free(s);
        reap(&c);

        c = spawn(SHM_SYSV, 16 * MiB, 0);
        p = sample(&c, false, &b, &s, &rep);
        assert_int_equal(p->shm.reach, MTHP_SHM_SYSV);
        assert_int_equal(p->shm.addr, c.addr);
        mthp_density_free(s);
        reap(&c);

        if (access("/dev/shm", W_OK) != 0) {
                printf("# no writable /dev/shm: the tmpfs file case is not checked\n");
                return;
        }
        char name[64];
        c = spawn(SHM_FILE, 16 * MiB, 0);
        shm_file_name(c.pid, name, sizeof(name));
        p = sample(&c, false, &b, &s, &rep);
        struct mthp_shm_mapping m = p->shm;
        mthp_density_free(s);
        reap(&c);
        assert_int_equal(unlink(name), 0); /* before any assertion can leave it behind */
        assert_int_equal(m.reach, MTHP_SHM_TMPFS_FILE);
        assert_int_equal(m.addr, c.addr);
}

/* ShmemPmdMapped of PID's mapping at ADDR in kB, or -1 if not found. */
static long smaps_pmd_kb(pid_t pid, uint64_t addr) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/smaps", (int) pid);
        FILE *f = fopen(path, "re");
        long kb = -1;
        bool in = false;
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                unsigned long long a, b;
                if (sscanf(line, "%llx-%llx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
                        in = a == addr;
                else if (in && sscanf(line, "ShmemPmdMapped: %ld kB", &kb) == 1)
                        break;
        }
        fclose(f);
        return kb;
}

/* c's largest shmem mapping, sampled without PFNs (sample_restricted) */
static struct mthp_shm_mapping sample_shm_without_pfns(const struct child *c, const struct mthp_density_budget *b) {
        struct mthp_shm_mapping m = sample_restricted(c, b, NO_PFNS | WHOLE).shm;
        assert_true(m.reach != UINT_MAX);
        return m;
}

/* Issue 12 under the unit: without PFNs (no CAP_SYS_ADMIN) kpageflags
 * tells nothing, so the shmem probe asks PAGEMAP_SCAN which sampled pages
 * are PMD-mapped. An 8 MiB 2M-aligned segment filled at 4K whose first
 * half was collapsed: 8 of the 16 probes (evenly spread) fall in each
 * half, so 16 sampled, 8 large, by either probe. A misaligned segment is
 * left unsampled without PFNs (no 2M folio can map there). */
static void test_shm_probe_without_pfns(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct utsname u;
        unsigned major = 0, minor = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 || major * 100 + minor < 607) {
                printf("# skipped: kernel %s has no PAGEMAP_SCAN (6.7), the probe without PFNs\n", u.release);
                skip();
        }

        struct child c = spawn(SHM_HALF_PMD, 8 * MiB, 0);
        long pmd = smaps_pmd_kb(c.pid, c.addr);
        printf("# aligned 8 MiB, first half collapsed: ShmemPmdMapped %ld kB\n", pmd);
        if (pmd != 4096) {
                reap(&c);
                printf("# skipped: MADV_COLLAPSE of the first 4 MiB left ShmemPmdMapped at %ld kB, not 4096: "
                       "no PMD-mapped half to probe\n", pmd);
                skip();
        }
        if (pfns_visible()) {
                const struct mthp_density_proc *p = sample(&c, false, &b, &s, &rep);
                printf("# with PFNs: probe %u, %u of %u sampled pages large\n", p->shm.probe, p->shm.large,
                       p->shm.sampled);
                assert_int_equal(p->shm.probe, MTHP_SHM_PROBE_KPAGEFLAGS);
                assert_int_equal(p->shm.sampled, MTHP_DENSITY_SHM_PROBES);
                assert_int_equal(p->shm.large, MTHP_DENSITY_SHM_PROBES / 2);
                mthp_density_free(s);
        } else
                printf("# PFNs not visible to this test: the kpageflags probe is not compared\n");
        struct mthp_shm_mapping m = sample_shm_without_pfns(&c, &b);
        printf("# without PFNs: probe %u, align %uK, %u of %u sampled pages large\n", m.probe, m.align_kb, m.large,
               m.sampled);
        reap(&c);
        assert_int_equal(m.align_kb, 2048);
        assert_int_equal(m.sampled, MTHP_DENSITY_SHM_PROBES);
        assert_int_equal(m.large, MTHP_DENSITY_SHM_PROBES / 2);
        assert_int_equal(m.probe, MTHP_SHM_PROBE_PMD);

        /* 9 MiB, its 4 whole 2M blocks PMD-mapped: the 1 MiB tail can never
         * be, and is not probed (2 of 16 probes fell there, read as small,
         * and the repair tried it every tick) */
        c = spawn(SHM_WHOLE_PMD, 9 * MiB, 0);
        pmd = smaps_pmd_kb(c.pid, c.addr);
        m = sample_shm_without_pfns(&c, &b);
        printf("# 9 MiB, whole blocks collapsed (ShmemPmdMapped %ld kB), without PFNs: %u of %u sampled pages large\n",
               pmd, m.large, m.sampled);
        reap(&c);
        assert_int_equal(pmd, 8192);   /* MADV_COLLAPSE worked above: it must here */
        assert_int_equal(m.sampled, MTHP_DENSITY_SHM_PROBES);
        assert_int_equal(m.large, m.sampled);

        c = spawn(SHM_MISALIGNED, 16 * MiB, 0);
        m = sample_shm_without_pfns(&c, &b);
        printf("# misaligned without PFNs: align %uK, %u sampled\n", m.align_kb, m.sampled);
        reap(&c);
        assert_int_equal(m.align_kb, 8);
        assert_int_equal(m.sampled, 0);
}

/* Children that exit while being sampled, at varying moments: never an error. */
static void test_exit_mid_tick(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        b.max_pages_per_proc = 1 << 20;   /* read all 256 MiB: a tick of several ms */
        unsigned seen = 0, skipped = 0;
        for (unsigned i = 0; i < 24; i++) {
                struct mthp_density_sampler *s;
                struct mthp_density_report rep;
                struct child c = spawn(DENSE, 256 * MiB, 1 + i * 250);
                struct mthp_density_target t = { .pid = c.pid };
                assert_int_equal(mthp_density_new(host, sizes, 3, &b, &s), 0);
                assert_int_equal(mthp_density_set_targets(s, &t, 1), 0);
                for (unsigned j = 0; j < 3; j++) {
                        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
                        assert_true(rep.n_procs <= 1);
                        seen += rep.n_procs;
                        skipped += rep.procs_skipped;
                }
                mthp_density_free(s);
                assert_int_equal(waitpid(c.pid, NULL, 0), c.pid);
        }
        printf("# exit mid-tick: %u samples complete, %u skipped as gone\n", seen, skipped);
}

static void test_zombie_and_dead(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child z = spawn(DENSE, 1 * MiB, 1);
        usleep(100000);   /* exited, not reaped: a zombie */
        struct child d = spawn(DENSE, 1 * MiB, 1);
        assert_int_equal(waitpid(d.pid, NULL, 0), d.pid);   /* gone entirely */
        struct mthp_density_target t[2] = { { .pid = z.pid }, { .pid = d.pid } };
        assert_int_equal(mthp_density_new(host, sizes, 3, NULL, &s), 0);
        assert_int_equal(mthp_density_set_targets(s, t, 2), 0);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        assert_int_equal(rep.n_procs, 0);
        assert_true(isnan(rep.kind[MTHP_ANON].size[0].coverage));
        mthp_density_free(s);
        assert_int_equal(waitpid(z.pid, NULL, 0), z.pid);
}

/* No targets: the faulting child is found among all of /proc, and the
 * tick stays within its budget. */
static void test_host_wide(void **state) {
        (void) state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b;
        mthp_density_budget_default(&b);
        b.max_procs = 16;
        b.max_usec = 200000;
        struct child c = spawn(CHURN, 16 * MiB, 0);
        assert_int_equal(mthp_density_new(host, sizes, 3, &b, &s), 0);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        usleep(200000);
        assert_int_equal(mthp_density_tick(s, now_usec(), &rep), 0);
        printf("# host-wide: %u listed, %u scanned, %u sampled, %u skipped, %llu pages, %llu read, %llu us%s\n",
               rep.procs_listed, rep.procs_scanned, rep.n_procs, rep.procs_skipped,
               (unsigned long long) rep.pages_examined, (unsigned long long) rep.pages_read,
               (unsigned long long) rep.usec, rep.budget_exhausted ? " (budget exhausted)" : "");
        bool found = false;
        for (unsigned i = 0; i < rep.n_procs; i++) {
                const struct mthp_density_proc *p = &rep.procs[i];
                printf("#   %7d %-16s %10.0f flt/s anon %6.1f MiB windows %u\n", p->pid, p->comm, p->minflt_rate,
                       (double) p->kind[MTHP_ANON].rss_bytes / MiB, p->kind[MTHP_ANON].windows);
                assert_true(p->pid != getpid());
                if (p->pid == c.pid) {
                        found = true;
                        assert_false(p->rate_from_lifetime);
                        assert_true(p->minflt_rate > 1000);
                }
        }
        assert_true(found);
        assert_true(rep.n_procs <= b.max_procs);
        assert_true(rep.pages_examined + rep.pages_read <= b.max_pages_per_tick);
        assert_true(rep.procs_listed > 1);
        mthp_density_free(s);
        reap(&c);
}

/* With 2M THP (madvise + inherit) a process touching 1 page per 64K gets
 * whole 2M folios: pagemap shows them full, the zeros show the bloat. */
static void test_thp_bloat(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(THP_SPARSE, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("thp sparse", p, MTHP_ANON);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        if (!(k->size[2].coverage > 0.99)) {
                mthp_density_free(s);
                reap(&c);
                skip();   /* the host gave no 2M folios (knobs, fragmentation) */
        }
        assert_true(k->size[1].zero_fraction >= 0.85);
        assert_true(k->size[2].zero_fraction >= 0.85);
        mthp_density_free(s);
        reap(&c);
}

/* Opt-outs: a process with THP disabled (PR_SET_THP_DISABLE, as every
 * child but THP_SPARSE and ADVISED runs) is reported, not measured. */
static void test_thp_disabled_not_measured(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(DENSE, 64 * MiB, 0);
        b.measure_thp_disabled = false;
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        print_kind("thp disabled", p, MTHP_ANON);
        assert_true(p->thp_disabled);
        assert_int_equal(p->kind[MTHP_ANON].windows, 0);
        assert_int_equal(p->pages_examined, 0);
        assert_true(isnan(p->kind[MTHP_ANON].size[1].coverage));
        assert_true(p->kind[MTHP_ANON].rss_bytes >= 60 * MiB);
        mthp_density_free(s);
        reap(&c);
}

/* Rss of the child's MADV_NOHUGEPAGE mappings outside [c->addr, +len),
 * from its smaps: none in a plain build; under ASan its shadow and
 * allocator regions (no_huge_pages_for_shadow), ~9 MiB on a 6.18 host. */
static uint64_t other_nohuge_rss(const struct child *c) {
        char path[64], line[512];
        snprintf(path, sizeof(path), "/proc/%d/smaps", (int) c->pid);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        uint64_t total = 0, rss = 0, start = 0, end = 0;
        while (fgets(line, sizeof(line), f)) {
                unsigned long long a, b, kb;
                char perms[8];
                if (sscanf(line, "%llx-%llx %7s ", &a, &b, perms) == 3) {     /* a mapping's header */
                        start = a;
                        end = b;
                        rss = 0;
                } else if (sscanf(line, "Rss: %llu kB", &kb) == 1) {
                        rss = kb * 1024;
                } else if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " nh")) {
                        bool outside = end <= c->addr || start >= c->addr + c->len;
                        bool inside = start >= c->addr && end <= c->addr + c->len;
                        assert_true(outside || inside);    /* merged across the region's edge: no bound */
                        if (outside)
                                total += rss;
                }
        }
        fclose(f);
        return total;
}

/* nh mappings are in no measure (their span and RSS are reported); hg ones
 * are measured with the rest and again on their own. */
static void test_nohuge_left_out_hg_apart(void **state) {
        (void) state;
        struct mthp_density_budget b = roomy();
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct child c = spawn(ADVISED, 64 * MiB, 0);
        const struct mthp_density_proc *p = sample(&c, true, &b, &s, &rep);
        const struct mthp_density_kind *k = &p->kind[MTHP_ANON];
        print_kind("nh+hg", p, MTHP_ANON);
        printf("#   nohuge %llu bytes (rss %llu), advised %llu bytes, hg 64K blocks %llu coverage %.4f\n",
               (unsigned long long) k->nohuge_bytes, (unsigned long long) k->nohuge_rss_bytes,
               (unsigned long long) k->advised_bytes, (unsigned long long) k->advised[1].blocks,
               k->advised[1].coverage);
        assert_false(p->thp_disabled);
        assert_int_equal(k->nohuge_bytes, 32 * MiB);
        /* RssAnon x the nh share of it: the 32 MiB, a little of the rest,
         * and the child's other nh memory (ASan's) */
        uint64_t other = other_nohuge_rss(&c);
        printf("#   other nh rss %llu bytes\n", (unsigned long long) other);
        assert_true(k->nohuge_rss_bytes >= 30 * MiB && k->nohuge_rss_bytes <= 34 * MiB + other);
        assert_int_equal(k->mapped_bytes, 32 * MiB);
        assert_int_equal(k->advised_bytes, 32 * MiB);
        assert_int_equal(k->size[1].blocks, 512);    /* the hg half's 64K blocks only */
        assert_int_equal(k->advised[1].blocks, 512);
        assert_true(k->advised[1].coverage >= 0.95);
        mthp_density_free(s);
        reap(&c);
}

static int group_setup(void **state) {
        (void) state;
        return mthp_host_open("/", &host);
}

static int group_teardown(void **state) {
        (void) state;
        mthp_host_free(host);
        return 0;
}

int main(void) {
        int fd = open("/proc/self/pagemap", O_RDONLY);
        if (geteuid() != 0 || fd < 0) {
                printf("# skipped: needs root and /proc/PID/pagemap\n");
                return 77;
        }
        close(fd);
        setvbuf(stdout, NULL, _IOLBF, 0);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dense_anon),
                cmocka_unit_test(test_thp_disabled_not_measured),
                cmocka_unit_test(test_nohuge_left_out_hg_apart),
                cmocka_unit_test(test_sparse_anon),
                cmocka_unit_test(test_zero_fraction),
                cmocka_unit_test(test_zero_writer),
                cmocka_unit_test(test_floor_past_budget),
                cmocka_unit_test(test_sampled_modes),
                cmocka_unit_test(test_whole_process),
                cmocka_unit_test(test_sparse_reservation),
                cmocka_unit_test(test_shmem),
                cmocka_unit_test(test_shm_mapping),
                cmocka_unit_test(test_shm_probe_without_pfns),
                cmocka_unit_test(test_shmem_shared_object),
                cmocka_unit_test(test_exit_mid_tick),
                cmocka_unit_test(test_zombie_and_dead),
                cmocka_unit_test(test_host_wide),
                cmocka_unit_test(test_thp_bloat),
        };
        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
