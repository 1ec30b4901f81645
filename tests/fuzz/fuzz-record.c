/* SPDX-License-Identifier: MIT */
/* The 'mthp-record 1' reader (lib/record.c) on arbitrary text, through a
 * memfd (the reader takes a path). What it accepts must be consistent caps
 * and snapshots, and must survive the writer: write(read(input)) reads back
 * without error and writes the very same text again (the format promises
 * byte-identical replays). */
#include "fuzz-util.h"
#include "mthp/record.h"

#define MAX_TICKS 64

static void check_caps(const struct mthp_caps *c) {
        FUZZ_CHECK(c->n_knobs <= MTHP_KNOBS_MAX && c->n_sizes <= MTHP_SIZES_MAX, "%u knobs %u sizes", c->n_knobs,
                   c->n_sizes);
        for (unsigned i = 0; i < c->n_knobs; i++) {
                const struct mthp_knob *k = &c->knobs[i];
                FUZZ_CHECK(fuzz_terminated(k->id, sizeof(k->id)) && fuzz_terminated(k->path, sizeof(k->path)),
                           "knob %u", i);
                FUZZ_CHECK(k->n_allowed <= MTHP_VALUES_MAX, "knob %u: %u values", i, k->n_allowed);
                for (unsigned j = 0; j < k->n_allowed; j++)
                        FUZZ_CHECK(fuzz_terminated(k->allowed[j], MTHP_VALUE_MAX), "knob %u value %u", i, j);
        }
        for (unsigned i = 0; i < c->n_sizes; i++) {
                const struct mthp_size *s = &c->sizes[i];
                FUZZ_CHECK(s->kb > 0 && (i == 0 || s->kb > c->sizes[i - 1].kb), "size %u: %u kB", i, s->kb);
                FUZZ_CHECK(s->n_stats <= MTHP_STATS_MAX, "size %u: %u stats", i, s->n_stats);
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        FUZZ_CHECK(s->knob[k] >= -1 && s->knob[k] < (int) c->n_knobs, "size %u: knob %d", i,
                                   s->knob[k]);
        }
        FUZZ_CHECK(fuzz_terminated(c->cg_memory, sizeof(c->cg_memory)) &&
                           fuzz_terminated(c->cg_unified, sizeof(c->cg_unified)),
                   "cgroup mounts");
}

static void check_snap(const struct mthp_caps *c, const struct mthp_snapshot *s) {
        for (unsigned i = 0; i < c->n_knobs; i++)
                FUZZ_CHECK(fuzz_terminated(s->knob[i], MTHP_VALUE_MAX), "knob %u", i);
        FUZZ_CHECK(s->density.n_procs <= MTHP_DENSITY_PROCS, "%u procs", s->density.n_procs);
        for (unsigned i = 0; i < s->density.n_procs; i++) {
                const struct mthp_proc_density *p = &s->density.proc[i];
                FUZZ_CHECK(fuzz_terminated(p->comm, sizeof(p->comm)) && fuzz_terminated(p->cgroup, sizeof(p->cgroup)),
                           "proc %u", i);
        }
        FUZZ_CHECK(s->n_cgroups <= MTHP_SNAP_CGROUPS, "%u cgroups", s->n_cgroups);
}

/* Read all of in (at most MAX_TICKS ticks) and, if out, write what was read
 * there. Returns the reader's verdict: 0 for a whole recording. */
static int copy(const char *in, struct fuzz_file *out, unsigned *n_ticks) {
        static struct mthp_snapshot snap;
        struct mthp_caps caps;
        struct mthp_record_reader *r = NULL;
        struct mthp_record_writer *w = NULL;
        char err[512];
        int e;

        *n_ticks = 0;
        e = mthp_record_open_read(in, &caps, &r, err, sizeof(err));
        FUZZ_CHECK(e == 0 || e == -EBADMSG, "open: %d %s", e, err);
        if (e < 0) {
                FUZZ_CHECK(err[0] && fuzz_terminated(err, sizeof(err)), "no message");
                return e;
        }
        check_caps(&caps);
        if (out)
                FUZZ_CHECK(mthp_record_open_write(out->path, &caps, &w) == 0, "open_write");
        while ((e = mthp_record_read(r, &snap, err, sizeof(err))) == 1 && *n_ticks < MAX_TICKS) {
                check_snap(&caps, &snap);
                if (w)
                        FUZZ_CHECK(mthp_record_write(w, &snap) == 0, "write");
                ++*n_ticks;
        }
        FUZZ_CHECK(e >= 0 || e == -EBADMSG, "read: %d %s", e, err);
        if (e < 0)
                FUZZ_CHECK(err[0] && fuzz_terminated(err, sizeof(err)), "no message");
        mthp_record_close_write(w);
        mthp_record_close_read(r);
        return e < 0 ? e : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct fuzz_file in, a, b;
        if (in.path[0] == 0) {
                fuzz_file_init(&in, "record-in");
                fuzz_file_init(&a, "record-a");
                fuzz_file_init(&b, "record-b");
        }
        unsigned n, n_a;
        fuzz_file_set(&in, data, size);
        fuzz_file_set(&a, NULL, 0);
        /* what was read before an error is written too */
        if (copy(in.path, &a, &n) < 0 && n == 0 && lseek(a.fd, 0, SEEK_END) == 0)
                return 0;       /* not even the caps */
        int e = copy(a.path, &b, &n_a);
        size_t la, lb;
        char *ta = fuzz_file_get(&a, &la), *tb = fuzz_file_get(&b, &lb);
        FUZZ_CHECK(e == 0, "the writer's output does not read back (%d):\n%s", e, ta);
        FUZZ_CHECK(n_a == n, "%u ticks written, %u read back", n, n_a);
        FUZZ_CHECK(la == lb && memcmp(ta, tb, la) == 0, "write(read(x)) != x for x =\n%s\nwritten again:\n%s", ta, tb);
        free(ta);
        free(tb);
        return 0;
}
