// ArrayImpl: construction, layout queries and descriptions.
#include "core/array_impl.hpp"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "core/manager_impl.hpp"
#include "ndgc/error.hpp"
#include "support/free_list.hpp"

namespace ndgc::detail {

Shape contiguous_strides(const Shape& shape) {
  Shape strides = shape;
  std::int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

std::unique_ptr<ArrayImpl> ArrayImpl::make(const Shape& shape, DataType dtype, Device device, Site site) {
  // The product of the dimensions (zeros counted as ones) must fit int64: an
  // empty array beside huge dimensions would overflow its strides (found by
  // tests/fuzz/idx_reader_fuzz.cpp), and so would every layout computation.
  std::int64_t product = 1;
  for (std::int64_t d : shape) {
    if (d < 0)
      throw InvalidArgument(fmt::format("shape {} has a negative dimension", shape.to_string()));
    if (__builtin_mul_overflow(product, std::max<std::int64_t>(d, 1), &product))
      throw InvalidArgument(fmt::format("shape {} is too large: the product of its dimensions overflows int64",
                                        shape.to_string()));
  }
  StorageRef storage(Storage::allocate(device, std::size_t(shape.size()) * size_of(dtype)));
  auto impl = std::make_unique<ArrayImpl>(shape, contiguous_strides(shape), 0, dtype, std::move(storage), site);
  impl->owns_storage = true;
  return impl;
}

ArrayImpl::ArrayImpl(const Shape& shape_, const Shape& strides_, std::int64_t offset_, DataType dtype_,
                     StorageRef storage_, Site site_)
    : shape(shape_),
      strides(strides_),
      offset(offset_),
      dtype(dtype_),
      device(storage_->device()),
      storage(std::move(storage_)),
      site(site_) {}

using ArrayImplFreeList = support::FreeList<sizeof(ArrayImpl), ArrayImpl>;

void* ArrayImpl::operator new(std::size_t size) {
  return size == sizeof(ArrayImpl) ? ArrayImplFreeList::allocate() : ::operator new(size);
}

void ArrayImpl::operator delete(void* p, std::size_t size) noexcept {
  if (size == sizeof(ArrayImpl)) ArrayImplFreeList::free(p);
  else ::operator delete(p);
}

ArrayImpl::~ArrayImpl() {
  if (owner) owner->release();
  for (ManagerImpl* m : lenders) m->release();
}

bool ArrayImpl::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string ArrayImpl::get_name() const {
  std::lock_guard lock(meta);
  return name;
}

ManagerImpl* ArrayImpl::acquire_owner() const {
  std::lock_guard lock(meta);
  if (owner) owner->retain();
  return owner;
}

std::string ArrayImpl::describe() const {
  std::string n = get_name();
  return fmt::format("{}{} ({}, {})", n.empty() ? "" : "'" + n + "' ", uuid.to_string(), shape.to_string(),
                     to_string(dtype));
}

}  // namespace ndgc::detail
