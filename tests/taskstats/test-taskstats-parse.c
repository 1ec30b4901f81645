/* SPDX-License-Identifier: MIT */
/* Parsers and rate math on crafted replies; no kernel involved. */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mthp/taskstats.h"

/* struct taskstats sizes of the versions the tests impersonate. */
#define SIZE_V8 offsetof(struct taskstats, thrashing_count)
#define SIZE_V11 offsetof(struct taskstats, ac_tgid)
#define SIZE_V13 sizeof(struct taskstats)
#define SIZE_V14 (SIZE_V13 + 2 * sizeof(uint64_t))
#define SIZE_V16 (SIZE_V14 + 16 * sizeof(uint64_t)) /* + min/max per kind */
#define IRQ_COUNT_OFF SIZE_V13                      /* v14 appended irq right after wpcopy */

/* 8-byte aligned scratch; tests offset into it to make payloads unaligned. */
static union {
        uint64_t align;
        uint8_t b[1024];
} buf;

static void put_u64(uint8_t *stats, size_t off, uint64_t v) {
        memcpy(stats + off, &v, sizeof(v));
}

/* A struct taskstats payload of the given version and size: kind k has
 * count 100*(k+1) and total 1000000*(k+1) ns. */
static void craft_stats(uint8_t *stats, size_t size, uint16_t version) {
        static const size_t count_off[_MTHP_DELAY_KIND_MAX] = {
                [MTHP_DELAY_CPU] = offsetof(struct taskstats, cpu_count),
                [MTHP_DELAY_BLKIO] = offsetof(struct taskstats, blkio_count),
                [MTHP_DELAY_SWAPIN] = offsetof(struct taskstats, swapin_count),
                [MTHP_DELAY_RECLAIM] = offsetof(struct taskstats, freepages_count),
                [MTHP_DELAY_THRASHING] = offsetof(struct taskstats, thrashing_count),
                [MTHP_DELAY_COMPACT] = offsetof(struct taskstats, compact_count),
                [MTHP_DELAY_WPCOPY] = offsetof(struct taskstats, wpcopy_count),
                [MTHP_DELAY_IRQ] = IRQ_COUNT_OFF,
        };

        memset(stats, 0, size);
        memcpy(stats + offsetof(struct taskstats, version), &version, sizeof(version));
        put_u64(stats, offsetof(struct taskstats, cpu_run_virtual_total), 777);
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++) {
                /* every pair is count then total */
                if (count_off[k] + 16 > size)
                        continue;
                put_u64(stats, count_off[k], 100u * (k + 1));
                put_u64(stats, count_off[k] + 8, 1000000u * (k + 1));
        }
}

static void assert_kinds(const struct mthp_delays *d, uint32_t expected_present) {
        assert_int_equal(d->present, expected_present);
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++) {
                if (expected_present & (1u << k)) {
                        assert_int_equal(d->delay[k].count, 100u * (k + 1));
                        assert_int_equal(d->delay[k].total_ns, 1000000u * (k + 1));
                } else {
                        assert_int_equal(d->delay[k].count, 0);
                        assert_int_equal(d->delay[k].total_ns, 0);
                }
        }
}

#define KINDS_UPTO(k) ((1u << ((k) + 1)) - 1)

static void test_kind_names(void **state) {
        (void) state;
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++) {
                const char *name = mthp_delay_kind_to_string(k);
                assert_non_null(name);
                for (unsigned j = 0; j < k; j++)
                        assert_string_not_equal(name, mthp_delay_kind_to_string(j));
        }
        assert_string_equal(mthp_delay_kind_to_string(MTHP_DELAY_COMPACT), "compact");
        assert_string_equal(mthp_delay_kind_to_string(MTHP_DELAY_RECLAIM), "reclaim");
        assert_null(mthp_delay_kind_to_string(_MTHP_DELAY_KIND_MAX));
        assert_null(mthp_delay_kind_to_string((enum mthp_delay_kind) -1));
}

