// ONNX's own headers (Debian's libonnx-dev), included once, here, with their
// warnings silenced: the generated protobuf code and the checker are not ours.
#pragma once

#pragma GCC system_header
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
