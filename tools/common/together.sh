# Sourced by tools/test (and its test, tests/tools/ci_scripts_test.cpp).
# together SLOTS TASK...: runs the commands TASK... (each one string, split
# on spaces) at most SLOTS at a time, in the order given, and prints each
# one's output whole when it ends, so that two tasks' lines never
# interleave. Fails, after all have ended, when any one failed.
#
# Each task's subshell writes its exit status to a file as its last act, and
# that file, not `wait`, says it has ended: bash 5.2's `wait -n` answers 127
# with no PID for a child that ended before the call (a task that fails at
# once), which lost that task's output and status.
together() {
  local slots=$1; shift
  local -a tasks=("$@") active=() still=()
  local logs next=0 failed=0 i rc words
  logs=$(mktemp -d)
  while (( next < ${#tasks[@]} || ${#active[@]} > 0 )); do
    while (( next < ${#tasks[@]} && ${#active[@]} < slots )); do
      read -ra words <<<"${tasks[next]}"
      # The status is taken with ||: under the caller's `set -e` (tools/test)
      # a failing task would otherwise end the subshell before it is written.
      ( rc=0; "${words[@]}" >"$logs/$next.out" 2>&1 || rc=$?; echo "$rc" >"$logs/$next.tmp"; mv "$logs/$next.tmp" "$logs/$next.rc" ) &
      active+=("$next")
      next=$((next + 1))
    done
    still=()
    for i in "${active[@]}"; do
      if [[ ! -f $logs/$i.rc ]]; then still+=("$i"); continue; fi
      cat "$logs/$i.out"
      rc=$(<"$logs/$i.rc")
      if [[ $rc != 0 ]]; then echo "tools/test: '${tasks[i]}' failed (exit $rc)" >&2; failed=1; fi
    done
    if (( ${#still[@]} == ${#active[@]} )); then wait -n 2>/dev/null || sleep 0.05; fi
    active=("${still[@]}")
  done
  wait
  rm -rf "$logs"
  return "$failed"
}
