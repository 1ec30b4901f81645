/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>
#include "mthp/types.h"

/* Fixed MESSAGE_ID of knob-change entries: journalctl MESSAGE_ID=... lists
 * the history of every change mthpd made. */
#define MTHP_MESSAGE_CHANGE "6f2a1c3e9b8d4d0f8a5e7c1b2d3f4a5b"
#define MTHP_MESSAGE_FOREIGN "0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f"
/* ...and of failures to read or write a knob (with MTHP_KNOB=): journalctl
 * MESSAGE_ID=... lists every knob mthpd could not set or restore. */
#define MTHP_MESSAGE_KNOB_FAILED "3e5b7a91c2d44f6e8a0b1c9d7f2e4a68"

/* Log to the journal (when stderr is connected to it) or stderr. Macros, so
 * that the journal's CODE_FILE=, CODE_LINE= and CODE_FUNC= name the caller,
 * not this wrapper. mthp_log_knob() is for a knob that could not be read or
 * written: its entry carries MESSAGE_ID=MTHP_MESSAGE_KNOB_FAILED and
 * MTHP_KNOB=knob_id. */
void mthp_log_init(const char *ident, bool verbose);
#define MTHP_LOG_STR_(x) #x
#define MTHP_LOG_STR(x) MTHP_LOG_STR_(x)
#define MTHP_LOG_WHERE "CODE_FILE=" __FILE__, "CODE_LINE=" MTHP_LOG_STR(__LINE__), __func__
#define mthp_log(prio, ...) mthp_log_at(MTHP_LOG_WHERE, NULL, prio, __VA_ARGS__)
#define mthp_log_knob(prio, knob_id, ...) mthp_log_at(MTHP_LOG_WHERE, knob_id, prio, __VA_ARGS__)
void mthp_log_at(const char *code_file, const char *code_line, const char *func, const char *knob_id, int prio,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define mthp_log_change(c, observing) mthp_log_change_at(MTHP_LOG_WHERE, c, observing)
#define mthp_log_foreign(k, ours, theirs) mthp_log_foreign_at(MTHP_LOG_WHERE, k, ours, theirs)
void mthp_log_change_at(const char *code_file, const char *code_line, const char *func, const struct mthp_change *c,
                        bool observing);
/* A knob put back from the restore journal: the same fields as a change
 * (MESSAGE_ID=MTHP_MESSAGE_CHANGE, MTHP_KNOB=...), "restored ID: ..." */
#define mthp_log_restored(c) mthp_log_restored_at(MTHP_LOG_WHERE, c)
void mthp_log_restored_at(const char *code_file, const char *code_line, const char *func,
                          const struct mthp_change *c);
void mthp_log_foreign_at(const char *code_file, const char *code_line, const char *func, const struct mthp_knob *k,
                         const char *ours, const char *theirs);
/* strerror that names what went wrong in a way an admin can act on */
const char *mthp_errno_words(int err);
