// Uses the installed headers and library: a manager, arrays, an op, a
// scope; prints "ndgc consumer ok" when the numbers are right.
#include <cstdio>

#include <ndgc/manager.hpp>
#include <ndgc/ndlist.hpp>
#include <ndgc/scope.hpp>

int main() {
  ndgc::NDManager m = ndgc::NDManager::new_base_manager("consumer");
  ndgc::NDArray a = m.arange(0, 6).reshape({2, 3});
  float total = 0;
  {
    ndgc::NDScope scope;
    total = a.add(1.0).sum().item<float>();  // 1 + ... + 6
  }
  ndgc::NDList list{a.get(m, "1")};
  const bool ok = total == 21 && list.manager().same(m) && list[0].sum().item<float>() == 12;
  std::printf(ok ? "ndgc consumer ok\n" : "ndgc consumer: wrong result %g\n", double(total));
  return ok ? 0 : 1;
}
