// The arrays living in workspace leases: how core keeps ND4J's arenas safe.
// See Note [Workspace storage] in workspace_arrays.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ndgc::memory {
struct Lease;
}

namespace ndgc::detail {

// The lease recycler (memory::set_lease_recycler), which the system manager
// installs with its other memory hooks (every array joins a manager, so it
// is in place before any lease has an array): closes every array noted in
// leases[0, count) before their bytes are reused.
void recycle_leases(memory::Lease* const* leases, std::size_t count) noexcept;
// publish(): the array (slot, generation) lives in `lease`'s bytes. Closes it
// at once if the workspace already recycled the lease.
void note_workspace_array(memory::Lease& lease, std::uint32_t slot, std::uint32_t generation) noexcept;
// For the epitaph of an array being closed by CloseReason::workspace: which
// workspace, which cycle (empty outside the recycler).
std::string workspace_close_detail();

}  // namespace ndgc::detail
