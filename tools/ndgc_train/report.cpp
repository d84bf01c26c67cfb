// format_report(): table, summary, leak report, trace leaks.
#include "report.hpp"

#include <fmt/format.h>

#include <ndgc/memory.hpp>

#include "table.hpp"

namespace ndgc::train_tool {

std::string format_leak_report(const RunResult& run, std::size_t max_groups) {
  if (!run.growth || run.growth->groups.empty() || (run.epochs.size() < 2 && !run.failure)) return {};
  // A run that died: its second snapshot was taken then.
  const std::string until = run.failure ? "when it died (" + where_it_died(*run.failure) + ")"
                                        : fmt::format("the end of epoch {}", run.epochs.back().epoch);
  // Arrays a workspace holds are freed when it recycles them, whatever their
  // manager does: they are reported apart from what managers keep.
  const debug::Diff leaked = run.growth->outside_workspaces();
  const debug::Diff kept = run.growth->in_workspaces();
  std::string out;
  if (!leaked.groups.empty())
    out += fmt::format("Leak report, {}: what grew from the end of epoch 1 to {}, by creation site\n{}",
                       config_title(run.config), until, leaked.to_text(max_groups));
  if (!kept.groups.empty())
    out += fmt::format(
        "Kept in workspaces, {}: arrays that grew from the end of epoch 1 to {} in workspace "
        "memory, freed when their workspace recycles it (not a manager leak)\n{}",
        config_title(run.config), until, kept.to_text(max_groups));
  return out;
}

std::string format_report(const std::vector<RunResult>& runs) {
  if (runs.empty()) return "no run finished\n";
  const RunResult& first = runs.front();
  std::string out = fmt::format("\nndgc-train: --model {}, --leak {}, {} batches of {} per epoch, seed {}, {} compute thread{}{}\n\n",
                                first.model, first.leak, first.batches_per_epoch, first.batch_size, first.seed,
                                first.compute_threads, first.compute_threads == 1 ? "" : "s",
                                first.on_gpu() ? ", on " + first.device : std::string());
  out += format_table(runs) + "\n" + format_summary(runs);
  for (const RunResult& r : runs)
    if (r.failure)
      out += fmt::format("{:<17} died of {}: {}\n", config_title(r.config) + ":", where_it_died(*r.failure),
                         r.failure->message);
  for (const RunResult& r : runs)
    if (r.loss_scaling)
      out += fmt::format("{:<17} fp16 loss scale {} at the end; {} step{} skipped for an inf or NaN gradient\n",
                         config_title(r.config) + ":", r.loss_scaling->scale, r.loss_scaling->skipped_steps,
                         r.loss_scaling->skipped_steps == 1 ? "" : "s");
  for (const RunResult& r : runs)
    if (r.ranks) out.append("\n").append(format_rank_table(*r.ranks));
  for (const RunResult& r : runs) {
    if (!r.workspace) continue;
    const WorkspaceFigures& w = *r.workspace;
    out += fmt::format("{:<17} arena {} (peak in use {}), spilled {} in all, {} steps, {} array storages\n",
                       config_title(r.config) + ":", memory::format_bytes(w.capacity),
                       memory::format_bytes(w.peak_used), memory::format_bytes(w.spilled_bytes), w.cycles,
                       w.allocations);
  }
  for (const RunResult& r : runs) {
    if (r.ranks && r.epochs.size() >= 2) {  // every rank's growth, rank 0's included
      out.append("\n").append(format_rank_leak_report(*r.ranks));
    } else if (std::string leak = format_leak_report(r); !leak.empty()) {
      out += "\n" + leak;
    } else if (r.epochs.size() >= 2 && !r.failure) {
      out += fmt::format("\n{}: no creation site grew from the end of epoch 1 to the end of epoch {}\n",
                         config_title(r.config), r.epochs.back().epoch);
    }
    if (r.config == "trace") {
      const std::uint64_t leaked = r.epochs.empty() ? 0 : r.epochs.back().leaked_handles;
      out += fmt::format("trace detector: {} leaked handle(s) found by Boehm GC{}\n", leaked,
                         r.trace_leaks.empty() ? "" : ", by creation site:");
      for (const TraceLeak& l : r.trace_leaks)
        out += fmt::format("  {:>8} arrays {:>10}  {}:{}\n", l.arrays, memory::format_bytes(l.bytes), l.file, l.line);
    }
  }
  return out;
}

}  // namespace ndgc::train_tool
