// Initializers: fill a parameter in place through its device's engine.
//
// Draws are counter-based (ops/engine.hpp): element i of a call takes
// position offset + i of the stream named by the seed. A seeded initializer
// keeps its own offset, so its parameters do not depend on other random
// draws of the program; an unseeded one reserves positions from
// set_random_seed's stream exactly as the random factories do.
// Thread-safety: a seeded initializer's offset is not synchronised; use one
// per thread (initialization is single-threaded in practice).
#include <cmath>

#include <fmt/format.h>

#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"
#include "ops/op_support.hpp"
#include "ops/random.hpp"

namespace ndgc::nn {
namespace {

using ndgc::detail::Pinned;

Pinned pin_floating(const NDArray& array, const char* op) {
  Pinned a(array, op);
  ops::check_floating(op, *a);
  return a;
}

}  // namespace

std::pair<std::int64_t, std::int64_t> fans(const Shape& shape) {
  switch (shape.rank()) {
    case 0: return {1, 1};
    case 1: return {shape[0], shape[0]};
    case 2: return {shape[0], shape[1]};
    default: {
      std::int64_t receptive = 1;
      for (int i = 2; i < shape.rank(); ++i) receptive *= shape[i];
      return {shape[1] * receptive, shape[0] * receptive};
    }
  }
}

void ConstantInitializer::initialize(const NDArray& array) const {
  ndgc::detail::enter();
  Pinned a = pin_floating(array, "ConstantInitializer");
  if (a->size() > 0) ops::engine(a->device).fill(ops::view_of(*a), value_);
}

void RandomInitializer::fill_normal(const NDArray& array, double mean, double stddev) const {
  ndgc::detail::enter();
  Pinned a = pin_floating(array, "initializer");
  const auto count = std::uint64_t(a->size());
  if (count == 0) return;
  // random_normal uses two positions per element (Box-Muller), as the factory reserves.
  const ops::RandomDraw draw = seed_ ? ops::RandomDraw{*seed_, offset_} : ops::reserve_random(2 * count, a->device);
  if (seed_) offset_ += 2 * count;
  ops::engine(a->device).random_normal(ops::view_of(*a), mean, stddev, draw);
}

void RandomInitializer::fill_uniform(const NDArray& array, double low, double high) const {
  ndgc::detail::enter();
  Pinned a = pin_floating(array, "initializer");
  const auto count = std::uint64_t(a->size());
  if (count == 0) return;
  const ops::RandomDraw draw = seed_ ? ops::RandomDraw{*seed_, offset_} : ops::reserve_random(count, a->device);
  if (seed_) offset_ += count;
  ops::engine(a->device).random_uniform(ops::view_of(*a), low, high, draw);
}

void NormalInitializer::initialize(const NDArray& array) const { fill_normal(array, 0, sigma_); }

void XavierInitializer::initialize(const NDArray& array) const {
  auto [in, out] = fans(array.shape());
  const double total = double(std::max<std::int64_t>(in + out, 1));
  if (distribution_ == Distribution::uniform) {
    const double bound = gain_ * std::sqrt(6.0 / total);
    fill_uniform(array, -bound, bound);
  } else {
    fill_normal(array, 0, gain_ * std::sqrt(2.0 / total));
  }
}

void HeInitializer::initialize(const NDArray& array) const {
  auto [in, out] = fans(array.shape());
  (void)out;
  fill_normal(array, 0, std::sqrt(2.0 / double(std::max<std::int64_t>(in, 1))));
}

}  // namespace ndgc::nn
