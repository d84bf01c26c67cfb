// inspect() and dump(): the manager tree, with each array in the detailed form.
//
// This is the one dumper: ManagerRef::debug_dump (declared in core's public
// header, defined here as the factories are in ops) prints a debug::Dump, so
// the two cannot drift apart. Core cannot call the debug layer; the debug
// layer implements the core API's debugging calls on top of core.
//
// A manager's arrays are read under its mutex through for_each_array, which
// keeps them linked (so open) while read; counts and bytes come from the same
// pass, so a manager's line always agrees with its array lines. Only plain
// copies are made under the mutex (the name takes the array's `meta` spin
// lock, in the mutex-then-meta order core uses); sites are turned into
// strings after it is released. Children are visited after the parent's
// mutex is released (a parent's mutex is never held while taking a child's).
//
// Each manager's arrays and bytes are also summed per device (an array's
// device, not the manager's: to_device's copy joins its source's manager).
//
// Thread-safety: any thread; a sub-manager closed during the walk shows as closed.
#include <algorithm>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "core/manager_impl.hpp"
#include "core/reclaim_queue.hpp"
#include "debug/device_bytes.hpp"
#include "ndgc/debug.hpp"
#include "ndgc/error.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::debug {

using detail::ArrayImpl;
using detail::ManagerHold;
using detail::ManagerImpl;

namespace {

// What the walk copies under the manager's mutex: no strings but the name.
struct RawArray {
  Uuid uuid;
  std::string name;
  Shape shape;
  DataType dtype;
  std::uint64_t nbytes, bytes;
  bool view, borrowed;
  Site site;
  std::uint32_t handles;
  Device device;
};

ManagerInfo capture(const ManagerImpl& m, bool detailed) {
  ManagerInfo info;
  info.name = m.name();
  info.path = m.path();
  info.uuid = m.uid();
  info.device = m.device();
  info.open = m.is_open();
  info.capped = m.is_capped();
  std::vector<RawArray> raw;
  m.for_each_array([&](const ArrayImpl& a) {
    ++info.array_count;
    info.bytes += a.charged_bytes();
    by_device::add(info.devices, a.device, a.charged_bytes());
    if (detailed)
      raw.push_back(RawArray{a.uuid, a.get_name(), a.shape, a.dtype, a.nbytes(), a.charged_bytes(),
                             !a.owns_storage, a.borrowed, a.site, detail::handle_count_of(a), a.device});
  });
  // The list is newest first; people read a dump top-down, oldest first.
  info.arrays.reserve(raw.size());
  for (auto it = raw.rbegin(); it != raw.rend(); ++it)
    info.arrays.push_back(ArrayInfo{it->uuid, std::move(it->name), it->shape, it->dtype, it->nbytes, it->bytes,
                                    it->view, it->borrowed, SiteInfo::from(it->site), it->handles, it->device});
  for (const ManagerHold& child : m.children()) info.children.push_back(capture(*child.get(), detailed));
  return info;
}

Dump inspect_as(const ManagerRef& manager, bool detailed, const char* op) {
  detail::enter();
  ManagerImpl* m = manager.impl();
  if (!m) throw InvalidArgument(fmt::format("{}: the ManagerRef is empty (default-constructed or moved-from)", op));
  m->check_open(op);
  return Dump{detailed, capture(*m, detailed), {}};  // workspaces: the whole tree's dump only
}

void write(const Dump& d, std::ostream& out, Format format) {
  out << (format == Format::json ? d.to_json(2) + "\n" : d.to_text());
}

void sum_below(const ManagerInfo& m, std::vector<DeviceBytes>& out) {
  for (const DeviceBytes& d : m.devices) by_device::add(out, d.device, d.bytes, d.arrays);
  for (const ManagerInfo& c : m.children) sum_below(c, out);
}

}  // namespace

std::vector<DeviceBytes> ManagerInfo::devices_below() const {
  std::vector<DeviceBytes> out;
  sum_below(*this, out);
  return out;
}

Dump inspect(const ManagerRef& manager, bool detailed) { return inspect_as(manager, detailed, "debug::inspect"); }

void dump(const ManagerRef& manager, std::ostream& out, bool detailed, Format format) {
  write(inspect_as(manager, detailed, "debug::dump"), out, format);
}

std::string dump(const ManagerRef& manager, bool detailed, Format format) {
  std::ostringstream out;
  dump(manager, out, detailed, format);
  return out.str();
}

void dump(std::ostream& out, bool detailed, Format format) {
  Dump d = inspect_as(NDManager::system(), detailed, "debug::dump");
  d.workspaces = workspace::list();
  write(d, out, format);
}

}  // namespace ndgc::debug

namespace ndgc {

void ManagerRef::debug_dump(std::ostream& out, bool detailed) const {
  out << debug::inspect_as(*this, detailed, "debug_dump").to_text();
}

std::string ManagerRef::debug_dump(bool detailed) const {
  return debug::inspect_as(*this, detailed, "debug_dump").to_text();
}

}  // namespace ndgc
