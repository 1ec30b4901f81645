/* SPDX-License-Identifier: MIT */
/* The one timespan/timestamp grammar of mthpctl's options (lib/timespan.c,
 * mthp/timespan.h): systemd's time spans, journalctl's --since times, and
 * their formatters. Local time is UTC here (TZ set in main's first test). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "mthp/timespan.h"
#include "unit.h"

#define S 1000000ULL

static void test_timespan_parse(void **state) {
        (void) state;
        static const struct {
                const char *s;
                int r;
                uint64_t usec;
        } c[] = {
                { "1s", 0, S },           { "1sec", 0, S },          { "1 sec", 0, S },
                { "1second", 0, S },      { "2seconds", 0, 2 * S },  { "90", 0, 90 * S },
                { "0", 0, 0 },            { "500ms", 0, 500000 },    { "500msec", 0, 500000 },
                { "250us", 0, 250 },      { "250usec", 0, 250 },     { "1.5s", 0, 1500000 },
                { "5min", 0, 300 * S },   { "5m", 0, 300 * S },      { "2h", 0, 7200 * S },
                { "2hr", 0, 7200 * S },   { "1h30m", 0, 5400 * S },  { "1h 30min", 0, 5400 * S },
                { "1d", 0, 86400 * S },   { "1w", 0, 604800 * S },   { "1min 30s 500ms", 0, 90500000 },
                { " 1s ", 0, S },         { "1s1", 0, S + S },       /* a bare number is seconds */
                { "", -EINVAL, 0 },       { " ", -EINVAL, 0 },       { "-1s", -EINVAL, 0 },
                { "+1s", -EINVAL, 0 },    { "s", -EINVAL, 0 },       { "1x", -EINVAL, 0 },
                { "1secs", -EINVAL, 0 },  { "1 h -5m", -EINVAL, 0 }, { "inf", -EINVAL, 0 },
                { "nan", -EINVAL, 0 },    { "1e19", -EINVAL, 0 },    { "1e300min", -EINVAL, 0 },
                { "1e12d", -EINVAL, 0 },
                /* one grammar with mthpd.conf: strict decimal numbers, a range */
                { "1h", 0, 3600 * S },    { ".5s", 0, 500000 },      { "0.1s", 0, 100000 },
                { "1.001ms", 0, 1001 },   { "1 s", 0, S },           { "0x10s", -EINVAL, 0 },
                { "1.s", -EINVAL, 0 },    { "1e3ms", -EINVAL, 0 },   { " +1s", -EINVAL, 0 },
                { "1,5s", -EINVAL, 0 },   { "18446744073709551616us", -ERANGE, 0 },
                { "11574075d", -ERANGE, 0 }, { "11574074d", 0, 11574074ULL * 86400 * S },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                uint64_t u = 42;
                int r = mthp_timespan_parse(c[i].s, &u);
                if (r != c[i].r || (r == 0 && u != c[i].usec) || (r < 0 && u != 42))
                        fail_msg("mthp_timespan_parse(\"%s\") = %d, %llu", c[i].s, r, (unsigned long long) u);
        }
}

static void test_timespan_format(void **state) {
        (void) state;
        static const struct {
                uint64_t usec;
                const char *s;
        } c[] = {
                { 0, "0s" },           { 999999, "0s" },           { 45 * S, "45s" },
                { 150 * S, "2min 30s" }, { 3900 * S, "1h 5min" }, { 2 * 86400 * S + 3 * 3600 * S, "2d 3h" },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                char buf[64];
                mthp_timespan_format(c[i].usec, buf, sizeof(buf));
                assert_string_equal(buf, c[i].s);
                /* what it prints, it parses (to the second) */
                uint64_t back;
                assert_int_equal(mthp_timespan_parse(buf, &back), 0);
                assert_int_equal(back / S, c[i].usec / S >= 86400 ? c[i].usec / S / 3600 * 3600
                                           : c[i].usec / S >= 3600 ? c[i].usec / S / 60 * 60 : c[i].usec / S);
        }
}

/* 2025-11-30 10:20:30 UTC */
#define NOW (1764498030ULL * S)

static void test_timestamp_parse(void **state) {
        (void) state;
        setenv("TZ", "UTC", 1);
        tzset();
        static const struct {
                const char *s;
                int r;
                uint64_t usec;
        } c[] = {
                { "now", 0, NOW },
                { "-1h", 0, NOW - 3600 * S },
                { "+30min", 0, NOW + 1800 * S },
                { "-1sec", 0, NOW - S },
                { "1h 30min ago", 0, NOW - 5400 * S },
                { "@1764498000", 0, 1764498000 * S },
                { "@1.5", 0, 1500000 },
                { "today", 0, 1764460800 * S },
                { "yesterday", 0, (1764460800 - 86400) * S },
                { "tomorrow", 0, (1764460800 + 86400) * S },
                { "2025-11-30 10:00", 0, (1764460800 + 36000) * S },
                { "2025-11-30T10:00:05", 0, (1764460800 + 36005) * S },
                { "2025-12-01", 0, (1764460800 + 86400) * S },
                { "08:15", 0, (1764460800 + 8 * 3600 + 15 * 60) * S },
                { "08:15:01", 0, (1764460800 + 8 * 3600 + 15 * 60 + 1) * S },
                { "", -EINVAL, 0 },
                { "the day after", -EINVAL, 0 },
                { "-", -EINVAL, 0 },
                { "-1x", -EINVAL, 0 },
                { "-100000d", -EINVAL, 0 },      /* before 1970 */
                { "@-1", -EINVAL, 0 },
                { "@1e13", -EINVAL, 0 },
                { "@nan", -EINVAL, 0 },   /* fuzz-timespan found it: NaN cast to uint64_t */
                { "@inf", -EINVAL, 0 },
                { "@0x10", -EINVAL, 0 },
                { "@1.2.3", -EINVAL, 0 },
                { "2025-13-01", -EINVAL, 0 },
                { "10:00 tomorrow", -EINVAL, 0 },
                { " ago", -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                uint64_t u = 42;
                int r = mthp_timestamp_parse(c[i].s, NOW, &u);
                if (r != c[i].r || (r == 0 && u != c[i].usec))
                        fail_msg("mthp_timestamp_parse(\"%s\") = %d, %llu (want %d, %llu)", c[i].s, r,
                                 (unsigned long long) u, c[i].r, (unsigned long long) c[i].usec);
        }
}

static void test_timestamp_format(void **state) {
        (void) state;
        char buf[64];
        setenv("TZ", "UTC", 1);
        tzset();
        mthp_timestamp_format(NOW, false, buf, sizeof(buf));
        assert_string_equal(buf, "2025-11-30 10:20:30");
        mthp_timestamp_format(NOW, true, buf, sizeof(buf));
        assert_string_equal(buf, "2025-11-30T10:20:30+00:00");
        setenv("TZ", "CET-1", 1);
        tzset();
        mthp_timestamp_format(NOW, true, buf, sizeof(buf));
        assert_string_equal(buf, "2025-11-30T11:20:30+01:00");
        /* what it prints, it parses */
        uint64_t back;
        mthp_timestamp_format(NOW, false, buf, sizeof(buf));
        assert_int_equal(mthp_timestamp_parse(buf, NOW, &back), 0);
        assert_int_equal(back, NOW);
        setenv("TZ", "UTC", 1);
        tzset();
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timespan_parse),
        cmocka_unit_test(test_timespan_format),
        cmocka_unit_test(test_timestamp_parse),
        cmocka_unit_test(test_timestamp_format),
};

/* no known bugs: a test name given on the command line picks from the main group */
UNIT_MAIN(tests, tests)
