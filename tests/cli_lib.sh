# cli_lib.sh: helpers for the shell tests of the real binary. Source it, call the
# checks, end with `cli_summary`, which prints "N passed, N failed".
# TFM is the binary under test; each test file gets a scratch dir in $T.
set -u
TFM=${TFM:-$PWD/tfm}
T=$(mktemp -d "${TMPDIR:-/tmp}/tfm-cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
# Results go to a file, so checks inside ( subshells ) count too.
RESULTS=$T/.results
: >"$RESULTS"

cli_ok()   { echo ok >>"$RESULTS"; }
cli_fail() { echo fail >>"$RESULTS"; echo "  FAIL: $*" >&2; }

# expect_exit CODE NAME -- CMD...: runs CMD, checks its exit code and, for a
# non-zero code, that stderr is exactly one line starting "tfm: ".
# The stderr text is left in $T/err, stdout in $T/out.
expect_exit() {
    local want=$1 name=$2; shift 3
    "$@" >"$T/out" 2>"$T/err" </dev/null
    local got=$?
    if [ "$got" != "$want" ]; then
        cli_fail "$name: exit $got, expected $want; stderr: $(head -c 300 "$T/err")"
        return 1
    fi
    if [ "$want" != 0 ]; then
        local lines
        lines=$(wc -l <"$T/err")
        if [ "$lines" != 1 ] || ! head -c 5 "$T/err" | grep -q '^tfm: '; then
            cli_fail "$name: stderr is not one 'tfm: ' line: $(head -c 300 "$T/err")"
            return 1
        fi
    fi
    cli_ok
}

# expect_err_line NAME TEXT: the last expect_exit's stderr equals TEXT exactly.
expect_err_line() {
    if [ "$(cat "$T/err")" = "$2" ]; then cli_ok
    else cli_fail "$1: stderr '$(cat "$T/err")', expected '$2'"; fi
}

# not CMD...: succeeds when CMD fails.
not() { ! "$@"; }

# until_true CMD...: runs CMD every 0.1 s until it succeeds; fails after two
# minutes (a bound for a run that is stuck, not a guess at the machine's speed).
until_true() {
    local _
    for _ in $(seq 1200); do "$@" && return 0; sleep 0.1; done
    return 1
}

# check NAME CMD...: passes when CMD succeeds.
check() {
    local name=$1; shift
    if "$@"; then cli_ok; else cli_fail "$name"; fi
}

cli_summary() {
    local passed failed
    passed=$(grep -c '^ok$' "$RESULTS")
    failed=$(grep -c '^fail$' "$RESULTS")
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
}

# linear_adam CONFIG > OUT: CONFIG without dropout and with Adam's eps (0.01)
# above every gradient of the mini runs, for comparing two runs that sum
# the same gradients in another order (threads, ranks, R-Drop's doubled
# batch). With the default eps 1e-9 Adam's step is about lr·sign(g) for every
# weight, so a gradient that is rounding noise (a ReLU that is all but dead,
# the key biases) takes a full step whose sign the summation order picks,
# and such runs part by up to 2% of a tensor within 40 steps on OpenBLAS's
# SkylakeX and Cooperlake kernels (0.00001% on Haswell's). With eps above
# the gradients the step is linear in them and rounding stays rounding:
# max_rel 2e-7 to 8e-7 on Haswell, SkylakeX and Cooperlake, checked < 1e-5.
# The peak lr is 10x to keep the steps of the default's size.
linear_adam() {
    sed 's/"dropout": 0.1/"dropout": 0.0/; s/"peak": 0.003 }/"peak": 0.03 }, "adam": { "eps": 0.01 }/' "$1"
}

