// Fuzzes the memory-management API: an interpreter turns the input's bytes
// into a sequence of library calls on 4 manager slots and 8 handle slots —
// create, op, view, copy, drop, attach, detach, temp_attach, ret, cap,
// close (array or manager), new sub-manager, NDList attach, toggle
// auto-close, poll, sweep, and workspaces (activate with a policy drawn from
// the input, leave, detach, leverage_to, destroy, create under ScopeOut) —
// and checks docs/design.md §3 after every step:
//
//   1. no array a handle slot reaches is closed by auto-close or sweep, and
//      every open one still holds the value its history says (arrays are
//      uniform; element-wise float ops are exact, so the interpreter knows
//      each value): an array whose workspace reused its memory is closed,
//      never read;
//   2. while auto-close has been on since the input began, gc::poll() leaves
//      no orphan in the input's managers;
//   3. closed arrays throw ArrayClosed on use, closed managers ManagerClosed:
//      errors of the contract (ndgc::Error) end a step, anything else aborts;
//   4. after the input's managers close and its workspaces are destroyed
//      (and a sweep for what was detached to the system manager), host bytes
//      and open arrays are back to where they were.
// Each manager's dump must stay consistent (count = listed arrays). See
// fuzz_util.hpp for how it is built and run.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <ndgc/workspace.hpp>

#include "fuzz_util.hpp"

using namespace ndgc;

namespace {

constexpr int kManagers = 4, kHandles = 8;
// Op bytes below 234 (13 × 18) decode as they did before workspaces were
// fuzzed, so older corpus files keep their meaning; 234..255 are the
// workspace ops.
constexpr std::uint8_t kFirstWorkspaceOpByte = 234;
constexpr int kWorkspaceOps = 6;
const char* const kWorkspaceNames[] = {"fuzz-ws-a", "fuzz-ws-b"};
constexpr std::int64_t kMaxElements = 4096;

struct Bytes {
  const std::uint8_t* data;
  std::size_t size, pos = 0;
  bool more() const { return pos < size; }
  std::uint8_t next() { return pos < size ? data[pos++] : 0; }
};

struct Slot {
  NDArray array;
  float value = 0;
};

bool same_value(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }
// NDArray::maximum propagates NaN, as NumPy's does (std::fmax would drop it).
float maximum(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }

struct Interpreter {
  NDManager root = NDManager::new_base_manager("fuzz-api");
  ManagerRef managers[kManagers];
  Slot slots[kHandles];
  bool always_on = false;
  const bool trace = std::getenv("NDGC_FUZZ_TRACE") != nullptr;  // print each step (debugging an input)

  std::vector<workspace::Scope> open_workspaces;  // outermost first

  Interpreter() {
    for (ManagerRef& m : managers) m = root.new_sub_manager("m").release();
  }
  ~Interpreter() {
    while (!open_workspaces.empty()) open_workspaces.pop_back();  // innermost first
  }

  // A policy from one byte: learning, initial size, spill and reset.
  static workspace::Config config_from(std::uint8_t arg) {
    workspace::Config cfg;
    cfg.learning = workspace::Learning(arg % 3);
    cfg.initial_size = std::uint64_t(arg / 3 % 4) * 256;
    cfg.cycles_before_initialization = 2;
    cfg.spill = workspace::Spill(arg / 12 % 3);
    cfg.reset = workspace::Reset(arg / 36 % 2);
    cfg.allocation = workspace::Allocation(arg / 72 % 2);
    return cfg;
  }

  void workspace_step(int op, Slot& h, Slot& g, ManagerRef& m, std::uint8_t arg) {
    switch (op) {
      case 0:  // activate (an already open name is a WorkspaceError)
        open_workspaces.push_back(workspace::activate(config_from(arg), kWorkspaceNames[arg % 2]));
        break;
      case 1: {  // leave one: out of order is a WorkspaceError, and it stays open
        if (open_workspaces.empty()) break;
        const std::size_t i = arg % open_workspaces.size();
        open_workspaces[i].close();
        open_workspaces.erase(open_workspaces.begin() + std::ptrdiff_t(i));
        break;
      }
      case 2:  // detach: a copy in ordinary memory
        if (h.array.defined()) g.array = workspace::detach(h.array), g.value = h.value;
        break;
      case 3:  // leverage_to an open workspace of this thread
        if (h.array.defined() && !open_workspaces.empty())
          g.array = workspace::leverage_to(h.array, open_workspaces[arg % open_workspaces.size()].name()),
          g.value = h.value;
        break;
      case 4:  // destroy (an open one is a WorkspaceError); its arrays close
        workspace::destroy(kWorkspaceNames[arg % 2]);
        break;
      case 5: {  // create bypassing every workspace
        workspace::ScopeOut out;
        const float v = float(arg % 16);
        h.array = m.full({std::int64_t(1 + arg % 8)}, v);
        h.value = v;
        break;
      }
    }
  }

