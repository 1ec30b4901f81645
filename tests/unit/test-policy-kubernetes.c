/* SPDX-License-Identifier: MIT */
/* Policy files for Kubernetes pods (docs/kubernetes.md): the glob recipes of
 * mthpd.policy(5) on the cgroup paths kubelet really creates, for both
 * cgroup drivers, every QoS class, cgroup v2 and v1, from the
 * /proc/PID/cgroup line of a container's process to the policy that manages
 * it. Pure: no host tree is needed, the paths are the input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mthp/policy.h"
#include "mthp/procinfo.h"
#include "unit.h"

/* A pod UID as the API server hands it out; the systemd driver writes it
 * with '_' for '-' (a '-' in a slice name is a parent separator). */
#define UID_DB "8f2c1a3e-1b2c-4d5e-9f00-0123456789ab"
#define UID_DB_ "8f2c1a3e_1b2c_4d5e_9f00_0123456789ab"
#define UID_X "0d6b7c1f-55aa-4c3e-8e21-a0b1c2d3e4f5"
#define UID_X_ "0d6b7c1f_55aa_4c3e_8e21_a0b1c2d3e4f5"
#define CID "3b1f5c0e9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"

/* The recipes of docs/kubernetes.md, in file-name order: one pod by UID
 * (either driver: '?' stands for the '-' or '_' between the UID's groups),
 * then one file per QoS class holding both drivers' patterns. */
static const char *const recipes[] = {
        "[Match]\nUnit=*pod8f2c1a3e?1b2c?4d5e?9f00?0123456789ab*\n[Policy]\nAnon=always\nPriority=90\n",
        "[Match]\nUnit=kubepods-pod*.slice\nCgroup=/kubepods/pod*\n[Policy]\nAnon=auto\n",
        "[Match]\nUnit=kubepods-burstable-pod*.slice\nCgroup=/kubepods/burstable/pod*\n[Policy]\nAnon=madvise\n",
        "[Match]\nUnit=kubepods-besteffort-pod*.slice\nCgroup=/kubepods/besteffort/pod*\n[Policy]\n"
        "Anon=never\nPriority=10\n",
};
enum { P_UID, P_GUARANTEED, P_BURSTABLE, P_BESTEFFORT, P_N };

struct k8s {
        struct mthp_policy p[P_N];
        struct mthp_policy_set s;
};

static int setup(void **state) {
        struct k8s *k = calloc(1, sizeof(*k));
        assert_non_null(k);
        for (unsigned i = 0; i < P_N; i++) {
                char err[1024], name[16];
                snprintf(name, sizeof(name), "%u.policy", i);
                if (mthp_policy_load_string(name, recipes[i], &k->p[i], err, sizeof(err)) < 0)
                        fail_msg("recipe %u: %s", i, err);
        }
        k->s = (struct mthp_policy_set) { .n = P_N, .p = k->p };
        *state = k;
        return 0;
}

static int teardown(void **state) {
        free(*state);
        return 0;
}

/* The policy managing the process whose /proc/PID/cgroup is text, and the
 * cgroup that matched. */
static int match_proc(const struct k8s *k, const char *text, enum mthp_cg_layout layout, char *managed,
                      size_t size) {
        char cg[512];
        assert_int_equal(mthp_procinfo_parse_cgroup(text, layout, cg, sizeof(cg)), 0);
        return mthp_policy_match(&k->s, cg, managed, size);
}

static void expect(const struct k8s *k, const char *text, enum mthp_cg_layout layout, int policy,
                   const char *managed) {
        char m[512] = "";
        int r = match_proc(k, text, layout, m, sizeof(m));
        if (r != policy)
                fail_msg("%s: policy %d, expected %d (managed '%s')", text, r, policy, m);
        if (managed)
                assert_string_equal(m, managed);
}

#define SD_BURSTABLE "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
#define SD_BESTEFFORT "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
#define SD_GUARANTEED "/kubepods.slice/kubepods-pod"

/* systemd driver, cgroup v2: containerd, CRI-O and cri-dockerd scopes; the
 * pod's slice is the managed cgroup, so each pod is measured on its own. */
