// ops::FirstAxis (src/ops/first_axis.hpp): what the CUDA norm and LSTM
// kernels read a per-channel or per-row operand with, run on the host.
#include <doctest/doctest.h>

#include <cstdint>

#include "ops/first_axis.hpp"

using ndgc::ops::FirstAxis;
using ndgc::ops::TensorView;

TEST_CASE("FirstAxis: elements and rows along a strided first axis; a rank-0 view repeats its element") {
  float data[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  TensorView rows{};
  rows.data = data;
  rows.rank = 2;
  rows.shape[0] = 3, rows.shape[1] = 4;
  rows.strides[0] = 4, rows.strides[1] = 1;
  const FirstAxis<float> r(rows);
  CHECK(r.row(2)[1] == 9);
  CHECK(r[1] == 4);  // the first element of row 1
  TensorView every_third = rows;
  every_third.rank = 1;
  every_third.shape[0] = 4;
  every_third.strides[0] = 3;
  CHECK(FirstAxis<float>(every_third)[3] == 9);
  TensorView scalar = rows;
  scalar.rank = 0;
  const FirstAxis<float> s(scalar);
  CHECK(s[0] == 0);
  CHECK(s[5] == 0);
}
