// admin_authorized(): Bearer or Basic, compared in constant time.
#include "serving/admin_auth.hpp"

#include <boost/beast/core/detail/base64.hpp>

namespace ndgc::serving {
namespace {

bool same(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// "user:password" from the Basic scheme's base64, or empty when malformed.
std::string basic_credentials(std::string_view encoded) {
  namespace base64 = boost::beast::detail::base64;
  std::string out(base64::decoded_size(encoded.size()), '\0');
  const auto [written, read] = base64::decode(out.data(), encoded.data(), encoded.size());
  // The decoder stops at the padding: only '=' may follow what it read.
  if (encoded.find_first_not_of('=', read) != std::string_view::npos) return {};
  out.resize(written);
  return out;
}

}  // namespace

bool admin_authorized(std::string_view authorization, std::string_view token) {
  if (token.empty()) return false;
  constexpr std::string_view kBearer = "Bearer ", kBasic = "Basic ";
  if (authorization.starts_with(kBearer)) return same(authorization.substr(kBearer.size()), token);
  if (!authorization.starts_with(kBasic)) return false;
  const std::string credentials = basic_credentials(authorization.substr(kBasic.size()));
  const std::size_t colon = credentials.find(':');
  return colon != std::string::npos && same(std::string_view(credentials).substr(colon + 1), token);
}

}  // namespace ndgc::serving
