/* SPDX-License-Identifier: MIT */
/* The status file from writer to reader (mthp_status_file_write, then
 * mthp_status_file_read, as mthpctl explain reads it without a bus), with
 * knob ids, decisions, reasons and the not-writable phrase made of any
 * bytes (a reason quotes process and cgroup names anyone chooses). What is
 * read back is exactly the knobs written, in order (no line forged by a
 * newline), each field the text written: escaped in the file (valid UTF-8,
 * one line), unescaped by the reader (mthpctl escapes what it prints).
 * Input: fields separated by NUL: not_writable, then id, value, reason per
 * knob (at most 4). */
#include <math.h>
#include <stdbool.h>

#include "fuzz-util.h"
#include "mthp/escape.h"
#include "mthp/status.h"

static char dir[192];
static char file[sizeof(dir) + 32];

static void cleanup(void) {
        unlink(file);
        rmdir(dir);
}

/* what the reader should hold: the text written (the writer's escaping
 * undone), or, where that does not fit the reader's field, the file's
 * text escaped and cut */
static void expect(char *out, size_t size, const char *value) {
        char wide[4 * MTHP_REASON_MAX];
        mthp_escape(wide, sizeof(wide), value);
        if (mthp_unescape(out, size, wide) < 0)
                mthp_escape(out, size, wide);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct mthp_snapshot snap;
        static struct mthp_status_knob d[4];
        static struct mthp_status st;
        if (!file[0]) {
                fuzz_tmpdir(dir, sizeof(dir), "status-rt");
                snprintf(file, sizeof(file), "%s/" MTHP_STATUS_FILE, dir);
                atexit(cleanup);
        }
        /* split into fields at NUL bytes */
        const char *f[13] = { 0 };
        size_t nf = 0, start = 0;
        char *buf = malloc(size + 1);
        if (!buf)
                abort();
        memcpy(buf, data, size);
        buf[size] = 0;
        for (size_t i = 0; i <= size && nf < 13; i++)
                if (i == size || buf[i] == 0) {
                        buf[i] = 0;
                        f[nf++] = buf + start;
                        start = i + 1;
                }
        const char *not_writable = nf > 0 ? f[0] : "";
        int n = nf > 1 ? (int) (nf - 1 + 2) / 3 : 0;
        memset(d, 0, sizeof(d));
        for (int i = 0; i < n; i++) {
                const char *id = f[1 + 3 * i], *value = 1 + 3 * i + 1 < (int) nf ? f[2 + 3 * i] : "",
                           *reason = 1 + 3 * i + 2 < (int) nf ? f[3 + 3 * i] : "";
                /* distinct ids: a knob is a section, and equal ones are one */
                snprintf(d[i].id, sizeof(d[i].id), "%d%.20s", i, id);
                snprintf(d[i].decision, sizeof(d[i].decision), "%s", value);
                snprintf(d[i].reason, sizeof(d[i].reason), "%s", reason);
        }
        /* the rates from the input's size, or none (an older mthpd) */
        struct mthp_status_rates rates = { .fault_cost_ns = (double) size * 1.5, .raise = (double) size / 3,
                                           .lower = (double) (size % 97), .by_time = size & 1 };
        bool with_rates = size % 3 != 0;
        FUZZ_CHECK(mthp_status_file_write(dir, &snap, d, (unsigned) n, false, not_writable, 0,
                                          with_rates ? &rates : NULL, NULL) == 0, "write");
        FUZZ_CHECK(mthp_status_file_read(dir, &st) == 0, "read");
        FUZZ_CHECK(st.pid == getpid(), "pid %d", st.pid);
        FUZZ_CHECK((int) st.n == n, "%d knobs written, %u read", n, st.n);
        FUZZ_CHECK(st.rates_known == with_rates, "rates written %d, read %d", with_rates, st.rates_known);
        if (with_rates)   /* written with 3 decimals */
                FUZZ_CHECK(fabs(st.rates.fault_cost_ns - rates.fault_cost_ns) < 1e-3 &&
                                   fabs(st.rates.raise - rates.raise) < 1e-3 && fabs(st.rates.lower - rates.lower) < 1e-3 &&
                                   st.rates.by_time == rates.by_time,
                           "rates %g %g %g %d", st.rates.fault_cost_ns, st.rates.raise, st.rates.lower, st.rates.by_time);
        char want[MTHP_REASON_MAX];
        expect(want, sizeof(st.not_writable) < sizeof(want) ? sizeof(st.not_writable) : sizeof(want), not_writable);
        FUZZ_CHECK(strcmp(st.not_writable, want) == 0, "not_writable '%s' != '%s'", st.not_writable, want);
        for (int i = 0; i < n; i++) {
                const struct mthp_status_knob *k = &st.k[i];
                /* ids are mthpd's own and short */
                expect(want, sizeof(k->id), d[i].id);
                FUZZ_CHECK(strcmp(k->id, want) == 0, "id '%s' != '%s'", k->id, want);
                expect(want, sizeof(k->decision), d[i].decision[0] ? d[i].decision : "original");
                FUZZ_CHECK(strcmp(k->decision, want) == 0, "decision '%s' != '%s'", k->decision, want);
                expect(want, sizeof(k->reason), d[i].reason);
                FUZZ_CHECK(strcmp(k->reason, want) == 0, "reason %d differs", i);
        }
        free(buf);
        return 0;
}
