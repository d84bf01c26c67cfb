// Tests src/ops/data.cpp: to_vector / copy_to (with dtype conversion, from
// views in their element order), item, and to_string (DJL's "ND: shape
// device dtype" header, nested rows, summarised large arrays, exact integers).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

TEST_CASE("to_vector converts to the requested element type") {
  NDManager m = fresh();
  NDArray f = m.create(std::vector<float>{1.5f, -2.25f, 300.0f});
  CHECK(f.to_vector<float>() == std::vector<float>{1.5f, -2.25f, 300.0f});
  CHECK(f.to_vector<double>() == std::vector<double>{1.5, -2.25, 300.0});
  CHECK(f.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2, 300});
  CHECK(f.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 300});
  CHECK(f.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0, 255});  // saturates
  NDArray i = m.create(std::vector<std::int64_t>{(std::int64_t(1) << 53) + 1, -7});
  CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{(std::int64_t(1) << 53) + 1, -7});
  CHECK(i.to_vector<float>() == std::vector<float>{0x1p53f, -7.0f});
  NDArray b = make_bool(m, {1, 0}, {2});
  CHECK(b.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 0});
  CHECK(b.to_vector<float>() == std::vector<float>{1, 0});
  CHECK(m.zeros({0, 3}).to_vector<float>().empty());
}

