// DeviceBytes lists: adding to them, finding in them, printing them. See
// device_bytes.hpp.
#include "debug/device_bytes.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ndgc/memory.hpp"

namespace ndgc::debug {
namespace by_device {

bool device_before(Device a, Device b) noexcept {
  return a.type != b.type ? a.type < b.type : a.index < b.index;
}

void add(std::vector<DeviceBytes>& list, Device device, std::uint64_t bytes, std::uint64_t arrays) {
  auto it = std::find_if(list.begin(), list.end(), [&](const DeviceBytes& d) { return !device_before(d.device, device); });
  if (it == list.end() || !(it->device == device)) it = list.insert(it, DeviceBytes{device, 0, 0});
  it->arrays += arrays;
  it->bytes += bytes;
}

bool any_gpu(const std::vector<DeviceBytes>& list) noexcept {
  return std::any_of(list.begin(), list.end(), [](const DeviceBytes& d) { return !d.device.is_cpu(); });
}

}  // namespace by_device

std::string to_string(const std::vector<DeviceBytes>& devices) {
  std::string out;
  for (const DeviceBytes& d : devices)
    out += fmt::format("{}{} {} in {} arrays", out.empty() ? "" : ", ", d.device.to_string(),
                       memory::format_bytes(d.bytes), d.arrays);
  return out.empty() ? "no arrays" : out;
}

std::uint64_t bytes_on(const std::vector<DeviceBytes>& devices, Device device) noexcept {
  for (const DeviceBytes& d : devices)
    if (d.device == device) return d.bytes;
  return 0;
}

}  // namespace ndgc::debug
