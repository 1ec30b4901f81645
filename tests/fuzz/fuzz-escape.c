/* SPDX-License-Identifier: MIT */
/* The string sanitiser every output path uses (mthp_escape): on any bytes,
 * the result is valid UTF-8 without control characters, mthp_unescape
 * gives the input back (so two inputs never escape alike), a smaller
 * buffer gets a prefix that ends on a whole character or escape, and the
 * length returned is the length of the whole result. mthp_escape_lines
 * keeps newlines and nothing else. mthp_json_string writes printable
 * ASCII or valid UTF-8 without control bytes, and its string decoded as
 * JSON (with "\udcXX" as byte XX, Python's surrogateescape) is the
 * input. */
#include <stdbool.h>
#include <stdio.h>

#include "fuzz-util.h"
#include "mthp/escape.h"

static int hexval(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Encode code point cp as UTF-8 into out; its length. */
static size_t utf8_put(unsigned cp, char *out) {
        if (cp < 0x80) {
                out[0] = (char) cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char) (0xc0 | cp >> 6);
                out[1] = (char) (0x80 | (cp & 0x3f));
                return 2;
        }
        out[0] = (char) (0xe0 | cp >> 12);
        out[1] = (char) (0x80 | (cp >> 6 & 0x3f));
        out[2] = (char) (0x80 | (cp & 0x3f));
        return 3;
}

/* mthp_json_string(in), decoded as a JSON string, gives in back. */
static void check_json(const char *in) {
        char *json = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&json, &len);
        if (!f)
                abort();
        mthp_json_string(f, in);
        fclose(f);
        FUZZ_CHECK(len >= 2 && json[0] == '"' && json[len - 1] == '"', "not a JSON string: %s", json);
        FUZZ_CHECK(mthp_text_is_clean(json), "raw control bytes or invalid UTF-8 in %s", json);
        char *dec = malloc(len + 1), *o = dec;
        if (!dec)
                abort();
        for (size_t i = 1; i < len - 1;) {
                char c = json[i];
                FUZZ_CHECK(c != '"', "unescaped quote in %s", json);
                if (c != '\\') {
                        *o++ = c;
                        i++;
                        continue;
                }
                char e = json[i + 1];
                i += 2;
                if (e == '"' || e == '\\' || e == '/')
                        *o++ = e;
                else if (e == 'n')
                        *o++ = '\n';
                else if (e == 't')
                        *o++ = '\t';
                else if (e == 'r')
                        *o++ = '\r';
                else if (e == 'b')
                        *o++ = '\b';
                else if (e == 'f')
                        *o++ = '\f';
                else {
                        FUZZ_CHECK(e == 'u' && i + 4 <= len - 1, "bad escape in %s", json);
                        unsigned cp = 0;
                        for (int k = 0; k < 4; k++) {
                                int h = hexval(json[i + k]);
                                FUZZ_CHECK(h >= 0, "bad \\u in %s", json);
                                cp = cp << 4 | (unsigned) h;
                        }
                        i += 4;
                        if (cp >= 0xdc80 && cp <= 0xdcff)
                                *o++ = (char) (cp & 0xff); /* surrogateescape */
                        else {
                                FUZZ_CHECK(cp < 0xd800 || cp > 0xdfff, "other surrogate in %s", json);
                                o += utf8_put(cp, o);
                        }
                }
        }
        *o = 0;
        FUZZ_CHECK(strcmp(dec, in) == 0, "JSON %s decodes to another text", json);
        free(dec);
        free(json);
}

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
        /* reversible */
        char *back = malloc(strlen(in) + 1);
        if (!back)
                abort();
        FUZZ_CHECK(mthp_unescape(back, strlen(in) + 1, full) == (ssize_t) strlen(in), "unescape length");
        FUZZ_CHECK(strcmp(back, in) == 0, "unescape(escape(x)) != x");
        free(back);
        check_json(in);
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