TEST_CASE("to_vector and copy_to read views in row-major order of the view") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 12).reshape({3, 4});
  CHECK(a.transpose().to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(a.get("1:, ::3").to_vector<std::int32_t>() == std::vector<std::int32_t>{4, 7, 8, 11});
  CHECK(a.get("2").broadcast_to({2, 4}).to_vector<double>() == std::vector<double>{8, 9, 10, 11, 8, 9, 10, 11});
  double out[4] = {};
  a.get(":, 1").copy_to(out, DataType::float64, 3);
  CHECK(out[0] == 1);
  CHECK(out[2] == 9);
  CHECK_THROWS_WITH_AS(a.copy_to(out, DataType::float64, 4), doctest::Contains("copy_to: room for 4 elements"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(a.copy_to(out, DataType::float64, 4), doctest::Contains("(3, 4)"), InvalidArgument);
}

TEST_CASE("item reads the single element of scalars and one-element arrays") {
  NDManager m = fresh();
  CHECK(m.create_scalar(2.5).item<double>() == 2.5);
  CHECK(m.create_scalar(2.5).item<float>() == 2.5f);
  CHECK(m.create_scalar(2.5).item<std::int32_t>() == 2);
  CHECK(m.full({1, 1, 1}, 7, DataType::int64).item<std::int64_t>() == 7);
  CHECK(m.create_scalar(std::int32_t(-3)).item<double>() == -3.0);
  CHECK(m.create_scalar(300.0).item<std::uint8_t>() == 255);
  CHECK(make_bool(m, {1}, {1}).item<bool>() == true);
  CHECK(m.ones({3}).gt(2).sum().item<std::int64_t>() == 0);
  CHECK(m.arange(0, 5).get("3").item<float>() == 3.0f);  // a view with an offset
  CHECK_THROWS_WITH_AS(m.ones({2}).item<float>(), doctest::Contains("item: "), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.ones({2, 3}).item<float>(), doctest::Contains("has 6 elements"), InvalidArgument);
  CHECK_THROWS_WITH_AS(m.zeros({0}).item<float>(), doctest::Contains("has 0 elements"), InvalidArgument);
}

TEST_CASE("to_string prints DJL's header and the rows") {
  NDManager m = fresh();
  CHECK(m.arange(0, 6).reshape({2, 3}).to_string() == "ND: (2, 3) cpu() float32\n[[0, 1, 2],\n [3, 4, 5]]");
  CHECK(m.create(std::vector<float>{1, 2, 3}).to_string() == "ND: (3,) cpu() float32\n[1, 2, 3]");
  CHECK(m.create(std::vector<double>{0.5, -1.25, 1e-7, 123456789}).to_string() ==
        "ND: (4,) cpu() float64\n[0.5, -1.25, 1e-07, 1.23457e+08]");
  CHECK(m.create_scalar(3.5).to_string() == "ND: () cpu() float64\n3.5");
  CHECK(m.zeros({0}).to_string() == "ND: (0,) cpu() float32\n[]");
  CHECK(m.zeros({2, 0}).to_string() == "ND: (2, 0) cpu() float32\n[[],\n []]");
  CHECK(m.arange(0, 8, 1, DataType::int32).reshape({2, 2, 2}).to_string() ==
        "ND: (2, 2, 2) cpu() int32\n[[[0, 1],\n  [2, 3]],\n [[4, 5],\n  [6, 7]]]");
  CHECK(m.arange(0, 4).reshape({2, 2}).transpose().to_string() == "ND: (2, 2) cpu() float32\n[[0, 2],\n [1, 3]]");
  CHECK(make_bool(m, {1, 0}, {2}).to_string() == "ND: (2,) cpu() boolean\n[true, false]");
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(m.create(std::vector<double>{std::nan(""), inf, -inf}).to_string() ==
        "ND: (3,) cpu() float64\n[nan, inf, -inf]");
}

TEST_CASE("to_string prints integers exactly, int64 past 2^53 included") {
  NDManager m = fresh();
  const std::int64_t big = (std::int64_t(1) << 53) + 1;
  CHECK(m.create(std::vector<std::int64_t>{big, -big}).to_string() ==
        "ND: (2,) cpu() int64\n[9007199254740993, -9007199254740993]");
  CHECK(m.create(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()}).to_string() ==
        "ND: (1,) cpu() int64\n[-9223372036854775808]");
  CHECK(m.create(std::vector<std::uint8_t>{255, 0}).to_string() == "ND: (2,) cpu() uint8\n[255, 0]");
}

TEST_CASE("to_string summarises arrays of more than 1000 elements") {
  NDManager m = fresh();
  CHECK(m.arange(0, 1000).to_string().find("...") == std::string::npos);
  CHECK(m.arange(0, 1001).to_string() == "ND: (1001,) cpu() float32\n[0, 1, 2, ..., 998, 999, 1000]");
  std::string s = m.arange(0, 1200, 1, DataType::int32).reshape({30, 40}).to_string();
  CHECK(s ==
        "ND: (30, 40) cpu() int32\n"
        "[[0, 1, 2, ..., 37, 38, 39],\n"
        " [40, 41, 42, ..., 77, 78, 79],\n"
        " [80, 81, 82, ..., 117, 118, 119],\n"
        " ...,\n"
        " [1080, 1081, 1082, ..., 1117, 1118, 1119],\n"
        " [1120, 1121, 1122, ..., 1157, 1158, 1159],\n"
        " [1160, 1161, 1162, ..., 1197, 1198, 1199]]");
  // A small axis inside a large array prints whole.
  std::string t = m.zeros({2000, 2}, DataType::int32).to_string();
  CHECK(t.find("[0, 0]") != std::string::npos);
  CHECK(t.size() < 200);
}

TEST_CASE("data access on closed arrays and empty handles names the call") {
  NDManager m = fresh();
  NDArray a = m.ones({2});
  a.close();
  // to_vector (a template in ndarray.hpp) asks size() first, so the message names "size".
  CHECK_THROWS_WITH_AS(a.to_vector<float>(), doctest::Contains("was closed by close()"), ArrayClosed);
  std::vector<float> room(2);
  CHECK_THROWS_WITH_AS(a.copy_to(room.data(), DataType::float32, 2), doctest::Contains("to_vector"), ArrayClosed);
  CHECK_THROWS_WITH_AS(a.item<float>(), doctest::Contains("item"), ArrayClosed);
  CHECK_THROWS_WITH_AS(a.to_string(), doctest::Contains("to_string"), ArrayClosed);
  NDArray e;
  CHECK_THROWS_WITH_AS(e.to_vector<float>(), doctest::Contains("empty"), InvalidArgument);
  CHECK_THROWS_WITH_AS(e.to_string(), doctest::Contains("to_string"), InvalidArgument);
  CHECK_THROWS_WITH_AS(e.item<double>(), doctest::Contains("item"), InvalidArgument);
}
