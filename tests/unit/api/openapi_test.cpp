// docs/openapi.yaml describes exactly the routes the public listener serves: one operation per
// (method, pattern) of the router's table, no more and no fewer. (tests/js/openapi.test.mjs
// validates the document itself against the OpenAPI 3.1 schema.)

#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/detail/routes.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

std::set<std::string> documented_operations() {
  const YAML::Node doc = YAML::LoadFile(std::string(SY_SOURCE_DIR) + "/docs/openapi.yaml");
  static const std::set<std::string> methods = {"get",   "put",     "post", "delete",
                                                "patch", "options", "head", "trace"};
  std::set<std::string> out;
  for (const auto& path : doc["paths"]) {
    for (const auto& op : path.second) {
      std::string method = op.first.as<std::string>();
      if (!methods.contains(method)) continue;  // parameters, summary, ...
      for (auto& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out.insert(method + " " + path.first.as<std::string>());
    }
  }
  return out;
}

TEST(openapi, the_document_and_the_router_list_the_same_routes) {
  const auto listed = detail::routes().listing();
  const std::set<std::string> served(listed.begin(), listed.end());
  ASSERT_EQ(served.size(), listed.size()) << "a route is registered twice";
  const auto documented = documented_operations();
  for (const auto& route : served)
    EXPECT_TRUE(documented.contains(route)) << "docs/openapi.yaml lacks " << route;
  for (const auto& op : documented)
    EXPECT_TRUE(served.contains(op))
        << "docs/openapi.yaml describes " << op << ", which the server does not serve";
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
