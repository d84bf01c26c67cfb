#!/usr/bin/env bash
# Instructions per steady-state MLP training step, ndgc against the
# hand-written Eigen loop (issue 16), counted by callgrind.
#
#   perf/callgrind_step.sh [steps]      (default 20; from the repository root)
#
# Builds Release with -march=x86-64-v3 in build-v3/ (Valgrind cannot run
# AVX-512, so not -march=native) and runs perf/step_driver under callgrind
# with collection switched on only around the measured steps. glibc's
# rep-string memset/memcpy are switched to vector loops (GLIBC_TUNABLES) so
# that both sides' copies are counted the same way. Prints instructions per
# step for ndgc (auto-close off and on) and Eigen, and the ratios; the
# callgrind.out.* files stay in build-v3/callgrind/ for callgrind_annotate.
set -euo pipefail
steps=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-v3
# ccache, where installed, is the build's own launcher (CMakeLists.txt).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNDGC_MARCH=x86-64-v3 -DNDGC_CUDA=OFF \
  -DNDGC_BUILD_PERF=ON -DNDGC_BUILD_TESTS=ON -DNDGC_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j2 --target step_driver >/dev/null
mkdir -p "$build/callgrind"
export GLIBC_TUNABLES=glibc.cpu.x86_rep_stosb_threshold=0xffffffffffff:glibc.cpu.x86_rep_movsb_threshold=0xffffffffffff

per_step() {  # mode -> instructions per step
  local out=$build/callgrind/callgrind.out.$1
  valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
    "$build/perf/step_driver" "$1" "$steps" >"$build/callgrind/$1.out" 2>"$build/callgrind/$1.log"
  # ndgc must count the allocator that ships, not the exact one of Memcheck runs.
  if [[ $1 != eigen ]] && grep -q '^host cache: 0 bytes' "$build/callgrind/$1.out"; then
    echo "callgrind_step.sh: $1 ran with exact allocations (no host block cache); not the shipped allocator" >&2
    exit 1
  fi
  local total
  total=$(sed -n 's/^summary: *//p' "$out")
  echo $((total / steps))
}

eigen=$(per_step eigen)
ndgc=$(per_step ndgc)
ndgc_ac=$(per_step ndgc-autoclose)
printf 'instructions per step (%d steps, callgrind, -O3 -march=x86-64-v3)\n' "$steps"
printf '  %-22s %10d\n' "hand-written Eigen" "$eigen" "ndgc" "$ndgc" "ndgc auto-close on" "$ndgc_ac"
awk -v e="$eigen" -v n="$ndgc" -v a="$ndgc_ac" 'BEGIN {
  printf "  ndgc / Eigen            %.3fx\n  ndgc auto-close / Eigen %.3fx\n", n / e, a / e }'
