// Who may use the /v2/debug endpoints (Note [Admin endpoints] in server.cpp):
// a request whose Authorization header carries the admin token, either as
// "Bearer TOKEN" (scripts, curl) or as HTTP Basic credentials with the token
// as the password and any user name (a browser's own login prompt, which the
// live report page relies on: the browser keeps the token, so it never
// appears in a URL, the page's script or the server's logs).
#pragma once

#include <string>
#include <string_view>

namespace ndgc::serving {

// Whether `authorization` (the header's value, empty when absent) carries
// `token`. The comparison takes the same time wherever the first difference is.
bool admin_authorized(std::string_view authorization, std::string_view token);

// The WWW-Authenticate value of a 401 from a debug endpoint.
inline constexpr const char* kAdminChallenge = "Basic realm=\"ndgc-serve debug\", charset=\"UTF-8\"";

}  // namespace ndgc::serving
