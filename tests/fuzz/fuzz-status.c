/* SPDX-License-Identifier: MIT */
/* The daemon's status file as mthpctl reads it (mthp_status_file_read):
 * arbitrary text in a state directory on tmpfs. An accepted file names a
 * positive pid of a live process (the seeds use pid=1; the reader only
 * probes it with kill(pid, 0)) and at most MTHP_KNOBS_MAX knobs, all strings
 * terminated. */
#include <math.h>
#include <stdbool.h>

#include "fuzz-util.h"
#include "mthp/status.h"

static char dir[192];
static char file[sizeof(dir) + 32];

static void cleanup(void) {
        unlink(file);
        rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct mthp_status st;
        if (!file[0]) {
                fuzz_tmpdir(dir, sizeof(dir), "status");
                snprintf(file, sizeof(file), "%s/" MTHP_STATUS_FILE, dir);
                atexit(cleanup);
        }
        FILE *f = fopen(file, "we");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
                abort();
        int r = mthp_status_file_read(dir, &st);
        FUZZ_CHECK(r == 0 || r == -ENOENT, "%d", r);
        if (r == 0) {
                FUZZ_CHECK(st.pid > 0, "pid %d", st.pid);
                FUZZ_CHECK(st.n <= MTHP_KNOBS_MAX, "%u knobs", st.n);
                /* what mthpctl prints as numbers (JSON too): both rates or none */
                const struct mthp_status_rates *x = &st.rates;
                FUZZ_CHECK(st.rates_known ? isfinite(x->raise) && x->raise >= 0 && isfinite(x->lower) &&
                                                    x->lower >= 0 && isfinite(x->fault_cost_ns) && x->fault_cost_ns >= 0
                                          : x->raise == 0 && x->lower == 0 && x->fault_cost_ns == 0,
                           "rates %d %g %g %g", st.rates_known, x->raise, x->lower, x->fault_cost_ns);
                for (unsigned i = 0; i < st.n; i++) {
                        const struct mthp_status_knob *k = &st.k[i];
                        FUZZ_CHECK(fuzz_terminated(k->id, sizeof(k->id)) &&
                                           fuzz_terminated(k->decision, sizeof(k->decision)) &&
                                           fuzz_terminated(k->reason, sizeof(k->reason)),
                                   "knob %u", i);
                }
        }
        return 0;
}
