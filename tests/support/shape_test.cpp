// Shapes and devices.
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

TEST_CASE("Shape basics, DJL spelling") {
  Shape s{2, 3, 4};
  CHECK(s.rank() == 3);
  CHECK(s.dimension() == 3);
  CHECK(s.size() == 24);
  CHECK(s[1] == 3);
  CHECK(s.get(-1) == 4);
  CHECK(s.to_string() == "(2, 3, 4)");
  CHECK(Shape{5}.to_string() == "(5,)");
  CHECK(Shape{}.to_string() == "()");
  CHECK(Shape{}.size() == 1);
  CHECK(Shape{}.is_scalar());
  s.insert(0, 1);
  CHECK(s == Shape{1, 2, 3, 4});
  s.erase(0);
  CHECK(s == Shape{2, 3, 4});
  CHECK_THROWS_WITH_AS(s.get(3), doctest::Contains("axis 3"), InvalidArgument);
  CHECK_THROWS_WITH_AS((Shape{1, 2, 3, 4, 5, 6, 7, 8, 9}), doctest::Contains("at most 8"), InvalidArgument);
  Shape full{1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_THROWS_AS(full.push_back(1), InvalidArgument);
}

TEST_CASE("devices print as DJL does and parse as command lines spell them") {
  CHECK(Device::cpu().to_string() == "cpu()");
  CHECK(Device::gpu(1).to_string() == "gpu(1)");
  CHECK(Device::gpu(0) != Device::cpu());
  CHECK(parse_device("cpu") == Device::cpu());
  CHECK(parse_device("gpu") == Device::gpu(0));
  CHECK(parse_device("gpu:15") == Device::gpu(15));
  for (const char* bad : {"gpu:16", "gpu:", "GPU", "gpu:1x", "gpu:007", "cpu:0", ""})
    CHECK_MESSAGE(!parse_device(bad), bad);
  CHECK(device_argument(Device::gpu(2)) == "gpu:2");
  CHECK(device_argument(Device::cpu()) == "cpu");
  CHECK(parse_device(device_argument(Device::gpu(7))) == Device::gpu(7));
}
