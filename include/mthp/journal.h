/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include "mthp/types.h"

/* The restore journal: for every knob mthpd has changed, the value it had
 * before (original) and the value mthpd last wrote. Written atomically
 * (temp file, fsync, rename, fsync dir) before the first write to a knob,
 * so a crash at any point leaves either the old or the new journal.
 * Persistence only: the actuator (actuator.h) writes every knob, forward
 * and restore. */
#define MTHP_JOURNAL_FILE "restore.journal"

enum mthp_entry_state { MTHP_ENTRY_MANAGED, MTHP_ENTRY_FOREIGN };

struct mthp_journal_entry {
        char path[MTHP_PATH_MAX];
        char id[32];
        char original[MTHP_VALUE_MAX];
        char written[MTHP_VALUE_MAX];
        /* what mthpd had written before 'written': the journal is saved
         * before each write, so a crash between save and write leaves the
         * kernel at this value, which is still ours to restore */
        char previous[MTHP_VALUE_MAX];
        enum mthp_entry_state state;
        bool has_state;                        /* loading: state= was there */
        char foreign_value[MTHP_VALUE_MAX];    /* what the other writer set */
};

struct mthp_journal {
        char root[MTHP_PATH_MAX];              /* host root the paths belong to */
        unsigned n;
        struct mthp_journal_entry e[MTHP_KNOBS_MAX];
};

/* Missing file: -ENOENT. Malformed: -EBADMSG, with "FILE:LINE: ..." in err. */
int mthp_journal_load(const char *file, struct mthp_journal *j, char *err, size_t errsz);
int mthp_journal_save(const char *file, const struct mthp_journal *j);
/* Whether the entry names a knob mthpd manages (a per-size enabled or
 * shmem_enabled, global enabled, defrag or shmem_enabled, max_ptes_none,
 * shrink_underused), by the kernel's spelling of its path, and its id is
 * that knob's. 0, or -EPERM with why ("PATH is not a knob mthpd manages").
 * A restore writes as root what the journal says: only to these. */
int mthp_journal_entry_check(const struct mthp_journal_entry *e, char *why, size_t whysz);
struct mthp_journal_entry *mthp_journal_find(struct mthp_journal *j, const char *path);
void mthp_journal_remove(struct mthp_journal *j, const char *path);
