# e2e: fgpu's command line as a whole: version, help, usage errors (exit status 2).
# Usage: sh cli_test.sh CASE
. "$(dirname "$0")/lib.sh"

case_version() {
  run_fgpu version
  expect_status 0
  case "$OUT" in "fgpu "[0-9]*.[0-9]*.[0-9]*) ;; *) fail "unexpected version line: $OUT" ;; esac
}

case_help() {
  run_fgpu --help
  expect_status 0
  for command in sim demo version; do expect_out_contains "$command"; done
  run_fgpu sim run --help
  expect_status 0
  expect_out_contains "--segment"
}

case_usage_errors() {
  run_fgpu
  expect_status 2
  run_fgpu no-such-command
  expect_status 2
  run_fgpu sim
  expect_status 2
  run_fgpu sim run
  expect_status 2
  expect_err_contains "command is required"
  run_fgpu sim run sh -c true
  expect_status 2
  expect_err_contains "after \`--\`"
  run_fgpu sim status --config
  expect_status 2
}

run_case "$@"
