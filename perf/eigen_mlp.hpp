// The hand-written Eigen MLP step (784→128→64→10, ReLU, softmax cross
// entropy, Adam lr 1e-3): preallocated row-major matrices, manual backward,
// fused Adam. The floor ndgc is measured against, shared by
// bench_train_epoch (time) and step_driver (instructions, allocations).
// Not thread-safe: one object per thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include <Eigen/Core>

namespace ndgc::perf {

class EigenMlp {
 public:
  static constexpr std::int64_t kIn = 784, kH1 = 128, kH2 = 64, kOut = 10, kBatch = 32;
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Row = Eigen::Matrix<float, 1, Eigen::Dynamic>;

  explicit EigenMlp(std::mt19937_64& rng)
      : W1(xavier(rng, kIn, kH1)), W2(xavier(rng, kH1, kH2)), W3(xavier(rng, kH2, kOut)) {}

  // One step on rows `order[begin .. begin + rows)` of `x` (n × 784) and
  // `y`; returns the batch's summed loss.
  double step(const float* x, const std::int64_t* y, const std::int64_t* order, std::int64_t rows) {
    for (std::int64_t r = 0; r < rows; ++r) std::copy_n(x + order[r] * kIn, kIn, X.row(r).data());
    auto xs = X.topRows(rows);
    auto h1 = H1.topRows(rows), h2 = H2.topRows(rows), z = Z.topRows(rows), dz = dZ.topRows(rows);
    auto dh2 = dH2.topRows(rows), dh1 = dH1.topRows(rows);
    h1.noalias() = xs * W1;
    h1 = (h1.rowwise() + b1).cwiseMax(0.0f);
    h2.noalias() = h1 * W2;
    h2 = (h2.rowwise() + b2).cwiseMax(0.0f);
    z.noalias() = h2 * W3;
    z.rowwise() += b3;
    // Softmax cross entropy and its gradient (softmax - onehot) / rows.
    double loss = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      auto zr = z.row(r);
      const float mx = zr.maxCoeff();
      dz.row(r) = (zr.array() - mx).exp().matrix();
      const float sum = dz.row(r).sum();
      const std::int64_t label = y[order[r]];
      loss += std::log(sum) - (zr(label) - mx);
      dz.row(r) /= sum;
      dz(r, label) -= 1;
    }
    dz /= float(rows);
    dW3.noalias() = h2.transpose() * dz;
    db3 = dz.colwise().sum();
    dh2.noalias() = dz * W3.transpose();
    dh2 = (h2.array() > 0).select(dh2, 0.0f);
    dW2.noalias() = h1.transpose() * dh2;
    db2 = dh2.colwise().sum();
    dh1.noalias() = dh2 * W2.transpose();
    dh1 = (h1.array() > 0).select(dh1, 0.0f);
    dW1.noalias() = xs.transpose() * dh1;
    db1 = dh1.colwise().sum();
    ++t;
    adam(W1.data(), dW1.data(), sW1, W1.size());
    adam(b1.data(), db1.data(), sb1, b1.size());
    adam(W2.data(), dW2.data(), sW2, W2.size());
    adam(b2.data(), db2.data(), sb2, b2.size());
    adam(W3.data(), dW3.data(), sW3, W3.size());
    adam(b3.data(), db3.data(), sb3, b3.size());
    return loss;
  }

 private:
  struct AdamState {
    Mat m, v;
    AdamState(Eigen::Index r, Eigen::Index c) : m(Mat::Zero(r, c)), v(Mat::Zero(r, c)) {}
  };

  static Mat xavier(std::mt19937_64& rng, Eigen::Index r, Eigen::Index c) {
    std::uniform_real_distribution<float> u(-std::sqrt(6.0f / float(r + c)), std::sqrt(6.0f / float(r + c)));
    Mat w(r, c);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = u(rng);
    return w;
  }

  // One pass over the parameter: the same maths as nn::Adam.
  void adam(float* w, const float* g, AdamState& s, Eigen::Index n) const {
    const float beta1 = 0.9f, beta2 = 0.999f, lr = 1e-3f, eps = 1e-8f;
    const float step = lr / (1 - std::pow(beta1, float(t)));
    const float inv_sqrt_bc2 = 1 / std::sqrt(1 - std::pow(beta2, float(t)));
    Eigen::Map<Eigen::ArrayXf> W(w, n), M(s.m.data(), n), V(s.v.data(), n);
    Eigen::Map<const Eigen::ArrayXf> G(g, n);
    M = beta1 * M + (1 - beta1) * G;
    V = beta2 * V + (1 - beta2) * G.square();
    W -= step * M / (V.sqrt() * inv_sqrt_bc2 + eps);
  }

  Mat W1, W2, W3;
  Row b1 = Row::Zero(kH1), b2 = Row::Zero(kH2), b3 = Row::Zero(kOut);
  Mat dW1{kIn, kH1}, dW2{kH1, kH2}, dW3{kH2, kOut};
  Row db1{kH1}, db2{kH2}, db3{kOut};
  AdamState sW1{kIn, kH1}, sW2{kH1, kH2}, sW3{kH2, kOut}, sb1{1, kH1}, sb2{1, kH2}, sb3{1, kOut};
  Mat X{kBatch, kIn}, H1{kBatch, kH1}, H2{kBatch, kH2}, Z{kBatch, kOut}, dZ{kBatch, kOut}, dH2{kBatch, kH2},
      dH1{kBatch, kH1};
  int t = 0;
};

}  // namespace ndgc::perf
