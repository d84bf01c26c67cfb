// Einsum as ndgc ops (so each operand keeps its gradient):
//   1. the equation is parsed, "..." becoming one letter per broadcast axis
//      (right-aligned, as NumPy broadcasts), and without "->" the output is
//      the letters that appear once, in alphabetical order, after the
//      ellipsis axes;
//   2. in each operand a repeated letter takes the diagonal (a product with
//      the identity, summed over the second axis), and a letter no other
//      operand and not the output uses is summed out;
//   3. operands are contracted left to right, two at a time, as a batched
//      matmul: letters both keep are the batch, letters that end are
//      contracted, the others are the rows of one side and the columns of
//      the other;
//   4. the result is permuted into the output's order.
#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"

namespace ndgc::onnx::detail {
namespace {

struct Term {
  NDArray x;
  std::string letters;  // one per axis of x
};

// The letters of the ellipsis axes: characters no equation can use, right-aligned across operands.
char ellipsis_letter(int k) { return char('0' + k); }

struct Equation {
  std::vector<std::string> inputs;  // "..." expanded
  std::string output;
};

[[noreturn]] void bad(const RunContext& c, const std::string& equation, const std::string& why) {
  throw InvalidArgument(fmt::format("onnx: {}: equation '{}': {}", c.node.label(), equation, why));
}

Equation parse(const RunContext& c, const std::string& text) {
  std::string eq;
  for (char ch : text)
    if (ch != ' ') eq += ch;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    const std::size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != c.inputs.size())
    bad(c, text, fmt::format("{} operand terms for {} inputs", terms.size(), c.inputs.size()));
  Equation e;
  int ellipsis = 0;  // the most axes any "..." stands for
  std::vector<int> dots(terms.size(), -1);
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const std::size_t at = terms[i].find("...");
    std::string plain = terms[i];
    if (at != std::string::npos) plain.erase(at, 3);
    for (char ch : plain)
      if (!std::isalpha(static_cast<unsigned char>(ch))) bad(c, text, fmt::format("'{}' is not a letter", ch));
    const int rank = c.in(i).rank(), named = int(plain.size());
    if (at == std::string::npos ? named != rank : named > rank)
      bad(c, text, fmt::format("term '{}' does not fit input {} of rank {}", terms[i], i, rank));
    if (at != std::string::npos) dots[i] = rank - named, ellipsis = std::max(ellipsis, rank - named);
  }
  for (std::size_t i = 0; i < terms.size(); ++i) {
    std::string expanded = terms[i];
    if (dots[i] >= 0) {
      std::string axes;
      for (int k = ellipsis - dots[i]; k < ellipsis; ++k) axes += ellipsis_letter(k);
      expanded.replace(expanded.find("..."), 3, axes);
    }
    e.inputs.push_back(expanded);
  }
  std::string all_ellipsis;
  for (int k = 0; k < ellipsis; ++k) all_ellipsis += ellipsis_letter(k);
  if (arrow != std::string::npos) {
    e.output = eq.substr(arrow + 2);
    const std::size_t at = e.output.find("...");
    if (at != std::string::npos) e.output.erase(at, 3);
    for (char ch : e.output)
      if (!std::isalpha(static_cast<unsigned char>(ch))) bad(c, text, fmt::format("output '{}' is not a letter", ch));
    if (at != std::string::npos) e.output.insert(at, all_ellipsis);
    for (char ch : e.output)
      if (std::count(e.output.begin(), e.output.end(), ch) > 1 ||
          std::none_of(e.inputs.begin(), e.inputs.end(), [&](const std::string& s) { return s.find(ch) != std::string::npos; }))
        bad(c, text, fmt::format("output letter '{}' is repeated or in no operand", ch));
  } else {
    std::string once;
    for (char ch = 'A'; ch <= 'z'; ++ch) {
      int n = 0;
      for (const std::string& s : e.inputs) n += int(std::count(s.begin(), s.end(), ch));
      if (n == 1 && std::isalpha(static_cast<unsigned char>(ch))) once += ch;
    }
    e.output = all_ellipsis + once;
  }
  return e;
}

// The diagonal of every repeated letter.
void take_diagonals(const RunContext& c, Term& t) {
  for (std::size_t p = 0; p < t.letters.size(); ++p)
    for (std::size_t q = p + 1; q < t.letters.size();) {
      if (t.letters[q] != t.letters[p]) {
        ++q;
        continue;
      }
      const std::int64_t n = t.x.shape()[int(p)];
      if (t.x.shape()[int(q)] != n)
        throw ShapeMismatch(fmt::format("onnx: {}: letter '{}' has lengths {} and {}", c.node.label(), t.letters[p], n,
                                        t.x.shape()[int(q)]));
      std::vector<double> eye(std::size_t(n * n), 0.0);
      for (std::int64_t i = 0; i < n; ++i) eye[std::size_t(i * n + i)] = 1;
      Shape s(std::vector<std::int64_t>(t.letters.size(), 1));
      s[int(p)] = n, s[int(q)] = n;
      t.x = t.x.mul(c.manager.create<double>(eye, s).to_type(t.x.dtype())).sum({int(q)});
      t.letters.erase(q, 1);
    }
}