static void test_stats_v16(void **state) {
        struct mthp_delays d = { .tgid = 42, .sampled_ns = 5 };
        (void) state;
        craft_stats(buf.b, SIZE_V16, 16);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, SIZE_V16, &d), 0);
        assert_int_equal(d.version, 16);
        assert_int_equal(d.cpu_run_ns, 777);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_IRQ));
        /* left to the caller */
        assert_int_equal(d.tgid, 42);
        assert_int_equal(d.sampled_ns, 5);
}

static void test_stats_v13_has_no_irq(void **state) {
        struct mthp_delays d;
        (void) state;
        craft_stats(buf.b, SIZE_V13, 13);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, SIZE_V13, &d), 0);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_WPCOPY));
}

static void test_stats_v8_has_reclaim_only(void **state) {
        struct mthp_delays d;
        (void) state;
        craft_stats(buf.b, SIZE_V8, 8);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, SIZE_V8, &d), 0);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_RECLAIM));
}

static void test_stats_size_limits_version(void **state) {
        struct mthp_delays d;
        (void) state;
        /* claims v16, but the payload ends after compact */
        craft_stats(buf.b, SIZE_V11, 16);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, SIZE_V11, &d), 0);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_COMPACT));
}

static void test_stats_version_limits_size(void **state) {
        struct mthp_delays d;
        (void) state;
        /* a big payload, but v9 predates compact: whatever is there is not compact */
        craft_stats(buf.b, SIZE_V16, 9);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, SIZE_V16, &d), 0);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_THRASHING));
}

static void test_stats_unaligned(void **state) {
        struct mthp_delays d;
        (void) state;
        /* netlink only guarantees 4-byte alignment */
        craft_stats(buf.b + 4, SIZE_V16, 16);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b + 4, SIZE_V16, &d), 0);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_IRQ));
}

static void test_stats_rejects_malformed(void **state) {
        struct mthp_delays d;
        size_t v1_end = offsetof(struct taskstats, cpu_run_virtual_total) + 8;
        (void) state;
        craft_stats(buf.b, SIZE_V16, 16);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, v1_end - 1, &d), -EBADMSG);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, v1_end, &d), 0);
        assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_SWAPIN));
        assert_int_equal(mthp_taskstats_parse_stats(NULL, SIZE_V16, &d), -EBADMSG);
        craft_stats(buf.b, SIZE_V16, 0);
        assert_int_equal(mthp_taskstats_parse_stats(buf.b, SIZE_V16, &d), -EBADMSG);
}

/* --- attribute streams, built by hand as the kernel lays them out --- */

struct stream {
        uint8_t *p;
        size_t len;
};

static size_t put_attr(struct stream *s, uint16_t type, const void *data, size_t len) {
        size_t at = s->len;
        struct nlattr h = { .nla_len = (uint16_t) (NLA_HDRLEN + len), .nla_type = type };
        memcpy(s->p + at, &h, sizeof(h));
        if (data)
                memcpy(s->p + at + NLA_HDRLEN, data, len);
        s->len += NLA_ALIGN(NLA_HDRLEN + len);
        return at;
}

static size_t nest_start(struct stream *s, uint16_t type) {
        return put_attr(s, type, NULL, 0);
}

static void nest_end(struct stream *s, size_t at) {
        uint16_t len = (uint16_t) (s->len - at);
        memcpy(s->p + at + offsetof(struct nlattr, nla_len), &len, sizeof(len));
}

static uint8_t stats_v16[SIZE_V16];

/* AGGR_TGID { [NULL pad] TGID, STATS }, optionally preceded by junk. */
static struct stream craft_reply(uint16_t aggr, uint32_t tgid, bool pad, size_t stats_len) {
        struct stream s = { .p = buf.b };
        uint32_t junk = 0xdeadbeef;

