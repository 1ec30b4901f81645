/* SPDX-License-Identifier: MIT */
/* Record and replay of snapshots; the format is described in mthp/record.h.
 * Each line is described once, as a table of fields pointing into the struct
 * it belongs to; the writer (here) and the reader (record-read.c) walk the
 * same table (record-fields.h), so the two cannot drift apart. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp-config.h"
#include "mthp/record.h"
#include "mthp/util.h"
#include "record-fields.h"
const char *const record_knob_type_names[] = {
        [MTHP_KNOB_ENABLED] = "enabled",     [MTHP_KNOB_DEFRAG] = "defrag",
        [MTHP_KNOB_SHMEM_ENABLED] = "shmem_enabled", [MTHP_KNOB_SIZE_ANON] = "size_anon",
        [MTHP_KNOB_SIZE_SHMEM] = "size_shmem", [MTHP_KNOB_NUMBER] = "number",
};
static const char *const cg_layout_names[] = {
        [MTHP_CG_NONE] = "none", [MTHP_CG_V1] = "v1", [MTHP_CG_HYBRID] = "hybrid", [MTHP_CG_V2] = "v2",
};
_Static_assert(sizeof(enum mthp_knob_type) == sizeof(int) && sizeof(enum mthp_cg_layout) == sizeof(int),
               "FIELD_ENUM stores enums as int");

/* ---- the lines ---- */

unsigned record_caps_fields(struct mthp_caps *c, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("pmd_kb", FIELD_UNSIGNED, &c->pmd_kb);
        f[n++] = SCALAR("psi", FIELD_BOOL, &c->psi);
        f[n++] = SCALAR("task_delayacct", FIELD_BOOL, &c->task_delayacct);
        f[n++] = ENUM("cg_layout", &c->cg_layout, cg_layout_names);
        f[n++] = STRING("cg_memory", c->cg_memory);
        f[n++] = STRING("cg_unified", c->cg_unified);
        return n;
}

unsigned record_knob_fields(struct mthp_knob *k, struct field *f) {
        unsigned n = 0;
        f[n++] = STRING("id", k->id);
        f[n++] = ENUM("type", &k->type, record_knob_type_names);
        f[n++] = SCALAR("size_kb", FIELD_UNSIGNED, &k->size_kb);
        f[n++] = STRING("path", k->path);
        f[n++] = STRINGS("allowed", k->allowed, &k->n_allowed);
        return n;
}

unsigned record_size_fields(struct mthp_size *s, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("kb", FIELD_UNSIGNED, &s->kb);
        f[n++] = SCALAR("order", FIELD_INT, &s->order);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                f[n++] = SCALAR(mthp_kind_name(k), FIELD_INT, &s->knob[k]);
        f[n++] = STRINGS("stats", s->stats, &s->n_stats);
        return n;
}

unsigned record_tick_fields(struct mthp_snapshot *s, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("t_usec", FIELD_U64, &s->t_usec);
        f[n++] = SCALAR("dt", FIELD_DOUBLE, &s->dt);
        f[n++] = SCALAR("fault_cost_ns", FIELD_DOUBLE, &s->fault_cost_ns);
        return n;
}

static unsigned vm_fields(struct mthp_snapshot *s, struct field *f) {
        unsigned n = 0;
        for (int i = 0; i < _MTHP_VM_MAX; i++)
                f[n++] = SCALAR(mthp_vmstat_name(i), FIELD_COUNTER, &s->vm[i]);
        return n;
}

static unsigned mem_fields(struct mthp_snapshot *s, struct field *f) {
        struct mthp_meminfo *m = &s->mem;
        unsigned n = 0;
        f[n++] = SCALAR("total", FIELD_U64, &m->total_kb);
        f[n++] = SCALAR("available", FIELD_U64, &m->available_kb);
        f[n++] = SCALAR("anon", FIELD_U64, &m->anon_kb);
        f[n++] = SCALAR("shmem", FIELD_U64, &m->shmem_kb);
        f[n++] = SCALAR("anon_huge", FIELD_U64, &m->anon_huge_kb);
        f[n++] = SCALAR("shmem_huge", FIELD_U64, &m->shmem_huge_kb);
        return n;
}

static unsigned psi_fields(struct mthp_snapshot *s, struct field *f) {
        struct mthp_psi *p = &s->psi;
        unsigned n = 0;
        f[n++] = SCALAR("present", FIELD_BOOL, &p->present);
        f[n++] = SCALAR("some_avg10", FIELD_DOUBLE, &p->some_avg10);
        f[n++] = SCALAR("full_avg10", FIELD_DOUBLE, &p->full_avg10);
        f[n++] = SCALAR("some_total", FIELD_COUNTER, &p->some_total);
        f[n++] = SCALAR("full_total", FIELD_COUNTER, &p->full_total);
        return n;
}

