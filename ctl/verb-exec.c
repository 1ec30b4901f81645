/* SPDX-License-Identifier: MIT */
/* mthpctl exec: run a command with a THP policy of its own. */
#include "mthpctl.h"

/* THP policy for a command and its children: PR_SET_THP_DISABLE is
 * inherited over fork and execve, which is how systemd's MemoryTHP= does it
 * for services. */
int cmd_exec(struct ctl *c, int argc, char **argv) {
        const char *thp = c->thp ? c->thp : "disable";
        int r;
        (void) argc;

        if (strcmp(thp, "inherit") == 0)
                r = prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
        else if (strcmp(thp, "madvise") == 0) {
                r = prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
                if (r < 0 && errno == EINVAL) {
                        fprintf(stderr, "mthpctl: exec: warning: this kernel does not offer THP for madvised memory "
                                "only (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18); disabling THP completely\n");
                        r = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
                }
        } else
                r = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
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
