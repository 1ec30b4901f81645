/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include "mthp/host.h"
#include "mthp/types.h"

/* Probe what this host offers. Fails (-ENOENT) only if there is no THP sysfs. */
int mthp_probe(const struct mthp_host *h, struct mthp_caps *caps);
/* A kernel without per-size mTHP knobs (no hugepages-<N>kB/enabled: before
 * Linux 6.8, Debian 12's 6.1): fills why with a warning naming this
 * kernel's release (/proc/sys/kernel/osrelease) and the kernels that have
 * them, and returns true; false when caps has an mTHP size. */
bool mthp_probe_no_mthp(const struct mthp_host *h, const struct mthp_caps *caps, char *why, size_t size);
/* One human line per fact, for the startup log. */
int mthp_caps_describe(const struct mthp_caps *caps, char *buf, size_t size);


/* Parse a selection file "always [madvise] never": fills the accepted values
 * (if allowed != NULL) and the selected one. -EBADMSG if none is selected. */
int mthp_knob_parse(const char *text, char selected[MTHP_VALUE_MAX],
                    char allowed[][MTHP_VALUE_MAX], unsigned *n_allowed);
/* A knob's value from the text of its file, by its type: the selected word,
 * or the number. -EBADMSG if the text is not of that form. */
int mthp_knob_value(const struct mthp_knob *k, const char *text, char value[MTHP_VALUE_MAX]);
/* A plain unsigned number file ("409\n"): its value. -EBADMSG otherwise. */
int mthp_number_parse(const char *text, char value[MTHP_VALUE_MAX]);
/* Read the selected value of a knob now. */
int mthp_knob_read(const struct mthp_host *h, const struct mthp_knob *k, char value[MTHP_VALUE_MAX]);
