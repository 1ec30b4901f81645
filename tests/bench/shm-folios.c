// SPDX-License-Identifier: MIT
/*
 * shm-folios: which shared mappings get large folios on their faults. Maps
 * SIZE MiB one way, writes every 4K page, and prints the address's
 * alignment, how many present pages sit in a large folio and the average
 * folio size (/proc/kpageflags: root), and ShmemPmdMapped/FilePmdMapped of
 * the mapping (smaps). tests/bench/shmem-matrix runs it under each knob
 * setting (docs/shmem.md).
 *
 *   shm-folios anon|file|unlinked|sysv|memfd MiB [align|misalign] [madvise]
 *              [prefill] [late] [collapse]
 *   anon: MAP_SHARED|MAP_ANONYMOUS; file: a /dev/shm file, linked while
 *   mapped; unlinked: the same unlinked before mmap; sysv: shmget/shmat;
 *   memfd: memfd_create. align/misalign: at a 2M-aligned address / 4K past
 *   one (else where the kernel puts it). prefill: fill the file's page cache
 *   through a first mapping, then map it again. late: wait for a line on
 *   stdin before touching (after prefill, if given). collapse: MADV_COLLAPSE
 *   afterwards and report again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static uint64_t align_of(uint64_t v) { return v ? (v & -v) : (1ULL << 40); }

static void folio_census(char *p, size_t len, long *pages, long *heads, long *inlarge) {
        int pm = open("/proc/self/pagemap", O_RDONLY), kf = open("/proc/kpageflags", O_RDONLY);
        *pages = *heads = *inlarge = 0;
        if (pm < 0 || kf < 0) { perror("open pagemap/kpageflags"); return; }
        for (size_t off = 0; off < len; off += 4096) {
                uint64_t e, f;
                if (pread(pm, &e, 8, ((uintptr_t) p + off) / 4096 * 8) != 8) break;
                if (!(e >> 63)) continue;
                uint64_t pfn = e & ((1ULL << 55) - 1);
                if (!pfn || pread(kf, &f, 8, pfn * 8) != 8) continue;
                (*pages)++;
                if (f & (1ULL << 15)) (*heads)++;
                if (f & ((1ULL << 15) | (1ULL << 16))) (*inlarge)++;
        }
        close(pm); close(kf);
}

static long smaps_field(char *p, const char *key) {
        FILE *f = fopen("/proc/self/smaps", "r");
        char line[512]; int in = 0; long v = -1;
        while (fgets(line, sizeof line, f)) {
                unsigned long a, b;
                if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) { in = (a == (uintptr_t) p); continue; }
                if (in && !strncmp(line, key, strlen(key))) { v = atol(line + strlen(key) + 1); break; }
        }
        fclose(f);
        return v;
}

int main(int argc, char **argv) {
        if (argc < 3) { fprintf(stderr, "usage: shm-folios anon|file|unlinked|sysv|memfd MiB [align|misalign] [madvise] [prefill] [late] [collapse]\n"); return 2; }
        const char *mode = argv[1];
        size_t len = (size_t) atol(argv[2]) << 20;
        int misalign = 0, align = 0, madv = 0, prefill = 0, late = 0, collapse = 0;
        for (int i = 3; i < argc; i++) {
                if (!strcmp(argv[i], "misalign")) misalign = 1;
                if (!strcmp(argv[i], "align")) align = 1;
                if (!strcmp(argv[i], "madvise")) madv = 1;
                if (!strcmp(argv[i], "prefill")) prefill = 1;
                if (!strcmp(argv[i], "late")) late = 1;
                if (!strcmp(argv[i], "collapse")) collapse = 1;   /* map, then wait for a line on stdin, then touch */
        }
        char *hint = NULL;
        if (misalign || align) {
                char *r = mmap(NULL, len + (4 << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                uintptr_t a = ((uintptr_t) r + (2 << 20) - 1) & ~(uintptr_t) ((2 << 20) - 1);
                munmap(r, len + (4 << 20));
                hint = (char *) (a + (misalign ? 4096 : 0));
        }
        int fd = -1, flags = MAP_SHARED | (hint ? MAP_FIXED_NOREPLACE : 0);
        char path[64];
        snprintf(path, sizeof path, "/dev/shm/shm-folios.%d", getpid());
        char *p;
        if (!strcmp(mode, "anon")) {
                p = mmap(hint, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
        } else if (!strcmp(mode, "sysv")) {
                int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
                if (id < 0) { perror("shmget"); return 1; }
                p = shmat(id, hint, 0);
                shmctl(id, IPC_RMID, NULL);
                if (p == (void *) -1) { perror("shmat"); return 1; }
        } else {
                fd = !strcmp(mode, "memfd") ? memfd_create("shm-folios", 0) : open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
                if (fd < 0) { perror("open"); return 1; }
                if (ftruncate(fd, (off_t) len)) { perror("ftruncate"); return 1; }
                if (prefill) {   /* fill the page cache through a first mapping, then drop it */
                        char *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                        if (q == MAP_FAILED) { perror("mmap"); return 1; }
                        for (size_t o = 0; o < len; o += 4096) q[o] = 1;
                        munmap(q, len);
                        if (late) { fprintf(stderr, "prefilled; waiting\n"); getchar(); }
                }
                if (!strcmp(mode, "unlinked")) unlink(path);
                p = mmap(hint, len, PROT_READ | PROT_WRITE, flags, fd, 0);
        }
        if (p == MAP_FAILED) { perror("mmap"); return 1; }
        if (madv && madvise(p, len, MADV_HUGEPAGE)) perror("madvise");
        if (late && !prefill) { fprintf(stderr, "mapped at %p; waiting\n", p); getchar(); }
        for (size_t o = 0; o < len; o += 4096) p[o] = 1;
        long pages, heads, inlarge;
        folio_census(p, len, &pages, &heads, &inlarge);
        printf("mode=%s addr=%p align=%lluK present=%ld in_large=%ld avg_folio=%.0fK ShmemPmdMapped=%ldK FilePmdMapped=%ldK\n",
               mode, (void *) p, (unsigned long long) (align_of((uintptr_t) p) >> 10 > 2048 ? 2048 : align_of((uintptr_t) p) >> 10),
               pages, inlarge, heads ? 4.0 * inlarge / heads : 4.0, smaps_field(p, "ShmemPmdMapped:"), smaps_field(p, "FilePmdMapped:"));
        if (collapse) {
                int r = madvise(p, len, 25 /* MADV_COLLAPSE */);
                folio_census(p, len, &pages, &heads, &inlarge);
                printf("  after MADV_COLLAPSE (%s): in_large=%ld avg_folio=%.0fK ShmemPmdMapped=%ldK FilePmdMapped=%ldK\n", r ? strerror(errno) : "ok",
                       inlarge, heads ? 4.0 * inlarge / heads : 4.0, smaps_field(p, "ShmemPmdMapped:"), smaps_field(p, "FilePmdMapped:"));
        }
        if (fd >= 0 && strcmp(mode, "unlinked") && strcmp(mode, "memfd")) unlink(path);
        return 0;
}
