// The C++ operators: thin forms of the named ops that keep the caller's line
// as the creation site (through Sited's defaulted source_location).
#include "ndgc/ndarray.hpp"

namespace ndgc {

NDArray operator+(Sited a, const NDArray& b) { return a.array.add(b, a.site); }
NDArray operator-(Sited a, const NDArray& b) { return a.array.sub(b, a.site); }
NDArray operator*(Sited a, const NDArray& b) { return a.array.mul(b, a.site); }
NDArray operator/(Sited a, const NDArray& b) { return a.array.div(b, a.site); }
NDArray operator+(Sited a, double b) { return a.array.add(b, a.site); }
NDArray operator-(Sited a, double b) { return a.array.sub(b, a.site); }
NDArray operator*(Sited a, double b) { return a.array.mul(b, a.site); }
NDArray operator/(Sited a, double b) { return a.array.div(b, a.site); }
NDArray operator+(double a, Sited b) { return b.array.add(a, b.site); }
NDArray operator-(double a, Sited b) { return b.array.rsub(a, b.site); }
NDArray operator*(double a, Sited b) { return b.array.mul(a, b.site); }
NDArray operator/(double a, Sited b) { return b.array.rdiv(a, b.site); }
NDArray operator-(Sited a) { return a.array.neg(a.site); }
NDArray& operator+=(NDArray& a, const NDArray& b) { return a.add_(b); }
NDArray& operator-=(NDArray& a, const NDArray& b) { return a.sub_(b); }
NDArray& operator*=(NDArray& a, const NDArray& b) { return a.mul_(b); }
NDArray& operator/=(NDArray& a, const NDArray& b) { return a.div_(b); }
NDArray& operator+=(NDArray& a, double b) { return a.add_(b); }
NDArray& operator-=(NDArray& a, double b) { return a.sub_(b); }
NDArray& operator*=(NDArray& a, double b) { return a.mul_(b); }
NDArray& operator/=(NDArray& a, double b) { return a.div_(b); }

}  // namespace ndgc
