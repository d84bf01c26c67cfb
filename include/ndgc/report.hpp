// The memory report (docs/report.md): one self-contained HTML page that shows
// where the memory is, by creation site over time, drawn from a JSON report
// document. ndgc-train writes one per run (--out DIR: report.html),
// ndgc-report makes one from snapshots and dumps a program saved, and
// ndgc-serve serves a live one (GET /v2/debug/ui).
//
//   debug::Snapshot before = debug::snapshot();
//   ... train ...
//   std::string doc = report::document_from_snapshots({before, debug::snapshot()}, {"start", "end"}, "my run");
//   report::write_page("report.html", doc);      // opens offline, in any browser
//
// The page carries its data, script and styles inline, makes no network
// request (a Content-Security-Policy forbids every fetch but the live page's
// own server), and treats every name in the data as text.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ndgc/debug.hpp"

namespace ndgc::report {

// A saved page (no network) or the live page a server serves (fetches its
// own origin's debug endpoints).
enum class PageKind { file, live };

// The page around `document_json` (a report document: src/report/page/SCHEMA.md,
// docs/report.md). DataError when it is not a JSON object of format
// "ndgc-report".
std::string page(std::string_view document_json, PageKind kind = PageKind::file);

// page(), written to `file` through a temporary file and a rename. DataError
// naming the file when it cannot be written.
void write_page(const std::filesystem::path& file, std::string_view document_json);

// A document of one run from snapshots taken in time order, each with its
// label ("start", "after step 100"; empty: "snapshot N"): the timeline by
// site across them, the leak table and diffs between any two, and the manager
// tree of the last one (managers and arrays as the snapshot knows them).
// InvalidArgument when `labels` is neither empty nor as long as `snapshots`,
// or when there is no snapshot.
std::string document_from_snapshots(const std::vector<debug::Snapshot>& snapshots,
                                    const std::vector<std::string>& labels, std::string_view title);

// A document of one dump (debug::inspect, detailed for arrays and sites):
// its manager tree, and its arrays as one snapshot for the leak table.
std::string document_from_dump(const debug::Dump& dump, std::string_view label, std::string_view title);

// ---- pieces of a document, for programs that assemble their own (ndgc-train does) ----

// A "snapshots" entry: the snapshot's arrays grouped by (manager path,
// creation site, workspace, device), with arrays, bytes and orphans.
std::string snapshot_entry(const debug::Snapshot& snapshot, std::string_view label);

// The "tree" of a detailed dump: each manager with its bytes, those below it,
// and a sample of its arrays (kTreeItemsPerSite per creation site).
// `taken_with`, a snapshot taken at the same point, marks the arrays a
// workspace holds (a dump does not know).
inline constexpr std::size_t kTreeItemsPerSite = 20;
std::string tree_entry(const debug::Dump& detailed, const debug::Snapshot* taken_with = nullptr);

// A run's "timeline": bytes of live arrays by creation site, one sample at a
// time. Each add() costs one pass over the snapshot's arrays.
class SiteTimeline {
 public:
  // `x`: the sample's position ("training step" 100, 200...); `epoch`: from 1,
  // or 0 when unknown; `host_bytes`, `gpu_bytes`: the allocators' bytes in use.
  void add(double x, std::int64_t epoch, const debug::Snapshot& snapshot, std::uint64_t host_bytes,
           std::uint64_t gpu_bytes);
  std::size_t samples() const noexcept { return x_.size(); }
  // `top_sites` sites per device, then one "other" series per device for the
  // rest: half of the places for the sites that grew most from the first
  // sample to the last (a leak is small beside a dataset), the others for
  // the largest (Note [Which sites a timeline keeps]).
  std::string to_json(std::string_view x_label, std::size_t top_sites = 12) const;

 private:
  std::vector<double> x_;
  std::vector<std::int64_t> epoch_;
  std::vector<std::uint64_t> host_, gpu_;
  std::map<std::pair<std::string, std::string>, std::size_t> series_of_;  // (site, device) -> series
  std::vector<std::vector<std::uint64_t>> bytes_;                        // per series, per sample
};

}  // namespace ndgc::report
