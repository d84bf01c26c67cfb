// write_atomically(): FILE.tmp, then a rename (atomic_write.hpp).
#include "support/atomic_write.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc::support {

void write_atomically(const std::filesystem::path& file, std::string_view op,
                      const std::function<bool(std::ostream&)>& write) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw DataError(fmt::format("{}: cannot create {}: {}", op, tmp.string(), std::strerror(errno)));
    if (!write(out) || !out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      throw DataError(fmt::format("{}: error writing {}", op, tmp.string()));
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw DataError(fmt::format("{}: cannot rename {} to {}: {}", op, tmp.string(), file.string(), why));
  }
}

}  // namespace ndgc::support
