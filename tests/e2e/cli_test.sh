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

case_unknown_command() {
  run_fgpu stauts
  expect_status 2
  [ "$ERR" = "fgpu: unknown command 'stauts'; did you mean 'status'?" ] || fail "unexpected message: $ERR"
  run_fgpu sim stat
  expect_status 2
  expect_err_contains "fgpu sim: unknown command 'stat'; did you mean 'status'?"
  run_fgpu frobnicate
  expect_status 2
  expect_err_contains "the commands are sim, run"
  run_fgpu slice
  expect_status 2
  expect_err_contains "a command is required: list, show, resize or delete"
}

case_unknown_option() {
  run_fgpu run --memroy 4GiB -- true
  expect_status 2
  [ "$ERR" = "fgpu run: unknown option '--memroy'; did you mean '--memory'?" ] || fail "unexpected message: $ERR"
  run_fgpu status --jsno
  expect_status 2
  expect_err_contains "did you mean '--json'?"
  run_fgpu sim status --bogus
  expect_status 2
  expect_err_contains "run \`fgpu help sim status\` for its options"
}

case_help_command() {
  run_fgpu help
  expect_status 0
  for command in sim run status top report slice agent version help; do expect_out_contains "  $command "; done
  expect_out_contains "Exit status"
  run_fgpu help run
  expect_status 0
  expect_out_contains "Usage: fgpu run"
  expect_out_contains "--memory"
  expect_out_contains "CUDA context"
  run_fgpu help slice resize
  expect_status 0
  expect_out_contains "Usage: fgpu slice resize"
  run_fgpu help stauts
  expect_status 2
  expect_err_contains "did you mean 'status'?"
}

case_version_flag() {
  run_fgpu --version
  expect_status 0
  VERSION_FLAG=$OUT
  run_fgpu version
  expect_out "$VERSION_FLAG"
}

case_choices() {
  run_fgpu run --tier fast -- true
  expect_status 2
  expect_err_contains "{latency,standard,batch}"
  run_fgpu run --compute-mode hard -- true
  expect_status 2
  expect_err_contains "{cap,share}"
  run_fgpu agent --policy Fastest
  expect_status 2
  expect_err_contains "FGD+"
  for command in "run" "agent" "simulate" "slice resize"; do
    # shellcheck disable=SC2086
    run_fgpu help $command
    expect_status 0
  done
  run_fgpu help run
  expect_out_contains "latency, standard, batch"
  expect_out_contains "cap (never more"
  run_fgpu help agent
  expect_out_contains "one of: Random"
}

# Sizes and endpoints: 4G, 4Gi and 4GiB alike; localhost where an address is. Without an agent
# these fail at run time (exit 1) only after the words were accepted.
case_sizes() {
  for size in 4G 4Gi 4GiB 4g; do
    run_fgpu run --agent "$SCRATCH/none.sock" --memory "$size" -- true
    expect_status 1
    expect_err_contains "no agent answers"
  done
  # A malformed word is a usage error before any agent is looked for.
  run_fgpu run --agent "$SCRATCH/none.sock" --memory 4X -- true
  expect_status 2
  expect_err_contains "4X"
  run_fgpu run --agent "$SCRATCH/none.sock" --memory 1G --compute 0 -- true
  expect_status 2
  run_fgpu status --agent localhost:1
  expect_status 1
  expect_err_contains "127.0.0.1:1"
  run_fgpu status --agent localhost:port
  expect_status 2
  expect_err_contains "localhost:PORT"
  run_fgpu agent --listen 0.0.0.0:7070
  expect_status 2
  expect_err_contains "loopback only"
}

case_run_agent_needs_the_socket() {
  run_fgpu run --agent 127.0.0.1:7070 --memory 1GiB -- true
  expect_status 2
  expect_err_contains "needs the agent's Unix socket"
  expect_err_contains "/var/lib/fgpu/agent.sock"
  export FGPU_AGENT=localhost:7070
  run_fgpu run --memory 1GiB -- true
  unset FGPU_AGENT
  expect_status 2
  run_fgpu help run
  case "$OUT" in *"127.0.0.1:PORT"*) fail "fgpu run's help still offers TCP: $OUT" ;; esac
}

# The option names of a help text's Options: section (not its examples).
options_of() {
  sed -n '/^Options:/,/^$/p' | grep -o -- '^ *\(-[a-zA-Z],\)\?--[a-z][a-z-]*' | grep -o -- '--[a-z-]*'
}

