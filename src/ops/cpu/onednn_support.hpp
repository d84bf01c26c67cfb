// The pieces of the oneDNN wrappers (onednn_gemm.cpp, onednn_conv.cpp) that
// both use: the engine, status checks, one OpenMP thread per call, buffers
// that only grow, and the execute that inside_onednn() sees. Included only
// where NDGC_HAVE_ONEDNN is set.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "ops/cpu/onednn.hpp"

namespace ndgc::ops::cpu::onednn {

// The CPU engine, shared by every thread, created once (null if oneDNN
// could not make one).
dnnl_engine_t engine();

// When status is not success, throws naming `op`, oneDNN's `what` and the status:
// OutOfMemory for dnnl_out_of_memory, ndgc::Error for anything else.
void check(dnnl_status_t status, const char* op, const char* what);

// Runs `primitive` on the calling thread with inside_onednn() true.
void execute(dnnl_primitive_t primitive, dnnl_stream_t stream, int count, const dnnl_exec_arg_t* args,
             const char* op);

// Whether a primitive descriptor's implementation name starts with one of
// `prefixes` (oneDNN's fast kernels, not its reference or its allocating
// GEMM fallback).
bool implemented_by(const_dnnl_primitive_desc_t pd, std::initializer_list<const char*> prefixes, const char* op);

// Primitive attributes with a user scratchpad (the thread's buffer, so that
// executes allocate no scratchpad of oneDNN's), destroyed with this.
class UserScratchpad {
 public:
  explicit UserScratchpad(const char* op);
  UserScratchpad(const UserScratchpad&) = delete;
  UserScratchpad& operator=(const UserScratchpad&) = delete;
  ~UserScratchpad();
  const_dnnl_primitive_attr_t get() const noexcept { return attr_; }

 private:
  dnnl_primitive_attr_t attr_ = nullptr;
};

// The calling thread's OpenMP held to one thread while it lives: Debian's
// oneDNN runs on OpenMP, whose threads would fight ndgc's pool.
class OneOpenMpThread {
 public:
  OneOpenMpThread();
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;
  ~OneOpenMpThread();

 private:
  int previous_;
};

// A 64-byte aligned buffer that grows and never shrinks.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  float* floats(std::int64_t count) { return static_cast<float*>(bytes(std::size_t(count) * sizeof(float))); }
  void* bytes(std::size_t size);

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// A thread's stream on engine(), made on first use.
class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  dnnl_stream_t get(const char* op);

 private:
  dnnl_stream_t stream_ = nullptr;
};

// A thread's primitives and its stream: up to Capacity entries, by key, the
// least recently used one released and made again for a new key when full.
// An Entry has `key`, `last_use` and release(); make(entry, key) fills a
// fresh one (and may leave it marking a key oneDNN does not serve, so that
// oneDNN is asked once).
template <class Key, class Entry, std::size_t Capacity>
class Primitives {
 public:
  using Make = void (*)(Entry&, const Key&);
  explicit Primitives(Make make) : make_(make) { entries_.reserve(Capacity); }
  Primitives(const Primitives&) = delete;
  Primitives& operator=(const Primitives&) = delete;
  ~Primitives() {
    for (Entry& e : entries_) e.release();  // before the stream
  }

  dnnl_stream_t stream(const char* op) { return stream_.get(op); }

  Entry& entry(const Key& key) {
    ++clock_;
    for (Entry& e : entries_)
      if (e.key == key) {
        e.last_use = clock_;
        return e;
      }
    Entry* slot = nullptr;
    if (entries_.size() < Capacity) {
      slot = &entries_.emplace_back();
    } else {
      slot = &*std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& x, const Entry& y) { return x.last_use < y.last_use; });
      slot->release();
    }
    make_(*slot, key);
    slot->last_use = clock_;
    return *slot;
  }

 private:
  Make make_;
  Stream stream_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
};

}  // namespace ndgc::ops::cpu::onednn
