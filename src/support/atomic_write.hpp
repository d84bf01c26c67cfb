// Writing a file so that a reader never sees half of it: the bytes go to
// FILE.tmp, which is renamed over FILE once complete (the rename is atomic on
// one file system). Model files, ONNX files and report pages are written so.
//
//   support::write_atomically(file, "Model::save", [&](std::ostream& out) { out.write(p, n); });
//
// DataError, each naming `op` and the path: "<op>: cannot create <tmp>: <why>",
// "<op>: error writing <tmp>" (the stream failed, or `write` returned false),
// "<op>: cannot rename <tmp> to <file>: <why>"; the temporary is removed after
// a failed write or rename.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string_view>

namespace ndgc::support {

void write_atomically(const std::filesystem::path& file, std::string_view op,
                      const std::function<bool(std::ostream&)>& write);

}  // namespace ndgc::support
