/* SPDX-License-Identifier: MIT */
/* The MADV_COLLAPSE collapser without a kernel: the pure helpers, then whole
 * passes against a fake host tree (/proc/PID/{stat,status,maps}) with the
 * kernel calls (PAGEMAP_SCAN, process_madvise, the clock) replaced by a fake
 * process whose blocks become PMD-mapped when advised. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fakehost.h"
#include "mthp/collapse.h"

#define PMD (2ULL << 20)
#define BASE 0x7f0000000000ULL     /* the fake process's first mapping, PMD-aligned */
#define BASE2 0x7f8000000000ULL    /* its second */
#define BASE3 0x7f4000000000ULL    /* its shared one (2 blocks) */
#define PID 4242
#define MAXB 6000

/* ---- pure helpers ---- */

static int line(const char *l, uint64_t *a, uint64_t *b) {
        return mthp_collapse_maps_line(l, strlen(l), PMD, a, b);
}

static void test_maps_line(void **state) {
        (void) state;
        uint64_t a = 0, b = 0;
        /* 8 MiB anonymous, aligned: 4 blocks */
        assert_int_equal(line("7f0000000000-7f0000800000 rw-p 00000000 00:00 0 \n", &a, &b), 1);
        assert_true(a == 0x7f0000000000ULL && b == 0x7f0000800000ULL);
        /* unaligned both ends: only whole blocks inside */
        assert_int_equal(line("7f0000001000-7f0000600000 rw-p 00000000 00:00 0", &a, &b), 1);
        assert_true(a == 0x7f0000200000ULL && b == 0x7f0000600000ULL);
        /* 4 MiB but straddling: 7f00001ff000..7f00005ff000 holds one whole block */
        assert_int_equal(line("7f00001ff000-7f00005ff000 rw-p 00000000 00:00 0", &a, &b), 1);
        assert_true(a == 0x7f0000200000ULL && b == 0x7f0000400000ULL);
        /* no whole block */
        assert_int_equal(line("7f0000001000-7f0000201000 rw-p 00000000 00:00 0", &a, &b), 0);
        /* heap, stack and named anon count */
        assert_int_equal(line("55d000000000-55d000400000 rw-p 00000000 00:00 0   [heap]", &a, &b), 1);
        assert_int_equal(line("7ffc00000000-7ffc00400000 rw-p 00000000 00:00 0   [stack]", &a, &b), 1);
        assert_int_equal(line("7f0000000000-7f0000400000 rw-p 00000000 00:00 0   [anon:jit]", &a, &b), 1);
        /* file, shared, read-only, PROT_NONE: not ours */
        assert_int_equal(line("7f0000000000-7f0000400000 rw-p 00000000 08:01 1234 /usr/lib/x.so", &a, &b), 0);
        assert_int_equal(line("7f0000000000-7f0000400000 rw-s 00000000 00:01 77 /dev/zero (deleted)", &a, &b), 0);
        assert_int_equal(line("7f0000000000-7f0000400000 r--p 00000000 00:00 0", &a, &b), 0);
        assert_int_equal(line("7f0000000000-7f0000400000 ---p 00000000 00:00 0", &a, &b), 0);
        /* garbage */
        assert_int_equal(line("not a maps line", &a, &b), -EBADMSG);
        assert_int_equal(line("7f0000000000-7f0000400000 rw-p", &a, &b), -EBADMSG);
        /* no PMD size */
        assert_int_equal(mthp_collapse_maps_line("7f0000000000-7f0000800000 rw-p 00000000 00:00 0", 47, 0, &a, &b),
                         0);
}

static void test_merge(void **state) {
        (void) state;
        struct mthp_collapse_block prev[] = { { 10, 100 }, { 20, 100 }, { 30, 500 }, { 90, 100 } };
        uint64_t cur[] = { 5, 20, 30, 40 };
        struct mthp_collapse_block out[8];
        bool el[4];

        /* the pass looked at everything below 60: prev's 10 dropped (no
         * longer a candidate), 90 kept (not looked at) */
        size_t n = mthp_collapse_merge(prev, 4, cur, 4, 0, 60, 1000, 600, el, out, 8);
        assert_int_equal(n, 5);
        assert_false(el[0]);    /* new */
        assert_true(el[1]);     /* seen at 100, 900 ago >= 600 */
        assert_false(el[2]);    /* seen at 500: only 500 ago */
        assert_false(el[3]);    /* new */
        assert_true(out[0].addr == 5 && out[0].since_usec == 1000);
        assert_true(out[1].addr == 20 && out[1].since_usec == 100);
        assert_true(out[2].addr == 30 && out[2].since_usec == 500);
        assert_true(out[3].addr == 40 && out[3].since_usec == 1000);
        assert_true(out[4].addr == 90 && out[4].since_usec == 100);

        /* min age 0: "was a candidate last pass" alone */
        n = mthp_collapse_merge(prev, 4, cur, 4, 0, UINT64_MAX, 1000, 0, el, out, 8);
        assert_int_equal(n, 4);
        assert_true(!el[0] && el[1] && el[2] && !el[3]);

        /* the cap keeps the lowest addresses; eligibility is still told for all */
        n = mthp_collapse_merge(prev, 4, cur, 4, 0, 60, 1000, 0, el, out, 2);
        assert_int_equal(n, 2);
        assert_true(out[0].addr == 5 && out[1].addr == 20);
        assert_true(el[2]);

        /* a clock that went backwards makes nothing eligible */
        n = mthp_collapse_merge(prev, 4, cur, 4, 0, 60, 50, 0, el, out, 8);
        assert_false(el[1]);

        /* a pass that resumed at 25 and was cut at 60: prev's 10 and 20
         * (below where it started) and 90 (beyond where it stopped) are
         * kept, in order; 30 is still a candidate */
        uint64_t cur2[] = { 30, 40 };
        n = mthp_collapse_merge(prev, 4, cur2, 2, 25, 60, 1000, 600, el, out, 8);
        assert_int_equal(n, 5);
        assert_true(out[0].addr == 10 && out[0].since_usec == 100);
        assert_true(out[1].addr == 20 && out[1].since_usec == 100);
        assert_true(out[2].addr == 30 && out[2].since_usec == 500);
        assert_true(out[3].addr == 40 && out[3].since_usec == 1000);
        assert_true(out[4].addr == 90 && out[4].since_usec == 100);
        assert_true(!el[0] && !el[1]);
        /* ... and the same pass with a cap of 3 keeps the lowest */
        n = mthp_collapse_merge(prev, 4, cur2, 2, 25, 60, 1000, 600, el, out, 3);
        assert_int_equal(n, 3);
        assert_true(out[0].addr == 10 && out[1].addr == 20 && out[2].addr == 30);

        /* empty prev: nothing eligible, all new */
        n = mthp_collapse_merge(NULL, 0, cur, 4, 0, UINT64_MAX, 7, 0, el, out, 8);
        assert_int_equal(n, 4);
        assert_true(!el[0] && !el[1] && !el[2] && !el[3]);
}

