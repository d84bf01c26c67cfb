// Publishing a new array. See publish.hpp.
#include "core/publish.hpp"

#include "core/key.hpp"
#include "ndgc/scope.hpp"

namespace ndgc::detail {

NDArray publish(std::unique_ptr<ArrayImpl> impl, ManagerImpl& manager, Join how, const char* op) {
  Key* key = manager.link_new(impl.get(), how, op);
  ArrayImpl* a = impl.release();
  NDArray handle = NDArray::adopt(key);
  NDScope::on_created(a->slot, a->generation);
  return handle;
}

}  // namespace ndgc::detail
