// The workspaces of each thread: by name, the stack of open ones, ScopeOut,
// and the public activate/destroy API of ndgc/workspace.hpp (detach and
// leverage_to copy arrays, so they live in ops: src/ops/workspace_copies.cpp).
//
// Each thread owns its workspaces (a thread_local table, destroyed with the
// thread); the same name on two threads is two workspaces. The innermost
// open one is a constinit thread_local pointer, so Storage::allocate pays one
// TLS load to learn there is none. A process-wide list (under a mutex, off
// every fast path) lets debug::dump see all threads' workspaces.
#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "memory/workspace.hpp"
#include "ndgc/error.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::memory {

constinit thread_local Workspace* t_current_workspace = nullptr;

namespace {

std::atomic<std::uint64_t> g_next_thread{1};

struct AllWorkspaces {
  std::mutex mu;
  std::vector<Workspace*> list;
};
AllWorkspaces& all_workspaces() {
  static auto* all = new AllWorkspaces();  // never destroyed: threads end after static destruction
  return *all;
}

struct Open {
  Workspace* ws;
  Workspace* outer_current;  // t_current_workspace before it opened (a ScopeOut may have cleared it)
};

struct ThreadWorkspaces {
  std::uint64_t thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::unique_ptr<Workspace>> owned;
  std::vector<Open> stack;

  Workspace* find(const std::string& name) const {
    for (const auto& w : owned)
      if (w->name() == name) return w.get();
    return nullptr;
  }
  void erase(Workspace* ws) {
    {
      AllWorkspaces& all = all_workspaces();
      std::lock_guard lock(all.mu);
      all.list.erase(std::remove(all.list.begin(), all.list.end(), ws), all.list.end());
    }
    auto it = std::find_if(owned.begin(), owned.end(), [&](const auto& w) { return w.get() == ws; });
    std::unique_ptr<Workspace> doomed = std::move(*it);
    owned.erase(it);
    doomed.reset();  // its arrays close here
  }
  ~ThreadWorkspaces() {
    t_current_workspace = nullptr;
    while (!owned.empty()) erase(owned.back().get());
  }
};

ThreadWorkspaces& thread_workspaces() {
  thread_local ThreadWorkspaces t;
  return t;
}

void leave(ThreadWorkspaces& t, Workspace* ws) noexcept {
  // Inner workspaces still open (a scope destroyed out of order) end first.
  while (!t.stack.empty()) {
    Open top = t.stack.back();
    t.stack.pop_back();
    t_current_workspace = top.outer_current;
    top.ws->end_cycle();
    if (top.ws == ws) return;
  }
}

}  // namespace

WorkspaceTotals workspace_totals(Device device) {
  AllWorkspaces& all = all_workspaces();
  std::lock_guard lock(all.mu);
  WorkspaceTotals t;
  for (const Workspace* ws : all.list) {
    if (ws->device() != device) continue;
    const workspace::Stats s = ws->stats();
    t.capacity += s.capacity;
    t.used += s.used;
    t.spilled += s.spilled_bytes;
  }
  return t;
}

}  // namespace ndgc::memory

