#include "api/router.hpp"

#include <gtest/gtest.h>

#include "api/detail/routes.hpp"
#include "config/endpoints.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

using boost::beast::http::verb;
using kind = route_match::kind;

router make() {
  router r;
  r.add(verb::post, "/v1/jobs", 1);
  r.add(verb::get, "/v1/jobs/{id}", 2);
  r.add(verb::delete_, "/v1/jobs/{id}", 3);
  r.add(verb::get, "/healthz", 4);
  return r;
}

TEST(router, finds_routes_and_captures) {
  auto r = make();
  auto m = r.match(verb::get, "/v1/jobs/job_01ABC?expand=1");
  ASSERT_EQ(m.outcome, kind::found);
  EXPECT_EQ(m.route, 2);
  ASSERT_EQ(m.params.size(), 1u);
  EXPECT_EQ(m.params[0], "job_01ABC");
  EXPECT_EQ(r.match(verb::post, "/v1/jobs").route, 1);
  EXPECT_EQ(r.match(verb::delete_, "/v1/jobs/x").route, 3);
}

TEST(router, unknown_path_is_not_found) {
  auto r = make();
  for (const char* path : {"/", "/v1", "/v1/jobs/", "/v1/jobs/a/b", "/v2/jobs", "/healthzz"})
    EXPECT_EQ(r.match(verb::get, path).outcome, kind::not_found) << path;
}

TEST(router, wrong_method_lists_allowed_ones) {
  auto r = make();
  auto m = r.match(verb::put, "/v1/jobs/abc");
  EXPECT_EQ(m.outcome, kind::method_not_allowed);
  EXPECT_EQ(m.allow, "GET, DELETE");
  auto p = r.match(verb::get, "/v1/jobs");
  EXPECT_EQ(p.outcome, kind::method_not_allowed);
  EXPECT_EQ(p.allow, "POST");
}

// The synchronous routes are the endpoint list of config/endpoints.hpp, one id each.
TEST(routes, every_inference_endpoint_is_a_synchronous_route) {
  for (size_t i = 0; i < endpoints::all.size(); ++i) {
    auto m = detail::routes().match(verb::post, endpoints::all[i].path);
    ASSERT_EQ(m.outcome, kind::found) << endpoints::all[i].path;
    EXPECT_EQ(m.route, detail::route_inference + static_cast<int>(i));
  }
  EXPECT_EQ(detail::routes().match(verb::post, "/v1/images/generations").outcome, kind::not_found);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
