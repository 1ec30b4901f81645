/* SPDX-License-Identifier: MIT */
/* An administrator's pins (Pin and Unpin on the bus): a pinned knob holds
 * its value whatever the engine decides, until Unpin or its time is up.
 * Part of the manager (daemon.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "mthp/log.h"
#include "mthp/util.h"

bool daemon_knob_pinned(const struct daemon *d, int knob) {
        return d->pin[knob].active;
}

static void pin_reason(const struct knob_pin *p, char *buf, size_t size) {
        char until[64] = "unpinned";
        if (p->until_usec) {
                time_t t = (time_t) (p->until_usec / 1000000);
                struct tm tm;
                if (!localtime_r(&t, &tm) || strftime(until, sizeof(until), "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                        snprintf(until, sizeof(until), "@%llu", (unsigned long long) t);
        }
        snprintf(buf, size, "pinned by uid %u until %s", (unsigned) p->uid, until);
}

void daemon_expire_pins(struct daemon *d) {
        uint64_t now = mthp_now_usec(CLOCK_REALTIME);
        for (unsigned i = 0; i < d->caps.n_knobs; i++) {
                struct knob_pin *p = &d->pin[i];
                if (!p->active || !p->until_usec || p->until_usec > now)
                        continue;
                char reason[MTHP_REASON_MAX];
                pin_reason(p, reason, sizeof(reason));
                mthp_log(LOG_NOTICE, "%s: the pin to '%s' expired (%s); the engine decides it again",
                         d->caps.knobs[i].id, p->value, reason);
                memset(p, 0, sizeof(*p));
        }
}

static void pin_decision(const struct daemon *d, int knob, struct mthp_decision *dec) {
        dec->knob = knob;
        mthp_strcpy(dec->value, sizeof(dec->value), d->pin[knob].value);
        pin_reason(&d->pin[knob], dec->reason, sizeof(dec->reason));
}

/* Remember what the engine chose, then let pins override it (also for
 * knobs the engine leaves alone). */
void daemon_apply_pins(struct daemon *d) {
        bool decided[MTHP_KNOBS_MAX] = { false };
        memset(d->engine_value, 0, sizeof(d->engine_value));
        for (int i = 0; i < d->n_decisions; i++) {
                struct mthp_decision *dec = &d->decisions[i];
                mthp_strcpy(d->engine_value[dec->knob], sizeof(d->engine_value[0]), dec->value);
                decided[dec->knob] = true;
                if (d->pin[dec->knob].active)
                        pin_decision(d, dec->knob, dec);
        }
        for (unsigned k = 0; k < d->caps.n_knobs && d->n_decisions < MTHP_KNOBS_MAX; k++)
                if (d->pin[k].active && !decided[k])
                        pin_decision(d, (int) k, &d->decisions[d->n_decisions++]);
}

int daemon_find_knob(const struct daemon *d, const char *id, char *err, size_t errsz) {
        int k = mthp_caps_find_knob(&d->caps, id);
        if (k < 0) {
                snprintf(err, errsz, "no knob '%s' on this host (knob ids look like 64K/anon, 2M/shmem, "
                         "global/defrag)", id);
                return -EINVAL;
        }
        return k;
}

int daemon_pin(struct daemon *d, const char *id, const char *value, uint64_t until_usec, uid_t uid, char *err,
               size_t errsz) {
        int k = daemon_find_knob(d, id, err, errsz);
        if (k < 0)
                return k;
        const struct mthp_knob *knob = &d->caps.knobs[k];
        if (!mthp_knob_allows(knob, value)) {
                char offered[MTHP_VALUES_MAX * (MTHP_VALUE_MAX + 2)] = "";
                for (unsigned i = 0; i < knob->n_allowed; i++) {
                        strcat(offered, i ? ", " : "");
                        strcat(offered, knob->allowed[i]);
                }
                snprintf(err, errsz, "%s does not accept '%s': this kernel offers %s", id, value, offered);
                return -EINVAL;
        }
        if (until_usec && until_usec <= mthp_now_usec(CLOCK_REALTIME)) {
                snprintf(err, errsz, "until (%llu, µs since the epoch) has passed; 0 pins until Unpin",
                         (unsigned long long) until_usec);
                return -EINVAL;
        }
        if (mthp_actuator_is_foreign(d->act, k)) {
                snprintf(err, errsz, "%s was changed by someone else and mthpd leaves it alone; Resume it first", id);
                return -EBUSY;
        }
        struct knob_pin pin = { .active = true, .until_usec = until_usec, .uid = uid };
        char reason[MTHP_REASON_MAX];
        mthp_strcpy(pin.value, sizeof(pin.value), value);
        pin_reason(&pin, reason, sizeof(reason));
        /* now, so that a value the kernel refuses fails the call */
        int r = daemon_knob_write(d, k, value, reason, err, errsz);
        if (r < 0) {
                mthp_log_knob(LOG_ERR, id, "pin by uid %u failed: %s", (unsigned) uid, err);
                return r;
        }
        d->pin[k] = pin;
        mthp_log(LOG_NOTICE, "%s: held at '%s', %s%s", id, value, reason,
                 mthp_actuator_observing(d->act) ? " (observing: applies once mthpd manages)" : "");
        return 0;
}

int daemon_unpin(struct daemon *d, const char *id, uid_t uid, char *err, size_t errsz) {
        int k = daemon_find_knob(d, id, err, errsz);
        if (k < 0)
                return k;
        if (!d->pin[k].active) {
                snprintf(err, errsz, "%s is not pinned", id);
                return -EINVAL;
        }
        mthp_log(LOG_NOTICE, "%s: unpinned by uid %u (was held at '%s'); the engine decides it from the next tick",
                 id, (unsigned) uid, d->pin[k].value);
        memset(&d->pin[k], 0, sizeof(d->pin[k]));
        return 0;
}
