/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/types.h"

const char *mthp_kind_name(enum mthp_kind k) {
        return k == MTHP_ANON ? "anon" : "shmem";
}

const char *mthp_cg_layout_name(enum mthp_cg_layout l) {
        static const char *const n[] = { "none", "v1", "hybrid", "v2" };
        return n[l];
}

bool mthp_stat_is_hot(const char *name) {
        static const char *const hot[] = { "anon_fault_alloc", "anon_fault_fallback", "anon_fault_fallback_charge",
                                           "shmem_alloc", "shmem_fallback", "shmem_fallback_charge" };
        for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
                if (strcmp(name, hot[i]) == 0)
                        return true;
        return false;
}

void mthp_format_size(unsigned kb, char *buf, size_t size) {
        if (kb >= 1024 * 1024 && kb % (1024 * 1024) == 0)
                snprintf(buf, size, "%uG", kb / (1024 * 1024));
        else if (kb >= 1024 && kb % 1024 == 0)
                snprintf(buf, size, "%uM", kb / 1024);
        else
                snprintf(buf, size, "%uK", kb);
}

int mthp_parse_size(const char *s, unsigned *kb) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        /* strtoull skips leading space and negates: " -18446744073709551615" is 1 */
        if (end == s || errno || strchr(s, '-'))
                return -EINVAL;
        unsigned long long mult = 1;
        if (*end == 'K' || *end == 'k')
                end++;
        else if (*end == 'M' || *end == 'm')
                mult = 1024, end++;
        else if (*end == 'G' || *end == 'g')
                mult = 1024 * 1024, end++;
        if (*end == 'B' && mult == 1 && end[-1] == 'k')
                end++;
        else if (*end == 'B' || *end == 'b')
                end++;
        if (*end)
                return -EINVAL;
        if (v == 0 || v > 16ULL * 1024 * 1024 / mult) /* before multiplying: no wrap */
                return -ERANGE;
        *kb = (unsigned) (v * mult);
        return 0;
}

int mthp_sysfs_size_parse(const char *name, unsigned *kb) {
        static const char prefix[] = "hugepages-";
        if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
                return -EINVAL;
        const char *p = name + sizeof(prefix) - 1;
        if (*p < '1' || *p > '9')  /* no sign, no leading zero, no space */
                return -EINVAL;
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
                v = v * 10 + (uint64_t) (*p - '0');
                if (v > UINT_MAX)
                        return -EINVAL;
        }
        if (strcmp(p, "kB") != 0 || v < 8 || (v & (v - 1)))
                return -EINVAL;
        *kb = (unsigned) v;
        return 0;
}

bool mthp_knob_allows(const struct mthp_knob *k, const char *value) {
        if (k->type == MTHP_KNOB_NUMBER) {
                size_t len = strspn(value, "0123456789");
                return len > 0 && len <= 9 && !value[len];
        }
        for (unsigned i = 0; i < k->n_allowed; i++)
                if (strcmp(k->allowed[i], value) == 0)
                        return true;
        return false;
}

unsigned mthp_caps_page_kb(const struct mthp_caps *caps) {
        return caps->page_kb ? caps->page_kb : 4;
}

bool mthp_caps_max_ptes_none_ok(const struct mthp_caps *caps, unsigned value) {
        unsigned ptes = caps->pmd_kb && caps->page_kb ? caps->pmd_kb / caps->page_kb : 512;
        if (value >= ptes)
                return false;
        return !caps->mthp_collapse || value == 0 || value == ptes - 1;
}

int mthp_caps_find_knob(const struct mthp_caps *caps, const char *id) {
        for (unsigned i = 0; i < caps->n_knobs; i++)
                if (strcmp(caps->knobs[i].id, id) == 0)
                        return (int) i;
        return -ENOENT;
}

int mthp_caps_find_size(const struct mthp_caps *caps, unsigned kb) {
        for (unsigned i = 0; i < caps->n_sizes; i++)
                if (caps->sizes[i].kb == kb)
                        return (int) i;
        return -ENOENT;
}

int mthp_parse_decimal(const char *s, double *v, const char **end) {
        /* digits, an optional '.' and digits: what a person writes. strtod
         * also takes " +0x10", "0x1p3", "inf", "1e9" and leading spaces;
         * none of that is a value in these files. */
        const char *p = s;
        size_t ip = strspn(p, "0123456789");
        p += ip;
        size_t fp = 0;
        if (*p == '.') {
                fp = strspn(p + 1, "0123456789");
                if (fp == 0)
                        return -EINVAL;
                p += 1 + fp;
        }
        if (ip == 0 && fp == 0)
                return -EINVAL;
        char buf[64];
        if ((size_t) (p - s) >= sizeof(buf))
                return -ERANGE;
        memcpy(buf, s, (size_t) (p - s));
        buf[p - s] = 0;
        errno = 0;
        double d = strtod(buf, NULL);
        if (errno || !isfinite(d))
                return -ERANGE;
        *v = d;
        *end = p;
        return 0;
}
