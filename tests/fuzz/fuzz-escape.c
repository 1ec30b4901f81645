/* SPDX-License-Identifier: MIT */
/* The string sanitiser every output path uses (mthp_escape): on any bytes,
 * the result is valid UTF-8 without control characters, escaping it again
 * changes nothing, a smaller buffer gets a prefix that ends on a whole
 * character or escape, and the length returned is the length of the whole
 * result. mthp_escape_lines keeps newlines and nothing else. */
#include <stdbool.h>

#include "fuzz-util.h"
#include "mthp/escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *in = fuzz_strdup(data, size);
        size_t n = mthp_escape_n(NULL, 0, in, SIZE_MAX);
        FUZZ_CHECK(n <= 4 * strlen(in), "%zu bytes from %zu", n, strlen(in));
        char *full = malloc(n + 1);
        if (!full)
                abort();
        FUZZ_CHECK(mthp_escape_n(full, n + 1, in, SIZE_MAX) == n, "length");
        FUZZ_CHECK(strlen(full) == n, "%zu != %zu", strlen(full), n);
        FUZZ_CHECK(mthp_text_is_clean(full), "not clean: %s", full);
        /* idempotent */
        char *again = mthp_escape_dup(full);
        FUZZ_CHECK(again && strcmp(again, full) == 0, "escaping twice changed it");
        free(again);
        /* cut at every size of a small buffer: a clean prefix */
        char small[64];
        size_t last = 0;
        for (size_t sz = 1; sz <= sizeof(small) && sz <= n + 1; sz++) {
                mthp_escape_n(small, sz, in, SIZE_MAX);
                size_t l = strlen(small);
                FUZZ_CHECK(l < sz && strncmp(small, full, l) == 0, "size %zu: not a prefix", sz);
                FUZZ_CHECK(mthp_text_is_clean(small), "size %zu: not clean", sz);
                FUZZ_CHECK(l >= last, "size %zu: shorter than with a smaller buffer", sz);
                last = l;
        }
        /* the lines variant: the same, with '\n' kept */
        char *lines = malloc(4 * strlen(in) + 1);
        if (!lines)
                abort();
        mthp_escape_lines(lines, 4 * strlen(in) + 1, in);
        size_t nl_in = 0, nl_out = 0;
        for (const char *p = in; *p; p++)
                nl_in += *p == '\n';
        for (const char *p = lines; *p; p++)
                nl_out += *p == '\n';
        FUZZ_CHECK(nl_in == nl_out, "%zu newlines became %zu", nl_in, nl_out);
        for (char *line = lines, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                FUZZ_CHECK(mthp_text_is_clean(line), "a line is not clean");
        }
        free(lines);
        free(full);
        free(in);
        return 0;
}
