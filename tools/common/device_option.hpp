// --device for ndgc-train and ndgc-serve: a CLI11 check that the text is a
// device as ndgc::parse_device spells it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include <ndgc/device.hpp>

namespace ndgc::tools {

inline CLI::Validator device_validator() {
  return CLI::Validator(
      [](std::string& v) {
        if (parse_device(v)) return std::string();
        return "must be cpu, gpu or gpu:N with N from 0 to " + std::to_string(kMaxGpus - 1);
      },
      "cpu|gpu[:N]", "device");
}

}  // namespace ndgc::tools