static const char *const kind_pages_keys[] = { "anon_pages", "shmem_pages" };
static const char *const kind_alloc_keys[] = { "anon_alloc", "shmem_alloc" };
static const char *const kind_fallback_keys[] = { "anon_fallback", "shmem_fallback" };
static const char *const rss_keys[] = { "rss_anon", "rss_shmem" };
static const char *const coverage_keys[] = { "cov_anon", "cov_shmem" };
static const char *const zero_keys[] = { "zero_anon", "zero_shmem" };
static const char *const blocks_keys[] = { "blocks_anon", "blocks_shmem" };
static const char *const nohuge_keys[] = { "nohuge_anon", "nohuge_shmem" };
static const char *const fault_samples_keys[] = { "fs_anon", "fs_shmem" };
static const char *const hg_coverage_keys[] = { "hg_cov_anon", "hg_cov_shmem" };
static const char *const hg_zero_keys[] = { "hg_zero_anon", "hg_zero_shmem" };
static const char *const hg_blocks_keys[] = { "hg_blocks_anon", "hg_blocks_shmem" };
static const char *const zero_data_keys[] = { "zerod_anon", "zerod_shmem" };
_Static_assert(_MTHP_KIND_MAX == 2, "per-kind keys above");

static unsigned rates_fields(struct mthp_snapshot *s, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("fault_pages", FIELD_DOUBLE, &s->fault_pages_rate);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                f[n++] = SCALAR(kind_pages_keys[k], FIELD_DOUBLE, &s->kind_pages_rate[k]);
                f[n++] = SCALAR(kind_alloc_keys[k], FIELD_DOUBLE, &s->kind_alloc_rate[k]);
                f[n++] = SCALAR(kind_fallback_keys[k], FIELD_DOUBLE, &s->kind_fallback_rate[k]);
        }
        return n;
}

static unsigned density_fields(struct mthp_snapshot *s, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("valid", FIELD_BOOL, &s->density.valid);
        f[n++] = SCALAR("usec", FIELD_DOUBLE, &s->density.usec);
        f[n++] = SCALAR("fault_sampling", FIELD_BOOL, &s->density.fault_sampling);
        return n;
}

unsigned record_proc_fields(struct mthp_proc_density *p, unsigned n_sizes, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("pid", FIELD_INT, &p->pid);
        f[n++] = STRING("comm", p->comm);
        f[n++] = SCALAR("fault_rate", FIELD_DOUBLE, &p->fault_rate);
        f[n++] = SCALAR("new", FIELD_BOOL, &p->new_proc);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                f[n++] = SCALAR(rss_keys[k], FIELD_U64, &p->rss_kb[k]);
        f[n++] = SCALAR("compact_ms", FIELD_DOUBLE, &p->compact_ms);
        f[n++] = SCALAR("thrash_ms", FIELD_DOUBLE, &p->thrash_ms);
        f[n++] = SCALAR("reclaim_ms", FIELD_DOUBLE, &p->reclaim_ms);
        f[n++] = STRING("cgroup", p->cgroup);
        f[n++] = SCALAR("cg_usage", FIELD_U64, &p->cg_usage_kb);
        f[n++] = SCALAR("cg_limit", FIELD_U64, &p->cg_limit_kb);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                f[n++] = DOUBLES(coverage_keys[k], p->coverage[k], n_sizes);
                f[n++] = DOUBLES(zero_keys[k], p->zero[k], n_sizes);
                f[n++] = DOUBLES(blocks_keys[k], p->blocks[k], n_sizes);
        }
        /* the opt-outs and the largest shmem mapping: left out when none,
         * as in recordings made before them */
        f[n++] = SCALAR("thp_disabled", FIELD_BOOL, &p->thp_disabled);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                f[n++] = SCALAR(nohuge_keys[k], FIELD_U64, &p->nohuge_kb[k]);
                f[n++] = DOUBLES(hg_coverage_keys[k], p->hg_coverage[k], n_sizes);
                f[n++] = DOUBLES(hg_zero_keys[k], p->hg_zero[k], n_sizes);
                f[n++] = DOUBLES(hg_blocks_keys[k], p->hg_blocks[k], n_sizes);
        }
        /* zeros beside data (mthp_density_size zero_data_fraction): left
         * out when unknown, as in recordings made before it */
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                f[n++] = DOUBLES(zero_data_keys[k], p->zero_data[k], n_sizes);
        f[n++] = SCALAR("shm_reach", FIELD_UNSIGNED, &p->shm.reach);
        f[n++] = SCALAR("shm_addr", FIELD_U64, &p->shm.addr);
        f[n++] = SCALAR("shm_bytes", FIELD_U64, &p->shm.bytes);
        f[n++] = SCALAR("shm_align", FIELD_UNSIGNED, &p->shm.align_kb);
        f[n++] = SCALAR("shm_sampled", FIELD_UNSIGNED, &p->shm.sampled);
        f[n++] = SCALAR("shm_large", FIELD_UNSIGNED, &p->shm.large);
        /* which probe: 0 (kpageflags) in recordings made before the PMD probe */
        f[n++] = SCALAR("shm_probe", FIELD_UNSIGNED, &p->shm.probe);
        f[n++] = SCALAR("shm_repaired", FIELD_U64, &p->shm_repaired_kb);
        /* sampled faults by kind (FaultSampling=): left out when none */
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                f[n++] = SCALAR(fault_samples_keys[k], FIELD_UNSIGNED, &p->fault_samples[k]);
        f[n++] = SCALAR("fs_other", FIELD_UNSIGNED, &p->fault_samples_other);
        /* its CPU (engine-pay.c): left out when not measured */
        f[n++] = SCALAR("cpu_known", FIELD_BOOL, &p->cpu_known);
        f[n++] = SCALAR("utime_rate", FIELD_DOUBLE, &p->utime_rate);
        f[n++] = SCALAR("stime_rate", FIELD_DOUBLE, &p->stime_rate);
        return n;
}

