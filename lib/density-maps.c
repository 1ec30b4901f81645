/* SPDX-License-Identifier: MIT */
/* A sampled process's mapping lists, kept between ticks: maps (which
 * mappings to sample) and smaps (the hg and nh flags of opt-outs), each
 * read again only when it may have changed, so the cost of a process with
 * tens of thousands of mappings is not paid every tick. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/density.h"
#include "mthp/util.h"

#include "density-internal.h"

int density_read_all(struct mthp_density_sampler *s, int dfd, const char *name, size_t *len) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return mthp_proc_read_fd(fd, &s->text, &s->cap_text, len);
}

/* ---- opt-outs: the hg and nh mappings, from smaps ---- */

/* The cache entry of this process, or the slot to read it into (a free one
 * or the least recently read). */
static struct vmf_entry *vmf_slot(struct mthp_density_sampler *s, const struct mthp_proc_entry *e) {
        struct vmf_entry *old = &s->vmf[0];
        for (unsigned i = 0; i < VMF_CACHE; i++) {
                struct vmf_entry *v = &s->vmf[i];
                if (v->pid == e->pid && v->starttime == e->starttime)
                        return v;
                if (old->pid && (!v->pid || v->t_usec < old->t_usec))
                        old = v;
        }
        memset(old, 0, sizeof(*old));
        return old;
}

/* A hash of the bounds of the anon and shmem mappings: when it changes,
 * mappings came or went since smaps was read. */
static uint64_t layout_hash(const struct maps_entry *me) {
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t i = 0; i < me->n; i++)
                if (me->m[i].kind >= 0)
                        h = (h ^ me->m[i].start ^ (me->m[i].end << 1)) * 0x100000001b3ULL;
        return h;
}

static void vmf_parse(struct vmf_entry *v, const char *text, size_t len) {
        const char *p = text, *end = text + len;
        struct vmf_range cur = { .kind = -1 };
        bool in_map = false;
        uint64_t rss[_MTHP_KIND_MAX] = { 0 }, nh[_MTHP_KIND_MAX] = { 0 };

        v->n = 0;
        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                size_t n = eol ? (size_t) (eol - p) : (size_t) (end - p);
                struct mthp_mapping m;
                if (n > 8 && memcmp(p, "VmFlags:", 8) == 0) {
                        cur.flags = (uint8_t) mthp_proc_parse_vmflags(p + 8, n - 8);
                        if (in_map && cur.kind >= 0) {
                                rss[cur.kind] += cur.rss;
                                if (cur.flags & MTHP_VMA_NOHUGEPAGE)
                                        nh[cur.kind] += cur.rss;
                        }
                        if (in_map && cur.flags && cur.kind >= 0 && v->n < VMF_RANGES)
                                v->r[v->n++] = cur;
                        in_map = false;
                } else if (n > 4 && memcmp(p, "Rss:", 4) == 0) {
                        cur.rss = strtoull(p + 4, NULL, 10) * 1024;
                } else if (mthp_proc_parse_maps_line(p, n, &m) == 0) {
                        int kind = mthp_proc_mapping_kind(&m);
                        cur = (struct vmf_range) { .start = m.start, .end = m.end, .kind = (int8_t) (kind >= 0 ? kind : -1) };
                        in_map = true;
                }
                p += n + 1;
        }
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                double share = rss[k] ? (double) nh[k] / (double) rss[k] : 0;
                v->nh_share[k] = share > v->nh_share[k] * 0.75 ? share : v->nh_share[k] * 0.75;
        }
}

static uint8_t shm_reach(const struct mthp_mapping *m);
static unsigned shm_align_kb(const struct mthp_mapping *m);

/* The cache entry of this process, or the slot to read it into (a free one
 * or the least recently used). */
