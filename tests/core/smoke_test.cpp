#include <doctest/doctest.h>

#include <iostream>
#include <ndgc/ndgc.hpp>

using namespace ndgc;

TEST_CASE("smoke: the names users write") {
  NDManager base = NDManager::new_base_manager("app");
  ManagerRef sys = NDManager::system();
  NDArray a = base.ones({2, 3});
  NDArray b = base.arange(0, 6).reshape({2, 3});
  NDArray c = base.create(std::vector<float>{1, 2, 3}, {3});
  NDArray d = (a + b * 2.0f).relu().sum({1});
  CHECK(d.to_vector<float>() == std::vector<float>{1 + 3 + 5, 7 + 9 + 11});
  NDManager sub = base.new_sub_manager("scratch");
  NDArray r = sub.ret(sub.random_normal({3, 3}).matmul(sub.eye(3)));
  sub.cap();
  sub.close();
  CHECK_FALSE(sub.is_open());
  CHECK(r.manager().name() == "app");
  CHECK(c.to_string().find("[1, 2, 3]") != std::string::npos);
  CHECK(d.sum().item<float>() == 36.0f);
}