/* every memory-limited cgroup, for the engine's invariant: 'limits scanned=1'
 * once, then a 'limited' line each; recordings without them decide as before */
unsigned record_limits_fields(struct mthp_snapshot *s, struct field *f) {
        unsigned n = 0;
        f[n++] = SCALAR("scanned", FIELD_BOOL, &s->limited_valid);
        return n;
}

unsigned record_limited_fields(struct mthp_limited_cgroup *c, struct field *f) {
        unsigned n = 0;
        f[n++] = STRING("path", c->path);
        f[n++] = SCALAR("usage", FIELD_U64, &c->usage_kb);
        f[n++] = SCALAR("limit", FIELD_U64, &c->limit_kb);
        f[n++] = SCALAR("populated", FIELD_BOOL, &c->populated);
        return n;
}

unsigned record_cgroup_fields(struct mthp_cgroup_view *c, struct field *f) {
        unsigned n = 0;
        f[n++] = STRING("path", c->path);
        f[n++] = SCALAR("fault_rate", FIELD_DOUBLE, &c->fault_rate);
        f[n++] = SCALAR("new", FIELD_BOOL, &c->new_cgroup);
        f[n++] = SCALAR("anon", FIELD_U64, &c->anon_kb);
        f[n++] = SCALAR("shmem", FIELD_U64, &c->shmem_kb);
        f[n++] = SCALAR("usage", FIELD_U64, &c->usage_kb);
        f[n++] = SCALAR("limit", FIELD_U64, &c->limit_kb);
        f[n++] = SCALAR("growth", FIELD_DOUBLE, &c->growth_kb_s);
        f[n++] = SCALAR("psi", FIELD_BOOL, &c->psi_present);
        f[n++] = SCALAR("psi_some", FIELD_DOUBLE, &c->psi_some_avg10);
        f[n++] = SCALAR("appeared", FIELD_U64, &c->appeared_usec);
        return n;
}

const struct tick_line record_tick_lines[RECORD_TICK_LINES] = {
        { "vm", vm_fields },       { "mem", mem_fields },         { "psi", psi_fields },
        { "rates", rates_fields }, { "density", density_fields },
};

/* ---- writing ---- */

static bool counter_is_empty(const struct mthp_counter *c) {
        return !c->present && !c->reset && c->value == 0 && c->rate == 0 && !signbit(c->rate);
}

static bool field_is_default(const struct field *f) {
        switch (f->type) {
        case FIELD_U64: return *(const uint64_t *) f->p == 0;
        case FIELD_UNSIGNED: return *(const unsigned *) f->p == 0;
        case FIELD_INT: return *(const int *) f->p == 0;
        case FIELD_BOOL: return !*(const bool *) f->p;
        case FIELD_DOUBLE: return *(const double *) f->p == 0 && !signbit(*(const double *) f->p);
        case FIELD_COUNTER: return counter_is_empty(f->p);
        case FIELD_STRING: return !*(const char *) f->p;
        case FIELD_STRINGS: return *f->count == 0;
        case FIELD_DOUBLES:
                for (unsigned i = 0; i < f->max; i++)
                        if (!isnan(((const double *) f->p)[i]))
                                return false;
                return true;
        case FIELD_ENUM: {
                int v;
                memcpy(&v, f->p, sizeof(v));
                return v == 0;
        }
        }
        return false;
}

