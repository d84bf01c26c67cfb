// NDScope: close the arrays created inside a block (RAII, per thread).
//
//   NDArray result;
//   {
//     NDScope scope;
//     NDArray t = a.mul(b);         // created while the scope is innermost
//     result = scope.keep(t.sum());  // kept: survives the scope
//     scope.attach(old);             // made elsewhere, closed with the scope too
//   }                                // t's and old's arrays are closed here
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
  // `site` names the scope in close-site messages ("closed at the end of
  // the NDScope opened at file:line").
  explicit NDScope(Site site = Site::current());
  ~NDScope();
  NDScope(const NDScope&) = delete;
  NDScope& operator=(const NDScope&) = delete;

  // Exempts `array` from this scope's close and returns it.
  const NDArray& keep(const NDArray& array);
  const NDList& keep(const NDList& arrays);
  // Registers an array created elsewhere (or before the scope) so that this
  // scope closes it, and undoes that (DJL's NDScope.register / unregister).
  // detach() is keep() under DJL's name. attach throws InvalidArgument for an
  // empty handle and ArrayClosed for a closed array; attaching twice is harmless.
  void attach(const NDArray& array);
  void detach(const NDArray& array) { keep(array); }
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
  Site site_;
};

}  // namespace ndgc
