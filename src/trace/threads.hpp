// Thread registration with the collector. See Note [Thread registration] in
// threads.cpp.
#pragma once

namespace ndgc::trace::detail {

// Makes the calling thread's stack visible to the collector, once per thread
// (later calls are one thread-local load). The registration ends with the
// thread.
void register_this_thread() noexcept;

// False on a thread the collector does not know: its registration failed,
// or it has already ended (thread-local destructors running after ours). An
// allocation there must not start a collection.
bool thread_known() noexcept;

// Defined next to the global operator new (global_new.cpp): the start-up
// code calls it so that the linker always takes that object file.
bool global_new_linked() noexcept;

}  // namespace ndgc::trace::detail