static void test_batch_blocks(void **state) {
        (void) state;
        struct mthp_collapse_budget b = { .max_kb_per_tick = 10 * 2048, .min_coverage = 0.9, .max_usec = 20000 };
        /* kB: 10 blocks, capped at the batch size */
        assert_int_equal(mthp_collapse_batch_blocks(&b, 0, 0, 1, 2048, 8), 8);
        assert_int_equal(mthp_collapse_batch_blocks(&b, 7 * 2048, 0, 1, 2048, 8), 3);
        assert_int_equal(mthp_collapse_batch_blocks(&b, 10 * 2048, 0, 1, 2048, 8), 0);
        assert_int_equal(mthp_collapse_batch_blocks(&b, 10 * 2048 - 1, 0, 1, 2048, 8), 0);  /* not a whole block */
        /* time: 20 ms at 3 ms a block = 6 */
        assert_int_equal(mthp_collapse_batch_blocks(&b, 0, 0, 3000, 2048, 8), 6);
        assert_int_equal(mthp_collapse_batch_blocks(&b, 0, 14000, 3000, 2048, 8), 2);
        /* less than a block's worth of time left: still one */
        assert_int_equal(mthp_collapse_batch_blocks(&b, 0, 19999, 3000, 2048, 8), 1);
        assert_int_equal(mthp_collapse_batch_blocks(&b, 0, 20000, 3000, 2048, 8), 0);
        /* no PMD */
        assert_int_equal(mthp_collapse_batch_blocks(&b, 0, 0, 1, 0, 8), 0);
}

static int shm_line(const char *l, uint64_t lo, uint64_t hi, uint64_t *a, uint64_t *b) {
        return mthp_collapse_shm_maps_line(l, strlen(l), PMD, lo, hi, a, b);
}

/* shmem repair takes only blocks where address and file offset are both
 * PMD-aligned: the kernel's MADV_COLLAPSE fails (EINVAL) on the others */
static void test_shm_maps_line(void **state) {
        (void) state;
        uint64_t a = 0, b = 0, all = UINT64_MAX;
        /* shared anonymous, 2M-aligned: 4 blocks */
        assert_int_equal(shm_line("7f4000000000-7f4000800000 rw-s 00000000 00:01 5 /dev/zero (deleted)", 0, all, &a, &b), 1);
        assert_true(a == 0x7f4000000000ULL && b == 0x7f4000800000ULL);
        /* clipped to the probed range */
        assert_int_equal(shm_line("7f4000000000-7f4000800000 rw-s 00000000 00:01 5 /dev/zero (deleted)",
                                  0x7f4000200000ULL, 0x7f4000600000ULL, &a, &b), 1);
        assert_true(a == 0x7f4000200000ULL && b == 0x7f4000600000ULL);
        /* outside the range */
        assert_int_equal(shm_line("7f4000000000-7f4000800000 rw-s 00000000 00:01 5 /dev/zero (deleted)",
                                  0x7f5000000000ULL, 0x7f5000800000ULL, &a, &b), 0);
        /* a page past a 2M boundary (PostgreSQL's segment under mthpd): no block */
        assert_int_equal(shm_line("7f4000001000-7f4000801000 rw-s 00000000 00:01 5 /dev/zero (deleted)", 0, all, &a, &b), 0);
        /* an unlinked tmpfs file mapped at an aligned address but from offset 4K: no block */
        assert_int_equal(shm_line("7f4000000000-7f4000800000 rw-s 00001000 00:1a 9 /dev/shm/x (deleted)", 0, all, &a, &b), 0);
        /* from offset 4K, one page past the boundary: address minus offset aligned */
        assert_int_equal(shm_line("7f4000001000-7f4000801000 rw-s 00001000 00:1a 9 /memfd:buf (deleted)", 0, all, &a, &b), 1);
        assert_true(a == 0x7f4000200000ULL && b == 0x7f4000800000ULL);
        /* SysV, read-only shared: blocks too */
        assert_int_equal(shm_line("7f4000000000-7f4000400000 r--s 00000000 00:01 32768 /SYSV00000000 (deleted)", 0, all, &a, &b), 1);
        /* private anon and file mappings are not shmem */
        assert_int_equal(shm_line("7f4000000000-7f4000800000 rw-p 00000000 00:00 0", 0, all, &a, &b), 0);
        assert_int_equal(shm_line("7f4000000000-7f4000800000 rw-s 00000000 08:01 12 /var/lib/x.db", 0, all, &a, &b), 0);
        assert_int_equal(shm_line("garbage", 0, all, &a, &b), -EBADMSG);
}

/* ---- a fake process ---- */

struct fblock {
        uint16_t present;
        bool huge;
        int err;                /* next advise of this block fails with it */
        unsigned err_times;     /* that many times (0: for ever when err is set) */
        unsigned advised;
        unsigned cached;        /* pages the segment's page cache holds (f_cached) */
        int cached_err;         /* f_cached fails with it */
};

