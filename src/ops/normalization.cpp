// layer_norm and batch_norm.
//
// Both normalise (x - mean) / sqrt(var + eps) with the biased variance, then
// scale by gamma and shift by beta. Their backward passes
// (autograd/layer_rules.cpp) recompute the statistics from x instead of
// keeping them as arrays between the passes.
//
// Note [Running statistics]
// batch_norm in training updates running_mean and running_var in place:
// running = (1 - momentum) running + momentum statistic, with the unbiased
// variance (M / (M - 1), M = N·spatial), as PyTorch does. The update is not
// recorded (in-place ops never are) and runs after the output is computed,
// through the engine's element-wise kernels on the running arrays' own
// views. Not training, the running statistics normalise and are recorded as
// inputs (constants: they get no gradient).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/layer_support.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

namespace {

// Note [Norms in mixed precision]
// A 16-bit x may come with float32 parameters (gamma, beta, the running
// statistics): the statistics then run in float32 (the kernels widen x) and
// the running statistics keep their precision across steps, as PyTorch's
// batch norm under autocast does. The output keeps x's dtype.
void check_param(const char* op, const char* what, const ArrayImpl& x, const ArrayImpl& p, const Shape& want,
                 const char* meaning) {
  if (!(is_half(x.dtype) && p.dtype == DataType::float32)) check_same_dtype(op, x, p);
  check_same_device(op, x, p);
  if (!(p.shape == want))
    throw ShapeMismatch(fmt::format("{}: {} {} must have shape {} ({}) for x {}", op, what, describe(p),
                                    want.to_string(), meaning, describe(x)));
}

}  // namespace

NDArray layer_norm(const NDArray& x, const NDArray& gamma, const NDArray& beta, double eps, Site site) {
  if (autocast::widens({&x, &gamma, &beta}))
    return layer_norm(autocast::widen(x, site), autocast::widen(gamma, site), autocast::widen(beta, site), eps, site);
  detail::enter();
  const char* op = "layer_norm";
  Pinned px(x, op), pg(gamma, op), pb(beta, op);
  check_floating(op, *px);
  const int k = pg->shape.rank(), r = px->shape.rank();
  if (k == 0 || k > r)
    throw ShapeMismatch(fmt::format("{}: gamma {} must have rank 1 to {} (the normalised trailing axes of x {})",
                                    op, describe(*pg), r, describe(*px)));
  Shape tail;
  for (int i = r - k; i < r; ++i) tail.push_back(px->shape[i]);
  check_param(op, "gamma", *px, *pg, tail, "the trailing axes of x");
  check_param(op, "beta", *px, *pb, tail, "gamma's");
  if (!(eps >= 0)) throw InvalidArgument(fmt::format("{}: eps {} must be >= 0", op, eps));
  check_layer_kernels(op, px->device);
  auto out = new_output(px->shape, px->dtype, px->device, site, op);
  const std::int64_t dim = tail.size(), rows = dim > 0 ? px->shape.size() / dim : 0;
  if (out->size() > 0) {
    std::unique_ptr<ArrayImpl> kx, kg, kb;
    const TensorView xv = as_rows(contiguous_of(*px, kx, op), rows, dim);
    const TensorView gv = as_rows(contiguous_of(*pg, kg, op), dim, 0);
    const TensorView bv = as_rows(contiguous_of(*pb, kb, op), dim, 0);
    engine(px->device).layer_norm(xv, gv, bv, eps, as_rows(view_of(*out), rows, dim));
  }
  NDArray result = publish_like(std::move(out), *px, op);
  record({.kind = OpKind::layer_norm, .scalar = eps}, {x, gamma, beta}, result);
  return result;
}