static void test_systemd_driver_v2(void **state) {
        const struct k8s *k = *state;
        expect(k, "0::" SD_BURSTABLE UID_X_ ".slice/cri-containerd-" CID ".scope\n", MTHP_CG_V2, P_BURSTABLE,
               SD_BURSTABLE UID_X_ ".slice");
        expect(k, "0::" SD_BURSTABLE UID_X_ ".slice/crio-" CID ".scope\n", MTHP_CG_V2, P_BURSTABLE,
               SD_BURSTABLE UID_X_ ".slice");
        expect(k, "0::" SD_BURSTABLE UID_X_ ".slice/docker-" CID ".scope\n", MTHP_CG_V2, P_BURSTABLE,
               SD_BURSTABLE UID_X_ ".slice");
        /* CRI-O's conmon sits next to the container, in the same pod slice */
        expect(k, "0::" SD_BURSTABLE UID_X_ ".slice/crio-conmon-" CID ".scope\n", MTHP_CG_V2, P_BURSTABLE,
               SD_BURSTABLE UID_X_ ".slice");
        expect(k, "0::" SD_GUARANTEED UID_X_ ".slice/cri-containerd-" CID ".scope\n", MTHP_CG_V2, P_GUARANTEED,
               SD_GUARANTEED UID_X_ ".slice");
        expect(k, "0::" SD_BESTEFFORT UID_X_ ".slice/cri-containerd-" CID ".scope\n", MTHP_CG_V2, P_BESTEFFORT,
               SD_BESTEFFORT UID_X_ ".slice");
        /* the pod by UID outranks its QoS class: it matches the same pod
         * slice, and its file comes first */
        expect(k, "0::" SD_BURSTABLE UID_DB_ ".slice/cri-containerd-" CID ".scope\n", MTHP_CG_V2, P_UID,
               SD_BURSTABLE UID_DB_ ".slice");
        expect(k, "0::" SD_GUARANTEED UID_DB_ ".slice/crio-" CID ".scope\n", MTHP_CG_V2, P_UID,
               SD_GUARANTEED UID_DB_ ".slice");
}

/* cgroupfs driver, cgroup v2: the container's cgroup is the 64-hex ID. */
static void test_cgroupfs_driver_v2(void **state) {
        const struct k8s *k = *state;
        expect(k, "0::/kubepods/burstable/pod" UID_X "/" CID "\n", MTHP_CG_V2, P_BURSTABLE,
               "/kubepods/burstable/pod" UID_X);
        expect(k, "0::/kubepods/pod" UID_X "/" CID "\n", MTHP_CG_V2, P_GUARANTEED, "/kubepods/pod" UID_X);
        expect(k, "0::/kubepods/besteffort/pod" UID_X "/" CID "\n", MTHP_CG_V2, P_BESTEFFORT,
               "/kubepods/besteffort/pod" UID_X);
        expect(k, "0::/kubepods/burstable/pod" UID_DB "/" CID "\n", MTHP_CG_V2, P_UID,
               "/kubepods/burstable/pod" UID_DB);
        expect(k, "0::/kubepods/pod" UID_DB "/" CID "\n", MTHP_CG_V2, P_UID, "/kubepods/pod" UID_DB);
        expect(k, "0::/kubepods/besteffort/pod" UID_DB "/" CID "\n", MTHP_CG_V2, P_UID,
               "/kubepods/besteffort/pod" UID_DB);
}

/* cgroup v1 (and hybrid): the memory controller's line, a path below
 * /sys/fs/cgroup/memory, with either driver. */
static void test_v1_hierarchy(void **state) {
        const struct k8s *k = *state;
        char text[1024];
        snprintf(text, sizeof(text),
                 "12:pids:/kubepods/besteffort/pod" UID_X "/" CID "\n"
                 "9:memory:/kubepods/burstable/pod" UID_X "/" CID "\n"
                 "4:cpu,cpuacct:/kubepods/burstable/pod" UID_X "/" CID "\n"
                 "1:name=systemd:/kubepods/burstable/pod" UID_X "/" CID "\n");
        expect(k, text, MTHP_CG_V1, P_BURSTABLE, "/kubepods/burstable/pod" UID_X);
        snprintf(text, sizeof(text),
                 "11:memory:/kubepods.slice/kubepods-pod" UID_X_ ".slice/docker-" CID ".scope\n"
                 "1:name=systemd:/kubepods.slice/kubepods-pod" UID_X_ ".slice/docker-" CID ".scope\n"
                 "0::/\n");
        expect(k, text, MTHP_CG_HYBRID, P_GUARANTEED, SD_GUARANTEED UID_X_ ".slice");
        snprintf(text, sizeof(text), "3:memory:" SD_BESTEFFORT UID_DB_ ".slice/crio-" CID ".scope\n");
        expect(k, text, MTHP_CG_V1, P_UID, SD_BESTEFFORT UID_DB_ ".slice");
}

