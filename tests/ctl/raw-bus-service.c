/* SPDX-License-Identifier: MIT */
/* A stand-in for mthpd on the (private) system bus that does not escape:
 * what an mthpd from before issue 13 sends while a newer mthpctl asks it
 * (the daemon keeps running across a package upgrade), or any service
 * that got the name. It answers GetAll, ListKnobs (none), Explain and
 * History with the text given, byte for byte, so that the tests see what
 * mthpctl itself makes of a comm or cgroup name with ESC[2J or a newline.
 *
 * Usage: raw-bus-service TEXT   (runs until killed; prints "ready" once it
 * owns the name). TEXT is the reason of every decision and change, and
 * NotWritable. The fault rates are no numbers JSON has (NaN, infinity) and
 * FaultCostNSec is a string: mthpctl must show none of them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "mthp/dbus.h"

static const char *text;

static int get_s(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply,
                 void *userdata, sd_bus_error *error) {
        (void) bus, (void) path, (void) iface, (void) userdata, (void) error;
        if (prop[0] == 'V')
                return sd_bus_message_append(reply, "s", "raw");
        if (prop[0] == 'M')
                return sd_bus_message_append(reply, "s", "manage");
        return sd_bus_message_append(reply, "s", text);
}

static int get_t(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply,
                 void *userdata, sd_bus_error *error) {
        (void) bus, (void) path, (void) iface, (void) prop, (void) userdata, (void) error;
        return sd_bus_message_append(reply, "t", (uint64_t) 7);
}

static int get_d(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply,
                 void *userdata, sd_bus_error *error) {
        (void) bus, (void) path, (void) iface, (void) userdata, (void) error;
        if (strcmp(prop, MTHP_DBUS_PROP_RAISE_RATE) == 0)
                return sd_bus_message_append(reply, "d", NAN);
        if (strcmp(prop, MTHP_DBUS_PROP_LOWER_RATE) == 0)
                return sd_bus_message_append(reply, "d", INFINITY);
        return sd_bus_message_append(reply, "d", 1.0);
}

static int list_knobs(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        (void) userdata, (void) error;
        return sd_bus_reply_method_return(m, "a" MTHP_DBUS_KNOB_SIG, 0);
}

static int explain(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        (void) userdata, (void) error;
        return sd_bus_reply_method_return(m, "a" MTHP_DBUS_DECISION_SIG, 1, "64K/anon", "always", text);
}

static int history(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        (void) userdata, (void) error;
        return sd_bus_reply_method_return(m, "a" MTHP_DBUS_CHANGE_SIG, 1, (uint64_t) 1700000000000000ULL,
                                          "64K/anon", "never", "always", text, 0);
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_VERSION, "s", get_s, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_MODE, "s", get_s, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_NOT_WRITABLE, "s", get_s, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_INTERVAL, "t", get_t, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_TICK, "t", get_t, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_CHANGES, "t", get_t, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_FAULT_RATE, "d", get_d, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_RAISE_RATE, "d", get_d, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_LOWER_RATE, "d", get_d, 0, 0),
        SD_BUS_PROPERTY(MTHP_DBUS_PROP_FAULT_COST, "s", get_s, 0, 0),
        SD_BUS_METHOD(MTHP_DBUS_LIST_KNOBS, "", "a" MTHP_DBUS_KNOB_SIG, list_knobs, 0),
        SD_BUS_METHOD(MTHP_DBUS_EXPLAIN, MTHP_DBUS_EXPLAIN_ARGS, "a" MTHP_DBUS_DECISION_SIG, explain, 0),
        SD_BUS_METHOD(MTHP_DBUS_HISTORY, MTHP_DBUS_HISTORY_ARGS, "a" MTHP_DBUS_CHANGE_SIG, history, 0),
        SD_BUS_VTABLE_END,
};

int main(int argc, char **argv) {
        sd_bus *bus = NULL;
        int r;
        if (argc != 2) {
                fprintf(stderr, "usage: raw-bus-service TEXT\n");
                return 2;
        }
        text = argv[1];
        if ((r = sd_bus_open_system(&bus)) < 0 ||
            (r = sd_bus_add_object_vtable(bus, NULL, MTHP_DBUS_PATH, MTHP_DBUS_INTERFACE, vtable, NULL)) < 0 ||
            (r = sd_bus_request_name(bus, MTHP_DBUS_NAME, 0)) < 0) {
                fprintf(stderr, "raw-bus-service: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                if ((r = sd_bus_process(bus, NULL)) < 0)
                        break;
                if (r == 0 && (r = sd_bus_wait(bus, UINT64_MAX)) < 0)
                        break;
        }
        fprintf(stderr, "raw-bus-service: %s\n", strerror(-r));
        sd_bus_flush_close_unref(bus);
        return 1;
}
