// NDArray: the user-facing tensor handle.
//
//   NDManager m = NDManager::new_base_manager("app");
//   NDArray a = m.ones({2, 3});
//   NDArray b = m.arange(0, 6).reshape({2, 3});
//   NDArray d = (a + b * 2.0f).relu().sum({1});   // d joins a's manager
//   float s = d.sum().item<float>();
//
// A handle is one pointer to a key (atomic count, UUID, registry slot and
// generation); the array itself sits in a process-wide registry and belongs
// to a manager (docs/design.md §3). Copying a handle bumps the count; handles are
// cheap to copy, safe to pass between threads and may be empty. Using a handle
// whose array was closed throws ArrayClosed naming the array.
//
// With auto-close off (the default) the last handle's death changes nothing:
// the array lives until its manager closes. With gc::enable() it is closed at
// the next library call on any thread.
//
// Every op's output joins the manager of its first array input and records
// the caller's source line as its creation site (the defaulted Site argument;
// operators capture it through Sited). Binary ops broadcast as NumPy does and
// require equal dtypes; scalar operands take the array's dtype.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/ndindex.hpp"
#include "ndgc/shape.hpp"
#include "ndgc/uuid.hpp"

namespace ndgc {

#if defined(__cpp_lib_source_location)
using Site = std::source_location;
#else
// clang before 15 with libstdc++ has no std::source_location (it lacks
// __builtin_source_location); the fuzz build (clang-14, tests/fuzz/) uses this
// stand-in with the same interface, built on the older builtins.
class Site {
 public:
  static constexpr Site current(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                                std::uint_least32_t line = __builtin_LINE(),
                                std::uint_least32_t column = __builtin_COLUMN()) noexcept {
    Site s;
    s.file_ = file, s.function_ = function, s.line_ = line, s.column_ = column;
    return s;
  }
  constexpr Site() noexcept = default;
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0, column_ = 0;
};
#endif

class ManagerRef;
class NDList;
class NDArray;

namespace detail {
// The part of a key that handles touch inline; the rest is private to core.
struct KeyHeader {
  std::atomic<std::uint32_t> strong{1};
};
// Called when the last handle to a key dies. See Note [Handle counts] in src/core/key.hpp.
void on_last_handle(KeyHeader* key) noexcept;
}  // namespace detail

// An NDArray operand that remembers where the expression was written: the
// operators' first parameter, so `a + b` records the caller's line.
struct Sited {
  const NDArray& array;
  Site site;
  Sited(const NDArray& a, Site s = Site::current()) noexcept : array(a), site(s) {}  // NOLINT
};

class NDArray {
 public:
  NDArray() noexcept = default;  // empty: defined() is false, every use throws InvalidArgument
  NDArray(const NDArray& other) noexcept : key_(other.key_) {
    if (key_) key_->strong.fetch_add(1, std::memory_order_relaxed);
  }
  NDArray(NDArray&& other) noexcept : key_(other.key_) { other.key_ = nullptr; }
  NDArray& operator=(const NDArray& other) noexcept {
    NDArray(other).swap(*this);
    return *this;
  }
  NDArray& operator=(NDArray&& other) noexcept {
    NDArray(std::move(other)).swap(*this);
    return *this;
  }
  ~NDArray() { reset(); }
  void reset() noexcept {
    if (key_ && key_->strong.fetch_sub(1, std::memory_order_acq_rel) == 1) detail::on_last_handle(key_);
    key_ = nullptr;
  }
  void swap(NDArray& other) noexcept { std::swap(key_, other.key_); }

  // ---- identity and state ---------------------------------------------------
  bool defined() const noexcept { return key_ != nullptr; }
  // Both handles name the same array.
  bool same(const NDArray& other) const noexcept { return key_ == other.key_; }
  Uuid uid() const;  // works after close too
  std::string name() const;
  void set_name(std::string name);
  Shape shape() const;
  DataType dtype() const;
  Device device() const;
  std::int64_t size() const;  // element count
  int rank() const;
  std::size_t nbytes() const;  // size() * size_of(dtype())
  Shape strides() const;       // in elements
  bool is_contiguous() const;
  // True when both arrays are views of one buffer.
  bool shares_storage(const NDArray& other) const;
  // The array's creation site.
  Site creation_site() const;
  // Number of live handles to this array (library-internal ones included).
  std::uint32_t handle_count() const noexcept;
  bool is_closed() const noexcept;
  // Closes the array now: its buffer is freed when the last view closes.
  // Idempotent. Other handles then throw ArrayClosed.
  void close(Site site = Site::current());

