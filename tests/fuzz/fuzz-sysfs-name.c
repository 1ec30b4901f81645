/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the name of a per-size sysfs directory
 * (mthp_sysfs_size_parse, lib/types.c), which the probe reads from
 * readdir. Invariants: an accepted name is exactly what the kernel writes
 * for its size ("hugepages-%ukB"), so no two names give one size; the size
 * is a power of two from 8; the output is untouched on failure; the size's
 * short name ("64K") parses back to the same size. */
#include "fuzz-util.h"
#include "mthp/types.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strdup(data, size);
        unsigned kb = 42;
        int r = mthp_sysfs_size_parse(s, &kb);
        FUZZ_CHECK(r == 0 || r == -EINVAL, "%d", r);
        if (r == 0) {
                char canon[64], name[16];
                snprintf(canon, sizeof(canon), "hugepages-%ukB", kb);
                FUZZ_CHECK(strcmp(canon, s) == 0, "'%s' read as %u kB", s, kb);
                FUZZ_CHECK(kb >= 8 && (kb & (kb - 1)) == 0, "%u kB", kb);
                mthp_format_size(kb, name, sizeof(name));
                unsigned back = 0;
                if (mthp_parse_size(name, &back) == 0)
                        FUZZ_CHECK(back == kb, "%s -> %u, from %u", name, back, kb);
        } else
                FUZZ_CHECK(kb == 42, "output written on failure");
        free(s);
        return 0;
}
