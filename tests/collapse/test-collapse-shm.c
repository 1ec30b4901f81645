/* SPDX-License-Identifier: MIT */
/* The shmem repair's collapser (mthp_collapser_run_shm) against real child
 * processes on this kernel: which blocks of a shared segment it takes when
 * the process it works through mapped only part of what the segment holds.
 *
 * A writes pages of the first 8 MiB of a 10 MiB MAP_SHARED|MAP_ANONYMOUS
 * segment at a 2M boundary in 4K folios (PR_SET_THP_DISABLE), then forks B, which writes
 * 1 page in 4 of what A wrote: B maps those alone (a write fault on a
 * shared mapping maps no neighbours; a read fault maps the 64K around it
 * that the page cache holds, and a read of a hole adds a page to the
 * segment). PostgreSQL's shape: the postmaster writes its shared
 * structures, a backend maps the part it uses.
 *  - A wrote every page: each 2M block is whole in the page cache, so a 2M
 *    folio there adds nothing; the repair must collapse all 4 blocks
 *    through B. Before it read the page cache it counted B's PTEs (1 in 4,
 *    under its 90%) and collapsed none: 29 MiB of PostgreSQL's shared
 *    structures stayed at 4K in every pgbench -S run.
 *  - A wrote 1 page in 4: a 2M folio would quadruple the memory; none.
 * Needs root and /proc/PID/map_files, else 77; a kernel without
 * process_madvise, MADV_COLLAPSE or PAGEMAP_SCAN (6.7) skips each test
 * with the reason. Writes no knob: MADV_COLLAPSE does not need 2M on, but
 * the host may refuse it (shmem_enabled deny: EINVAL; no free 2M: ENOMEM,
 * EAGAIN); a test that could not collapse says so and skips. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "mthp/collapse.h"
#include "mthp/host.h"

#include "../density/density-proc-common.h"

#define LEN (8 * MiB)
#define SEG (LEN + 2 * MiB)   /* its last block never written: the object is not whole */

struct pair {
        pid_t a, b;
        uint64_t addr;
};

/* A writes every a_stride-th page of the first LEN bytes, B every 4th of
 * those, with THP allowed again (MADV_COLLAPSE refuses a THP-disabled mm). */
static struct pair pair_new(unsigned a_stride) {
        struct pair p;
        struct child b = spawn_pair(&(struct pair_opts) { .align = true, .b_thp = true, .len = SEG, .a_len = LEN,
                                                          .a_stride = a_stride, .b_len = LEN,
                                                          .b_stride = 4 * a_stride }, &p.a);
        p.b = b.pid;
        p.addr = b.addr;
        return p;
}

static void pair_free(struct pair *p) {
        reap_pair(&(struct child) { .pid = p->b }, p->a);
}

/* kB of pid's shmem mapped by PMD (smaps ShmemPmdMapped) */
static long pmd_mapped_kb(pid_t pid) {
        char path[64], line[256];
        long kb = 0, v;
        snprintf(path, sizeof(path), "/proc/%d/smaps", (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "ShmemPmdMapped: %ld kB", &v) == 1)
                        kb += v;
        fclose(f);
        return kb;
}

/* One repair pass through B, with a budget that does not cut it short;
 * no cmocka calls (a child process runs it too). */
static int repair_run(const struct pair *p, struct mthp_collapse_result *res) {
        struct mthp_host *h;
        struct mthp_collapser *c;
        struct mthp_collapse_budget b;
        mthp_collapse_budget_default(&b);
        b.max_usec = 2000000;
        int r = mthp_host_open("/", &h);
        if (r < 0)
                return r;
        r = mthp_collapser_new(h, &b, &c);
        if (r < 0) {
                mthp_host_free(h);
                return r;
        }
        uint64_t t = now_usec();
        mthp_collapser_begin_tick(c, t);
        r = mthp_collapser_run_shm(c, p->b, p->addr, SEG, t, res);
        mthp_collapser_free(c);
        mthp_host_free(h);
        return r;
}

/* The same, skipped with the reason (the pair reaped) where the host
 * cannot collapse. */
static struct mthp_collapse_result repair(struct pair *p) {
        struct mthp_collapse_result res;
        int r = repair_run(p, &res);
        if (r == -EOPNOTSUPP) {
                printf("# skipped: the collapser says this kernel cannot (no process_madvise, MADV_COLLAPSE or "
                       "PAGEMAP_SCAN)\n");
                pair_free(p);
                skip();
        }
        if (r == -EPERM || r == -EACCES) {
                printf("# skipped: the collapser may not act on pid %d: %s (needs CAP_SYS_NICE and "
                       "CAP_CHECKPOINT_RESTORE in the host namespace)\n", (int) p->b, strerror(-r));
                pair_free(p);
                skip();
        }
        assert_int_equal(r, 0);
        int e = -res.last_error;
        if (res.failed && (e == EINVAL || e == ENOMEM || e == EAGAIN || e == EBUSY)) {
                printf("# skipped: this host refused MADV_COLLAPSE of shmem: %s (shmem_enabled deny, or no "
                       "free 2M page)\n", strerror(e));
                pair_free(p);
                skip();
        }
        return res;
}

