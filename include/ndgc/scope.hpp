// NDScope: close the arrays created inside a block (RAII, per thread).
//
//   NDArray result;
//   {
//     NDScope scope;
//     NDArray t = a.mul(b);         // created while the scope is innermost
//     result = scope.keep(t.sum());  // kept: survives the scope
//   }                                // t's array is closed here
//
// Arrays created on this thread while the scope is the innermost one are
// closed when it ends, except those passed to keep(). Scopes nest; each
// belongs to the thread that made it and must end on that thread, in reverse
// order of creation (they are stack objects, so this comes naturally).
#pragma once

#include <cstdint>
#include <vector>

#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc {

class NDScope {
 public:
  NDScope();
  ~NDScope();
  NDScope(const NDScope&) = delete;
  NDScope& operator=(const NDScope&) = delete;

  // Exempts `array` from this scope's close and returns it.
  const NDArray& keep(const NDArray& array);
  const NDList& keep(const NDList& arrays);
  // Number of arrays this scope will close (kept ones excluded).
  std::size_t tracked() const noexcept;

  // Called by the core for every array created on this thread.
  static void on_created(std::uint32_t slot, std::uint32_t generation) noexcept;

 private:
  struct Entry {
    std::uint32_t slot, generation;
  };
  std::vector<Entry> arrays_;
  NDScope* outer_;
};

}  // namespace ndgc
