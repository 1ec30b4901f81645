/* SPDX-License-Identifier: MIT */
/* The collapser's pure arithmetic (mthp/collapse.h), apart from its state
 * and kernel calls in collapse.c: which PMD blocks of a maps line may be
 * collapsed (anon, and shmem aligned in address and file offset), the
 * merge of a pass's candidates into the remembered set, the batch size
 * the tick's budget allows, and the tick's time at CollapseCPU=. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mthp/collapse.h"
#include "mthp/procfs.h"


/* The whole PMD blocks of [s, e): 1 and [*first, *end), or 0 if none
 * (also where rounding up wrapped at the top of the address space). */
static int pmd_blocks(uint64_t s, uint64_t e, uint64_t pmd_bytes, uint64_t *first, uint64_t *end) {
        uint64_t a = (s + pmd_bytes - 1) & ~(pmd_bytes - 1);
        uint64_t b = e & ~(pmd_bytes - 1);
        if (a < s || a >= b)
                return 0;
        *first = a;
        *end = b;
        return 1;
}

/* Parse a maps line of this kind: 1 and *m, 0 (another kind, or no usable
 * PMD size), or -errno. */
static int maps_line_of(const char *line, size_t len, uint64_t pmd_bytes, enum mthp_kind kind, struct mthp_mapping *m) {
        int r = mthp_proc_parse_maps_line(line, len, m);
        if (r < 0)
                return r;
        return pmd_bytes && !(pmd_bytes & (pmd_bytes - 1)) && mthp_proc_mapping_kind(m) == (int) kind;
}

int mthp_collapse_maps_line(const char *line, size_t len, uint64_t pmd_bytes, uint64_t *first, uint64_t *end) {
        struct mthp_mapping m;
        int r = maps_line_of(line, len, pmd_bytes, MTHP_ANON, &m);
        return r <= 0 ? r : pmd_blocks(m.start, m.end, pmd_bytes, first, end);
}

int mthp_collapse_shm_maps_line(const char *line, size_t len, uint64_t pmd_bytes, uint64_t lo, uint64_t hi,
                                uint64_t *first, uint64_t *end) {
        struct mthp_mapping m;
        int r = maps_line_of(line, len, pmd_bytes, MTHP_SHMEM, &m);
        if (r <= 0)
                return r;
        /* a PMD folio of the file maps only where address and file offset
         * agree modulo its size (the kernel's transhuge_vma_suitable: EINVAL
         * otherwise, for every block of the mapping) */
        if ((m.start - m.offset) & (pmd_bytes - 1))
                return 0;
        uint64_t s = m.start > lo ? m.start : lo, e = m.end < hi ? m.end : hi;
        return s < e ? pmd_blocks(s, e, pmd_bytes, first, end) : 0;
}

size_t mthp_collapse_merge(const struct mthp_collapse_block *prev, size_t n_prev, const uint64_t *cur, size_t n_cur,
                           uint64_t scanned_from, uint64_t scanned_to, uint64_t now_usec, uint64_t min_age_usec,
                           bool *eligible, struct mthp_collapse_block *out, size_t cap) {
        size_t i = 0, j = 0, n = 0;

        /* below what the pass looked at: kept as it was */
        for (; j < n_prev && prev[j].addr < scanned_from && n < cap; j++)
                out[n++] = prev[j];
        for (; i < n_cur; i++) {
                while (j < n_prev && prev[j].addr < cur[i])
                        j++;
                bool was = j < n_prev && prev[j].addr == cur[i];
                uint64_t since = was ? prev[j].since_usec : now_usec;
                if (eligible)
                        eligible[i] = was && since <= now_usec && now_usec - since >= min_age_usec;
                if (n < cap)
                        out[n++] = (struct mthp_collapse_block) { cur[i], since };
        }
        /* what the pass did not reach stays as it was */
        for (j = 0; j < n_prev && n < cap; j++)
                if (prev[j].addr >= scanned_to && prev[j].addr >= scanned_from)
                        out[n++] = prev[j];
        return n;
}

unsigned mthp_collapse_batch_blocks(const struct mthp_collapse_budget *b, uint64_t kb_used, uint64_t usec_used,
                                    uint64_t usec_per_block, unsigned pmd_kb, unsigned max_batch) {
        if (pmd_kb == 0 || kb_used >= b->max_kb_per_tick || usec_used >= b->max_usec)
                return 0;
        uint64_t n = (b->max_kb_per_tick - kb_used) / pmd_kb;
        uint64_t t = usec_per_block ? (b->max_usec - usec_used) / usec_per_block : n;
        if (t == 0)
                t = 1;  /* time is left: one block, and the overrun is at most one */
        if (t < n)
                n = t;
        return (unsigned) (n < max_batch ? n : max_batch);
}

uint64_t mthp_collapse_usec_per_tick(uint64_t interval_usec, double cpu_percent) {
        if (!(cpu_percent > 0 && cpu_percent <= 100) || interval_usec == 0)
                return 0;
        double u = (double) interval_usec * cpu_percent / 100.0 + 0.5;
        return u < 1 ? 1 : (uint64_t) u;
}
