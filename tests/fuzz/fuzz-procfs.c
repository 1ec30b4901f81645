/* SPDX-License-Identifier: MIT */
/* The system-wide files the sampler reads each tick: /proc/vmstat and
 * /proc/meminfo (mthp_parse_kv, mthp_parse_vmstat, mthp_parse_meminfo) and
 * /proc/pressure/memory (mthp_parse_psi). Keys handed out must be what the
 * text holds; an accepted PSI file gives percentages in 0..100. */
#include <math.h>

#include "fuzz-util.h"
#include "mthp/host.h"
#include "mthp/sample.h"
#include "mthp/procfs.h"

struct kv_ctx {
        const char *pos;        /* keys come in text order: search on from here */
        unsigned calls, lines;
};

/* strstr without the sanitizer's interceptor, which measures the whole
 * haystack on every call: O(distance to the hit) here. */
static const char *find(const char *h, const char *n) {
        size_t len = strlen(n);
        for (; *h; h++)
                if (*h == *n && strncmp(h, n, len) == 0)
                        return h;
        return NULL;
}

static void kv_cb(void *user, const char *key, unsigned long long value) {
        struct kv_ctx *c = user;
        (void) value;
        c->calls++;
        FUZZ_CHECK(key[0] && strlen(key) < 64, "key '%s'", key);
        FUZZ_CHECK(strcspn(key, ": \t\n") == strlen(key), "separator in key '%s'", key);
        const char *hit = find(c->pos, key);
        FUZZ_CHECK(hit != NULL, "key '%s' is not in the text (after the previous key)", key);
        c->pos = hit + strlen(key);
}

static void check_kv(const char *text) {
        struct kv_ctx c = { .pos = text, .lines = 1 };
        for (const char *p = text; *p; p++)
                c.lines += *p == '\n';
        mthp_parse_kv(text, kv_cb, &c);
        FUZZ_CHECK(c.calls <= c.lines, "%u keys from %u lines", c.calls, c.lines);
}

static void check_vmstat(const char *text) {
        uint64_t v[_MTHP_VM_MAX];
        bool seen[_MTHP_VM_MAX];
        mthp_parse_vmstat(text, v, seen);
        for (int i = 0; i < _MTHP_VM_MAX; i++)
                if (seen[i])
                        FUZZ_CHECK(strstr(text, mthp_vmstat_name(i)) != NULL, "%s seen but not there",
                                   mthp_vmstat_name(i));
}

static void check_meminfo(const char *text) {
        struct mthp_meminfo m;
        static const char *const keys[] = { "MemTotal", "MemAvailable", "AnonPages", "Shmem", "AnonHugePages",
                                            "ShmemHugePages" };
        memset(&m, 0xa5, sizeof(m));
        mthp_parse_meminfo(text, &m);
        const uint64_t *f = &m.total_kb;
        for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (f[i] != 0xa5a5a5a5a5a5a5a5ULL)
                        FUZZ_CHECK(strstr(text, keys[i]) != NULL, "%s set but not there", keys[i]);
}

static void check_psi(const char *text) {
        struct mthp_psi psi;
        memset(&psi, 0, sizeof(psi));
        int r = mthp_parse_psi(text, &psi);
        FUZZ_CHECK(r == 0 || r == -EBADMSG, "%d", r);
        FUZZ_CHECK(psi.present == (r == 0), "present=%d r=%d", psi.present, r);
        if (r == 0) {
                FUZZ_CHECK(strstr(text, "some") != NULL, "no 'some' line");
                FUZZ_CHECK(isfinite(psi.some_avg10) && psi.some_avg10 >= 0 && psi.some_avg10 <= 100, "some avg10 %g",
                           psi.some_avg10);
                FUZZ_CHECK(isfinite(psi.full_avg10) && psi.full_avg10 >= 0 && psi.full_avg10 <= 100, "full avg10 %g",
                           psi.full_avg10);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_strdup(data, size);
        check_kv(text);
        check_vmstat(text);
        check_meminfo(text);
        check_psi(text);
        free(text);
        return 0;
}
