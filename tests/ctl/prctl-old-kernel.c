/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim for tests/ctl/exec-thp.sh: prctl(2) as an older kernel
 * answers it. This kernel (6.18) has every PR_SET_THP_DISABLE policy, so the
 * path where the kernel refuses one cannot be reached otherwise.
 * MTHP_TEST_KERNEL=6.17: PR_SET_THP_DISABLE with flags (EXCEPT_ADVISED) is
 * EINVAL, as in kernel/sys.c before 6.18. MTHP_TEST_KERNEL=3.14: every
 * PR_SET_THP_DISABLE is EINVAL (unknown option). Other calls pass through. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

int prctl(int option, ...) {
        va_list ap;
        va_start(ap, option);
        unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
        unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
        va_end(ap);
        const char *k = getenv("MTHP_TEST_KERNEL");
        if (option == PR_SET_THP_DISABLE && k) {
                if (strcmp(k, "3.14") == 0 || (strcmp(k, "6.17") == 0 && a3 != 0)) {
                        errno = EINVAL;
                        return -1;
                }
        }
        int (*real)(int, ...) = (int (*)(int, ...)) dlsym(RTLD_NEXT, "prctl");
        return real(option, a2, a3, a4, a5);
}
