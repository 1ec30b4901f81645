/* SPDX-License-Identifier: MIT */
#pragma once

/* mthpd's D-Bus service: org.mthpd.Manager1 at /org/mthpd/mthpd1, name
 * org.mthpd.mthpd1 on the system bus (man/mthpd.dbus.5.scd). */

#include "daemon.h"
#include "mthp/actuator.h"
#include "mthp/dbus.h"


/* Connect to the system bus (DBUS_SYSTEM_BUS_ADDRESS when set), serve the
 * manager object from d->event and own the name. On failure it logs one
 * warning and returns a negative errno: mthpd then runs without D-Bus.
 * When the bus goes away later, it reconnects by itself (bounded backoff). */
int bus_open(struct daemon *d, struct bus **ret);
/* Flushes what is queued (signals), releases the name, closes. NULL is fine. */
void bus_free(struct bus *b);

/* Both do nothing without a bus (b NULL, or the bus went away). */
void bus_emit_knob_changed(struct bus *b, const struct mthp_change *c);
void bus_emit_property_changed(struct bus *b, const char *property);
