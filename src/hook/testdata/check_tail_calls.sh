#!/bin/sh
# check_tail_calls.sh OBJDUMP LIBRARY FUNCTION...
#
# Each FUNCTION of LIBRARY must reach the real function by an indirect jump (the guaranteed tail
# call of interpose/tail_call.h) and make no indirect call: glibc's dlsym/dlopen/dlmopen take the
# caller's identity from the return address, which a call from libfgpu would replace.
objdump=$1
library=$2
shift 2
status=0
for function in "$@"; do
  body=$("$objdump" -d --no-show-raw-insn "$library" | awk -v header="<$function>:" '$2 == header {on = 1; next} on && /^$/ {exit} on')
  if [ -z "$body" ]; then
    echo "$function: not found in $library"
    status=1
  elif ! printf '%s\n' "$body" | grep -Eq 'jmp +\*%'; then
    echo "$function: no indirect jump (the real function is not tail-called):"
    printf '%s\n' "$body"
    status=1
  elif printf '%s\n' "$body" | grep -Eq 'call +\*'; then
    echo "$function: calls through a pointer (the real function would see libfgpu as its caller):"
    printf '%s\n' "$body"
    status=1
  else
    echo "$function: tail call"
  fi
done
exit $status