/* The fewest digits that read back as the same double. */
static void put_double(FILE *f, double v) {
        char buf[40];
        if (isnan(v)) {
                fputs("nan", f);
                return;
        }
        for (int prec = 15; prec <= 17; prec++) {
                snprintf(buf, sizeof(buf), "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        fputs(buf, f);
}

static void put_string(FILE *f, const char *s) {
        if (!*s) {
                fputs("\"\"", f);
                return;
        }
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if (ch <= ' ' || ch > '~' || ch == '\\' || ch == ',' || ch == '"')
                        fprintf(f, "\\x%02x", ch);
                else
                        fputc(ch, f);
        }
}

static void put_counter(FILE *f, const struct mthp_counter *c) {
        if (counter_is_empty(c))
                return;
        fprintf(f, "%llu", (unsigned long long) c->value);
        if (c->rate != 0 || signbit(c->rate)) {
                fputc('/', f);
                put_double(f, c->rate);
        }
        if (c->reset || !c->present)
                fprintf(f, ":%s%s", c->reset ? "r" : "", c->present ? "" : "a");
}

static void put_value(FILE *f, const struct field *fl) {
        switch (fl->type) {
        case FIELD_U64: fprintf(f, "%llu", (unsigned long long) *(const uint64_t *) fl->p); break;
        case FIELD_UNSIGNED: fprintf(f, "%u", *(const unsigned *) fl->p); break;
        case FIELD_INT: fprintf(f, "%d", *(const int *) fl->p); break;
        case FIELD_BOOL: fputc(*(const bool *) fl->p ? '1' : '0', f); break;
        case FIELD_DOUBLE: put_double(f, *(const double *) fl->p); break;
        case FIELD_COUNTER: put_counter(f, fl->p); break;
        case FIELD_STRING: put_string(f, fl->p); break;
        case FIELD_STRINGS:
                for (unsigned i = 0; i < *fl->count; i++) {
                        if (i)
                                fputc(',', f);
                        put_string(f, (const char *) fl->p + i * fl->size);
                }
                break;
        case FIELD_DOUBLES:
                for (unsigned i = 0; i < fl->max; i++) {
                        if (i)
                                fputc(',', f);
                        put_double(f, ((const double *) fl->p)[i]);
                }
                break;
        case FIELD_ENUM: {
                int v;
                memcpy(&v, fl->p, sizeof(v));
                fputs(v >= 0 && (unsigned) v < fl->n_names ? fl->names[v] : "?", f);
                break;
        }
        }
}

/* " key=value" for each field; counters and number lists that hold nothing
 * are left out (the reader's defaults). */
static void put_fields(FILE *f, const struct field *fl, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                if ((fl[i].type == FIELD_COUNTER || fl[i].type == FIELD_DOUBLES) && field_is_default(&fl[i]))
                        continue;
                fprintf(f, " %s=", fl[i].key);
                put_value(f, &fl[i]);
        }
        fputc('\n', f);
}

static void put_caps(FILE *f, const struct mthp_caps *caps) {
        /* the tables point into the struct to describe it; writing only reads */
        struct mthp_caps *c = (struct mthp_caps *) caps;
        struct field fl[MAX_FIELDS];

        fprintf(f, RECORD_MAGIC " %d\n# written by libmthp %s; the format is described in mthp/record.h\n",
                MTHP_RECORD_VERSION, MTHP_VERSION);
        fputs("caps", f);
        put_fields(f, fl, record_caps_fields(c, fl));
        for (unsigned i = 0; i < c->n_knobs; i++) {
                fputs("knob", f);
                put_fields(f, fl, record_knob_fields(&c->knobs[i], fl));
        }
        for (unsigned i = 0; i < c->n_sizes; i++) {
                fputs("size", f);
                put_fields(f, fl, record_size_fields(&c->sizes[i], fl));
        }
        fputs("end\n", f);
}