        memset(buf.b, 0, sizeof(buf.b));
        put_attr(&s, 99, &junk, sizeof(junk)); /* unknown top-level attribute: ignored */
        size_t nest = nest_start(&s, aggr);
        put_attr(&s, aggr == TASKSTATS_TYPE_AGGR_TGID ? TASKSTATS_TYPE_TGID : TASKSTATS_TYPE_PID, &tgid,
                 sizeof(tgid));
        if (pad)
                put_attr(&s, TASKSTATS_TYPE_NULL, NULL, 0);
        if (stats_len)
                put_attr(&s, TASKSTATS_TYPE_STATS, stats_v16, stats_len);
        nest_end(&s, nest);
        return s;
}

static void test_reply_ok(void **state) {
        struct mthp_delays d = { 0 };
        (void) state;
        craft_stats(stats_v16, SIZE_V16, 16);
        for (int pad = 0; pad <= 1; pad++) {
                struct stream s = craft_reply(TASKSTATS_TYPE_AGGR_TGID, 1234, pad, SIZE_V16);
                assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len, 1234, &d), 0);
                assert_int_equal(d.tgid, 1234);
                assert_int_equal(d.version, 16);
                assert_kinds(&d, KINDS_UPTO(MTHP_DELAY_IRQ));
        }
}

static void test_reply_rejects_malformed(void **state) {
        struct mthp_delays d;
        struct stream s;
        (void) state;
        craft_stats(stats_v16, SIZE_V16, 16);

        s = craft_reply(TASKSTATS_TYPE_AGGR_TGID, 1234, false, SIZE_V16);
        assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len, 4321, &d), -EBADMSG); /* other tgid */
        assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len - 8, 1234, &d), -EBADMSG); /* truncated */
        assert_int_equal(mthp_taskstats_parse_reply(NULL, s.len, 1234, &d), -EBADMSG);

        s = craft_reply(TASKSTATS_TYPE_AGGR_PID, 1234, false, SIZE_V16); /* per-thread answer */
        assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len, 1234, &d), -EBADMSG);

        s = craft_reply(TASKSTATS_TYPE_AGGR_TGID, 1234, false, 0); /* no STATS */
        assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len, 1234, &d), -EBADMSG);

        s = craft_reply(TASKSTATS_TYPE_AGGR_TGID, 1234, false, 16); /* STATS shorter than v1 */
        assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len, 1234, &d), -EBADMSG);

        /* a nest that claims more than the stream holds */
        s = craft_reply(TASKSTATS_TYPE_AGGR_TGID, 1234, false, SIZE_V16);
        uint16_t lie = 0xfff0;
        memcpy(s.p + 8 + offsetof(struct nlattr, nla_len), &lie, sizeof(lie));
        assert_int_equal(mthp_taskstats_parse_reply(s.p, s.len, 1234, &d), -EBADMSG);
}

/* --- rates --- */

static struct mthp_delays sample(uint64_t t_ns, uint64_t compact_count, uint64_t compact_ns) {
        struct mthp_delays d = { .tgid = 7, .version = 16, .sampled_ns = t_ns,
                                 .present = KINDS_UPTO(MTHP_DELAY_IRQ) };
        d.delay[MTHP_DELAY_COMPACT] = (struct mthp_delay) { compact_count, compact_ns };
        d.delay[MTHP_DELAY_CPU] = (struct mthp_delay) { compact_count * 2, compact_ns * 2 };
        return d;
}

