// The headers that most of the library's units include, compiled once per
// build folder (Note [Precompiled headers], in the top-level CMakeLists.txt). Build-only:
// no source includes this file, and nothing here may depend on a unit's own
// macros. Only the standard library, fmt and the public headers that nearly
// every unit reaches: a header that changes often would rebuild everything.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"
