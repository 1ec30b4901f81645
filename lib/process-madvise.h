/* SPDX-License-Identifier: MIT */
#pragma once

/* pidfd_open(2) and process_madvise(2) (Linux 5.10), with the advice
 * values mthpd gives another process, for the collapser and the
 * give-back: older headers lack some of them. */
#include <sys/mman.h>
#include <sys/syscall.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21         /* Linux 5.4 */
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25        /* Linux 6.1 */
#endif
