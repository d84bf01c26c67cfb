// The ops' side of ndgc::Autocast (ndgc/autocast.hpp): which operands an op
// converts inside a region, and the conversions themselves.
//
// An op starts with
//   if (autocast::lowers({&x, &w})) return op(autocast::lower(x, x), autocast::lower(w, x), ...);
// (or widens / widen for the float32 list); the second call finds nothing to
// convert and runs as ever. Outside a region both tests are one thread-local load.
#pragma once

#include <initializer_list>

#include "ndgc/autocast.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc::ops::autocast {

// A region is open and one of the defined operands is float32.
bool lowers(std::initializer_list<const NDArray*> operands);
// A region is open and one of the defined operands is 16-bit.
bool widens(std::initializer_list<const NDArray*> operands);
// x in the region's dtype when it is float32, else x; the copy joins `data`'s manager.
NDArray lower(const NDArray& x, const NDArray& data, Site site);
// x as float32 when it is 16-bit, else x; the copy joins x's manager.
NDArray widen(const NDArray& x, Site site);
// For a binary op inside a region: x as `dtype` when both are floating and x's is narrower.
NDArray promote(const NDArray& x, DataType dtype, Site site);
// Whether a binary op of a and b should promote (a region is open, both floating, dtypes differ).
bool promotes(const NDArray& a, const NDArray& b);

}  // namespace ndgc::ops::autocast
