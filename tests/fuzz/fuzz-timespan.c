/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the timespan and timestamp grammar of mthpctl's options
 * (lib/timespan.c), also mthpd.conf's and mthpd's durations. Invariants:
 * only 0, -EINVAL or -ERANGE (a span of digits only); a parsed span is below
 * 1e18 us and its formatted form parses again; a timestamp relative to a
 * fixed now lands where the sign says. */
#include <stdlib.h>
#include <time.h>

#include "fuzz-util.h"
#include "mthp/timespan.h"

#define NOW (1764498030ULL * 1000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool tz;
        if (!tz) {
                setenv("TZ", "UTC", 1);
                tzset();
                tz = true;
        }
        char *s = fuzz_strdup(data, size);
        uint64_t u = 42, back;
        char buf[64];

        int r = mthp_timespan_parse(s, &u);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE, "%d", r);
        if (r == -ERANGE)
                FUZZ_CHECK(strspn(s, "0123456789. abcdefghijklmnopqrstuvwxyz") == strlen(s), "-ERANGE for '%s'", s);
        if (r == 0) {
                FUZZ_CHECK(u < 1000000000000000000ULL, "%llu from '%s'", (unsigned long long) u, s);
                mthp_timespan_format(u, buf, sizeof(buf));
                FUZZ_CHECK(fuzz_terminated(buf, sizeof(buf)), "unterminated");
                FUZZ_CHECK(mthp_timespan_parse(buf, &back) == 0, "'%s' (from '%s') does not parse", buf, s);
        } else
                FUZZ_CHECK(u == 42, "output written on failure");

        r = mthp_timestamp_parse(s, NOW, &u);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "%d", r);
        if (r == 0) {
                if (s[0] == '-')
                        FUZZ_CHECK(u <= NOW, "'%s' after now", s);
                if (s[0] == '+')
                        FUZZ_CHECK(u >= NOW, "'%s' before now", s);
                mthp_timestamp_format(u, false, buf, sizeof(buf));
                FUZZ_CHECK(fuzz_terminated(buf, sizeof(buf)), "unterminated");
                mthp_timestamp_format(u, true, buf, sizeof(buf));
                FUZZ_CHECK(fuzz_terminated(buf, sizeof(buf)), "unterminated");
        }
        free(s);
        return 0;
}
