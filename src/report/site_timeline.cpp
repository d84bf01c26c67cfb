// SiteTimeline: bytes by creation site over a run's samples, for the
// report's stacked timeline. A site is (file:line, device), so host and GPU
// bands stay apart. Series start when their site first appears (zeros
// before) and read 0 once its arrays are gone.
#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "ndgc/report.hpp"

namespace ndgc::report {

using nlohmann::json;

void SiteTimeline::add(double x, std::int64_t epoch, const debug::Snapshot& snapshot, std::uint64_t host_bytes,
                       std::uint64_t gpu_bytes) {
  // One pass: bytes per (snapshot site, device), then into the series.
  // Key: site index, then the device as one number (cpu first, then gpu(0), gpu(1)...).
  std::map<std::pair<std::uint32_t, int>, std::uint64_t> by_site;
  for (const debug::ArrayRecord& a : snapshot.arrays)
    if (a.bytes > 0) by_site[{a.site, a.device.is_cpu() ? -1 : a.device.index}] += a.bytes;
  const std::size_t sample = x_.size();
  x_.push_back(x);
  epoch_.push_back(epoch);
  host_.push_back(host_bytes);
  gpu_.push_back(gpu_bytes);
  for (std::vector<std::uint64_t>& series : bytes_) series.push_back(0);
  for (const auto& [key, bytes] : by_site) {
    const auto [it, added] =
        series_of_.try_emplace({snapshot.sites.at(key.first).to_string(), device_argument(key.second < 0 ? Device::cpu() : Device::gpu(key.second))}, bytes_.size());
    if (added) bytes_.emplace_back(sample + 1, 0);
    bytes_[it->second][sample] += bytes;
  }
}

namespace {

struct Ranked {
  const std::string* site;
  std::size_t index;         // into bytes_
  std::uint64_t largest = 0;
  std::int64_t growth = 0;   // last sample minus first
};

// Note [Which sites a timeline keeps]
// Leaks are small beside a dataset's arrays, so the largest sites alone would
// hide them: the first half of the places go to the sites that grew most from
// the first sample to the last, the rest to the largest; every other site
// joins "other".
std::vector<Ranked> keep_order(std::vector<Ranked> list, std::size_t top) {
  std::stable_sort(list.begin(), list.end(), [](const Ranked& a, const Ranked& b) { return a.growth > b.growth; });
  std::size_t grown = 0;
  while (grown < list.size() && grown < (top + 1) / 2 && list[grown].growth > 0) ++grown;
  std::stable_sort(list.begin() + std::ptrdiff_t(grown), list.end(),
                   [](const Ranked& a, const Ranked& b) { return a.largest > b.largest; });
  return list;
}

}  // namespace

std::string SiteTimeline::to_json(std::string_view x_label, std::size_t top_sites) const {
  // Per device, sites in keep_order(); the first `top_sites` kept.
  std::map<std::string, std::vector<Ranked>> by_device;
  for (const auto& [key, index] : series_of_) {
    const std::vector<std::uint64_t>& s = bytes_[index];
    by_device[key.second].push_back(Ranked{&key.first, index, *std::max_element(s.begin(), s.end()),
                                           std::int64_t(s.back()) - std::int64_t(s.front())});
  }
  json sites = json::array();
  for (const auto& [device, unordered] : by_device) {
    const std::vector<Ranked> list = keep_order(unordered, top_sites);
    std::vector<std::uint64_t> other(x_.size(), 0);
    bool any_other = false;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::vector<std::uint64_t>& s = bytes_[list[i].index];
      if (i < top_sites) {
        sites.push_back(json{{"site", *list[i].site}, {"device", device}, {"bytes", s}});
      } else {
        std::transform(other.begin(), other.end(), s.begin(), other.begin(), std::plus<>());
        any_other = true;
      }
    }
    if (any_other) sites.push_back(json{{"site", "other"}, {"device", device}, {"bytes", other}});
  }
  return json{{"x_label", x_label}, {"x", x_},         {"epoch", epoch_},
              {"host_bytes", host_}, {"gpu_bytes", gpu_}, {"sites", std::move(sites)}}
      .dump();
}

}  // namespace ndgc::report