static struct maps_entry *maps_slot(struct mthp_density_sampler *s, const struct mthp_proc_entry *e) {
        struct maps_entry *old = &s->maps[0];
        for (unsigned i = 0; i < MAPS_CACHE; i++) {
                struct maps_entry *m = &s->maps[i];
                if (m->pid == e->pid && m->starttime == e->starttime)
                        return m;
                if (old->pid && (!m->pid || m->used_usec < old->used_usec))
                        old = m;
        }
        old->pid = 0;
        old->n = 0;
        return old;
}

/* maps (or smaps: its header lines are maps lines) text into me. */
static int maps_parse(struct maps_entry *me, const char *text, size_t len) {
        const char *p = text, *end = text + len;
        me->n = 0;
        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                if (!eol)
                        break;   /* a cut-off last line (maps longer than MTHP_PROC_TEXT_MAX) */
                struct mthp_mapping m;
                if (mthp_proc_parse_maps_line(p, (size_t) (eol - p), &m) == 0) {
                        int r = mthp_grow((void **) &me->m, &me->cap, me->n + 1, sizeof(*me->m));
                        if (r < 0)
                                return r;
                        int kind = mthp_proc_mapping_kind(&m);
                        me->m[me->n++] = (struct cmap) {
                                .start = m.start,
                                .end = m.end,
                                .offset = m.offset,
                                .kind = (int8_t) (kind >= 0 ? kind : -1),
                                .reach = kind == MTHP_SHMEM ? shm_reach(&m) : 0,
                                .align_kb = (uint16_t) (kind == MTHP_SHMEM ? shm_align_kb(&m) : 0),
                        };
                }
                p = eol + 1;
        }
        me->layout = layout_hash(me);
        return 0;
}

/* Read maps again? At first sight; when VmSize moved (mappings came or
 * went), as long as reading it costs at most 1/MAPS_MOVED_FACTOR of the time
 * since the last read; and at the latest once it is MAPS_AGE_FACTOR times
 * what the read cost old: a process of a few hundred mappings (~0.1 ms) is
 * read every tick as before, one of 60,000 (~25 ms) every 5 s, or every
 * 0.5 s while it maps and unmaps. Between reads the sampler works on the
 * list it has: a mapping since unmapped shows no touched page, one since
 * mapped is not sampled until the next read. */
#define MAPS_MOVED_FACTOR 20
#define MAPS_AGE_FACTOR 200

static bool maps_due(const struct maps_entry *me, uint64_t now, uint64_t vm_kb) {
        uint64_t age = now - me->t_usec;
        return !me->pid || now < me->t_usec || age >= MAPS_AGE_FACTOR * me->cost_usec ||
               (vm_kb != me->vm_kb && age >= MAPS_MOVED_FACTOR * me->cost_usec);
}

/* The process's mappings (c->maps) and its hg and nh mappings (c->vmf).
 * maps as maps_due says; smaps (which serves as maps too) at first sight,
 * again once the cached reading is MTHP_DENSITY_VMFLAGS_USEC old, and
 * again, at most once a second, when the anon/shmem mappings have changed
 * since (a program that maps, madvises and unmaps in a loop); never sooner
 * than 400 times what the last read cost. c->vmf NULL if smaps cannot be
 * read (a fake host): no mapping is flagged then. */
/* The text of maps or smaps (name) into me, and what that cost. */
static int maps_read(struct mthp_density_sampler *s, int dfd, const char *name, const struct mthp_proc_entry *e,
                     const struct proc_ctx *c, struct maps_entry *me, size_t *len) {
        uint64_t now = s->t0_ns / 1000, t0 = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        int r;
        if ((r = density_read_all(s, dfd, name, len)) < 0)
                return r;   /* the list it had stands */
        me->pid = 0;
        if ((r = maps_parse(me, s->text, *len)) < 0)
                return r;
        me->pid = e->pid;
        me->starttime = e->starttime;
        me->t_usec = now;
        me->vm_kb = c->vm_kb;
        me->cost_usec = (mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - t0) / 1000;
        return 0;
}