struct fake {
        char dir[PATH_MAX];
        struct mthp_host *host;
        struct mthp_collapser *c;
        struct fblock b1[MAXB], b2[4], b3[2];
        size_t n1;
        uint64_t clock, cost_usec;      /* clock advanced by cost_usec per block advised */
        uint64_t scan_cost_usec;        /* ... and by this per scan call */
        unsigned next_calls;
        int proc_err;                   /* advise fails with it before looking at blocks */
        unsigned advise_calls, scan_calls, cached_calls;
        size_t max_iov;
};

static struct fblock *fb(struct fake *f, uint64_t addr) {
        if (addr >= BASE && addr < BASE + f->n1 * PMD)
                return &f->b1[(addr - BASE) / PMD];
        if (addr >= BASE2 && addr < BASE2 + 4 * PMD)
                return &f->b2[(addr - BASE2) / PMD];
        if (addr >= BASE3 && addr < BASE3 + 2 * PMD)
                return &f->b3[(addr - BASE3) / PMD];
        return NULL;
}

static int f_scan(void *user, pid_t pid, uint64_t start, size_t n, uint16_t *present, bool *huge) {
        struct fake *f = user;
        assert_int_equal(pid, PID);
        f->scan_calls++;
        f->clock += f->scan_cost_usec;
        for (size_t i = 0; i < n; i++) {
                struct fblock *b = fb(f, start + i * PMD);
                assert_non_null(b);
                present[i] = b->huge ? 512 : b->present;
                huge[i] = b->huge;
        }
        return 0;
}

static int f_next_present(void *user, pid_t pid, uint64_t start, uint64_t end, uint64_t *next) {
        struct fake *f = user;
        assert_int_equal(pid, PID);
        f->next_calls++;
        for (uint64_t a = start - start % PMD; a < end; a += PMD) {
                struct fblock *b = fb(f, a);
                assert_non_null(b);
                if (b->present || b->huge) {
                        *next = a > start ? a : start;
                        return 0;
                }
        }
        *next = end;
        return 0;
}

static ssize_t f_advise(void *user, pid_t pid, const struct iovec *iov, size_t n) {
        struct fake *f = user;
        assert_int_equal(pid, PID);
        assert_true(n > 0 && n <= MTHP_COLLAPSE_BATCH_MAX);
        f->advise_calls++;
        if (n > f->max_iov)
                f->max_iov = n;
        if (f->proc_err)
                return -f->proc_err;
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(iov[i].iov_len, PMD);
                struct fblock *b = fb(f, (uint64_t) (uintptr_t) iov[i].iov_base);
                assert_non_null(b);
                b->advised++;
                f->clock += f->cost_usec;
                if (b->err) {
                        int e = b->err;
                        if (b->err_times && --b->err_times == 0)
                                b->err = 0;
                        return i ? (ssize_t) (i * PMD) : -e;
                }
                b->huge = true;
        }
        return (ssize_t) (n * PMD);
}

static int f_cached(void *user, pid_t pid, uint64_t map_start, uint64_t map_end, uint64_t map_off, uint64_t addr,
                    unsigned *pages) {
        struct fake *f = user;
        (void) pid;
        f->cached_calls++;
        struct fblock *b = fb(f, addr);
        assert_non_null(b);
        assert_true(addr >= map_start && addr + PMD <= map_end);
        assert_int_equal(map_off, 0);
        if (b->cached_err)
                return -b->cached_err;
        *pages = b->cached;
        return 0;
}

static uint64_t f_now(void *user) {
        return ((struct fake *) user)->clock;
}