  void step(Bytes& in) {
    const std::uint8_t raw = in.next();
    const int op = raw < kFirstWorkspaceOpByte ? raw % 18 : 18 + (raw - kFirstWorkspaceOpByte) % kWorkspaceOps;
    const int hi = in.next() % kHandles, gi = in.next() % kHandles, mi = in.next() % kManagers;
    Slot& h = slots[hi];
    Slot& g = slots[gi];
    ManagerRef& m = managers[mi];
    const std::uint8_t arg = in.next();
    if (trace) std::fprintf(stderr, "op %d h%d g%d m%d arg %d\n", op, hi, gi, mi, arg);
    switch (op) {
      case 0: {  // create
        const float v = float(arg % 16);
        h.array = m.full({std::int64_t(1 + arg % 8)}, v);
        h.value = v;
        break;
      }
      case 1:    // binary op: output joins the first input's manager
      case 2: {  // (built first, assigned last: an error leaves the slot as it was)
        if (!h.array.defined() || !g.array.defined()) break;
        if (h.array.size() * g.array.size() > kMaxElements) break;
        float v = 0;
        NDArray out;
        switch (arg % 4) {
          case 0: out = h.array.add(g.array), v = h.value + g.value; break;
          case 1: out = h.array.sub(g.array), v = h.value - g.value; break;
          case 2: out = h.array.mul(g.array), v = h.value * g.value; break;
          case 3: out = h.array.maximum(g.array), v = maximum(h.value, g.value); break;
        }
        Slot& dst = op == 1 ? h : g;
        dst.array = out, dst.value = v;
        break;
      }
      case 3:  // a view sharing h's buffer
        if (h.array.defined() && h.array.size() <= 64) {
          g.array = h.array.reshape({h.array.size(), 1}), g.value = h.value;
        }
        break;
      case 4:  // copy a handle
        g = h;
        break;
      case 5:  // drop a handle
        h.array.reset();
        break;
      case 6:
        if (h.array.defined()) h.array.attach(m);
        break;
      case 7:
        if (h.array.defined()) h.array.detach();
        break;
      case 8:
        if (h.array.defined()) h.array.temp_attach(m);
        break;
      case 9:  // ret: to m's parent
        if (h.array.defined()) h.array = m.ret(h.array);
        break;
      case 10:
        m.cap();
        break;
      case 11:  // close a manager (its sub-managers and arrays go with it)
        m.close();
        break;
      case 12: {  // a new sub-manager in a slot (the old one stays open, owned by its parent)
        ManagerRef& parent = managers[arg % kManagers];
        ManagerRef child = parent.new_sub_manager("s").release();
        m = child;
        break;
      }
      case 13:
        if (h.array.defined()) h.array.close();
        break;
      case 14: {  // an NDList of two handles moves or lends them together
        if (!h.array.defined() || !g.array.defined()) break;
        NDList list{h.array, g.array};
        arg % 2 ? list.attach(m) : list.temp_attach(m);
        break;
      }
      case 15:
        if (arg % 2) {
          gc::enable();
        } else {
          gc::disable();
          always_on = false;
        }
        break;
      case 16:
        arg % 2 ? (void)gc::poll() : (void)gc::sweep();
        break;
      case 17:  // a library-made listing (lock semantics against the reclaim), dropped at once
        (void)m.managed_arrays().size();
        break;
      default:
        workspace_step(op - 18, h, g, m, arg);
        break;
    }
  }

  void check_slots() {
    for (Slot& s : slots) {
      if (!s.array.defined()) continue;
      try {
        std::vector<float> v = s.array.to_vector<float>();
        for (float x : v)
          fuzz::expect(same_value(x, s.value), "array holds " + std::to_string(x) + ", its history says " +
                                                   std::to_string(s.value));
      } catch (const ArrayClosed& e) {
        std::string what = e.what();
        fuzz::expect(what.find("auto-close") == std::string::npos && what.find("sweep") == std::string::npos,
                     "a handle's array was closed by auto-close or sweep: " + what);
      }
    }
  }

  void check_tree(const debug::ManagerInfo& info) {
    fuzz::expect(info.array_count == info.arrays.size(), "dump: array count disagrees with the listed arrays");
    for (const debug::ArrayInfo& a : info.arrays)
      if (always_on) fuzz::expect(a.handles > 0, "auto-close was on all along, yet an orphan survived gc::poll()");
    for (const debug::ManagerInfo& c : info.children) check_tree(c);
  }

  void check() {
    check_slots();
    if (always_on) gc::poll();
    check_tree(debug::inspect(root, true).root);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in{data, size};
  const bool start_on = in.next() % 2;
  start_on ? gc::enable() : gc::disable();
  gc::sweep();
  fuzz::Balance balance;
  {
    Interpreter it;
    it.always_on = start_on;
    for (int steps = 0; in.more() && steps < 256; ++steps) {
      try {
        it.step(in);
      } catch (const Error& e) {
        if (it.trace) std::fprintf(stderr, "  %s\n", e.what());
        // Part of the contract: ArrayClosed, ManagerClosed, ManagerCapped,
        // ShapeMismatch, InvalidArgument, ... Anything else escapes and aborts.
      }
      it.check();
    }
  }  // workspaces' scopes end, handles die, then the root closes every manager below it
  workspace::destroy_all_for_this_thread();
  gc::sweep();  // arrays detached to the system manager
  balance.check("api_fuzz");
  return 0;
}
