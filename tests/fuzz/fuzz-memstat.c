/* SPDX-License-Identifier: MIT */
/* A memory cgroup's memory.stat (v1 and v2 names): mthp_parse_memstat.
 * Built only once lib/cgmon.c exists. The parse is pure: the same text gives
 * the same values. */
#include "fuzz-util.h"
#include "mthp/cgmon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_strdup(data, size);
        struct mthp_memstat a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        int r = mthp_parse_memstat(text, &a);
        FUZZ_CHECK(r <= 0, "%d", r);
        int r2 = mthp_parse_memstat(text, &b);
        FUZZ_CHECK(r2 == r, "%d then %d", r, r2);
        if (r == 0)
                FUZZ_CHECK(memcmp(&a, &b, sizeof(a)) == 0, "two parses of one text differ");
        free(text);
        return 0;
}
