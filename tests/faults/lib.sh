# shellcheck shell=bash
# Fault injection helpers on top of tests/lib/fakehost.sh (sourced).
# Each scenario prints "PASS: name" or "FAIL: name" per named check.
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/fakehost.sh"

THP=/sys/kernel/mm/transparent_hugepage
CHECKS=0

pass() { CHECKS=$((CHECKS + 1)); echo "PASS: $*"; }
# check NAME CMD...: PASS if CMD succeeds, else FAIL with the log tail and exit
check() {
        local name=$1; shift
        if "$@"; then pass "$name"; else fail "$name"; fi
}

# Every knob file of the fake THP tree with its content, one "path: content"
# line each (selection files in full, so the comparison is byte for byte).
knob_files() {
        local d=$ROOT$THP
        (cd "$d" && find . -type f \( -name enabled -o -name shmem_enabled -o -name defrag \
                -o -name use_zero_page -o -name khugepaged -prune -o -name 'max_ptes_*' \) \
                -not -path '*/stats/*' | LC_ALL=C sort | while read -r f; do
                        printf '%s: %s\n' "$f" "$(cat "$f")"
                done)
}
snapshot_knobs() { knob_files > "$1"; }
same_knobs() { # same_knobs SNAPSHOT: every knob file as in SNAPSHOT
        knob_files > "$T/now.knobs"
        if ! cmp -s "$1" "$T/now.knobs"; then
                diff "$1" "$T/now.knobs" >&2 || true
                return 1
        fi
}

alive() { [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; }
count() { grep -c -- "$1" "${2:-$LOG}" || true; }   # count LINES_MATCHING [FILE]

ctl() { LD_PRELOAD="$FAKESYSFS" "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 "$@"; }

# A key of a knob's journal entry ("" if it has no entry).
journal_key() { # journal_key ID KEY [FILE]
        local j=${3:-$STATE/restore.journal}
        [ -f "$j" ] || return 0
        awk -v id="[knob $1]" -v key="$2=" '$0 == id { on = 1; next } /^\[/ { on = 0 }
                on && index($0, key) == 1 { print substr($0, length(key) + 1) }' "$j" 2>/dev/null || true
}
# knob_consistent ID: journal, file and status agree (not half-applied)
knob_consistent() {
        local id=$1 file jw st
        # one copy of the journal (mthpd replaces it by rename: never half)
        rm -f "$T/journal.snap"
        cp "$STATE/restore.journal" "$T/journal.snap" 2>/dev/null || true
        file=$("$FAKEHOST" read "$ROOT" "$id" 2>/dev/null)
        jw=$(journal_key "$id" written "$T/journal.snap")
        # the journal is saved before each write: while a write is in flight
        # (or after a crash in between) the kernel may still hold 'previous'
        if [ -n "$jw" ] && [ "$jw" != "$file" ] && [ "$(journal_key "$id" previous "$T/journal.snap")" != "$file" ]; then
                echo "$id: journal says written=$jw, file holds $file" >&2; return 1
        fi
        # (no retries: mthpd writes knobs without O_TRUNC, so a knob never
        # reads empty, as on real sysfs)
        st=$(ctl --json status 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin)
k={x["id"]:x for x in d["knobs"]}; print(k[sys.argv[1]]["value"], k[sys.argv[1]]["set_by"])' "$id" 2>/dev/null) ||
                { echo "$id: mthpctl status failed" >&2; return 1; }
        if [ "${st% *}" != "$file" ]; then
                echo "$id: status says ${st% *}, file holds $file" >&2; return 1
        fi
        # explain (mthpd's decisions) names the value the knob holds, also
        # when the engine wanted another one and the write failed
        local ex
        ex=$(ctl explain "${id%%/*}" 2>/dev/null | sed -n "s|^$id: ||p")
        if [ -n "$ex" ] && [ "$ex" != "$file" ] && [ "$ex" != original ]; then
                # a write may have landed since: read the file again
                [ "$ex" = "$("$FAKEHOST" read "$ROOT" "$id" 2>/dev/null)" ] ||
                        { echo "$id: explain says $ex, file holds $file" >&2; return 1; }
        fi
        # set_by mthpd exactly when the journal holds the file's value
        if [ "$jw" = "$file" ] && [ "${st#* }" != mthpd ]; then echo "$id: status set_by ${st#* } but journaled" >&2; return 1; fi
        if [ -z "$jw" ] && [ "${st#* }" = mthpd ]; then echo "$id: status set_by mthpd without a journal entry" >&2; return 1; fi
        return 0
}
no_journal_entries() {
        [ ! -e "$STATE/restore.journal" ] && return 0
        ! grep -q '^\[knob' "$STATE/restore.journal" || { cat "$STATE/restore.journal" >&2; return 1; }
}
