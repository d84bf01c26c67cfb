// Thread registration: which threads' stacks the collector scans.
//
// Note [Thread registration]
// Boehm scans the stacks of the threads it knows (the main thread from
// GC_INIT on, others once registered) and stops them during a collection.
// Two things follow:
//  - A handle on the stack of an unknown thread is invisible: the key looks
//    unreachable and its array is taken for leaked. So a thread registers
//    itself when it first touches the library: its first key, `new NDArray`,
//    Collectable, or any pin of an array while the detector is on (core's
//    Pinned checks one relaxed flag, then calls us).
//  - A collection started BY an unknown thread aborts the process
//    ("Collecting from unknown thread": measured with Debian's 8.2.2 and a
//    std::thread that allocates through libgccpp). Boehm starts collections
//    from allocations, and with the detector linked every `new` allocates
//    from Boehm's heap. So the global operator new (global_new.cpp)
//    registers the thread before its first allocation too; libgccpp's own
//    operator new does not, which is why we define ours. std::thread never
//    goes through GC_pthread_create, so nothing else would register it.
// Registration is owned by a thread-local RegisteredThread (one per thread,
// an RAII owner) whose destructor unregisters when the thread ends. The main
// thread and threads made by GC_pthread_create are registered already
// (GC_DUPLICATE): those are not ours to unregister. After the owner is gone
// (other thread-local destructors still running), the thread counts as
// unknown: allocations there hold collections off (global_new.cpp).
#include "trace/threads.hpp"

#include <cstdint>

#include <gc/gc.h>

#include "ndgc/trace.hpp"
#include "trace/collector.hpp"

namespace ndgc::trace::detail {
namespace {

enum class ThreadState : std::uint8_t { unregistered, known, unknown };

// Trivial type, constant-initialized: reading it needs no TLS guard.
thread_local ThreadState t_state = ThreadState::unregistered;

class RegisteredThread {
 public:
  RegisteredThread() noexcept {
    GC_stack_base base{};
    if (GC_get_stack_base(&base) != GC_SUCCESS) {
      t_state = ThreadState::unknown;
      return;
    }
    owned_ = GC_register_my_thread(&base) == GC_SUCCESS;
    t_state = owned_ ? ThreadState::known : ThreadState::unknown;
  }
  ~RegisteredThread() {
    if (owned_) GC_unregister_my_thread();
    t_state = ThreadState::unknown;
  }
  RegisteredThread(const RegisteredThread&) = delete;
  RegisteredThread& operator=(const RegisteredThread&) = delete;

 private:
  bool owned_ = false;
};

[[gnu::noinline]] void register_slow() noexcept {
  ensure_initialized();
  if (GC_thread_is_registered()) {  // the main thread, or made by GC_pthread_create
    t_state = ThreadState::known;
    return;
  }
  // Set first: constructing the owner registers a thread-exit destructor,
  // and nothing on this path may come back here.
  t_state = ThreadState::unknown;
  static thread_local RegisteredThread owner;
}

}  // namespace

void register_this_thread() noexcept {
  if (t_state == ThreadState::unregistered) [[unlikely]]
    register_slow();
}

bool thread_known() noexcept { return t_state == ThreadState::known; }

}  // namespace ndgc::trace::detail

void ndgc::trace::register_this_thread() noexcept { detail::register_this_thread(); }