int density_read_mappings(struct mthp_density_sampler *s, int dfd, const struct mthp_proc_entry *e,
                          struct proc_ctx *c) {
        uint64_t now = s->t0_ns / 1000;
        struct vmf_entry *v = vmf_slot(s, e);
        struct maps_entry *me = maps_slot(s, e);
        size_t len;
        int r;
        bool fresh = false;
        c->vmf = NULL;
        c->maps = NULL;
        /* smaps takes at most 0.25% of a CPU per process: a 64 GiB database
         * of 4K pages (~10 ms/GiB measured) is read again after 4 minutes,
         * not every second; a PostgreSQL backend mapping 1 GiB of shared
         * buffers (~25 ms) every 30 s */
        uint64_t floor = 400 * v->cost_usec;
        bool smaps = !v->pid || now >= v->t_usec + (MTHP_DENSITY_VMFLAGS_USEC > floor ? MTHP_DENSITY_VMFLAGS_USEC : floor);
        if (!smaps && maps_due(me, now, c->vm_kb)) {
                if ((r = maps_read(s, dfd, "maps", e, c, me, &len)) < 0)
                        return r;
                fresh = true;
                /* mappings changed since smaps: again, at most once a second */
                smaps = me->layout != v->layout && now >= v->t_usec + (1000000 > floor ? 1000000 : floor);
        }
        if (smaps) {
                /* its header lines are maps lines: the freshest list too */
                if (maps_read(s, dfd, "smaps", e, c, me, &len) == 0) {
                        vmf_parse(v, s->text, len);
                        v->pid = e->pid;
                        v->starttime = e->starttime;
                        v->t_usec = now;
                        v->layout = me->layout;
                        v->cost_usec = me->cost_usec;
                        /* smaps cut at MTHP_PROC_TEXT_MAX (~1 KB a mapping:
                         * ~16,000 of them) lists only the first ones */
                        fresh = len + 8192 < MTHP_PROC_TEXT_MAX;
                        if (!fresh)
                                me->pid = 0;   /* maps below */
                } else
                        v->pid = 0;   /* a fake host: no mapping is flagged */
        }
        if (!fresh && (!me->pid || maps_due(me, now, c->vm_kb))) {
                if ((r = maps_read(s, dfd, "maps", e, c, me, &len)) < 0)
                        return r;
                if (smaps && v->pid)
                        v->layout = me->layout;   /* smaps was cut: the whole list's */
        }
        me->used_usec = now;
        c->maps = me;
        c->vmf = v->pid ? v : NULL;
        return 0;
}

/* Which knobs reach a shared mapping (mthp_shm_reach), by its maps name. */
static uint8_t shm_reach(const struct mthp_mapping *m) {
        static const char deleted[] = " (deleted)";
        size_t dl = sizeof(deleted) - 1;
        if (m->name_len >= 5 && memcmp(m->name, "/SYSV", 5) == 0)
                return MTHP_SHM_SYSV;
        /* unlinked before mmap, a tmpfs file is anonymous shmem to the kernel;
         * one unlinked after mmap is taken for that too (maps cannot tell) */
        if (m->name_len >= 9 && memcmp(m->name, "/dev/shm/", 9) == 0 &&
            !(m->name_len > dl && memcmp(m->name + m->name_len - dl, deleted, dl) == 0))
                return MTHP_SHM_TMPFS_FILE;
        return MTHP_SHM_PER_SIZE;
}

/* The largest folio a shared mapping's faults can get: its address and
 * file offset must agree modulo the folio size. */
static unsigned shm_align_kb(const struct mthp_mapping *m) {
        uint64_t v = (m->start - m->offset) / PAGE;
        if (v == 0)
                return MTHP_DENSITY_MAX_KB;
        uint64_t kb = (v & -v) * (PAGE / 1024);
        return kb < MTHP_DENSITY_MAX_KB ? (unsigned) kb : MTHP_DENSITY_MAX_KB;
}