static void write_proc(struct fake *f, unsigned long long starttime, int thp_enabled) {
        char path[64], text[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", PID);
        /* comm with a space and a ')' */
        snprintf(text, sizeof(text),
                 "%d (my (app)) S 1 %d %d 0 -1 4194560 500 0 0 0 10 5 0 0 20 0 1 0 %llu 123456 300 "
                 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                 PID, PID, PID, starttime);
        assert_int_equal(fakehost_write_file(f->dir, path, text), 0);
        snprintf(path, sizeof(path), "/proc/%d/status", PID);
        snprintf(text, sizeof(text), "Name:\tmy (app)\nState:\tS (sleeping)\nPid:\t%d\nRssAnon:\t 1000 kB\n"
                 "THP_enabled:\t%d\nThreads:\t1\n", PID, thp_enabled);
        assert_int_equal(fakehost_write_file(f->dir, path, text), 0);
}

static void write_maps(struct fake *f) {
        char path[64], text[2048];
        snprintf(path, sizeof(path), "/proc/%d/maps", PID);
        /* a file mapping, the big anon one (starting a page early: the
         * partial block is not looked at), a shared one, the small anon one */
        snprintf(text, sizeof(text),
                 "55d000000000-55d000001000 r-xp 00000000 08:01 99 /usr/bin/app\n"
                 "%llx-%llx rw-p 00000000 00:00 0 \n"
                 "7f4000000000-7f4000400000 rw-s 00000000 00:01 5 /dev/zero (deleted)\n"
                 "%llx-%llx rw-p 00000000 00:00 0   [anon:arena]\n",
                 (unsigned long long) (BASE - 4096), (unsigned long long) (BASE + f->n1 * PMD),
                 (unsigned long long) BASE2, (unsigned long long) (BASE2 + 4 * PMD));
        assert_int_equal(fakehost_write_file(f->dir, path, text), 0);
}

static struct fake *fake_new(size_t n1, const struct mthp_collapse_budget *b) {
        struct fake *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        assert_int_equal(fakehost_create_temp(NULL, f->dir, sizeof(f->dir)), 0);
        assert_int_equal(mthp_host_open(f->dir, &f->host), 0);
        f->n1 = n1;
        f->clock = 1000000;
        for (size_t i = 0; i < n1; i++)
                f->b1[i].present = 512;
        for (size_t i = 0; i < 4; i++)
                f->b2[i].present = 512;
        for (size_t i = 0; i < 2; i++)
                f->b3[i].present = 512;
        write_proc(f, 777, 1);
        write_maps(f);
        assert_int_equal(mthp_collapser_new(f->host, b, &f->c), 0);
        struct mthp_collapse_ops ops = { f_scan, f_advise, f_now, f, NULL, NULL };
        mthp_collapser_set_ops(f->c, &ops);
        return f;
}

static void fake_free(struct fake *f) {
        mthp_collapser_free(f->c);
        mthp_host_free(f->host);
        assert_int_equal(fakehost_remove(f->dir), 0);
        free(f);
}

static struct mthp_collapse_budget budget(uint64_t kb, uint64_t interval) {
        struct mthp_collapse_budget b;
        mthp_collapse_budget_default(&b);
        b.max_kb_per_tick = kb;
        b.min_interval_usec = interval;
        return b;
}

/* one tick at the fake clock */
static int tick(struct fake *f, struct mthp_collapse_result *res) {
        mthp_collapser_begin_tick(f->c, f->clock);
        return mthp_collapser_run(f->c, PID, f->clock, res);
}

/* ---- passes ---- */

static void test_fake_root_refused(void **state) {
        (void) state;
        char dir[PATH_MAX];
        struct mthp_host *h;
        struct mthp_collapser *c;
        struct mthp_collapse_result res;
        assert_int_equal(fakehost_create_temp(NULL, dir, sizeof(dir)), 0);
        assert_int_equal(mthp_host_open(dir, &h), 0);
        assert_int_equal(mthp_collapser_new(h, NULL, &c), 0);
        mthp_collapser_begin_tick(c, 0);
        assert_int_equal(mthp_collapser_run(c, PID, 0, &res), -EOPNOTSUPP);
        assert_int_equal(res.attempted, 0);
        mthp_collapser_free(c);
        mthp_host_free(h);
        assert_int_equal(fakehost_remove(dir), 0);
}

static void test_two_passes(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        struct fake *f = fake_new(16, &b);
        struct mthp_collapse_result res, tot;

        f->b1[3].present = 460;          /* 0.898 < 0.9: not dense enough */
        f->b1[4].present = 461;          /* 0.9004: dense enough */
        f->b1[5].huge = true;            /* already PMD-mapped */
        f->b1[6].present = 0;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.candidates, 13 + 4);
        assert_int_equal(res.huge, 1);
        assert_int_equal(res.eligible, 0);
        assert_int_equal(res.attempted, 0);
        assert_int_equal(f->advise_calls, 0);
        assert_false(res.deferred);

        /* too soon: nothing, not even a scan */
        f->clock += 5000000;
        unsigned scans = f->scan_calls;
        assert_int_equal(tick(f, &res), 0);
        assert_true(res.deferred);
        assert_int_equal(f->scan_calls, scans);

        /* min_interval later: all 17 collapse, in batches */
        f->clock += 5000000;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.eligible, 17);
        assert_int_equal(res.attempted, 17);
        assert_int_equal(res.collapsed, 17);
        assert_int_equal(res.failed, 0);
        assert_int_equal(res.kb_collapsed, 17 * 2048);
        assert_int_equal(res.last_error, 0);
        assert_false(res.cut);
        assert_int_equal(f->max_iov, MTHP_COLLAPSE_BATCH_MAX);
        assert_true(f->b1[4].huge && !f->b1[3].huge && f->b2[3].huge);

        f->clock += 10000000;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.candidates, 0);
        assert_int_equal(res.huge, 18);
        mthp_collapser_totals(f->c, &tot);
        assert_int_equal(tot.collapsed, 17);
        assert_int_equal(tot.kb_collapsed, 17 * 2048);
        fake_free(f);
}

/* shmem repair: a block the process touched counts what the segment's
 * page cache holds there (another process wrote it); an untouched block is
 * not asked about; where the page cache cannot be read the process's own
 * pages count; the anon pass never asks */
static void test_shm_cached(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        struct fake *f = fake_new(16, &b);
        struct mthp_collapse_ops ops = { f_scan, f_advise, f_now, f, NULL, f_cached };
        struct mthp_collapse_result res;
        mthp_collapser_set_ops(f->c, &ops);

        f->b3[0].present = 1;       /* one page of its own, the block whole in the page cache */
        f->b3[0].cached = 512;
        f->b3[1].present = 0;       /* whole in the page cache, but not touched */
        f->b3[1].cached = 512;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.candidates, 1);
        assert_int_equal(res.collapsed, 1);
        assert_true(f->b3[0].huge && !f->b3[1].huge);
        assert_int_equal(f->cached_calls, 1);

        /* a quarter of the block in the page cache: no collapse (it would
         * add the other three quarters) */
        f->b3[0] = (struct fblock) { .present = 100, .cached = 128 };
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_false(res.deferred);
        assert_int_equal(res.candidates, 0);
        /* the page cache unreadable: the process's own 100 pages count */
        f->b3[0] = (struct fblock) { .present = 100, .cached = 512, .cached_err = EACCES };
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_false(res.deferred);
        assert_int_equal(res.candidates, 0);
        /* ... and where it holds 90% of its own, the page cache is not asked */
        f->b3[0] = (struct fblock) { .present = 480, .cached_err = EIO };
        unsigned calls = f->cached_calls;
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.candidates, 1);
        assert_int_equal(f->cached_calls, calls);

        /* anon (Collapse=): its own pages alone */
        for (size_t i = 0; i < 16; i++)
                f->b1[i] = (struct fblock) { .present = 1, .cached = 512 };
        for (size_t i = 0; i < 4; i++)
                f->b2[i] = (struct fblock) { .present = 1, .cached = 512 };
        calls = f->cached_calls;
        assert_int_equal(mthp_collapser_run(f->c, PID, f->clock, &res), 0);
        assert_int_equal(res.candidates, 0);
        assert_int_equal(f->cached_calls, calls);
        fake_free(f);
}

/* shmem repair: the probed range's aligned blocks collapse on the first
 * pass, the anon mappings are left to Collapse=; a misaligned mapping is
 * never advised */
