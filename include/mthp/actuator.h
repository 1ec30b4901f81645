/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include "mthp/journal.h"
#include "mthp/host.h"
#include "mthp/types.h"

/* Opaque: its users go through the functions below (the journal, the
 * history ring and the dry-run copy of the knobs are the actuator's). */
struct mthp_actuator;
typedef void (*mthp_change_cb)(void *user, const struct mthp_change *c);
/* Called once when a knob mthpd manages was changed by someone else. */
typedef void (*mthp_foreign_cb)(void *user, const struct mthp_knob *k, const char *ours, const char *theirs);

/* h and caps must outlive it. -ENAMETOOLONG when state_dir leaves no room
 * for the journal's name (never a cut path). */
int mthp_actuator_new(const struct mthp_host *h, const struct mthp_caps *caps, const char *state_dir, bool observing,
                      struct mthp_actuator **ret);
/* NULL is fine. */
void mthp_actuator_free(struct mthp_actuator *a);
/* on_change: every write (and, observing, every write it would make). */
void mthp_actuator_set_hooks(struct mthp_actuator *a, mthp_change_cb on_change, mthp_foreign_cb on_foreign,
                             void *user);
/* Observing (dry run): writes are logged and simulated, never made. */
bool mthp_actuator_observing(const struct mthp_actuator *a);
void mthp_actuator_set_observing(struct mthp_actuator *a, bool observing);
/* Forget the simulated values, so observing starts from the host as it is. */
void mthp_actuator_forget_simulated(struct mthp_actuator *a);
const char *mthp_actuator_journal_file(const struct mthp_actuator *a);
const struct mthp_journal *mthp_actuator_journal(const struct mthp_actuator *a);
/* The history ring: the last changes, at most MTHP_HISTORY_MAX;
 * mthp_actuator_history(a, 0, ...) is the oldest kept, n - 1 the newest.
 * *observing (may be NULL): made while observing, so not written. */
unsigned mthp_actuator_n_history(const struct mthp_actuator *a);
const struct mthp_change *mthp_actuator_history(const struct mthp_actuator *a, unsigned i, bool *observing);

/* The one function that writes a knob. value "" means "give it back its
 * original value". Journals the original before the first write, validates
 * against the accepted values, writes, reads back, records old->new and the
 * reason. Returns 1 if it changed the knob, 0 if nothing needed doing (or
 * dry run), negative errno on failure; err gets a sentence naming the knob,
 * the value and the kernel's errno in words. */
int mthp_knob_write(struct mthp_actuator *a, int knob, const char *value, const char *reason,
                    char *err, size_t errsz);

/* Whether the knobs can be written at all, found out without changing one:
 * the THP directory's mount (statvfs ST_RDONLY, through the host root), then
 * opening a knob for writing (sysfs refuses EROFS and EACCES at open) and,
 * unless observing, writing a knob's current value back to it (global/defrag:
 * its store has no side effects; a writer that refuses only at write(2) is
 * caught there). Returns 0, or -EROFS/-EACCES/-EPERM with a phrase in why
 * naming the path and the reason ("/sys/...: read-only file system (EROFS)
 * ..."); other errors (a knob that is busy, say) are not the mount's and
 * return 0: the writes say them when they happen. */
int mthp_actuator_check_writable(const struct mthp_actuator *a, char *why, size_t size);

/* Compare every managed knob with what mthpd wrote; a difference means
 * another writer: stop managing that knob (state foreign). Returns the
 * number of knobs newly found foreign. */
int mthp_actuator_check_foreign(struct mthp_actuator *a, const char current[][MTHP_VALUE_MAX]);
bool mthp_actuator_is_foreign(const struct mthp_actuator *a, int knob);
/* Manage a foreign knob again. The value the other writer set is what the
 * administrator now wants as the baseline: mthpd forgets the knob's journal
 * entry, so the next write journals the value it finds as the original, and
 * a restore goes back to it (original := current, state managed). Returns 0,
 * -ENOENT if the knob is not foreign, or the journal's save error (the knob
 * then stays foreign). */
int mthp_actuator_resume(struct mthp_actuator *a, int knob);
/* Put back every managed knob of the journal file whose current value is still what mthpd wrote.
 * Knobs changed by someone else are left alone (and reported). Restores
 * per-size knobs, then global ones, then per-size knobs again (the kernel
 * rejects per-size shmem "inherit" while the global value is "force", and
 * global "force" while a non-PMD size inherits). Removes the journal when
 * everything is back, else keeps what is left. A journal whose root= is not
 * the host h (a --root run's) is not applied and kept as it is: -EXDEV.
 * Returns the number of knobs that could not be restored (0 = all good) or
 * a negative errno; *n_restored: knobs put back. */
int mthp_actuator_restore_file(const struct mthp_host *h, const char *file, unsigned *n_restored);
/* A burst of step-downs (the limited-cgroup guard): between begin (on) and
 * end (off), a write back to a knob's original value saves no journal; end
 * saves it once. Safe: a journal that still lists a knob whose kernel value
 * is the original again restores nothing harmful (it writes the original).
 * Measured: the guard's 8 size knobs took 70 ms, one fsync'd save each,
 * under load on this VM's ext4. Returns 0 or the save's error. */
int mthp_actuator_batch(struct mthp_actuator *a, bool on);
/* Restore all managed knobs (clean stop). Returns failures or -errno. */
int mthp_actuator_restore(struct mthp_actuator *a);

/* Who set a knob, for status: "original", "mthpd", "other". */
const char *mthp_knob_owner(const struct mthp_journal *j, const struct mthp_knob *k, const char *current);