static void test_whole_in_cache(void **state) {
        (void) state;
        struct pair p = pair_new(1);
        long before = pmd_mapped_kb(p.b);
        struct mthp_collapse_result res = repair(&p);
        long after = pmd_mapped_kb(p.b);
        printf("# A wrote every page, B wrote 1 in 4: candidates %u collapsed %u failed %u (last error %d); "
               "B's ShmemPmdMapped %ld -> %ld kB\n",
               res.candidates, res.collapsed, res.failed, res.last_error, before, after);
        pair_free(&p);
        assert_int_equal(before, 0);
        assert_int_equal(res.candidates, 4);
        assert_int_equal(res.collapsed, 4);
        assert_int_equal(after, (long) (LEN / 1024));
}

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
/* The same where cachestat is refused (EPERM, as a seccomp filter that does
 * not know it refuses it, e.g. systemd's @system-service before 6.5): the
 * page cache is read with mincore. The repair runs in a child process that
 * installs the filter; its exit status is the number of blocks collapsed. */
static void test_whole_in_cache_mincore(void **state) {
        (void) state;
        struct pair p = pair_new(1);
        pid_t k = fork();
        assert_true(k >= 0);
        if (k == 0) {
                struct sock_filter f[] = {
                        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_cachestat, 0, 1),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                };
                struct sock_fprog prog = { (unsigned short) (sizeof(f) / sizeof(f[0])), f };
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                        _exit(100);
                struct mthp_collapse_result res;
                int r = repair_run(&p, &res);
                _exit(r < 0 ? 102 : res.failed ? 101 : (int) res.collapsed);
        }
        int st = 0;
        assert_int_equal(waitpid(k, &st, 0), k);
        long after = pmd_mapped_kb(p.b);
        pair_free(&p);
        assert_true(WIFEXITED(st));
        printf("# cachestat refused: the repair through B collapsed %d block(s); B's ShmemPmdMapped %ld kB\n",
               WEXITSTATUS(st), after);
        if (WEXITSTATUS(st) >= 100) {
                printf("# skipped: %s\n", WEXITSTATUS(st) == 100 ? "cannot install a seccomp filter"
                                          : WEXITSTATUS(st) == 101 ? "MADV_COLLAPSE failed on this host"
                                          : "the collapser could not run here");
                skip();
        }
        assert_int_equal(WEXITSTATUS(st), 4);
        assert_int_equal(after, (long) (LEN / 1024));
}

static void test_sparse_in_cache(void **state) {
        (void) state;
        struct pair p = pair_new(4);
        struct mthp_collapse_result res = repair(&p);
        long after = pmd_mapped_kb(p.b);
        printf("# A wrote 1 page in 4, B wrote 1 in 4 of those: candidates %u collapsed %u; "
               "B's ShmemPmdMapped %ld kB\n",
               res.candidates, res.collapsed, after);
        pair_free(&p);
        assert_int_equal(res.candidates, 0);
        assert_int_equal(res.collapsed, 0);
        assert_int_equal(after, 0);
}

int main(void) {
        if (geteuid() != 0) {
                printf("# skipped: needs root (process_madvise MADV_COLLAPSE of another process, "
                       "/proc/PID/map_files)\n");
                return 77;
        }
        /* the page cache is read through map_files: a root without
         * CAP_CHECKPOINT_RESTORE in the host namespace cannot */
        char name[64];
        char *map_probe = mmap(NULL, P4K, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(map_probe != MAP_FAILED);
        snprintf(name, sizeof(name), "/proc/self/map_files/%llx-%llx", (unsigned long long) (uintptr_t) map_probe,
                 (unsigned long long) (uintptr_t) map_probe + P4K);
        int fd = open(name, O_RDONLY | O_CLOEXEC), err = errno;
        munmap(map_probe, P4K);
        if (fd < 0) {
                printf("# skipped: cannot open %s: %s (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)\n", name,
                       strerror(err));
                return 77;
        }
        close(fd);
        setvbuf(stdout, NULL, _IOLBF, 0);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_whole_in_cache),
                cmocka_unit_test(test_whole_in_cache_mincore),
                cmocka_unit_test(test_sparse_in_cache),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