static void test_shm_pass(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        struct fake *f = fake_new(16, &b);
        struct mthp_collapse_result res;

        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.candidates, 2);
        assert_int_equal(res.eligible, 2);
        assert_int_equal(res.collapsed, 2);
        assert_int_equal(res.kb_collapsed, 2 * 2048);
        assert_true(f->b3[0].huge && f->b3[1].huge);
        assert_false(f->b1[0].huge || f->b2[0].huge);
        /* the anon pass of the same process is its own: not deferred */
        assert_int_equal(mthp_collapser_run(f->c, PID, f->clock, &res), 0);
        assert_false(res.deferred);
        assert_int_equal(res.collapsed, 0);
        /* a tenth of min_interval later: passed over again, all huge */
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_false(res.deferred);
        assert_int_equal(res.huge, 2);
        assert_int_equal(res.candidates, 0);

        /* EINVAL on one block (the mapping replaced while the kernel
         * collapsed): the other block is still tried, and the next pass
         * tries the failed one again */
        f->b3[0].huge = f->b3[1].huge = false;
        f->b3[0].err = EINVAL;
        f->b3[0].err_times = 1;
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.failed, 1);
        assert_int_equal(res.collapsed, 1);
        assert_true(!f->b3[0].huge && f->b3[1].huge);
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.collapsed, 1);
        assert_true(f->b3[0].huge);

        /* the same segment a page past its boundary (its offset 4K): nothing */
        f->b3[0].huge = f->b3[1].huge = false;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/maps", PID);
        assert_int_equal(fakehost_write_file(f->dir, path, "7f4000000000-7f4000400000 rw-s 00001000 00:01 5 "
                                                         "/dev/zero (deleted)\n"), 0);
        unsigned calls = f->advise_calls;
        f->clock += 1000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.candidates, 0);
        assert_int_equal(f->advise_calls, calls);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 0, f->clock, &res), -EINVAL);
        fake_free(f);
}

/* a block that stops being a candidate in between is not collapsed */
static void test_not_long_lived(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(4, &b);
        struct mthp_collapse_result res;
        f->b1[1].present = 0;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.candidates, 7);
        f->b1[1].present = 512;          /* new on this pass */
        f->b1[2].present = 10;           /* freed since */
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.eligible, 6);
        assert_int_equal(res.collapsed, 6);
        assert_false(f->b1[1].huge);
        assert_false(f->b1[2].huge);
        assert_int_equal(f->b1[1].advised + f->b1[2].advised, 0);
        fake_free(f);
}

/* kB budget: 3 blocks a tick; the cut pass resumes on the next tick without
 * waiting for min_interval */
static void test_kb_budget_and_resume(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(3 * 2048, 10000000);
        struct fake *f = fake_new(8, &b);
        struct mthp_collapse_result res;
        assert_int_equal(tick(f, &res), 0);
        f->clock += 10000000;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.collapsed, 3);
        assert_true(res.cut);
        /* a second process in the same tick gets nothing: budget spent */
        assert_int_equal(mthp_collapser_run(f->c, PID, f->clock, &res), 0);
        assert_true(res.deferred);
        unsigned total = 3;
        for (int i = 0; i < 10 && total < 12; i++) {
                f->clock += 1000000;     /* 1 s ticks: well inside min_interval */
                assert_int_equal(tick(f, &res), 0);
                assert_false(res.deferred);
                assert_true(res.collapsed <= 3);
                total += res.collapsed;
        }
        assert_int_equal(total, 12);
        /* done: the next pass waits for min_interval again */
        f->clock += 1000000;
        assert_int_equal(tick(f, &res), 0);
        assert_true(res.deferred);
        fake_free(f);
}

/* time budget: 5 ms a block against 20 ms a tick */
static void test_time_budget(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(40, &b);
        struct mthp_collapse_result res;
        f->cost_usec = 5000;
        assert_int_equal(tick(f, &res), 0);
        unsigned total = 0;
        for (int i = 0; i < 6; i++) {
                f->clock += 1000000;
                assert_int_equal(tick(f, &res), 0);
                /* the batch is sized from the measured cost: at most one block's overrun */
                assert_true(res.attempted >= 1);
                assert_true(res.attempted * 5000 <= 20000 + 5000 * MTHP_COLLAPSE_BATCH_MAX);
                assert_true(res.usec <= 20000 + 5000 * MTHP_COLLAPSE_BATCH_MAX);
                total += res.collapsed;
                if (i >= 2)   /* once the cost is learnt */
                        assert_true(res.usec <= 25000);
        }
        assert_true(total >= 6 * 4 - 8 && total < 44);
        fake_free(f);
}

/* A walk that the time budget cuts before the memory that matters (a large
 * empty reservation first, as a JVM heap or a sanitizer's shadow has)
 * resumes there on the next tick instead of starting over, so it gets to
 * the dense mapping behind it, and what it finds eligible is collapsed (the
 * walk stops at half the budget). 8 ms a scan call against 20 ms a tick:
 * 2 calls (128 blocks) a tick, 512 empty blocks first. Without the resume
 * it never gets past block 128. */
static void test_cut_walk_resumes(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(512, &b);
        struct mthp_collapse_result res;
        for (size_t i = 0; i < 512; i++)
                f->b1[i].present = 0;
        f->scan_cost_usec = 8000;
        unsigned ticks = 0, cuts = 0;
        while (ticks < 16 && !(f->b2[0].huge && f->b2[3].huge)) {
                f->clock += 1000000;
                assert_int_equal(tick(f, &res), 0);
                ticks++;
                cuts += res.cut;
                assert_true(res.usec <= 20000 + 8000);   /* one scan call's overrun at most */
        }
        for (int i = 0; i < 4; i++)
                assert_true(f->b2[i].huge);
        assert_true(cuts >= 2);
        /* seen on two walks of 5 ticks each (4 for the empty blocks, 1 for
         * the dense mapping), collapsed on the second */
        assert_int_equal(ticks, 10);
        fake_free(f);
}

/* With next_present (PAGEMAP_SCAN stopping at the first present page), an
 * empty stretch costs one call, not a scan per 64 blocks: one tick walks it. */