// Sums out the letters of t that `needed` lacks.
void sum_unneeded(Term& t, const std::string& needed) {
  std::vector<int> axes;
  std::string kept;
  for (std::size_t k = 0; k < t.letters.size(); ++k) {
    if (needed.find(t.letters[k]) == std::string::npos) axes.push_back(int(k));
    else kept += t.letters[k];
  }
  if (axes.empty()) return;
  t.x = t.x.sum(axes);
  t.letters = kept;
}

// t permuted to `order` (a permutation of its letters).
NDArray arranged(const Term& t, const std::string& order) {
  std::vector<int> axes;
  for (char ch : order) axes.push_back(int(t.letters.find(ch)));
  return t.x.permute(axes);
}

// The length of letter `ch` in t (which has it).
std::int64_t length_in(const Term& t, char ch) { return t.x.shape()[int(t.letters.find(ch))]; }

// `front` followed by the lengths of `letters` in t.
std::vector<std::int64_t> dims_of(std::vector<std::int64_t> front, const Term& t, const std::string& letters) {
  for (char ch : letters) front.push_back(length_in(t, ch));
  return front;
}

// a · b over their shared letters that `keep` does not need, as one batched matmul.
Term contract(const RunContext& c, const Term& a, const Term& b, const std::string& keep) {
  std::string batch, rows, cols, inner;
  for (char ch : a.letters) {
    const bool shared = b.letters.find(ch) != std::string::npos, kept = keep.find(ch) != std::string::npos;
    (shared ? (kept ? batch : inner) : rows) += ch;
  }
  for (char ch : b.letters)
    if (a.letters.find(ch) == std::string::npos) cols += ch;
  std::int64_t m = 1, n = 1, k = 1;
  std::vector<std::int64_t> batch_dims;  // a batch letter of length 1 on one side broadcasts
  for (char ch : batch) batch_dims.push_back(std::max(length_in(a, ch), length_in(b, ch)));
  for (char ch : rows) m *= length_in(a, ch);
  for (char ch : cols) n *= length_in(b, ch);
  for (char ch : inner) {
    if (length_in(a, ch) != length_in(b, ch))
      throw ShapeMismatch(fmt::format("onnx: {}: letter '{}' has lengths {} and {}", c.node.label(), ch,
                                      length_in(a, ch), length_in(b, ch)));
    k *= length_in(a, ch);
  }
  auto merged = [&](std::int64_t first, std::int64_t second) {
    std::vector<std::int64_t> d = batch_dims;
    d.push_back(first), d.push_back(second);
    return to_shape(d);
  };
  const NDArray left = arranged(a, batch + rows + inner).broadcast_to(to_shape(dims_of(batch_dims, a, rows + inner)));
  const NDArray right = arranged(b, batch + inner + cols).broadcast_to(to_shape(dims_of(batch_dims, b, inner + cols)));
  const NDArray product = left.reshape(merged(m, k)).matmul(right.reshape(merged(k, n)));
  return {product.reshape(to_shape(dims_of(dims_of(batch_dims, a, rows), b, cols))), batch + rows + cols};
}

void run_einsum(RunContext& c) {
  const std::string text = c.node.s("equation", "");
  const Equation e = parse(c, text);
  std::vector<Term> terms;
  for (std::size_t i = 0; i < e.inputs.size(); ++i) {
    terms.push_back({c.in(i), e.inputs[i]});
    take_diagonals(c, terms.back());
  }
  // What operand i may not sum away: the output's letters and those of every other operand.
  auto needed_besides = [&](std::size_t i, std::size_t from) {
    std::string needed = e.output;
    for (std::size_t j = from; j < terms.size(); ++j)
      if (j != i) needed += terms[j].letters;
    return needed;
  };
  for (std::size_t i = 0; i < terms.size(); ++i) sum_unneeded(terms[i], needed_besides(i, 0));
  Term acc = terms[0];
  for (std::size_t i = 1; i < terms.size(); ++i) {
    std::string keep = e.output;
    for (std::size_t j = i + 1; j < terms.size(); ++j) keep += terms[j].letters;
    acc = contract(c, acc, terms[i], keep);
  }
  sum_unneeded(acc, e.output);
  c.outputs.push_back(arranged(acc, e.output));
}

std::string einsum_check(const CheckContext& c) {
  if (c.node.s("equation", "").empty()) return "it has no equation";
  return same_numeric(c);
}

}  // namespace

void add_einsum_kernels(KernelTable& t) { t.add("Einsum", {run_einsum, einsum_check, 1, false, 12}); }

}  // namespace ndgc::onnx::detail
