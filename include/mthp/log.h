/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>
#include "mthp/actuator.h"

/* Fixed MESSAGE_ID of knob-change entries: journalctl MESSAGE_ID=... lists
 * the history of every change mthpd made. */
#define MTHP_MESSAGE_CHANGE "6f2a1c3e9b8d4d0f8a5e7c1b2d3f4a5b"
#define MTHP_MESSAGE_FOREIGN "0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f"

/* Log to the journal (when stderr is connected to it) or stderr. */
void mthp_log_init(const char *ident, bool verbose);
void mthp_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mthp_log_change(const struct mthp_change *c, bool dry_run);
void mthp_log_foreign(const struct mthp_knob *k, const char *ours, const char *theirs);
/* strerror that names what went wrong in a way an admin can act on */
const char *mthp_errno_words(int err);