  // ---- managers (docs/design.md §4) --------------------------------------------
  ManagerRef manager() const;
  // Moves the array to `manager` (ManagerCapped if it is capped).
  void attach(const ManagerRef& manager);
  // Moves the array to the system manager: its old manager's close no longer
  // closes it; close it yourself or let auto-close do it.
  void detach();
  // Lends the array to `manager`: when that manager closes, the array goes
  // back to its current manager, or is closed if that one closed first.
  void temp_attach(const ManagerRef& manager);

  // ---- data -----------------------------------------------------------------
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(size()));
    copy_to(out.data(), dtype_of<T>, out.size());
    return out;
  }
  // The single element of a one-element array (InvalidArgument otherwise).
  template <class T>
  T item() const {
    T value{};
    copy_item(&value, dtype_of<T>);
    return value;
  }
  // Elements converted to `as`, in row-major order, into `out` (`count` must be size()).
  void copy_to(void* out, DataType as, std::size_t count) const;
  // "ND: (2, 3) cpu() float32\n[[...]]", as DJL prints arrays.
  std::string to_string() const;

  // ---- element-wise, broadcasting ---------------------------------------------
  NDArray add(const NDArray& other, Site site = Site::current()) const;
  NDArray sub(const NDArray& other, Site site = Site::current()) const;
  NDArray mul(const NDArray& other, Site site = Site::current()) const;
  NDArray div(const NDArray& other, Site site = Site::current()) const;
  NDArray pow(const NDArray& other, Site site = Site::current()) const;
  NDArray maximum(const NDArray& other, Site site = Site::current()) const;
  NDArray minimum(const NDArray& other, Site site = Site::current()) const;
  NDArray add(double scalar, Site site = Site::current()) const;
  NDArray sub(double scalar, Site site = Site::current()) const;
  NDArray mul(double scalar, Site site = Site::current()) const;
  NDArray div(double scalar, Site site = Site::current()) const;
  NDArray pow(double scalar, Site site = Site::current()) const;
  NDArray maximum(double scalar, Site site = Site::current()) const;
  NDArray minimum(double scalar, Site site = Site::current()) const;
  // scalar - this, scalar / this
  NDArray rsub(double scalar, Site site = Site::current()) const;
  NDArray rdiv(double scalar, Site site = Site::current()) const;

  // In place: the result is written into this array (which must have the
  // broadcast shape) and the same handle is returned.
  NDArray& add_(const NDArray& other);
  NDArray& sub_(const NDArray& other);
  NDArray& mul_(const NDArray& other);
  NDArray& div_(const NDArray& other);
  NDArray& pow_(const NDArray& other);
  NDArray& maximum_(const NDArray& other);
  NDArray& minimum_(const NDArray& other);
  NDArray& add_(double scalar);
  NDArray& sub_(double scalar);
  NDArray& mul_(double scalar);
  NDArray& div_(double scalar);
  NDArray& pow_(double scalar);
  NDArray& maximum_(double scalar);
  NDArray& minimum_(double scalar);

  // Comparisons give boolean arrays.
  NDArray eq(const NDArray& other, Site site = Site::current()) const;
  NDArray ne(const NDArray& other, Site site = Site::current()) const;
  NDArray gt(const NDArray& other, Site site = Site::current()) const;
  NDArray ge(const NDArray& other, Site site = Site::current()) const;
  NDArray lt(const NDArray& other, Site site = Site::current()) const;
  NDArray le(const NDArray& other, Site site = Site::current()) const;
  NDArray eq(double scalar, Site site = Site::current()) const;
  NDArray ne(double scalar, Site site = Site::current()) const;
  NDArray gt(double scalar, Site site = Site::current()) const;
  NDArray ge(double scalar, Site site = Site::current()) const;
  NDArray lt(double scalar, Site site = Site::current()) const;
  NDArray le(double scalar, Site site = Site::current()) const;

  NDArray neg(Site site = Site::current()) const;
  NDArray abs(Site site = Site::current()) const;
  NDArray exp(Site site = Site::current()) const;
  NDArray log(Site site = Site::current()) const;
  NDArray sqrt(Site site = Site::current()) const;
  NDArray square(Site site = Site::current()) const;
  NDArray relu(Site site = Site::current()) const;
  NDArray sigmoid(Site site = Site::current()) const;
  NDArray tanh(Site site = Site::current()) const;
  // Exact GELU: x Φ(x) = x (1 + erf(x / √2)) / 2 (float32, float64).
  NDArray gelu(Site site = Site::current()) const;
  // Float32 and float64 only. floor, ceil and round (half to even) have a
  // zero gradient; the others their derivative.
  NDArray floor(Site site = Site::current()) const;
  NDArray ceil(Site site = Site::current()) const;
  NDArray round(Site site = Site::current()) const;
  NDArray sin(Site site = Site::current()) const;
  NDArray cos(Site site = Site::current()) const;
  NDArray tan(Site site = Site::current()) const;
  NDArray asin(Site site = Site::current()) const;
  NDArray acos(Site site = Site::current()) const;
  NDArray atan(Site site = Site::current()) const;
  NDArray sinh(Site site = Site::current()) const;
  NDArray cosh(Site site = Site::current()) const;
  NDArray asinh(Site site = Site::current()) const;
  NDArray acosh(Site site = Site::current()) const;
  NDArray atanh(Site site = Site::current()) const;
  NDArray erf(Site site = Site::current()) const;
  NDArray& neg_();
  NDArray& abs_();
  NDArray& exp_();
  NDArray& log_();
  NDArray& sqrt_();
  NDArray& relu_();
  NDArray& sigmoid_();
  NDArray& tanh_();
  // Sets every element to `value`.
  NDArray& fill_(double value);
  // Copies `source` (broadcast to this shape, same dtype) into this array.
  NDArray& assign_(const NDArray& source);

  // ---- reductions -----------------------------------------------------------
  // Over all elements (a scalar), or over `axes` (negative counts from the end).
  NDArray sum(Site site = Site::current()) const;
  NDArray sum(const std::vector<int>& axes, bool keepdims = false, Site site = Site::current()) const;
  NDArray mean(Site site = Site::current()) const;
  NDArray mean(const std::vector<int>& axes, bool keepdims = false, Site site = Site::current()) const;
  NDArray max(Site site = Site::current()) const;
  NDArray max(const std::vector<int>& axes, bool keepdims = false, Site site = Site::current()) const;
  NDArray min(Site site = Site::current()) const;
  NDArray min(const std::vector<int>& axes, bool keepdims = false, Site site = Site::current()) const;
  // Indices (int64) of the largest / smallest element: of the flattened array, or along `axis`.
  NDArray argmax(Site site = Site::current()) const;
  NDArray argmax(int axis, bool keepdims = false, Site site = Site::current()) const;
  NDArray argmin(Site site = Site::current()) const;
  NDArray argmin(int axis, bool keepdims = false, Site site = Site::current()) const;

  // ---- linear algebra, shape and layout -------------------------------------
  // 2-D matrix product, 1-D vectors as in NumPy, and batched products over
  // leading (broadcast) dimensions.
  NDArray matmul(const NDArray& other, Site site = Site::current()) const;
  // Views: they share this array's storage.
  NDArray transpose(Site site = Site::current()) const;  // reverses the axes
  NDArray transpose(const std::vector<int>& axes, Site site = Site::current()) const;
  NDArray permute(const std::vector<int>& axes, Site site = Site::current()) const;
  NDArray swap_axes(int a, int b, Site site = Site::current()) const;
  // A view when the layout allows it, otherwise a copy. One dimension may be -1.
  NDArray reshape(const Shape& shape, Site site = Site::current()) const;
  NDArray flatten(Site site = Site::current()) const;
  NDArray squeeze(Site site = Site::current()) const;  // drops every axis of length 1
  NDArray squeeze(const std::vector<int>& axes, Site site = Site::current()) const;
  NDArray expand_dims(int axis, Site site = Site::current()) const;
  // A broadcast view (stride 0 on the expanded axes).
  NDArray broadcast_to(const Shape& shape, Site site = Site::current()) const;
  NDArray get(const NDIndex& index, Site site = Site::current()) const;
  // The same view, joining `manager` instead of this array's (DJL's
  // get(NDManager, NDIndex)): an index into a long-lived array need not land
  // in its manager. ManagerClosed / ManagerCapped name `manager`.
  NDArray get(const ManagerRef& manager, const NDIndex& index, Site site = Site::current()) const;

  NDArray concat(const NDArray& other, int axis = 0, Site site = Site::current()) const;
  NDArray softmax(int axis = -1, Site site = Site::current()) const;
  NDArray log_softmax(int axis = -1, Site site = Site::current()) const;
  // Integer class indices → float32 one-hot vectors along a new last axis.
  NDArray one_hot(std::int64_t depth, DataType dtype = DataType::float32,
                  Site site = Site::current()) const;
  NDArray to_type(DataType dtype, Site site = Site::current()) const;
  // A contiguous copy in the same manager.
  NDArray dup(Site site = Site::current()) const;
  // Contiguous: this array itself if it already is, otherwise dup().
  NDArray contiguous(Site site = Site::current()) const;
  // A contiguous copy on `device` (CPU↔GPU, GPU↔GPU, or a plain copy on the
  // same device); like any op output it joins this array's manager.
  // InvalidArgument when `device` cannot be used (see gpu_count()). Not
  // recorded for autograd: gradients do not flow through a device change.
  NDArray to_device(Device device, Site site = Site::current()) const;

  // ---- autograd (ndgc/autograd.hpp; implemented in src/autograd/) ------------
  // true: backward() accumulates d(target)/d(this) into this array's gradient,
  // created once, here, as zeros of the same shape and dtype in the array's
  // current manager. false: closes that gradient. Floating dtypes only
  // (DTypeMismatch). Idempotent; returns this handle.
  NDArray& set_requires_gradient(bool on = true);
  bool requires_gradient() const;
  // The gradient array: the same array on every call, allocating nothing.
  // Gradients accumulate over backward() calls until zeroed
  // (autograd::zero_gradients or gradient().fill_(0)). InvalidArgument unless
  // requires_gradient().
  NDArray gradient() const;

  // ---- allocation -------------------------------------------------------------
  // `new NDArray(x)` goes on the collector's heap while the trace detector is
  // on (docs/design.md §7), so a forgotten one is found; `delete` frees it from
  // whichever heap it came from. Otherwise these are the global forms.
  // Containers and `new NDArray[n]` always use the global heap.
  static void* operator new(std::size_t size);
  static void* operator new(std::size_t size, const std::nothrow_t&) noexcept;
  static void* operator new(std::size_t, void* where) noexcept { return where; }
  static void operator delete(void* p) noexcept;
  static void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }
  static void operator delete(void*, void*) noexcept {}

  // Implementation access for the library's own layers (not for users).
  detail::KeyHeader* key() const noexcept { return key_; }
  static NDArray adopt(detail::KeyHeader* key) noexcept {  // takes over one count
    NDArray a;
    a.key_ = key;
    return a;
  }

 private:
  void copy_item(void* out, DataType as) const;
  detail::KeyHeader* key_ = nullptr;
};