/* What the recipes must not catch: the QoS parents themselves (kubelet's
 * own processes are not there, but a per-pod recipe must not turn into a
 * per-class one), the node's services, a look-alike name, and a UID that
 * differs in one digit. */
static void test_no_stray_match(void **state) {
        const struct k8s *k = *state;
        expect(k, "0::/kubepods.slice\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/kubepods.slice/kubepods-burstable.slice\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/kubepods/burstable\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/kubepods/besteffort\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/system.slice/kubelet.service\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/system.slice/containerd.service\n", MTHP_CG_V2, -1, NULL);
        /* '*' does not cross '/': a burstable pod is not a guaranteed one */
        expect(k, "0::/kubepods/burstable/pod" UID_X "\n", MTHP_CG_V2, P_BURSTABLE, NULL);
        expect(k, "0::/kubepods/podcast.service\n", MTHP_CG_V2, P_GUARANTEED, NULL); /* the glob's reach */
        expect(k, "0::/system.slice/pod" UID_X "\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/kubepods/burstable/pod8f2c1a3e-1b2c-4d5e-9f00-0123456789ac/" CID "\n", MTHP_CG_V2,
               P_BURSTABLE, NULL);
}

/* A container of mthpd's own, in a private cgroup namespace (an
 * unprivileged pod on cgroup v2), reads other pods' cgroups relative to its
 * own, as /../../NAME. Such a path names no cgroup mthpd can read, and its
 * last component must not pass for a unit of the host's: no policy matches
 * it (the DaemonSet runs privileged, so the runtime keeps the host's cgroup
 * namespace). */
static void test_private_cgroupns_does_not_match(void **state) {
        const struct k8s *k = *state;
        expect(k, "0::/../../kubepods-burstable-pod" UID_X_ ".slice/cri-containerd-" CID ".scope\n", MTHP_CG_V2, -1,
               NULL);
        expect(k, "0::/../../pod" UID_DB "/" CID "\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/..\n", MTHP_CG_V2, -1, NULL);
        expect(k, "0::/kubepods/../kubepods/pod" UID_X "\n", MTHP_CG_V2, -1, NULL);
        /* a name that merely starts with dots is a name */
        expect(k, "0::/kubepods/..pod" UID_DB "\n", MTHP_CG_V2, P_UID, NULL);
}

/* Recipe i as a file of dir, named so that file-name order is recipe order. */
static const char *recipe_file(char *buf, size_t size, const char *dir, unsigned i) {
        snprintf(buf, size, "%s/%u-k8s.policy", dir, 10 * (i + 1));
        return buf;
}

/* A recipe is an ordinary policy file: the patterns of both drivers sit in
 * one file, and two classes' files do not overlap. */
static void test_recipes_load_as_a_set(void **state) {
        (void) state;
        char dir[] = "/tmp/mthpd-test-k8s-XXXXXX";
        assert_non_null(mkdtemp(dir));
        for (unsigned i = 0; i < P_N; i++) {
                char path[128];
                recipe_file(path, sizeof(path), dir, i);
                FILE *f = fopen(path, "w");
                assert_non_null(f);
                fputs(recipes[i], f);
                fclose(f);
        }
        struct mthp_policy_set *s = NULL;
        char err[2048] = "";
        int r = mthp_policy_load_dir(dir, false, &s, err, sizeof(err));
        if (r < 0)
                fail_msg("%d: %s", r, err);
        assert_int_equal(s->n, P_N);
        assert_int_equal(mthp_policy_match(s, SD_BURSTABLE UID_DB_ ".slice/cri-containerd-" CID ".scope", NULL, 0),
                         P_UID);
        assert_int_equal(mthp_policy_match(s, "/kubepods/pod" UID_X "/" CID, NULL, 0), P_GUARANTEED);
        mthp_policy_set_free(s);
        for (unsigned i = 0; i < P_N; i++) {
                char path[128];
                unlink(recipe_file(path, sizeof(path), dir, i));
        }
        rmdir(dir);
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_systemd_driver_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cgroupfs_driver_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_hierarchy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_stray_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_cgroupns_does_not_match, setup, teardown),
        cmocka_unit_test(test_recipes_load_as_a_set),
};
/* no known bugs: a test name given on the command line picks from the main group */
UNIT_MAIN(tests, tests)
