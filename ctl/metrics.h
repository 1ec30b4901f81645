/* SPDX-License-Identifier: MIT */
#pragma once

/* mthpctl's metric model: families (name, type, help) of samples (labels,
 * a value), collected once (verb-metrics.c) and printed by two printers,
 * the Prometheus text exposition format 0.0.4 and JSON:
 *   {"metrics":[{"name","type","help","samples":[{"labels":{..},"value":N}]}]}
 * A value is an integer or a double printed with a fixed number of decimals;
 * both printers print the same digits. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define METRIC_LABELS_MAX 6

struct metric_sample {
        unsigned n_labels;
        char *label_name[METRIC_LABELS_MAX];
        char *label_value[METRIC_LABELS_MAX];  /* raw: the printers escape */
        bool is_double;
        unsigned long long u;
        double d;
        int decimals;
};

struct metric_family {
        const char *name, *type, *help;        /* static strings */
        unsigned n, cap;
        struct metric_sample *s;
};

struct metric_set {
        unsigned n, cap;
        struct metric_family *f;
};

/* Adders abort (out of memory) rather than fail: mthpctl is a CLI. The
 * family pointer stays valid until the next metric_family_add. */
struct metric_family *metric_family_add(struct metric_set *set, const char *name, const char *type,
                                        const char *help);
struct metric_sample *metric_sample_add(struct metric_family *f);
void metric_label(struct metric_sample *s, const char *name, const char *value);
void metric_set_uint(struct metric_sample *s, unsigned long long v);
void metric_set_double(struct metric_sample *s, double v, int decimals);
void metric_set_free(struct metric_set *set);

int metrics_print_text(FILE *f, const struct metric_set *set);
int metrics_print_json(FILE *f, const struct metric_set *set);