# The commands `fgpu help` lists, and for each the options its help lists (with a group's leaves).
every_command_and_option() {
  "$FGPU" help | sed -n '/^Subcommands:/,/^$/p' | awk 'NF && $1 != "Subcommands:" {print $1}' >"$SCRATCH/commands"
  [ -s "$SCRATCH/commands" ] || fail "fgpu help lists no command"
  : >"$SCRATCH/words"
  while read -r command; do
    echo "$command" >>"$SCRATCH/words"
    "$FGPU" help "$command" >"$SCRATCH/help" || fail "fgpu help $command"
    sed -n '/^Subcommands:/,/^$/p' "$SCRATCH/help" | awk 'NF && $1 != "Subcommands:" {print $1}' >"$SCRATCH/subs"
    while read -r sub; do
      echo "$sub" >>"$SCRATCH/words"
      "$FGPU" help "$command" "$sub" | options_of >>"$SCRATCH/words"
    done <"$SCRATCH/subs"
    options_of <"$SCRATCH/help" >>"$SCRATCH/words"
  done <"$SCRATCH/commands"
  sort -u "$SCRATCH/words" -o "$SCRATCH/words"
}

# missing_in FILE: the words of $SCRATCH/words that FILE does not contain (one awk, not a grep
# per word: the word list is hundreds long).
missing_in() {
  awk 'NR == FNR { text = text $0 "\n"; next } index(text, $0) == 0' "$1" "$SCRATCH/words"
}

# The completions and the man page cover every command and option `fgpu help` lists (one case:
# listing them runs the CLI once per command, which is most of its time).
case_completion_and_man_page() {
  every_command_and_option
  completion
  man_page
}

completion() {
  run_fgpu completion bash
  expect_status 0
  printf '%s\n' "$OUT" >"$SCRATCH/fgpu.bash"
  bash -n "$SCRATCH/fgpu.bash" || fail "the bash completion does not parse"
  run_fgpu completion zsh
  expect_status 0
  printf '%s\n' "$OUT" >"$SCRATCH/fgpu.zsh"
  head -n 1 "$SCRATCH/fgpu.zsh" | grep -q '^#compdef fgpu' || fail "the zsh completion lacks #compdef"
  if command -v zsh >/dev/null 2>&1; then zsh -n "$SCRATCH/fgpu.zsh" || fail "the zsh completion does not parse"; fi
  [ -z "$(missing_in "$SCRATCH/fgpu.bash")" ] || fail "the bash completion lacks: $(missing_in "$SCRATCH/fgpu.bash")"
  [ -z "$(missing_in "$SCRATCH/fgpu.zsh")" ] || fail "the zsh completion lacks: $(missing_in "$SCRATCH/fgpu.zsh")"
  # What bash offers at the cursor.
  offered() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fgpu; echo "${COMPREPLY[*]}"' _ "$SCRATCH/fgpu.bash" "$@"
  }
  [ "$(offered fgpu stat)" = "status" ] || fail "fgpu stat<TAB>: $(offered fgpu stat)"
  [ "$(offered fgpu run --tier '')" = "latency standard batch" ] || fail "--tier <TAB>: $(offered fgpu run --tier '')"
  [ "$(offered fgpu run --mem)" = "--memory" ] || fail "--mem<TAB>: $(offered fgpu run --mem)"
  [ "$(offered fgpu slice '')" = "list show resize delete" ] || fail "slice <TAB>: $(offered fgpu slice '')"
  [ "$(offered fgpu run --memory 4G --wa)" = "--wait" ] || fail "a value is skipped: $(offered fgpu run --memory 4G --wa)"
  run_fgpu completion fish
  expect_status 2
}

man_page() {
  run_fgpu man
  expect_status 0
  printf '%s\n' "$OUT" >"$SCRATCH/fgpu.1"
  head -n 2 "$SCRATCH/fgpu.1" | grep -q '^\.TH FGPU 1' || fail "no .TH line: $(head -n 2 "$SCRATCH/fgpu.1")"
  sed 's/\\-/-/g' "$SCRATCH/fgpu.1" >"$SCRATCH/plain"
  [ -z "$(missing_in "$SCRATCH/plain")" ] || fail "the man page lacks: $(missing_in "$SCRATCH/plain")"
  if command -v groff >/dev/null 2>&1; then
    warnings=$(groff -man -Tutf8 -ww "$SCRATCH/fgpu.1" 2>&1 >/dev/null)
    [ -z "$warnings" ] || fail "groff warns: $warnings"
  fi
}

run_case "$@"
