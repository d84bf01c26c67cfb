// NDList: the manager calls applied to every handle in the list.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc {

const NDArray& NDList::at(std::size_t i) const {
  if (i >= size())
    throw InvalidArgument(fmt::format("NDList::at: index {} is out of range for a list of {}", i, size()));
  return data()[i];
}

const NDArray& NDList::head() const {
  if (empty()) throw InvalidArgument("NDList::head: the list is empty");
  return data()[0];
}

void NDList::attach(const ManagerRef& manager) const { ManagerRef(manager).attach_all(*this); }

void NDList::detach() const {
  for (NDArray a : *this) a.detach();
}

void NDList::temp_attach(const ManagerRef& manager) const { ManagerRef(manager).temp_attach_all(*this); }

void NDList::close(Site site) const {
  for (NDArray a : *this) a.close(site);
}

ManagerRef NDList::manager() const {
  if (empty())
    throw InvalidArgument("NDList::manager: the list is empty, so it has no manager; add an array first");
  return data()[0].manager();
}

std::size_t NDList::nbytes() const {
  std::size_t n = 0;
  for (const NDArray& a : *this) n += a.nbytes();
  return n;
}

}  // namespace ndgc
