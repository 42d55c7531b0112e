// Typed host functions: the Python signature they advertise and how they check arguments.
#include "codeact/functions/host_function.hpp"

#include <gtest/gtest.h>

#include "codeact/functions/python_functions.hpp"

namespace codeact::functions {
namespace {

TEST(HostFunction, SignatureFromCppTypes) {
  auto f = host_function("scale", {"values", "factor", "label"}, "Scales values.",
                         [](std::vector<double> v, int64_t k, std::optional<std::string> label) {
                           for (auto& x : v) x *= static_cast<double>(k);
                           return Json{{"values", v}, {"label", label.value_or("none")}};
                         });
  EXPECT_EQ(f.signature,
            "def scale(values: list[float], factor: int, label: str | None = None) -> Any");
  auto r = f.call(Json::array(), Json{{"values", {1.5, 2}}, {"factor", 2}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, (Json{{"values", {3.0, 4.0}}, {"label", "none"}}));
}

TEST(HostFunction, PositionalKeywordAndErrors) {
  auto add = host_function("add", {"a", "b"}, "", [](int a, int b) { return a + b; });
  EXPECT_EQ(add.signature, "def add(a: int, b: int) -> int");
  EXPECT_EQ(*add.call(Json{2}, Json{{"b", 3}}), Json(5));
  auto missing = add.call(Json::array(), Json{{"a", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "add() missing required argument 'b'");
  auto wrong = add.call(Json::array(), Json{{"a", "x"}, {"b", 1}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("argument 'a' must be int"), std::string::npos);
  EXPECT_FALSE(add.call(Json::array(), Json{{"a", 1.5}, {"b", 1}}).ok());
  EXPECT_FALSE(add.call(Json::array(), Json{{"a", true}, {"b", 1}}).ok());
  auto extra = add.call(Json::array(), Json{{"a", 1}, {"b", 1}, {"c", 1}});
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.error().message().find("unexpected keyword argument 'c'"), std::string::npos);
}

TEST(HostFunction, ResultsVoidAndExceptions) {
  auto checked = host_function("half", {"n"}, "", [](int n) -> core::Result<int> {
    if (n % 2) return core::invalid_argument("odd number");
    return n / 2;
  });
  EXPECT_EQ(*checked.call(Json::array(), Json{{"n", 8}}), Json(4));
  EXPECT_EQ(checked.call(Json::array(), Json{{"n", 3}}).error().message(), "odd number");
  int calls = 0;
  auto v = host_function("poke", {}, "", std::function<void()>([&] { ++calls; }));
  EXPECT_EQ(v.signature, "def poke() -> None");
  EXPECT_TRUE(v.call(Json::array(), Json::object())->is_null());
  EXPECT_EQ(calls, 1);
  auto thrower = host_function("boom", {}, "", []() -> int { throw std::runtime_error("kaput"); });
  auto r = thrower.call(Json::array(), Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kInternal);
  EXPECT_NE(r.error().message().find("kaput"), std::string::npos);
}

TEST(PythonFunctions, ImportNamesMapToDistributions) {
  EXPECT_EQ(distribution_for_import("sklearn"), "scikit-learn");
  EXPECT_EQ(distribution_for_import("PIL"), "pillow");
  EXPECT_EQ(distribution_for_import("yaml"), "pyyaml");
  EXPECT_EQ(distribution_for_import("bs4"), "beautifulsoup4");
  EXPECT_EQ(distribution_for_import("cv2"), "opencv-python");
  EXPECT_EQ(distribution_for_import("requests"), "requests");
}

}  // namespace
}  // namespace codeact::functions
