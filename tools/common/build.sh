# Sourced by tools/test and tools/demo. ccache (used by CMake when installed,
# NDGC_CCACHE) shares hits between build folders and fresh clones of the
# tree: paths under the tree are hashed relative to it (base_dir) and the
# build folder itself is not hashed, so a clean clone elsewhere reuses what
# an earlier build compiled. Room for every phase's objects (about 6 GB).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"

# build_checked DIR [cmake --build arguments...]: builds with JOBS jobs and
# fails on any compiler warning (a build prints none; third-party headers are
# silenced at their include). ccache replays a cached compile's warnings, so
# a warm cache still counts them. The output is kept in DIR/build-output.log.
build_checked() {
  local dir=$1; shift
  local log="$dir/build-output.log" pattern='(^|: )warning[: ]|: warning #'
  set -o pipefail
  cmake --build "$dir" -j "${JOBS:-$(nproc)}" "$@" 2>&1 | tee "$log" || return 1
  local warnings
  warnings=$(grep -cE "$pattern" "$log" || true)
  if [[ "$warnings" != 0 ]]; then
    echo "build: $warnings compiler warning(s) building $dir (all in $log):" >&2
    grep -E "$pattern" "$log" | head -20 >&2
    return 1
  fi
}
