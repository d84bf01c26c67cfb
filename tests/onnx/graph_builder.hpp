// Small ONNX models written from C++ for the tests, with ONNX's own classes.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "onnx/proto.hpp"

namespace ndgc::test {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("ndgc-tests");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // dims: -1 for a dynamic axis ("N").
  GraphBuilder& input(const std::string& name, std::vector<std::int64_t> dims, int elem = ::onnx::TensorProto::FLOAT) {
    value(model_.mutable_graph()->add_input(), name, dims, elem);
    return *this;
  }
  GraphBuilder& output(const std::string& name, std::vector<std::int64_t> dims, int elem = ::onnx::TensorProto::FLOAT) {
    value(model_.mutable_graph()->add_output(), name, dims, elem);
    return *this;
  }
  GraphBuilder& floats(const std::string& name, std::vector<std::int64_t> dims, const std::vector<float>& data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (float v : data) t->add_float_data(v);
    return *this;
  }
  GraphBuilder& ints(const std::string& name, std::vector<std::int64_t> dims, const std::vector<std::int64_t>& data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : data) t->add_int64_data(v);
    return *this;
  }
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                          const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_s(::onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_f(::onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  // A graph attribute (If's branches, Loop's and Scan's body): another builder's graph.
  static void attr_g(::onnx::NodeProto& n, const std::string& name, const GraphBuilder& body) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = body.model_.graph();
  }

  ::onnx::ModelProto& model() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }
  std::filesystem::path write(const std::filesystem::path& file) const {
    std::ofstream(file, std::ios::binary) << bytes();
    return file;
  }

 private:
  static void value(::onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::int64_t>& dims, int elem) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* shape = t->mutable_shape();
    for (auto d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
  }
  ::onnx::ModelProto model_;
};

// A folder of its own under the temporary directory, removed at the end.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("ndgc_onnx_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& file) const { return path_ / file; }

 private:
  std::filesystem::path path_;
};

}  // namespace ndgc::test
