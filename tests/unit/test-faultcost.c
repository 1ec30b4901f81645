/* SPDX-License-Identifier: MIT */
/* mthp_fault_cost_measure() (lib/faultcost.c, FaultCost=auto): the CPU time
 * of one 4K page fault on the machine the test runs on. It faults its own
 * private anonymous pages only: no host tree, nothing written to /sys. */

#include "mthp/faultcost.h"
#include "unit.h"

/* A plausible fault, zeroing and charge included: a server takes ~1 us, this
 * project's VM 11 us; 10 ns would be no fault at all (the page was there, or
 * the clock did not move), 10 ms a clock counting something else. */
static void test_measure_plausible(void **state) {
        (void) state;
        for (unsigned i = 0; i < 3; i++) {
                double ns = -1;
                int r = mthp_fault_cost_measure(&ns);
                if (r != 0)
                        fail_msg("mthp_fault_cost_measure: %d", r);
                if (!(ns >= 10 && ns <= 10e6))
                        fail_msg("a 4K fault took %.1f ns: not between 10 ns and 10 ms", ns);
        }
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measure_plausible),
};

/* no known bugs: a test name given on the command line picks from the main group */
UNIT_MAIN(tests, tests)
