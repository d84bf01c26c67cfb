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

void NDList::attach(const ManagerRef& manager) const { ManagerRef(manager).attach_all(*this); }

void NDList::detach() const {
  for (NDArray a : arrays_) a.detach();
}

void NDList::temp_attach(const ManagerRef& manager) const { ManagerRef(manager).temp_attach_all(*this); }

void NDList::close(Site site) const {
  for (NDArray a : arrays_) a.close(site);
}

ManagerRef NDList::manager() const {
  if (arrays_.empty())
    throw InvalidArgument("NDList::manager: the list is empty, so it has no manager; add an array first");
  return arrays_.front().manager();
}

std::size_t NDList::nbytes() const {
  std::size_t n = 0;
  for (const NDArray& a : arrays_) n += a.nbytes();
  return n;
}

}  // namespace ndgc