static void test_empty_stretch_skipped(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(MAXB, &b);
        struct mthp_collapse_result res;
        struct mthp_collapse_ops ops = { f_scan, f_advise, f_now, f, f_next_present, NULL };
        mthp_collapser_set_ops(f->c, &ops);
        for (size_t i = 0; i < MAXB; i++)
                f->b1[i].present = 0;
        f->b1[MAXB - 10].present = 512;  /* one dense block near the end */
        f->scan_cost_usec = 3000;       /* 3 calls fit in the walk's 10 ms, 94 would not */
        assert_int_equal(tick(f, &res), 0);
        assert_false(res.cut);
        assert_int_equal(res.candidates, 1 + 4);
        assert_true(f->scan_calls <= 4);
        assert_true(f->next_calls >= 1 && f->next_calls <= 3);
        f->clock += 1000000;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.collapsed, 1 + 4);
        assert_true(f->b1[MAXB - 10].huge);
        fake_free(f);
}

static void test_eagain_enomem(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(6, &b);
        struct mthp_collapse_result res;
        assert_int_equal(tick(f, &res), 0);
        f->b1[2].err = EAGAIN;           /* for ever */
        f->b1[4].err = ENOMEM;
        f->b1[4].err_times = 2;          /* in the batch, then alone */
        assert_int_equal(tick(f, &res), 0);
        /* the first batch is one block (cost unknown), then 1 ok, 2 EAGAIN
         * (the batch stops there, then it is tried alone), 3 ok, 4 ENOMEM
         * twice likewise: the pass ends */
        assert_true(f->b1[0].huge && f->b1[1].huge && !f->b1[2].huge && f->b1[3].huge && !f->b1[4].huge);
        assert_false(f->b1[5].huge);
        assert_int_equal(f->b1[5].advised, 0);
        assert_int_equal(res.collapsed, 3);
        assert_int_equal(res.failed, 2);
        assert_int_equal(res.attempted, 5);
        assert_int_equal(res.last_error, -ENOMEM);
        assert_int_equal(f->b1[2].advised, 2);
        assert_int_equal(f->b1[4].advised, 2);
        /* next tick: the rest, and 2 once more */
        assert_int_equal(tick(f, &res), 0);
        assert_true(f->b1[4].huge && f->b1[5].huge && f->b2[0].huge);
        assert_int_equal(res.failed, 1);
        assert_int_equal(res.last_error, -EAGAIN);
        fake_free(f);
}

/* EINVAL (MADV_NOHUGEPAGE on the mapping): the mapping is left alone */
static void test_einval_refuses_mapping(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(6, &b);
        struct mthp_collapse_result res;
        assert_int_equal(tick(f, &res), 0);
        for (int i = 0; i < 6; i++)
                f->b1[i].err = EINVAL;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.failed, 1);
        assert_int_equal(res.last_error, -EINVAL);
        assert_int_equal(res.collapsed, 4);          /* the other mapping */
        assert_int_equal(f->b1[0].advised + f->b1[1].advised + f->b1[5].advised, 1);
        unsigned scans = f->scan_calls;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.candidates, 0);
        assert_int_equal(res.huge, 4);
        assert_int_equal(f->scan_calls, scans + 1);  /* the refused mapping is not even looked at */
        fake_free(f);
}

/* Issue 13 item 13: the PID of a process found in a Collapse=yes cgroup
 * may be reused by a process of another cgroup before the pass: membership
 * is checked after pidfd_open (/proc/PID/cgroup, then the pidfd asked
 * whether its process lives), and nothing is collapsed on this budget. */
static void item13_pid_reused_in_other_cgroup(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(2, &b);
        struct mthp_collapse_result res;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", PID);
        assert_int_equal(fakehost_write_file(f->dir, path, "0::/system.slice/db.service\n"), 0);
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_in(f->c, PID, "/system.slice/db.service", MTHP_CG_V2, f->clock, &res), 0);
        assert_true(res.candidates > 0);
        unsigned calls = f->advise_calls;
        /* a child of the cgroup counts with it */
        assert_int_equal(fakehost_write_file(f->dir, path, "0::/system.slice/db.service/worker\n"), 0);
        f->clock += 10000000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_in(f->c, PID, "/system.slice/db.service", MTHP_CG_V2, f->clock, &res), 0);
        /* now the PID belongs to a process of a user's cgroup */
        write_proc(f, 999, 1);
        assert_int_equal(fakehost_write_file(f->dir, path, "0::/user.slice/user-1000.slice/x.scope\n"), 0);
        f->clock += 10000000;
        calls = f->advise_calls;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_in(f->c, PID, "/system.slice/db.service", MTHP_CG_V2, f->clock, &res),
                         -ESRCH);
        assert_int_equal(res.attempted, 0);
        assert_int_equal(f->advise_calls, calls);
        /* "/system.slice/db.servicex" is not below "/system.slice/db.service" */
        assert_int_equal(fakehost_write_file(f->dir, path, "0::/system.slice/db.servicex\n"), 0);
        assert_int_equal(mthp_collapser_run_in(f->c, PID, "/system.slice/db.service", MTHP_CG_V2, f->clock, &res),
                         -ESRCH);
        fake_free(f);
}

static void test_process_errors(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(2, &b);
        struct mthp_collapse_result res;

        assert_int_equal(tick(f, &res), 0);
        f->proc_err = EPERM;
        assert_int_equal(tick(f, &res), -EPERM);
        assert_int_equal(res.attempted, 0);
        unsigned calls = f->advise_calls;
        assert_int_equal(tick(f, &res), -EPERM);     /* not tried again */
        assert_int_equal(f->advise_calls, calls);

        /* the PID is reused: a new process, new chances, but no history */
        write_proc(f, 888, 1);
        f->proc_err = 0;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.eligible, 0);
        assert_int_equal(res.candidates, 6);
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.collapsed, 6);

        /* THP disabled for the process: no scan, no advice */
        write_proc(f, 999, 0);
        unsigned scans = f->scan_calls;
        assert_int_equal(tick(f, &res), 0);
        assert_true(res.thp_disabled);
        assert_int_equal(f->scan_calls, scans);

        /* exited */
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/stat", PID);
        assert_int_equal(fakehost_remove_file(f->dir, path), 0);
        assert_int_equal(tick(f, &res), -ESRCH);
        fake_free(f);
}

