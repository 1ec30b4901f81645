/* SPDX-License-Identifier: MIT */
/* Knob files and the value parsers of mthpd.conf and policy files:
 * mthp_knob_parse ("always [madvise] never"), mthp_parse_size,
 * mthp_parse_size_range, mthp_timespan_parse, mthp_parse_percent,
 * mthp_parse_boolean. Each sees the whole input as one string; an accepted
 * value must be in range, and the selected knob value one of the allowed. */
#include <ctype.h>
#include <math.h>
#include <strings.h>

#include "fuzz-util.h"
#include "mthp/config.h"
#include "mthp/timespan.h"
#include "mthp/probe.h"

#define MAX_KB (16u * 1024 * 1024)

static void check_knob(const char *text) {
        char selected[MTHP_VALUE_MAX], selected2[MTHP_VALUE_MAX];
        char allowed[MTHP_VALUES_MAX][MTHP_VALUE_MAX];
        unsigned n = 12345, n2 = 12345;

        int r = mthp_knob_parse(text, selected, allowed, &n);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -E2BIG, "%d", r);
        int r2 = mthp_knob_parse(text, selected2, NULL, &n2);
        if (r == 0) {
                FUZZ_CHECK(r2 == 0 && strcmp(selected, selected2) == 0 && n == n2, "allowed=NULL differs");
                FUZZ_CHECK(n >= 1 && n <= MTHP_VALUES_MAX, "%u values", n);
                struct mthp_knob k = { .n_allowed = n };
                memcpy(k.allowed, allowed, sizeof(allowed));
                for (unsigned i = 0; i < n; i++) {
                        FUZZ_CHECK(fuzz_terminated(allowed[i], MTHP_VALUE_MAX) && allowed[i][0], "value %u", i);
                        for (const char *p = allowed[i]; *p; p++)
                                FUZZ_CHECK(!isspace((unsigned char) *p) && *p != '[' && *p != ']',
                                           "space or bracket in '%s'", allowed[i]);
                }
                FUZZ_CHECK(fuzz_terminated(selected, MTHP_VALUE_MAX) && selected[0], "selected");
                FUZZ_CHECK(mthp_knob_allows(&k, selected), "selected '%s' is not among the allowed", selected);
        } else if (r == -E2BIG)
                FUZZ_CHECK(r2 == 0 || r2 == -EBADMSG, "%d", r2);
        else
                FUZZ_CHECK(r2 == -EBADMSG || r2 == 0, "%d", r2);
}

static void check_size(const char *s) {
        unsigned kb = 0, kb2 = 0, lo = 1, hi = 1;
        char buf[32];

        int r = mthp_parse_size(s, &kb);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE, "%d", r);
        if (r == 0) {
                FUZZ_CHECK(kb >= 1 && kb <= MAX_KB, "%u", kb);
                FUZZ_CHECK(!strchr(s, '-'), "negative size '%s' accepted as %u", s, kb);
                mthp_format_size(kb, buf, sizeof(buf));
                FUZZ_CHECK(mthp_parse_size(buf, &kb2) == 0 && kb2 == kb, "'%s' -> %u -> '%s' -> %u", s, kb, buf, kb2);
        }
        r = mthp_parse_size_range(s, &lo, &hi);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE, "%d", r);
        if (r == 0) {
                FUZZ_CHECK(lo <= hi && hi <= MAX_KB, "%u-%u", lo, hi);
                FUZZ_CHECK((lo == 0) == (hi == 0), "%u-%u", lo, hi);
                FUZZ_CHECK(lo != 0 || strcasecmp(s, "none") == 0, "0 from '%s'", s);
        }
}

static void check_others(const char *s) {
        uint64_t usec;
        double pct = -1;
        bool b;

        int r = mthp_timespan_parse(s, &usec);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE, "%d", r);
        r = mthp_parse_percent(s, &pct);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "%d", r);
        if (r == 0)
                FUZZ_CHECK(isfinite(pct) && pct >= 0 && pct <= 100, "%g", pct);
        r = mthp_parse_boolean(s, &b);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "%d", r);
        if (r == 0) {
                bool yes = !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on") || !strcmp(s, "1");
                FUZZ_CHECK(b == yes, "'%s' -> %d", s, b);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_strdup(data, size);
        check_knob(text);
        check_size(text);
        check_others(text);
        free(text);
        return 0;
}