// Free-function forms.
NDArray matmul(const NDArray& a, const NDArray& b, Site site = Site::current());
// A fully connected layer's product: x.matmul(weight).add(bias), computed as
// one op (the broadcast bias written first, the product accumulated onto it)
// when x is [..., k] with rows laid out one after another (a contiguous
// array, or any view whose batch axes step over whole rows), weight a
// matrix [k, units] and bias [units]; other shapes compose the two ops.
// Same result, errors and gradients as the composition.
NDArray linear(const NDArray& x, const NDArray& weight, const NDArray& bias, Site site = Site::current());
// A classifier's loss: the mean over rows of -log softmax(logits)[label],
// logits [..., classes], labels one class index per row (any numeric dtype).
// One fused kernel forward and one backward where the engine has them;
// otherwise log_softmax, one_hot, mul, sum and mul. A label outside
// [0, classes) is InvalidArgument naming it.
NDArray sparse_softmax_cross_entropy(const NDArray& logits, const NDArray& labels, Site site = Site::current());
// Elements of `x` where `condition` (boolean) is true, of `y` elsewhere; broadcasting.
NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y,
              Site site = Site::current());
NDArray concat(const NDList& arrays, int axis = 0, Site site = Site::current());
NDArray stack(const NDList& arrays, int axis = 0, Site site = Site::current());