NDArray batch_norm(const NDArray& x, const NDArray& gamma, const NDArray& beta, const NDArray& running_mean,
                   const NDArray& running_var, bool training, double momentum, double eps, Site site) {
  // x keeps its dtype (Note [Norms in mixed precision]); 16-bit parameters read with a float32 x are widened
  // (running statistics update in place while training, so only when they are read alone).
  if (Autocast::active() != DataType::float32 && x.defined() && x.dtype() == DataType::float32 &&
      (autocast::widens({&gamma, &beta}) || (!training && autocast::widens({&running_mean, &running_var}))))
    return batch_norm(x, autocast::widen(gamma, site), autocast::widen(beta, site),
                      training ? running_mean : autocast::widen(running_mean, site),
                      training ? running_var : autocast::widen(running_var, site), training, momentum, eps, site);
  detail::enter();
  const char* op = "batch_norm";
  Pinned px(x, op), pg(gamma, op), pb(beta, op), pm(running_mean, op), pv(running_var, op);
  check_floating(op, *px);
  if (px->shape.rank() < 2)
    throw ShapeMismatch(fmt::format("{}: x {} has rank {}, but must be [N, C, ...] (rank 2 or more)", op,
                                    describe(*px), px->shape.rank()));
  const std::int64_t n = px->shape[0], c = px->shape[1], spatial = c > 0 && n > 0 ? px->shape.size() / (n * c) : 0;
  const Shape channels{c};
  check_param(op, "gamma", *px, *pg, channels, "one per channel");
  check_param(op, "beta", *px, *pb, channels, "one per channel");
  check_param(op, "running_mean", *px, *pm, channels, "one per channel");
  check_param(op, "running_var", *px, *pv, channels, "one per channel");
  for (const ArrayImpl* p : {pb.get(), pm.get(), pv.get()}) check_same_dtype(op, *pg, *p);
  if (!(eps >= 0)) throw InvalidArgument(fmt::format("{}: eps {} must be >= 0", op, eps));
  if (!(momentum >= 0 && momentum <= 1))
    throw InvalidArgument(fmt::format("{}: momentum {} is outside [0, 1]", op, momentum));
  const std::int64_t count = n * spatial;
  if (training) {
    if (count < 2 && px->shape.size() > 0)
      throw InvalidArgument(fmt::format("{}: x {} has {} value per channel; training needs more than 1", op,
                                        describe(*px), count));
    check_writable(op, *pm);
    check_writable(op, *pv);
  }
  check_layer_kernels(op, px->device);
  auto out = new_output(px->shape, px->dtype, px->device, site, op);
  if (out->size() > 0) {
    Engine& e = engine(px->device);
    std::unique_ptr<ArrayImpl> kx;
    TensorView xv = contiguous_of(*px, kx, op);
    const std::int64_t s3[3] = {n, c, spatial};
    xv.rank = 3;
    for (int i = 0; i < 3; ++i) xv.shape[i] = s3[i];
    xv.strides[2] = 1, xv.strides[1] = spatial, xv.strides[0] = c * spatial;
    TensorView ov = xv;
    ov.data = out->data();
    if (training) {
      auto mean = new_output(channels, pg->dtype, px->device, site, op);  // the parameters' precision
      auto var = new_output(channels, pg->dtype, px->device, site, op);
      const TensorView mv = view_of(*mean), vv = view_of(*var);
      e.batch_norm_stats(xv, mv, vv);
      e.batch_norm(xv, mv, vv, view_of(*pg), view_of(*pb), eps, ov);
      // See Note [Running statistics].
      const TensorView rm = view_of(*pm), rv = view_of(*pv);
      e.binary_scalar(Binary::mul, mv, momentum, false, mv);
      e.binary_scalar(Binary::mul, rm, 1 - momentum, false, rm);
      e.binary(Binary::add, rm, mv, rm);
      e.binary_scalar(Binary::mul, vv, momentum * double(count) / double(count - 1), false, vv);
      e.binary_scalar(Binary::mul, rv, 1 - momentum, false, rv);
      e.binary(Binary::add, rv, vv, rv);
    } else {
      e.batch_norm(xv, view_of(*pm), view_of(*pv), view_of(*pg), view_of(*pb), eps, ov);
    }
  }
  NDArray result = publish_like(std::move(out), *px, op);
  if (training)
    record({.kind = OpKind::batch_norm, .scalar = eps, .training = true}, {x, gamma, beta}, result);
  else
    record({.kind = OpKind::batch_norm, .scalar = eps, .training = false},
           {x, gamma, beta, running_mean, running_var}, result);
  return result;
}

}  // namespace ndgc
