/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by test-density-proc.c and test-density-shm.c (density-proc-common.c):
 * the child processes both sample and the sampler set up around them. The
 * helpers fail the running cmocka test on error. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
        SHM_ZERO_HALF_PMD, /* MAP_SHARED|MAP_ANONYMOUS at a 2M boundary. First half: 1 page
                            * in 8 written nonzero, then collapsed: PMD-mapped 2M folios
                            * whose untouched 7/8 are zeros. Second half: every page
                            * written at 4K, zeros but 1 in 8 (PostgreSQL's WAL buffers) */
        SHM_ZERO_MISALIGNED, /* SHM_MISALIGNED's mapping, every page written at 4K, zeros
                              * but 1 in 8: no PMD can map it */
        THP_HALF,       /* MADV_HUGEPAGE; first half every page written nonzero, second
                         * half a 0 byte per 2M: 2M folios (if the host gives them) that
                         * a write has not reached yet (stress-ng --vm mid-pass) */
        THP_ZEROS_DATA1, /* MADV_HUGEPAGE; len every page written with 0 (page_fault1's
                          * buffer), and past a PROT_NONE 2M gap a mapping of its own of
                          * 2 MiB, every other page nonzero: 2M folios, a zero-writer's
                          * small data (heap, stack) beside its buffer of zeros */
        THP_ZEROS_DATA4, /* the same with 8 MiB of data: 4 windows of 36 */
        SHM_PMD_HOLE,   /* SHM_WHOLE_PMD's segment, all collapsed but [4M, 6M): one 2M
                         * block left at 4K between the points of a probe that starts
                         * at the middle of each sixteenth of a 64 MiB segment */
};

/* the /dev/shm file of a SHM_FILE child (the parent unlinks it) */
void shm_file_name(pid_t pid, char *buf, size_t n);

struct child {
        pid_t pid;
        uint64_t addr, len;
};

extern struct mthp_host *host;
extern const unsigned sizes[3];

uint64_t now_usec(void);
void touch(char *m, uint64_t len, uint64_t stride);

/* Two processes share a segment of len bytes: A writes every
 * `a_stride`-th page of its first a_len bytes at 4K (PR_SET_THP_DISABLE),
 * then forks B (a shared mapping's PTEs are not copied: B starts with
 * none), which writes every `b_stride`-th page of its first b_len bytes
 * (0: all of it). B is returned (addr, len); *a gets A. */
struct pair_opts {
        bool memfd;             /* a memfd instead of MAP_SHARED|MAP_ANONYMOUS */
        bool align;             /* at a 2M boundary (MAP_SHARED|MAP_ANONYMOUS) */
        bool b_thp;             /* B allows THP again: MADV_COLLAPSE refuses a THP-disabled mm */
        uint64_t len, a_len, a_stride, b_len, b_stride;
};
struct child spawn_pair(const struct pair_opts *o, pid_t *a);
void reap_pair(struct child *b, pid_t a);

/* exit_after_us: 0 = stay until killed; else exit that long after ready */
struct child spawn(enum pattern p, uint64_t len, unsigned exit_after_us);
void reap(struct child *c);
struct mthp_density_budget roomy(void);

/* One tick restricted to the child (and to its mapping if ranged). */
const struct mthp_density_proc *sample(const struct child *c, bool ranged, const struct mthp_density_budget *b,
                                       struct mthp_density_sampler **sp, struct mthp_density_report *rep);
void print_kind(const char *what, const struct mthp_density_proc *p, int kind);

/* Can the sampler tell folios apart: kpageflags readable and PFNs in
 * pagemap (CAP_SYS_ADMIN)? Checked on a page of our own. */
bool pfns_visible(void);

/* cmocka group setup and teardown: host, opened on "/" */
int group_setup(void **state);
int group_teardown(void **state);
