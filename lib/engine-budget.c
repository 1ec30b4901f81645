/* SPDX-License-Identifier: MIT */
/* The host's bloat budget (MaxHostBloat=): what a process would hold in
 * bloat at a size, what the host would hold in all, and the largest level
 * that fits. Pure, like the rest of the engine (mthp/engine.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

/* The bloat (kB) a process would hold at rung r: its stake, times
 * 1/usage - 1 (no block of the size: none; a usage below one page a folio
 * reads as one page, so a usage of 0 costs a finite amount). */
double engine_rung_bloat_kb(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                            unsigned size, bool madvised) {
        double u = engine_remembered_raise(m, kind, size, madvised);
        if (isnan(u))
                return 0;
        u = fmax(u, (double) mthp_caps_page_kb(caps) / (double) caps->sizes[size].kb);
        return u >= 1 ? 0 : engine_stake_kb(caps, m, kind) * (1 / u - 1);
}
