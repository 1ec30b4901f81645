/* SPDX-License-Identifier: MIT */
/* mthpctl exec: run a command with a THP policy of its own. */
#include <sys/utsname.h>

#include "mthpctl.h"

/* THP policy for a command and its children: PR_SET_THP_DISABLE is
 * inherited over fork and execve, which is how systemd's MemoryTHP= does it
 * for services. A kernel that lacks a policy says EINVAL; mthpctl then says
 * which policy and which kernel has it, and runs nothing: running CMD under
 * another policy than the one asked for (the old fallback from madvise to
 * disable) hides that from whoever starts it. */
int cmd_exec(struct ctl *c, int argc, char **argv) {
        const char *thp = c->thp ? c->thp : "disable";
        const char *what;
        int r;
        (void) argc;

        if (strcmp(thp, "inherit") == 0) {
                what = "clearing PR_SET_THP_DISABLE (Linux 3.15)";
                r = prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
        } else if (strcmp(thp, "except-advised") == 0 || strcmp(thp, "madvise") == 0) {
                what = "THP for madvised memory only (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18)";
                r = prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
        } else {
                what = "disabling THP (PR_SET_THP_DISABLE, Linux 3.15)";
                r = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
        if (r < 0 && errno == EINVAL) {
                struct utsname u;
                fprintf(stderr, "mthpctl: exec: this kernel (%s) does not offer --thp=%s: %s; not running %s\n",
                        uname(&u) == 0 ? u.release : "unknown", thp, what, argv[0]);
                return EXIT_FAIL;
        }
        if (r < 0) {
                fprintf(stderr, "mthpctl: exec: prctl(PR_SET_THP_DISABLE): %s\n", strerror(errno));
                return EXIT_FAIL;
        }
        fflush(stdout);
        execvp(argv[0], argv);
        int e = errno;
        fprintf(stderr, "mthpctl: exec: %s: %s\n", argv[0], strerror(e));
        return e == ENOENT ? 127 : 126; /* as env(1) and the shells */
}
