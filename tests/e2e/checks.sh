# Sourced by the end-to-end scripts: counted checks and the summary line
# that .ci/run and the reader look for.  A script may redefine fail() to
# print more (its log), as long as it counts.
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAILED: $1"; }
# The last command of a script: the summary, and its exit status.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