static void put_tick(FILE *f, const struct mthp_caps *caps, const struct mthp_snapshot *snap) {
        struct mthp_snapshot *s = (struct mthp_snapshot *) snap; /* only read, as in put_caps */
        struct field fl[MAX_FIELDS];
        unsigned n;

        fprintf(f, "tick %llu", (unsigned long long) s->tick);
        put_fields(f, fl, record_tick_fields(s, fl));
        for (size_t l = 0; l < RECORD_TICK_LINES; l++) {
                bool empty = true;
                n = record_tick_lines[l].fields(s, fl);
                for (unsigned i = 0; i < n && empty; i++)
                        empty = field_is_default(&fl[i]);
                if (empty)
                        continue;
                fputs(record_tick_lines[l].keyword, f);
                put_fields(f, fl, n);
        }
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_size_stats *st = &s->size[i];
                unsigned used = caps->sizes[i].n_stats;
                while (used > 0 && counter_is_empty(&st->stat[used - 1]))
                        used--;
                if (!used)
                        continue;
                char name[16];
                mthp_format_size(caps->sizes[i].kb, name, sizeof(name));
                fprintf(f, "stat %s ", name);
                for (unsigned j = 0; j < used; j++) {
                        if (j)
                                fputc(',', f);
                        put_counter(f, &st->stat[j]);
                }
                fputc('\n', f);
        }
        bool any_knob = false;
        for (unsigned i = 0; i < caps->n_knobs; i++)
                any_knob = any_knob || s->knob[i][0];
        if (any_knob) {
                fputs("knobs", f);
                for (unsigned i = 0; i < caps->n_knobs; i++) {
                        fputc(' ', f);
                        put_string(f, s->knob[i]);
                }
                fputc('\n', f);
        }
        for (unsigned i = 0; i < s->density.n_procs && i < MTHP_DENSITY_PROCS; i++) {
                fputs("proc", f);
                put_fields(f, fl, record_proc_fields(&s->density.proc[i], caps->n_sizes, fl));
        }
        for (unsigned i = 0; i < s->density.n_gone && i < MTHP_DENSITY_GONE_MAX; i++)
                fprintf(f, "gone pid=%d\n", s->density.gone[i]);
        for (unsigned i = 0; i < s->density.n_rates && i < MTHP_DENSITY_GONE_MAX; i++) {
                struct mthp_proc_rate pr = s->density.rates[i];
                struct field rf[2] = { SCALAR("pid", FIELD_INT, &pr.pid),
                                       SCALAR("fault_rate", FIELD_DOUBLE, &pr.fault_rate) };
                fputs("rate", f);
                put_fields(f, rf, 2);
        }
        for (unsigned i = 0; i < s->n_cgroups && i < MTHP_SNAP_CGROUPS; i++) {
                fputs("cgroup", f);
                put_fields(f, fl, record_cgroup_fields(&s->cgroup[i], fl));
        }
        if (s->limited_valid) {
                fputs("limits", f);
                put_fields(f, fl, record_limits_fields((struct mthp_snapshot *) s, fl));
                for (unsigned i = 0; i < s->n_limited && i < MTHP_SNAP_LIMITED; i++) {
                        fputs("limited", f);
                        put_fields(f, fl, record_limited_fields((struct mthp_limited_cgroup *) &s->limited[i], fl));
                }
        }
        fputs("end\n", f);
}

struct mthp_record_writer {
        int fd;
        off_t size;        /* bytes of complete ticks */
        struct mthp_caps caps;
};

static int write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t k = write(fd, buf, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += k;
                len -= (size_t) k;
        }
        return 0;
}

/* Format into memory, then write it in one go: the file only ever grows by
 * whole ticks (a failed write is cut back off). */
static int write_text(struct mthp_record_writer *w, const struct mthp_snapshot *snap) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -errno;
        if (snap)
                put_tick(f, &w->caps, snap);
        else
                put_caps(f, &w->caps);
        if (fclose(f) != 0)
                return -ENOMEM;
        int r = write_all(w->fd, buf, len);
        if (r < 0) {
                (void) !ftruncate(w->fd, w->size);
                return r;
        }
        w->size += (off_t) len;
        return 0;
}

int mthp_record_open_write(const char *path, const struct mthp_caps *caps, struct mthp_record_writer **ret) {
        struct mthp_record_writer *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->caps = *caps;
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w->fd < 0) {
                int r = -errno;
                free(w);
                return r;
        }
        int r = write_text(w, NULL);
        if (r < 0) {
                mthp_record_close_write(w);
                return r;
        }
        *ret = w;
        return 0;
}

int mthp_record_write(struct mthp_record_writer *w, const struct mthp_snapshot *snap) {
        return write_text(w, snap);
}

int mthp_record_close_write(struct mthp_record_writer *w) {
        if (!w)
                return 0;
        int r = close(w->fd) < 0 ? -errno : 0;
        free(w);
        return r;
}