static void test_rates(void **state) {
        struct mthp_delay_rates r;
        (void) state;
        /* 20 compaction stalls, 20 ms of them, over 2 s */
        struct mthp_delays a = sample(1000000000u, 10, 5000000), b = sample(3000000000u, 30, 25000000);
        assert_int_equal(mthp_delays_rates(&a, &b, &r), 0);
        assert_int_equal(r.present, KINDS_UPTO(MTHP_DELAY_IRQ));
        assert_true(r.interval_sec > 1.999 && r.interval_sec < 2.001);
        assert_true(r.rate[MTHP_DELAY_COMPACT].events_per_sec > 9.999 && r.rate[MTHP_DELAY_COMPACT].events_per_sec < 10.001);
        assert_true(r.rate[MTHP_DELAY_COMPACT].ms_per_sec > 9.999 && r.rate[MTHP_DELAY_COMPACT].ms_per_sec < 10.001);
        assert_true(r.rate[MTHP_DELAY_CPU].ms_per_sec > 19.999 && r.rate[MTHP_DELAY_CPU].ms_per_sec < 20.001);
        assert_true(r.rate[MTHP_DELAY_BLKIO].ms_per_sec == 0.0);
}

static void test_rates_present_is_common(void **state) {
        struct mthp_delay_rates r;
        (void) state;
        struct mthp_delays a = sample(0, 10, 5000000), b = sample(1000000000u, 30, 25000000);
        a.present &= ~(1u << MTHP_DELAY_COMPACT);
        assert_int_equal(mthp_delays_rates(&a, &b, &r), 0);
        assert_false(r.present & (1u << MTHP_DELAY_COMPACT));
        assert_true(r.rate[MTHP_DELAY_COMPACT].ms_per_sec == 0.0);
        assert_true(r.rate[MTHP_DELAY_CPU].ms_per_sec > 0.0);
}

static void test_rates_backwards_is_zero(void **state) {
        struct mthp_delay_rates r;
        (void) state;
        /* count went backwards (an exited thread not folded in) */
        struct mthp_delays a = sample(0, 30, 25000000), b = sample(1000000000u, 10, 30000000);
        assert_int_equal(mthp_delays_rates(&a, &b, &r), 0);
        assert_true(r.rate[MTHP_DELAY_COMPACT].ms_per_sec == 0.0);
        assert_true(r.rate[MTHP_DELAY_COMPACT].events_per_sec == 0.0);
        /* total reset to 0 on overflow while the count kept growing */
        a = sample(0, 10, 25000000);
        b = sample(1000000000u, 12, 0);
        assert_int_equal(mthp_delays_rates(&a, &b, &r), 0);
        assert_true(r.rate[MTHP_DELAY_COMPACT].ms_per_sec == 0.0);
}

static void test_rates_rejects(void **state) {
        struct mthp_delay_rates r;
        (void) state;
        struct mthp_delays a = sample(1000, 1, 1), b = sample(1000, 2, 2);
        assert_int_equal(mthp_delays_rates(&a, &b, &r), -EINVAL); /* no time passed */
        assert_int_equal(mthp_delays_rates(&b, &a, &r), -EINVAL);
        b.sampled_ns = 2000;
        assert_int_equal(mthp_delays_rates(&b, &a, &r), -EINVAL); /* time went backwards */
        b.tgid = 8;
        assert_int_equal(mthp_delays_rates(&a, &b, &r), -ESTALE);
        assert_int_equal(mthp_delays_rates(NULL, &b, &r), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kind_names),
                cmocka_unit_test(test_stats_v16),
                cmocka_unit_test(test_stats_v13_has_no_irq),
                cmocka_unit_test(test_stats_v8_has_reclaim_only),
                cmocka_unit_test(test_stats_size_limits_version),
                cmocka_unit_test(test_stats_version_limits_size),
                cmocka_unit_test(test_stats_unaligned),
                cmocka_unit_test(test_stats_rejects_malformed),
                cmocka_unit_test(test_reply_ok),
                cmocka_unit_test(test_reply_rejects_malformed),
                cmocka_unit_test(test_rates),
                cmocka_unit_test(test_rates_present_is_common),
                cmocka_unit_test(test_rates_backwards_is_zero),
                cmocka_unit_test(test_rates_rejects),
        };
        return cmocka_run_group_tests_name("taskstats-parse", tests, NULL, NULL);
}