static void test_exits_mid_pass_and_unsupported(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 0);
        struct fake *f = fake_new(3, &b);
        struct mthp_collapse_result res;
        assert_int_equal(tick(f, &res), 0);
        f->proc_err = ESRCH;
        assert_int_equal(tick(f, &res), -ESRCH);
        f->proc_err = EOPNOTSUPP;
        assert_int_equal(tick(f, &res), 0);          /* history was dropped with the exit */
        assert_int_equal(tick(f, &res), -EOPNOTSUPP);
        unsigned scans = f->scan_calls;
        f->proc_err = 0;
        assert_int_equal(tick(f, &res), -EOPNOTSUPP);  /* for good */
        assert_int_equal(f->scan_calls, scans);
        fake_free(f);
}

/* more candidate blocks than are remembered: bounded, and still progressing */
static void test_bounded(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1ULL << 40, 0);
        b.max_usec = UINT64_MAX / 4;
        struct fake *f = fake_new(MTHP_COLLAPSE_TRACK_MAX + 1000, &b);
        struct mthp_collapse_result res;
        assert_int_equal(tick(f, &res), 0);
        /* the walk stops where the remembered set is full */
        assert_int_equal(res.candidates, MTHP_COLLAPSE_TRACK_MAX);
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.eligible, MTHP_COLLAPSE_TRACK_MAX);
        assert_int_equal(res.collapsed, MTHP_COLLAPSE_TRACK_MAX);
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.candidates, 1004);
        assert_int_equal(res.eligible, 0);           /* first seen on the last pass's cut-off */
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.collapsed, 1004);
        fake_free(f);
}

/* ---- the time budget: a share of one core, progress however small ---- */

/* mthpd's budget a tick is Interval= x CollapseCPU=: 2% keeps the 20 ms of
 * the 1 s default, and is 2 ms at 100 ms */
static void test_usec_per_tick(void **state) {
        (void) state;
        assert_int_equal(mthp_collapse_usec_per_tick(1000000, 2), 20000);
        assert_int_equal(mthp_collapse_usec_per_tick(100000, 2), 2000);
        assert_int_equal(mthp_collapse_usec_per_tick(1000000, 0.5), 5000);
        assert_int_equal(mthp_collapse_usec_per_tick(500000, 0.25), 1250);
        assert_int_equal(mthp_collapse_usec_per_tick(3600000000ULL, 100), 3600000000ULL);
        assert_int_equal(mthp_collapse_usec_per_tick(100000, 0.0001), 1);  /* never 0: new() refuses 0 */
        assert_int_equal(mthp_collapse_usec_per_tick(1000000, 0), 0);
        assert_int_equal(mthp_collapse_usec_per_tick(1000000, -1), 0);
        assert_int_equal(mthp_collapse_usec_per_tick(1000000, 100.5), 0);
        assert_int_equal(mthp_collapse_usec_per_tick(0, 2), 0);
}

/* A budget smaller than a walk plus a block (2 ms a tick, 100 ms x 2%,
 * against 3 ms a scan and 5 ms a block) still repairs: a tick that starts
 * with time left collapses a block, and what it overran is paid by the
 * ticks after it (deferred), so over the ticks the work keeps to 2 ms a
 * tick. Before: the walk spent the 2 ms, no block ever fit, and the
 * repair went on for ever collapsing nothing. */
static void test_tiny_budget_progress(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        b.max_usec = 2000;               /* mthp_collapse_usec_per_tick(100000, 2) */
        struct fake *f = fake_new(1, &b);
        struct mthp_collapse_result res;
        f->scan_cost_usec = 3000;
        f->cost_usec = 5000;
        unsigned ticks = 0, deferred = 0;
        uint64_t used = 0;
        while (ticks < 20 && !(f->b3[0].huge && f->b3[1].huge)) {
                f->clock += 100000;
                ticks++;
                mthp_collapser_begin_tick(f->c, f->clock);
                assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
                if (res.deferred) {
                        deferred++;
                        continue;
                }
                if (res.collapsed < 1)
                        fail_msg("tick %u had 2 ms left at its start and collapsed nothing (%u candidates, "
                                 "%u attempted, %llu us)", ticks, res.candidates, res.attempted,
                                 (unsigned long long) res.usec);
                used += res.usec;
        }
        assert_true(f->b3[0].huge && f->b3[1].huge);
        /* 8 ms, 3 ticks paying it off, 8 ms */
        assert_int_equal(ticks, 5);
        assert_int_equal(deferred, 3);
        /* the share holds, but for the last tick's overrun */
        assert_true(used <= ticks * 2000 + 3000 + 5000);
        fake_free(f);
}

/* Only the passes' own time becomes debt: the daemon's work in the tick
 * before a pass (Collapse=yes cgroups' cgroup.procs, being preempted on a
 * busy host) is not MADV_COLLAPSE's. Before: 1.5 ms of it plus a 1 ms block
 * against 2 ms a tick left 0.5 ms of debt, and the next tick deferred. */
static void test_debt_is_passes_own_time(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        b.max_usec = 2000;
        struct fake *f = fake_new(1, &b);
        struct mthp_collapse_result res;
        f->cost_usec = 1000;
        unsigned ticks = 0, deferred = 0;
        while (ticks < 6 && !(f->b3[0].huge && f->b3[1].huge)) {
                f->clock += 100000;
                ticks++;
                mthp_collapser_begin_tick(f->c, f->clock);
                f->clock += 1500;
                assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
                deferred += res.deferred;
        }
        assert_true(f->b3[0].huge && f->b3[1].huge);
        assert_int_equal(deferred, 0);
        fake_free(f);
}

/* A reload settles the last tick at the budget it ran under: a 25 ms
 * block in a 20 ms tick owes 5 ms, paid in 3 ticks at the new 2 ms a tick.
 * Before: the tick was settled at the new budget, 23 ms of debt, and 11
 * ticks collapsed nothing. */
