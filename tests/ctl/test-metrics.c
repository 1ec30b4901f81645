/* SPDX-License-Identifier: MIT */
/* mthpctl's metric model (ctl/metrics.c): one set of families printed as
 * the Prometheus text exposition and as JSON; the same digits in both,
 * label values escaped for each format. Links the mthpctl-core library. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "metrics.h"

static char *print(int (*printer)(FILE *, const struct metric_set *), const struct metric_set *set) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        assert_int_equal(printer(f, set), 0);
        fclose(f);
        return buf;
}

static void build(struct metric_set *set) {
        struct metric_family *f = metric_family_add(set, "m_info", "gauge", "Info, always 1.");
        struct metric_sample *s = metric_sample_add(f);
        metric_label(s, "knob", "64K/anon");
        metric_label(s, "value", "a \"quoted\" back\\slash\nnewline\ttab\xff");
        metric_set_uint(s, 1);
        f = metric_family_add(set, "m_total", "counter", "A counter.");
        s = metric_sample_add(f);
        metric_set_uint(s, 18446744073709551615ULL);
        f = metric_family_add(set, "m_rate", "gauge", "Two decimals.");
        metric_set_double(metric_sample_add(f), 12.345, 2);
        metric_set_double(metric_sample_add(f), 0.05, 1);
        metric_family_add(set, "m_empty", "gauge", "No samples.");
}

static void test_text(void **state) {
        (void) state;
        struct metric_set set = { 0 };
        build(&set);
        char *t = print(metrics_print_text, &set);
        assert_string_equal(t, "# HELP m_info Info, always 1.\n# TYPE m_info gauge\n"
                               "m_info{knob=\"64K/anon\",value=\"a \\\"quoted\\\" back\\\\\\\\slash\\\\x0anewline\\\\x09tab\\\\xff\"} 1\n"
                               "# HELP m_total A counter.\n# TYPE m_total counter\n"
                               "m_total 18446744073709551615\n"
                               "# HELP m_rate Two decimals.\n# TYPE m_rate gauge\n"
                               "m_rate 12.35\nm_rate 0.1\n"
                               "# HELP m_empty No samples.\n# TYPE m_empty gauge\n");
        free(t);
        metric_set_free(&set);
}

static void test_json(void **state) {
        (void) state;
        struct metric_set set = { 0 };
        build(&set);
        char *j = print(metrics_print_json, &set);
        assert_string_equal(j, "{\"metrics\":["
                               "{\"name\":\"m_info\",\"type\":\"gauge\",\"help\":\"Info, always 1.\",\"samples\":["
                               "{\"labels\":{\"knob\":\"64K/anon\",\"value\":"
                               "\"a \\\"quoted\\\" back\\\\slash\\nnewline\\ttab\\udcff\"},\"value\":1}]},"
                               "{\"name\":\"m_total\",\"type\":\"counter\",\"help\":\"A counter.\",\"samples\":["
                               "{\"labels\":{},\"value\":18446744073709551615}]},"
                               "{\"name\":\"m_rate\",\"type\":\"gauge\",\"help\":\"Two decimals.\",\"samples\":["
                               "{\"labels\":{},\"value\":12.35},{\"labels\":{},\"value\":0.1}]},"
                               "{\"name\":\"m_empty\",\"type\":\"gauge\",\"help\":\"No samples.\",\"samples\":[]}"
                               "]}\n");
        free(j);
        metric_set_free(&set);
}

static void test_empty(void **state) {
        (void) state;
        struct metric_set set = { 0 };
        char *t = print(metrics_print_text, &set), *j = print(metrics_print_json, &set);
        assert_string_equal(t, "");
        assert_string_equal(j, "{\"metrics\":[]}\n");
        free(t);
        free(j);
        metric_set_free(&set);
}

int main(void) {
        static const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
