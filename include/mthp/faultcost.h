/* SPDX-License-Identifier: MIT */
#pragma once
/* The CPU time of one base-page fault, measured on the machine this runs on
 * (mthpd.conf(5) FaultCost=auto). It writes one byte to each page of a
 * fresh MADV_NOHUGEPAGE private anonymous mapping of MTHP_FAULT_COST_PAGES
 * pages and reads the thread's CPU clock around the loop, fault, zeroing
 * and charge included; the median of MTHP_FAULT_COST_ROUNDS rounds. About
 * 1 us a fault on a server, 11 us on this project's VM: 1,280 faults cost
 * 1.3 to 15 ms of mthpd's start. */
#define MTHP_FAULT_COST_PAGES 256
#define MTHP_FAULT_COST_ROUNDS 5
/* A measured cost above this is a stall (reclaim, a descheduled vCPU's
 * steal counted as ours), not a fault: mthpd discards it. */
#define MTHP_FAULT_COST_MAX_NS 1e6

/* 0 and *ns > 0, or a negative errno (mmap refused, no CPU clock). */
int mthp_fault_cost_measure(double *ns);