static void test_reload_settles_at_old_budget(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        b.max_usec = 20000;
        struct fake *f = fake_new(1, &b);
        struct mthp_collapse_result res;
        f->cost_usec = 25000;
        f->clock += 100000;
        mthp_collapser_begin_tick(f->c, f->clock);
        assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        assert_int_equal(res.collapsed, 1);     /* cost unknown: one block */
        struct mthp_collapse_budget nb = b;
        nb.max_usec = 2000;
        assert_int_equal(mthp_collapser_set_budget(f->c, &nb), 0);
        /* a second reload before the next tick settles nothing twice */
        assert_int_equal(mthp_collapser_set_budget(f->c, &nb), 0);
        unsigned ticks = 0;
        while (ticks < 15 && !f->b3[1].huge) {
                f->clock += 100000;
                ticks++;
                mthp_collapser_begin_tick(f->c, f->clock);
                assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
        }
        assert_true(f->b3[1].huge);
        if (ticks > 4)
                fail_msg("the second block came %u ticks after the reload (5 ms owed, 2 ms a tick: 4)", ticks);
        fake_free(f);
}

/* A pass that begins late in its tick (the Collapse=yes passes before a
 * repair took 1.5 of its 2 ms) still walks a chunk and collapses a block.
 * Before: its walk stopped before the first scan, tick after tick. */
static void test_late_pass_progress(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000);
        b.max_usec = 2000;
        struct fake *f = fake_new(1, &b);
        struct mthp_collapse_result res;
        f->cost_usec = 5000;
        unsigned ticks = 0, collapsed = 0;
        while (ticks < 12 && !(f->b3[0].huge && f->b3[1].huge)) {
                f->clock += 100000;
                ticks++;
                mthp_collapser_begin_tick(f->c, f->clock);
                f->clock += 1500;
                assert_int_equal(mthp_collapser_run_shm(f->c, PID, BASE3, 4 * PMD, f->clock, &res), 0);
                collapsed += res.collapsed;
        }
        if (!(f->b3[0].huge && f->b3[1].huge))
                fail_msg("after %u ticks, %u of 2 blocks collapsed (%u scan calls)", ticks, collapsed, f->scan_calls);
        assert_int_equal(collapsed, 2);
        fake_free(f);
}

/* A new budget (a reload) applies to the collapser as it is: what it
 * remembers (the candidate set of the last pass, when that was) stays. */
static void test_set_budget(void **state) {
        (void) state;
        struct mthp_collapse_budget b = budget(1 << 20, 10000000), got, bad;
        struct fake *f = fake_new(8, &b);
        struct mthp_collapse_result res;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.candidates, 8 + 4);
        assert_int_equal(res.eligible, 0);

        bad = b;
        bad.max_usec = 0;
        assert_int_equal(mthp_collapser_set_budget(f->c, &bad), -EINVAL);
        bad = b;
        bad.min_coverage = 1.5;
        assert_int_equal(mthp_collapser_set_budget(f->c, &bad), -EINVAL);
        assert_int_equal(mthp_collapser_set_budget(f->c, NULL), -EINVAL);
        mthp_collapser_get_budget(f->c, &got);
        assert_memory_equal(&got, &b, sizeof(b));

        struct mthp_collapse_budget nb = b;
        nb.max_kb_per_tick = 3 * 2048;
        nb.max_usec = 500;               /* 100 ms x 0.5% */
        assert_int_equal(mthp_collapser_set_budget(f->c, &nb), 0);
        mthp_collapser_get_budget(f->c, &got);
        assert_int_equal(got.max_kb_per_tick, 3 * 2048);
        assert_int_equal(got.max_usec, 500);
        assert_int_equal(got.min_interval_usec, 10000000);

        /* the last pass is remembered: 5 s later is too soon */
        f->clock += 5000000;
        assert_int_equal(tick(f, &res), 0);
        assert_true(res.deferred);
        /* its candidates too: eligible now, 3 blocks a tick (the new kB) */
        f->clock += 5000000;
        assert_int_equal(tick(f, &res), 0);
        assert_int_equal(res.eligible, 12);
        assert_int_equal(res.collapsed, 3);
        assert_true(res.cut);
        /* and the new time: 200 us a block against 500 us a tick */
        f->cost_usec = 200;
        unsigned total = 3;
        for (int i = 0; i < 20 && total < 12; i++) {
                f->clock += 100000;
                assert_int_equal(tick(f, &res), 0);
                assert_true(res.collapsed <= 3);
                if (i > 0)        /* once the cost is learnt: the budget, a block over at most */
                        assert_true(res.usec <= 500 + 200);
                total += res.collapsed;
        }
        assert_int_equal(total, 12);
        fake_free(f);
}

int main(void) {
        static const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_maps_line),
                cmocka_unit_test(test_merge),
                cmocka_unit_test(test_shm_maps_line),
                cmocka_unit_test(test_shm_pass),
                cmocka_unit_test(test_shm_cached),
                cmocka_unit_test(test_batch_blocks),
                cmocka_unit_test(test_fake_root_refused),
                cmocka_unit_test(test_two_passes),
                cmocka_unit_test(test_not_long_lived),
                cmocka_unit_test(test_kb_budget_and_resume),
                cmocka_unit_test(test_time_budget),
                cmocka_unit_test(test_cut_walk_resumes),
                cmocka_unit_test(test_empty_stretch_skipped),
                cmocka_unit_test(test_eagain_enomem),
                cmocka_unit_test(test_einval_refuses_mapping),
                cmocka_unit_test(test_process_errors),
                cmocka_unit_test(item13_pid_reused_in_other_cgroup),
                cmocka_unit_test(test_exits_mid_pass_and_unsupported),
                cmocka_unit_test(test_bounded),
                cmocka_unit_test(test_usec_per_tick),
                cmocka_unit_test(test_tiny_budget_progress),
                cmocka_unit_test(test_late_pass_progress),
                cmocka_unit_test(test_debt_is_passes_own_time),
                cmocka_unit_test(test_reload_settles_at_old_budget),
                cmocka_unit_test(test_set_budget),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
