# The shell tests' one pass/fail helper (sourced: source "<dir>/tests/checks.sh").
#   ok                          one check held
#   fail MESSAGE...             one check failed: prints "FAIL: MESSAGE"
#   holds MESSAGE COMMAND...    ok when COMMAND succeeds, else fail MESSAGE
#   finish                      prints "N passed, N failed" and returns non-zero when
#                               a check failed: a script's last line is `finish`
passed=0 failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
holds() {
  local message=$1; shift
  if "$@"; then ok; else fail "$message"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}
