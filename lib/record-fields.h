/* SPDX-License-Identifier: MIT */
#pragma once

/* The recording format's lines as tables of fields (record.c), shared by
 * the writer (record.c) and the reader (record-read.c): both walk the same
 * table, so the two cannot drift apart. Internal to libmthp. */

#include <stddef.h>

#include "mthp/record.h"

#define RECORD_MAGIC "mthp-record"
#define MAX_FIELDS 48   /* a proc line has 43 */
/* a knobs line (one word per knob) or a proc line (one per field) */
#define MAX_TOKENS (MTHP_KNOBS_MAX + 8 > MAX_FIELDS + 1 ? MTHP_KNOBS_MAX + 8 : MAX_FIELDS + 1)

enum field_type {
        FIELD_U64,
        FIELD_UNSIGNED,
        FIELD_INT,
        FIELD_BOOL,
        FIELD_DOUBLE,
        FIELD_COUNTER,    /* struct mthp_counter, left out when empty */
        FIELD_STRING,     /* char[size] */
        FIELD_STRINGS,    /* char[max][size] and an unsigned count */
        FIELD_DOUBLES,    /* double[max], one per caps size; left out (= NAN) when all NAN */
        FIELD_ENUM,       /* an int-sized enum, written by name */
};

struct field {
        const char *key;
        enum field_type type;
        void *p;
        size_t size;                  /* STRING, STRINGS: bytes per string */
        unsigned max;                 /* STRINGS: capacity; DOUBLES: count */
        unsigned *count;              /* STRINGS */
        const char *const *names;     /* ENUM */
        unsigned n_names;
};

#define SCALAR(k, t, ptr) ((struct field){ .key = (k), .type = (t), .p = (ptr) })
#define STRING(k, arr) ((struct field){ .key = (k), .type = FIELD_STRING, .p = (arr), .size = sizeof(arr) })
#define STRINGS(k, arr, n) \
        ((struct field){ .key = (k), .type = FIELD_STRINGS, .p = (arr), .size = sizeof((arr)[0]), \
                         .max = sizeof(arr) / sizeof((arr)[0]), .count = (n) })
#define DOUBLES(k, arr, n) ((struct field){ .key = (k), .type = FIELD_DOUBLES, .p = (arr), .max = (n) })
#define ENUM(k, ptr, tab) \
        ((struct field){ .key = (k), .type = FIELD_ENUM, .p = (ptr), .names = (tab), \
                         .n_names = sizeof(tab) / sizeof((tab)[0]) })

extern const char *const record_knob_type_names[];

unsigned record_caps_fields(struct mthp_caps *c, struct field *f);
unsigned record_knob_fields(struct mthp_knob *k, struct field *f);
unsigned record_size_fields(struct mthp_size *s, struct field *f);
unsigned record_tick_fields(struct mthp_snapshot *s, struct field *f);
unsigned record_proc_fields(struct mthp_proc_density *p, unsigned n_sizes, struct field *f);
unsigned record_limits_fields(struct mthp_snapshot *s, struct field *f);
unsigned record_limited_fields(struct mthp_limited_cgroup *c, struct field *f);
unsigned record_cgroup_fields(struct mthp_cgroup_view *c, struct field *f);

/* The optional lines of a tick, each left out when all its fields are
 * zero, empty or absent. */
struct tick_line {
        const char *keyword;
        unsigned (*fields)(struct mthp_snapshot *s, struct field *f);
};
#define RECORD_TICK_LINES 5
extern const struct tick_line record_tick_lines[RECORD_TICK_LINES];
