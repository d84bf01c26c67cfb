// Devices: where an array's buffer lives.
//
//   Device::cpu();  Device::gpu(0);  a.device() == Device::cpu();
//   if (ndgc::gpu_count() > 0) { auto m = NDManager::new_base_manager("gpu", Device::gpu(0)); }
//
// Each device type has one allocator (memory accounting) and one engine
// (kernels); a CUDA engine registers itself for DeviceType::gpu when built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ndgc {

enum class DeviceType : std::uint8_t { cpu, gpu };
inline constexpr int kMaxGpus = 16;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static constexpr Device cpu() noexcept { return {DeviceType::cpu, 0}; }
  static constexpr Device gpu(int index = 0) noexcept { return {DeviceType::gpu, index}; }
  constexpr bool is_cpu() const noexcept { return type == DeviceType::cpu; }
  friend constexpr bool operator==(Device, Device) noexcept = default;
  // "cpu()" or "gpu(0)", as DJL prints devices.
  std::string to_string() const;
};

// A device as command lines spell it (ndgc-train and ndgc-serve's --device):
// "cpu", "gpu" (gpu(0)) or "gpu:N" with N below kMaxGpus; nullopt for
// anything else. device_argument is the inverse ("cpu", "gpu:0").
std::optional<Device> parse_device(std::string_view text);
std::string device_argument(Device device);

// Usable GPUs: 0 when the CUDA engine (ndgc::cuda) is not linked in or no
// device can be used (no driver, no GPU; never throws). Using Device::gpu(i)
// for i >= gpu_count() throws InvalidArgument saying which of the two it is.
int gpu_count() noexcept;

// Throws InvalidArgument unless `device` can hold arrays here: the CPU, or
// gpu(i) with the CUDA engine linked and i < gpu_count(). The message starts
// with `what` (the caller: "ndgc-train --device gpu:1"), names the device and
// says why not: the engine is not linked, no usable GPU (with the driver's
// reason), or the index is out of range. For programs that check a device
// from their command line before doing any work.
void check_device(Device device, const std::string& what);

}  // namespace ndgc
