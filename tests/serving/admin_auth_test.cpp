// admin_authorized(): the token as a Bearer token or a Basic password.
#include <doctest/doctest.h>

#include "serving/admin_auth.hpp"

namespace ndgc::serving {

TEST_CASE("admin_authorized: Bearer and Basic carry the token; anything else does not") {
  CHECK(admin_authorized("Bearer s3cret", "s3cret"));
  CHECK(admin_authorized("Basic YWRtaW46czNjcmV0", "s3cret"));   // admin:s3cret
  CHECK(admin_authorized("Basic OnMzY3JldA==", "s3cret"));       // an empty user name: ":s3cret"
  CHECK(admin_authorized("Basic YTpiOnMzY3JldA==", "b:s3cret"));  // the password may hold a colon: "a:b:s3cret"
  CHECK_FALSE(admin_authorized("Bearer s3cre", "s3cret"));
  CHECK_FALSE(admin_authorized("Bearer s3cretX", "s3cret"));
  CHECK_FALSE(admin_authorized("bearer s3cret", "s3cret"));
  CHECK_FALSE(admin_authorized("Basic YWRtaW46d3Jvbmc=", "s3cret"));  // admin:wrong
  CHECK_FALSE(admin_authorized("Basic czNjcmV0", "s3cret"));          // "s3cret": no colon, no password
  CHECK_FALSE(admin_authorized("Basic !!!!", "s3cret"));              // not base64
  CHECK_FALSE(admin_authorized("", "s3cret"));
  CHECK_FALSE(admin_authorized("Bearer ", ""));  // no token configured: nobody
}

}  // namespace ndgc::serving
