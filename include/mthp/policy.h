/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include "mthp/types.h"

/* Per-cgroup policy files: /etc/mthpd/policy.d/NAME.policy (mthpd.policy(5)).
 *
 *   [Match]
 *   Cgroup=/system.slice/db-*.service   glob on the memory cgroup path (fnmatch,
 *                                        '*' does not cross '/'); repeatable
 *   Unit=redis.service                  a cgroup whose last component is this
 *                                        name, at any depth; repeatable. Not
 *                                        inside a delegated subtree (below a
 *                                        user@*.service, or a cgroup owned by
 *                                        a uid other than root) unless
 *   Delegated=yes                       says so: a user names their own
 *                                        cgroups, and would otherwise pick
 *                                        up a system policy (priority,
 *                                        Collapse=yes) by naming one alike
 *   [Policy]
 *   Anon=auto|always|madvise|never      default auto
 *   Shmem=auto|always|madvise|never     default auto
 *   Sizes=16K-2M                        sizes this cgroup accepts (both kinds)
 *   Priority=0..100                     default 50 (mthpd.conf DefaultPriority=)
 *   MaxBloat=20%                        auto: extra RSS a size may cost it
 *   MaxPressure=10%                     its memory.pressure some avg10 limit
 *   Collapse=yes|no                     MADV_COLLAPSE its dense, long-lived regions
 *
 * A process belongs to the first policy (files in name order) matching its
 * memory cgroup or the nearest ancestor that matches. */

enum mthp_policy_mode {
        MTHP_POLICY_AUTO,
        MTHP_POLICY_ALWAYS,
        MTHP_POLICY_MADVISE,
        MTHP_POLICY_NEVER,
};
const char *mthp_policy_mode_name(enum mthp_policy_mode m);

#define MTHP_POLICY_MATCH_MAX 8
#define MTHP_POLICY_PATTERN_MAX 192
#define MTHP_POLICY_NAME_MAX 64
#define MTHP_POLICIES_MAX 1024

struct mthp_policy {
        char name[MTHP_POLICY_NAME_MAX];        /* file name without ".policy" */
        char file[MTHP_PATH_MAX];               /* for FILE:LINE messages */
        unsigned n_cgroup, n_unit;
        char cgroup[MTHP_POLICY_MATCH_MAX][MTHP_POLICY_PATTERN_MAX];
        char unit[MTHP_POLICY_MATCH_MAX][MTHP_POLICY_PATTERN_MAX];
        unsigned cgroup_line[MTHP_POLICY_MATCH_MAX], unit_line[MTHP_POLICY_MATCH_MAX];
        enum mthp_policy_mode mode[_MTHP_KIND_MAX];
        unsigned min_kb, max_kb;                /* 0/0: mthpd.conf's AnonSizes/ShmemSizes */
        unsigned priority;                      /* 0..100 */
        double max_bloat;                       /* percent; NAN: mthpd.conf MaxBloat */
        double max_pressure;                    /* percent; NAN: mthpd.conf PressureMax */
        bool collapse;
        bool delegated;                         /* [Match] Delegated=yes */
};

struct mthp_policy_set {
        unsigned n;
        struct mthp_policy *p;                  /* n, in file-name order */
        /* Optional: is this cgroup (a path as matched) owned by a uid other
         * than root? Set by whoever can look (mthpd: the memory cgroup
         * directory's owner); without it only user@*.service is known. */
        bool (*user_owned)(void *user, const char *cgroup);
        void *user_owned_data;
};

/* Is cgroup delegated to a user: below a user@*.service, or (user_owned)
 * owned by a uid other than root, it or an ancestor? */
bool mthp_policy_cgroup_delegated(const struct mthp_policy_set *s, const char *cgroup);

/* Load every *.policy of dir (other names are ignored). All or nothing: on
 * any error *ret is untouched and every "FILE:LINE: ..." error is in err, one
 * per line. check_owner: refuse files not owned by root, group/world
 * writable, or symlinks that resolve outside dir. A missing dir is an empty
 * set, and so is a name masked as in mthp_policy_load_dirs (an empty file, a
 * symlink to /dev/null). The default directory (MTHP_SYSCONFDIR/policy.d, /etc/mthpd/policy.d)
 * is read with /run/mthpd/policy.d and the vendor's PREFIX/lib/mthpd/policy.d
 * (mthp_policy_load_dirs). */
int mthp_policy_load_dir(const char *dir, bool check_owner, struct mthp_policy_set **ret, char *err, size_t errsz);
/* The same over several directories, the first one winning (the default
 * policy directory: /etc/mthpd/policy.d, /run/mthpd/policy.d,
 * /usr/lib/mthpd/policy.d): every *.policy of them by file name, one in an
 * earlier directory masking the same name in a later one, a symlink to
 * /dev/null or an empty file masking it altogether (mthp_conf_files_list).
 * dirs is NULL-terminated, at most MTHP_POLICY_DIRS_MAX. */
#define MTHP_POLICY_DIRS_MAX 4
int mthp_policy_load_dirs(const char *const *dirs, bool check_owner, struct mthp_policy_set **ret, char *err,
                          size_t errsz);
/* The same for an explicit list of files (mthpctl check). */
int mthp_policy_load_files(const char *const *files, size_t n, bool check_owner, struct mthp_policy_set **ret,
                           char *err, size_t errsz);
/* One policy from text (tests, fuzzing); name is used in messages. */
int mthp_policy_load_string(const char *name, const char *text, struct mthp_policy *out, char *err, size_t errsz);
void mthp_policy_set_free(struct mthp_policy_set *s);

/* Pure: index of the policy that manages a process in memory cgroup path
 * (it or its nearest matching ancestor), or -1. managed (may be NULL) gets
 * the cgroup that matched. A path with a ".." component (a cgroup outside
 * the reader's cgroup namespace) matches nothing. */
int mthp_policy_match(const struct mthp_policy_set *s, const char *path, char *managed, size_t size);
/* Does policy p match exactly this cgroup (not an ancestor)? The patterns
 * only: no delegation rule (see mthp_policy_set_matches). */
bool mthp_policy_matches(const struct mthp_policy *p, const char *path);
/* Does policy i of s match exactly this cgroup, with the delegation rule
 * (Unit= not in a delegated subtree unless Delegated=yes)? What cgmon's
 * "is this cgroup managed" predicates must use. */
bool mthp_policy_set_matches(const struct mthp_policy_set *s, unsigned i, const char *path);

/* A user_owned callback for hosts: the memory cgroup directory of cgroup
 * (below caps->cg_memory, else caps->cg_unified) is owned by another uid
 * than the hierarchy's root directory. */
struct mthp_host;
struct mthp_caps;
bool mthp_cgroup_owned_by_user(const struct mthp_host *h, const struct mthp_caps *caps, const char *cgroup);