// Operators: element-wise, broadcasting, creation site captured through Sited.
NDArray operator+(Sited a, const NDArray& b);
NDArray operator-(Sited a, const NDArray& b);
NDArray operator*(Sited a, const NDArray& b);
NDArray operator/(Sited a, const NDArray& b);
NDArray operator+(Sited a, double b);
NDArray operator-(Sited a, double b);
NDArray operator*(Sited a, double b);
NDArray operator/(Sited a, double b);
NDArray operator+(double a, Sited b);
NDArray operator-(double a, Sited b);
NDArray operator*(double a, Sited b);
NDArray operator/(double a, Sited b);
NDArray operator-(Sited a);
NDArray& operator+=(NDArray& a, const NDArray& b);
NDArray& operator-=(NDArray& a, const NDArray& b);
NDArray& operator*=(NDArray& a, const NDArray& b);
NDArray& operator/=(NDArray& a, const NDArray& b);
NDArray& operator+=(NDArray& a, double b);
NDArray& operator-=(NDArray& a, double b);
NDArray& operator*=(NDArray& a, double b);
NDArray& operator/=(NDArray& a, double b);

// Seeds the generator behind random_uniform and random_normal. The same seed
// gives the same arrays, whatever thread draws them.
void set_random_seed(std::uint64_t seed);

}  // namespace ndgc
