/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/escape.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
        unsigned char c = s[0];
        size_t need;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                need = 2;
        else if (c >= 0xe0 && c <= 0xef) {
                need = 3;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed) /* no UTF-16 surrogates */
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                need = 4;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else
                return 0;
        if (n < need)
                return 0;
        if (s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < need; i++)
                if (s[i] < 0x80 || s[i] > 0xbf)
                        return 0;
        return need;
}

static bool is_control(const unsigned char *s, size_t l) {
        if (l == 1)
                return s[0] < 0x20 || s[0] == 0x7f;
        return l == 2 && s[0] == 0xc2 && s[1] < 0xa0; /* C1: U+0080..U+009F */
}

static size_t escape(char *dst, size_t size, const char *src, size_t len, bool keep_newlines) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *s = (const unsigned char *) src;
        size_t n = strnlen(src, len), out = 0, end = 0;
        bool full = false;
        for (size_t i = 0; i < n;) {
                size_t l = utf8_len(s + i, n - i);
                char piece[16];
                size_t pl = 0;
                if (s[i] == '\\') {
                        piece[pl++] = '\\';
                        piece[pl++] = '\\';
                        i++;
                } else if (l == 0 || (is_control(s + i, l) && !(keep_newlines && s[i] == '\n'))) {
                        size_t k = l ? l : 1;
                        for (size_t j = 0; j < k; j++) {
                                piece[pl++] = '\\';
                                piece[pl++] = 'x';
                                piece[pl++] = hex[s[i + j] >> 4];
                                piece[pl++] = hex[s[i + j] & 15];
                        }
                        i += k;
                } else {
                        memcpy(piece, s + i, l);
                        pl = l;
                        i += l;
                }
                /* whole pieces only, and nothing after the first that does not fit */
                if (!full && dst && end + pl < size) {
                        memcpy(dst + end, piece, pl);
                        end += pl;
                } else
                        full = true;
                out += pl;
        }
        if (dst && size)
                dst[end] = 0;
        return out;
}

size_t mthp_escape_n(char *dst, size_t size, const char *src, size_t len) {
        return escape(dst, size, src, len, false);
}

char *mthp_escape_lines(char *dst, size_t size, const char *src) {
        escape(dst, size, src ? src : "", SIZE_MAX, true);
        return dst;
}

char *mthp_escape(char *dst, size_t size, const char *src) {
        mthp_escape_n(dst, size, src ? src : "", SIZE_MAX);
        return dst;
}

char *mthp_escape_dup(const char *src) {
        size_t n = mthp_escape_n(NULL, 0, src, SIZE_MAX);
        char *p = malloc(n + 1);
        if (p)
                mthp_escape_n(p, n + 1, src, SIZE_MAX);
        return p;
}

bool mthp_text_is_clean(const char *s) {
        const unsigned char *u = (const unsigned char *) s;
        size_t n = strlen(s);
        for (size_t i = 0; i < n;) {
                size_t l = utf8_len(u + i, n - i);
                if (l == 0 || is_control(u + i, l))
                        return false;
                i += l;
        }
        return true;
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

ssize_t mthp_unescape(char *dst, size_t size, const char *src) {
        size_t out = 0;
        if (!size)
                return -ENOBUFS;
        for (const char *p = src; *p;) {
                char c = *p;
                if (c == '\\') {
                        int hi, lo;
                        if (p[1] == '\\') {
                                p += 2;
                        } else if (p[1] == 'x' && (hi = hex_digit(p[2])) >= 0 && (lo = hex_digit(p[3])) >= 0 &&
                                   (hi || lo)) {
                                c = (char) (hi << 4 | lo);
                                p += 4;
                        } else
                                return -EINVAL;
                } else
                        p++;
                if (out + 1 >= size)
                        return -ENOBUFS;
                dst[out++] = c;
        }
        dst[out] = 0;
        return (ssize_t) out;
}

void mthp_json_string(FILE *f, const char *src) {
        const unsigned char *s = (const unsigned char *) (src ? src : "");
        size_t n = strlen((const char *) s);
        fputc('"', f);
        for (size_t i = 0; i < n;) {
                size_t l = utf8_len(s + i, n - i);
                if (l == 0) {
                        /* a byte of no valid UTF-8 sequence (always 0x80 or
                         * more): a lone low surrogate, as Python's
                         * surrogateescape error handler writes it */
                        fprintf(f, "\\udc%02x", s[i]);
                        i++;
                        continue;
                }
                if (s[i] == '"' || s[i] == '\\')
                        fprintf(f, "\\%c", s[i]);
                else if (s[i] == '\n')
                        fputs("\\n", f);
                else if (s[i] == '\t')
                        fputs("\\t", f);
                else if (is_control(s + i, l))  /* C0, DEL, C1: harmless on a terminal too */
                        fprintf(f, "\\u%04x", l == 1 ? s[i] : s[i + 1]);
                else
                        fwrite(s + i, 1, l, f);
                i += l;
        }
        fputc('"', f);
}

bool mthp_error_line_is_about(const char *line, size_t len, const char *path, bool is_dir) {
        size_t pl = strlen(path);
        while (is_dir && pl > 1 && path[pl - 1] == '/')
                pl--;
        if (len <= pl || strncmp(line, path, pl) != 0)
                return false;
        if (line[pl] == ':')
                return true;
        if (!is_dir || line[pl] != '/')
                return false;
        /* "DIR/NAME:": NAME without a further '/' */
        for (size_t i = pl + 1; i < len; i++) {
                if (line[i] == ':')
                        return i > pl + 1;
                if (line[i] == '/')
                        return false;
        }
        return false;
}
