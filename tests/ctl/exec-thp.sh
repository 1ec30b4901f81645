#!/bin/bash
# mthpctl exec --thp=disable|except-advised|inherit on the real kernel: the
# child's /proc/self/status THP_enabled and PR_GET_THP_DISABLE say what it
# got. The refusal of an older kernel comes from a prctl shim (this kernel
# has every policy): a clear sentence, exit 1, CMD not run.
# Env: MTHPCTL, PRCTL_SHIM (paths from meson).
set -euo pipefail
T=$(mktemp -d /tmp/exec-thp.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }
expect_rc() {
        local want=$1 rc=0; shift
        "$@" >"$T/out" 2>"$T/err" || rc=$?
        OUT=$(cat "$T/out") ERR=$(cat "$T/err")
        [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; stdout: $OUT; stderr: $ERR"
}
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
grep -q "^THP_enabled:" /proc/self/status || { echo "SKIP: this kernel has no THP_enabled in /proc/PID/status"; exit 77; }
GET='import ctypes; print(ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))'   # PR_GET_THP_DISABLE
# does this kernel take PR_THP_DISABLE_EXCEPT_ADVISED (1<<1)? (a child, so this shell keeps its policy)
if ! python3 -c 'import ctypes,sys; sys.exit(ctypes.CDLL(None).prctl(41, 1, 2, 0, 0) != 0)'; then
        echo "SKIP: kernel $(uname -r) lacks PR_THP_DISABLE_EXCEPT_ADVISED (6.18+): the real-kernel half cannot run"
        exit 77
fi

expect_rc 0 "$MTHPCTL" exec --thp=disable -- python3 -c "$GET"
[ "$OUT" = 1 ] || fail "disable: PR_GET_THP_DISABLE = $OUT"
expect_rc 0 "$MTHPCTL" exec --thp=disable -- grep THP_enabled /proc/self/status
grep -Eq "THP_enabled:\s+0" <<<"$OUT" || fail "disable: $OUT"
ok "--thp=disable: THP_enabled 0"

expect_rc 0 "$MTHPCTL" exec --thp=except-advised -- python3 -c "$GET"
[ "$OUT" = 3 ] || fail "except-advised: PR_GET_THP_DISABLE = $OUT, expected 3 (1|EXCEPT_ADVISED)"
expect_rc 0 "$MTHPCTL" exec --thp=except-advised -- grep THP_enabled /proc/self/status
grep -Eq "THP_enabled:\s+1" <<<"$OUT" || fail "except-advised: $OUT"
# a child of the child keeps it (fork + exec)
expect_rc 0 "$MTHPCTL" exec --thp=except-advised -- sh -c 'python3 -c "$1"' sh "$GET"
[ "$OUT" = 3 ] || fail "except-advised not inherited: $OUT"
ok "--thp=except-advised: PR_GET_THP_DISABLE 3, THP_enabled 1, inherited"

expect_rc 0 "$MTHPCTL" exec --thp=disable -- "$MTHPCTL" exec --thp=inherit -- python3 -c "$GET"
[ "$OUT" = 0 ] || fail "inherit after disable: $OUT"
expect_rc 0 "$MTHPCTL" exec --thp=except-advised -- "$MTHPCTL" exec --thp=inherit -- grep THP_enabled /proc/self/status
grep -Eq "THP_enabled:\s+1" <<<"$OUT" || fail "inherit after except-advised: $OUT"
ok "--thp=inherit clears an inherited policy"

expect_rc 2 "$MTHPCTL" exec --thp=always -- true
grep -q "disable, except-advised or inherit" <<<"$ERR" || fail "bad --thp message: $ERR"
ok "an unknown policy is a usage error"

[ -n "${PRCTL_SHIM:-}" ] && [ -e "$PRCTL_SHIM" ] || { echo "SKIP: no prctl shim for the error path"; exit 77; }
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
expect_rc 1 env LD_PRELOAD="$PRCTL_SHIM" MTHP_TEST_KERNEL=6.17 "$MTHPCTL" exec --thp=except-advised -- touch "$T/ran"
[ ! -e "$T/ran" ] || fail "CMD ran although the kernel refused the policy"
grep -q "does not offer --thp=except-advised: THP for madvised memory only (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18); not running touch" <<<"$ERR" ||
        fail "refusal message: $ERR"
expect_rc 0 env LD_PRELOAD="$PRCTL_SHIM" MTHP_TEST_KERNEL=6.17 "$MTHPCTL" exec --thp=disable -- python3 -c "$GET"
[ "$OUT" = 1 ] || fail "disable under 6.17: $OUT"
expect_rc 1 env LD_PRELOAD="$PRCTL_SHIM" MTHP_TEST_KERNEL=3.14 "$MTHPCTL" exec --thp=inherit -- true
grep -q "does not offer --thp=inherit" <<<"$ERR" || fail "3.14 message: $ERR"
ok "a kernel without the policy: one sentence, exit 1, CMD not run"
