// Publishing a new array. See publish.hpp.
#include "core/publish.hpp"

#include "core/key.hpp"
#include "core/workspace_arrays.hpp"
#include "ndgc/scope.hpp"

namespace ndgc::detail {

NDArray publish(std::unique_ptr<ArrayImpl> impl, ManagerImpl& manager, Join how, const char* op) {
  // A workspace's storage is held across link_new so that its lease outlives
  // the note below (Note [Workspace storage] in workspace_arrays.cpp).
  StorageRef in_workspace = impl->storage->lease() ? impl->storage : StorageRef();
  Key* key = manager.link_new(impl.get(), how, op);
  (void)impl.release();  // the registry owns it now
  NDArray handle = NDArray::adopt(key);
  // Not from the ArrayImpl: once link_new lets go of the manager's mutex,
  // another thread may close the manager and free the array; the key lives
  // as long as our handle. (Found by tests/debug/stress_test.cpp under TSan.)
  NDScope::on_created(key->slot, key->generation);
  if (in_workspace.get()) [[unlikely]]
    note_workspace_array(*in_workspace->lease(), key->slot, key->generation);
  return handle;
}

}  // namespace ndgc::detail
