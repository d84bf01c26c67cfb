// FreeList: a per-thread cache of freed fixed-size objects.
//
// Note [Object free lists]
// A training step makes and frees the same few dozen small objects every
// step (ArrayImpl, Storage, Key: one of each per array), and each was a
// malloc and a free (~60-100 instructions each with glibc's tcache, plus the
// tcache's own limit of 7 blocks per size, which a step overflows). A
// FreeList keeps up to kFreeListDepth freed blocks per thread in an
// intrusive singly linked list and hands them out again: a thread-local load
// and two stores. A block freed on another thread joins that thread's list
// (memory is not owned by a thread; lists only bound how much each keeps).
// The blocks come from the global operator new, so a program linked with the
// trace detector still gets scanned, uncollectable memory for them, as
// before. The list itself is a trivially destructible thread_local (usable
// while the thread's other thread_locals are destroyed); a separate
// thread_local flushes it when the thread ends and marks it dead, after
// which frees go straight to operator delete (the block cache's scheme,
// memory/block_cache.cpp). Sanitizer builds bypass the lists so that every
// object keeps exact bounds and use-after-free detection.
//
// Thread-safety: each thread touches only its own list.
#pragma once

#include <cstddef>
#include <new>

#include "support/sanitizers.hpp"

namespace ndgc::support {

#ifndef NDGC_EXACT_OBJECTS
#define NDGC_EXACT_OBJECTS (NDGC_ASAN || NDGC_TSAN)
#endif

inline constexpr int kFreeListDepth = 256;

// Blocks of Size bytes; Tag keeps the lists of different types apart.
template <std::size_t Size, class Tag>
class FreeList {
  static_assert(Size >= sizeof(void*));

 public:
  static void* allocate() {
#if !NDGC_EXACT_OBJECTS
    List& l = t_list;
    if (Block* b = l.head) {
      l.head = b->next;
      --l.count;
      return b;
    }
#endif
    return ::operator new(Size);
  }

  static void free(void* p) noexcept {
#if !NDGC_EXACT_OBJECTS
    List& l = t_list;
    if (!l.dead && l.count < kFreeListDepth) {
      if (!l.armed) arm();
      auto* b = static_cast<Block*>(p);
      b->next = l.head;
      l.head = b;
      ++l.count;
      return;
    }
#endif
    ::operator delete(p);
  }

  // Blocks this thread holds now (tests).
  static int cached() noexcept { return t_list.count; }

 private:
  struct Block {
    Block* next;
  };
  struct List {
    Block* head;
    int count;
    bool armed;  // the flusher exists on this thread
    bool dead;   // the thread is ending: no more caching
  };
  struct Flusher {
    bool touched = false;
    ~Flusher() {
      List& l = t_list;
      l.dead = true;
      while (Block* b = l.head) {
        l.head = b->next;
        ::operator delete(b);
      }
      l.count = 0;
    }
  };
  static void arm() noexcept {
    t_flusher.touched = true;  // constructs the flusher (and registers its destructor) on first use
    t_list.armed = true;
  }
  static inline thread_local List t_list{};  // zero-initialised, trivially destructible
  static inline thread_local Flusher t_flusher;
};

}  // namespace ndgc::support
