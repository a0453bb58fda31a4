# cli_harness.sh: the unit-test runner ends a test at its first failed check,
# counts a crash as a failure with the closing line still printed, and runs
# every test it registers (tests/test_harness.c).
. "$(dirname "$0")/cli_lib.sh"
RT=${RUN_TESTS:-$PWD/build/run_tests}
TFM_TEST_HARNESS=check "$RT" harness_ >"$T/out" 2>"$T/err"
check "a failed check: exit 1" test $? = 1
check "a failed check ends its test (no crash after it)" test "$(tail -n 1 "$T/out")" = "2 passed, 1 failed"
check "... and names it" grep -q "^FAIL harness_failed_check_ends_test" "$T/err"
# (in a subshell whose stderr, where bash reports the crash, is dropped)
(TFM_TEST_HARNESS=crash "$RT" harness_ >"$T/out" 2>"$T/err"; echo $? >"$T/rc") 2>/dev/null
check "a crash: a failing exit" test "$(cat "$T/rc")" != 0
check "a crash: the closing line counts it" test "$(tail -n 1 "$T/out")" = "1 passed, 1 failed"
check "... and names the test" grep -q "^FAIL harness_crash_still_summarized (signal 11)" "$T/err"
TFM_TEST_HARNESS=many "$RT" harness_ >"$T/out" 2>"$T/err"
check "2000 more tests all run" test "$(tail -n 1 "$T/out")" = "2003 passed, 0 failed"
cli_summary
