// Helpers for the distributed suite, which runs twice: alone (a group of
// size 1) and under `mpirun -np 2`. Every rank runs the same test cases in
// the same order, so every collective below is made by every rank.
#pragma once

#include <ndgc/distributed.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc::test {

// The job's group, with a time-out short enough that a bug fails the test
// rather than hanging it (ctest's own limit is the last resort).
inline distributed::ProcessGroup group() {
  auto pg = distributed::ProcessGroup::from_environment();
  pg.set_timeout(20);
  return pg;
}

}  // namespace ndgc::test
