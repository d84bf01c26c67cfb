// The shared pieces of the oneDNN wrappers (onednn_support.hpp), and
// onednn_enabled() and inside_onednn() (onednn.hpp) in every build.
#include "ops/cpu/onednn.hpp"

#if NDGC_HAVE_ONEDNN
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "ndgc/error.hpp"
#include "ops/cpu/onednn_support.hpp"
#include "support/options.hpp"

// OpenMP's two calls, declared here rather than through <omp.h>: the runtime
// is oneDNN's (libgomp), whichever compiler builds ndgc, and clang's own
// <omp.h> belongs to another runtime.
extern "C" int omp_get_max_threads();
extern "C" void omp_set_num_threads(int);
#endif

namespace ndgc::ops::cpu {
namespace {
// Constant-initialised, so reading it from a malloc hook allocates nothing.
thread_local bool t_inside = false;
}  // namespace

bool inside_onednn() noexcept { return t_inside; }

#if !NDGC_HAVE_ONEDNN

bool onednn_enabled() { return false; }

#else

namespace onednn {

dnnl_engine_t engine() {
  static const dnnl_engine_t e = [] {
    dnnl_engine_t created = nullptr;
    return dnnl_engine_create(&created, dnnl_cpu, 0) == dnnl_success ? created : nullptr;
  }();
  return e;
}

void check(dnnl_status_t status, const char* op, const char* what) {
  if (status == dnnl_success) return;
  const std::string message =
      fmt::format("{}: oneDNN's {} failed: {} (status {})", op, what, dnnl_status2str(status), static_cast<int>(status));
  if (status == dnnl_out_of_memory) throw OutOfMemory(message, 0, 0, 0);  // oneDNN does not say how much
  throw Error(message);
}

void execute(dnnl_primitive_t primitive, dnnl_stream_t stream, int count, const dnnl_exec_arg_t* args,
             const char* op) {
  t_inside = true;
  const dnnl_status_t status = dnnl_primitive_execute(primitive, stream, count, args);
  t_inside = false;
  check(status, op, "execute");
}

bool implemented_by(const_dnnl_primitive_desc_t pd, std::initializer_list<const char*> prefixes, const char* op) {
  const char* impl = "";
  check(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl), op, "implementation query");
  for (const char* prefix : prefixes)
    if (std::string_view(impl).starts_with(prefix)) return true;
  return false;
}

UserScratchpad::UserScratchpad(const char* op) {
  check(dnnl_primitive_attr_create(&attr_), op, "attribute");
  const dnnl_status_t status = dnnl_primitive_attr_set_scratchpad_mode(attr_, dnnl_scratchpad_mode_user);
  if (status != dnnl_success) dnnl_primitive_attr_destroy(attr_);
  check(status, op, "scratchpad mode");
}

UserScratchpad::~UserScratchpad() { dnnl_primitive_attr_destroy(attr_); }

OneOpenMpThread::OneOpenMpThread() : previous_(omp_get_max_threads()) {
  if (previous_ != 1) omp_set_num_threads(1);
}

OneOpenMpThread::~OneOpenMpThread() {
  if (previous_ != 1) omp_set_num_threads(previous_);
}

constexpr std::align_val_t kAlign{64};

Buffer::~Buffer() { ::operator delete(data_, kAlign); }

void* Buffer::bytes(std::size_t size) {
  if (size > size_) {
    ::operator delete(data_, kAlign);
    data_ = nullptr;
    size_ = 0;
    data_ = ::operator new(size, kAlign);
    size_ = size;
  }
  return data_;
}

Stream::~Stream() {
  if (stream_) dnnl_stream_destroy(stream_);
}

dnnl_stream_t Stream::get(const char* op) {
  if (!stream_) check(dnnl_stream_create(&stream_, engine(), dnnl_stream_default_flags), op, "stream");
  return stream_;
}

}  // namespace onednn

bool onednn_enabled() {
  // Its fast kernels need AVX-512 (which Valgrind, for one, does not offer).
  static const bool on = support::options().cpu_gemm == "onednn" &&
                         (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core &&
                         onednn::engine() != nullptr;
  return on;
}

#endif

}  // namespace ndgc::ops::cpu