namespace ndgc::workspace {

using memory::ThreadWorkspaces;
using memory::Workspace;

Scope activate(const Config& config, const std::string& name) {
  ThreadWorkspaces& t = memory::thread_workspaces();
  Workspace* ws = t.find(name);
  if (!ws) {
    if (config.overallocation < 0 || config.overallocation != config.overallocation)
      throw InvalidArgument(fmt::format("workspace::activate('{}'): overallocation must be >= 0, not {}", name,
                                        config.overallocation));
    auto made = std::make_unique<Workspace>(config, name, t.thread);
    t.owned.push_back(std::move(made));
    ws = t.owned.back().get();
    memory::AllWorkspaces& all = memory::all_workspaces();
    std::lock_guard lock(all.mu);
    all.list.push_back(ws);
  }
  if (ws->is_open())
    throw WorkspaceError(fmt::format(
        "workspace::activate('{}'): {} is already open on this thread; a workspace is entered once at a "
        "time (use another name for a nested one)",
        name, ws->describe()));
  ws->begin_cycle();
  t.stack.push_back({ws, memory::t_current_workspace});
  memory::t_current_workspace = ws;
  return Scope(ws);
}

Scope::Scope(Scope&& other) noexcept : ws_(std::exchange(other.ws_, nullptr)) {}

Scope& Scope::operator=(Scope&& other) noexcept {
  if (this != &other) {
    if (ws_) memory::leave(memory::thread_workspaces(), ws_);
    ws_ = std::exchange(other.ws_, nullptr);
  }
  return *this;
}

Scope::~Scope() {
  if (ws_) memory::leave(memory::thread_workspaces(), ws_);
}

void Scope::close() {
  if (!ws_) return;
  ThreadWorkspaces& t = memory::thread_workspaces();
  if (t.stack.empty() || t.stack.back().ws != ws_) {
    std::string inner = t.stack.empty() ? std::string("none") : t.stack.back().ws->describe();
    throw WorkspaceError(fmt::format(
        "workspace::Scope::close(): {} is not the innermost open workspace of this thread ({} is); close "
        "scopes in the reverse order of activate()",
        ws_->describe(), inner));
  }
  memory::leave(t, std::exchange(ws_, nullptr));
}

const std::string& Scope::name() const {
  static const std::string none;
  return ws_ ? ws_->name() : none;
}

Stats Scope::stats() const { return ws_ ? ws_->stats() : Stats{}; }

ScopeOut::ScopeOut() noexcept : saved_(memory::t_current_workspace) { memory::t_current_workspace = nullptr; }
ScopeOut::~ScopeOut() { memory::t_current_workspace = saved_; }

void destroy(const std::string& name) {
  ThreadWorkspaces& t = memory::thread_workspaces();
  Workspace* ws = t.find(name);
  if (!ws) return;
  if (ws->is_open())
    throw WorkspaceError(fmt::format(
        "workspace::destroy('{}'): {} is open (in cycle {}); end its Scope first", name, ws->describe(),
        ws->cycle()));
  t.erase(ws);
}

void destroy_all_for_this_thread() {
  ThreadWorkspaces& t = memory::thread_workspaces();
  if (!t.stack.empty())
    throw WorkspaceError(fmt::format(
        "workspace::destroy_all_for_this_thread(): {} is still open; end every Scope first",
        t.stack.back().ws->describe()));
  while (!t.owned.empty()) t.erase(t.owned.back().get());
}

Stats stats(const std::string& name) {
  Workspace* ws = memory::thread_workspaces().find(name);
  if (!ws) throw WorkspaceError(fmt::format("workspace::stats('{}'): this thread has no such workspace", name));
  return ws->stats();
}

bool exists(const std::string& name) { return memory::thread_workspaces().find(name) != nullptr; }

std::vector<Info> list() {
  memory::AllWorkspaces& all = memory::all_workspaces();
  std::lock_guard lock(all.mu);
  std::vector<Info> out;
  out.reserve(all.list.size());
  for (const Workspace* ws : all.list)
    out.push_back({ws->id(), ws->name(), ws->thread(), ws->device(), ws->is_open(), ws->cycle(), ws->learned_size(),
                   ws->stats()});
  return out;
}

}  // namespace ndgc::workspace

// leverage_to (src/ops) makes another open workspace of this thread the
// innermost one for the length of one copy.
namespace ndgc::memory {

Workspace* find_open_workspace(const std::string& name) noexcept {
  for (const Open& o : thread_workspaces().stack)
    if (o.ws->name() == name) return o.ws;
  return nullptr;
}

CurrentWorkspace::CurrentWorkspace(Workspace* ws) noexcept : saved_(t_current_workspace) { t_current_workspace = ws; }
CurrentWorkspace::~CurrentWorkspace() { t_current_workspace = saved_; }

}  // namespace ndgc::memory
