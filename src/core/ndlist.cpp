// NDList: the manager calls applied to every handle in the list.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc {

const NDArray& NDList::at(std::size_t i) const {
  if (i >= arrays_.size())
    throw InvalidArgument(fmt::format("NDList::at: index {} is out of range for a list of {}", i, arrays_.size()));
  return arrays_[i];
}

const NDArray& NDList::head() const {
  if (arrays_.empty()) throw InvalidArgument("NDList::head: the list is empty");
  return arrays_.front();
}

void NDList::attach(const ManagerRef& manager) const {
  for (const NDArray& a : arrays_) ManagerRef(manager).attach(a);
}

void NDList::detach() const {
  for (NDArray a : arrays_) a.detach();
}

void NDList::temp_attach(const ManagerRef& manager) const {
  for (const NDArray& a : arrays_) ManagerRef(manager).temp_attach(a);
}

std::size_t NDList::nbytes() const {
  std::size_t n = 0;
  for (const NDArray& a : arrays_) n += a.nbytes();
  return n;
}

}  // namespace ndgc
