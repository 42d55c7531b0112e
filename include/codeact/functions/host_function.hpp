// HostFunction: a C++ callable offered to sandbox code as a plain Python function.
//
// The kernel defines a stub with the function's Python signature; calling it sends the
// arguments over the kernel's bridge to the host, which runs `call` and sends back the JSON
// result (or raises ToolError in the sandbox with the Error's message).
//
//   auto add = codeact::functions::host_function(
//       "add", {"a", "b"}, "Adds two integers.", [](int a, int b) { return a + b; });
//   // sandbox code: add(2, b=3) -> 5 ; tools_as_func shows "def add(a: int, b: int) -> int"
//
// Argument types map to Python annotations (int, double -> float, bool, std::string -> str,
// std::vector<T> -> list[T], std::map<std::string, T> -> dict[str, T], std::optional<T> ->
// T | None = None, core::Json -> Any); arguments are checked before the callable runs and a wrong
// one is a TypeError-like ToolError naming the parameter. The callable may return a value
// convertible to JSON, void, or core::Result<T>; an exception it throws becomes an Internal error.
// `call` must be thread-safe if the function is used by several sandboxes at once.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::functions {

using core::Json;

struct HostFunction {
  std::string name;       // a Python identifier
  std::string signature;  // "def add(a: int, b: int) -> int"
  std::string doc;
  // (positional args, keyword args) -> JSON result.
  std::function<core::Result<Json>(const Json& args, const Json& kwargs)> call;
};

namespace host_function_internal {

template <typename T>
struct PyType;
template <>
struct PyType<int> {
  static std::string name() { return "int"; }
};
template <>
struct PyType<int64_t> {
  static std::string name() { return "int"; }
};
template <>
struct PyType<double> {
  static std::string name() { return "float"; }
};
template <>
struct PyType<bool> {
  static std::string name() { return "bool"; }
};
template <>
struct PyType<std::string> {
  static std::string name() { return "str"; }
};
template <>
struct PyType<Json> {
  static std::string name() { return "Any"; }
};
template <>
struct PyType<void> {
  static std::string name() { return "None"; }
};
template <typename T>
struct PyType<std::vector<T>> {
  static std::string name() { return "list[" + PyType<T>::name() + "]"; }
};
template <typename T>
struct PyType<std::map<std::string, T>> {
  static std::string name() { return "dict[str, " + PyType<T>::name() + "]"; }
};
template <typename T>
struct PyType<std::optional<T>> {
  static std::string name() { return PyType<T>::name() + " | None"; }
};
template <typename T>
struct PyType<core::Result<T>> {
  static std::string name() { return PyType<T>::name(); }
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsResult : std::false_type {};
template <typename T>
struct IsResult<core::Result<T>> : std::true_type {};

// Checks the JSON kind before converting, so 1.5 never silently becomes 1 and true never 1.
template <typename T>
bool matches(const Json& j) {
  if constexpr (std::is_same_v<T, bool>) {
    return j.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    return j.is_number_integer() ||
           (j.is_number_float() &&
            j.get<double>() == static_cast<double>(static_cast<int64_t>(j.get<double>())));
  } else if constexpr (std::is_floating_point_v<T>) {
    return j.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return j.is_string();
  } else if constexpr (std::is_same_v<T, Json>) {
    return true;
  } else if constexpr (IsOptional<T>::value) {
    return j.is_null() || matches<typename T::value_type>(j);
  } else {
    return true;  // containers: nlohmann checks element kinds while converting
  }
}

template <typename T>
core::Result<T> convert(const std::string& fn, const std::string& param, const Json* j) {
  using U = std::decay_t<T>;
  if (j == nullptr) {
    if constexpr (IsOptional<U>::value) {
      return U{};
    } else {
      return core::invalid_argument(fmt::format("{}() missing required argument '{}'", fn, param));
    }
  } else {
    if (!matches<U>(*j)) {
      return core::invalid_argument(fmt::format("{}() argument '{}' must be {}, got {}", fn, param,
                                                PyType<U>::name(), j->dump().substr(0, 80)));
    }
    try {
      if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool>) {
        return static_cast<U>(j->get<int64_t>());
      } else if constexpr (IsOptional<U>::value) {
        if (j->is_null()) return U{};
        return U{j->get<typename U::value_type>()};
      } else {
        return j->get<U>();
      }
    } catch (const std::exception&) {
      return core::invalid_argument(fmt::format("{}() argument '{}' must be {}, got {}", fn, param,
                                                PyType<U>::name(), j->dump().substr(0, 80)));
    }
  }
}

template <typename R>
core::Result<Json> to_result(R&& r) {
  using U = std::decay_t<R>;
  if constexpr (IsResult<U>::value) {
    if (!r.ok()) return std::move(r).error();
    if constexpr (std::is_same_v<U, core::Status>) {
      return Json();
    } else {
      return Json(std::move(r).value());
    }
  } else {
    return Json(std::forward<R>(r));
  }
}

template <typename R, typename... A, size_t... I>
HostFunction make(std::string name, std::vector<std::string> params, std::string doc,
                  std::function<R(A...)> f, std::index_sequence<I...>) {
  HostFunction h;
  h.name = name;
  std::string sig = "def " + name + "(";
  size_t i = 0;
  ((sig += (i++ ? ", " : "") + params[I] + ": " + PyType<std::decay_t<A>>::name() +
           (IsOptional<std::decay_t<A>>::value ? " = None" : "")),
   ...);
  (void)i;
  sig += ") -> " + PyType<R>::name();
  h.signature = sig;
  h.doc = std::move(doc);
  h.call = [name, params, f](const Json& args, const Json& kwargs) -> core::Result<Json> {
    if (args.is_array() && args.size() > params.size()) {
      return core::invalid_argument(fmt::format("{}() takes {} arguments but {} were given", name,
                                                params.size(), args.size()));
    }
    if (kwargs.is_object()) {
      for (const auto& [k, v] : kwargs.items()) {
        if (std::find(params.begin(), params.end(), k) == params.end()) {
          return core::invalid_argument(
              fmt::format("{}() got an unexpected keyword argument '{}'", name, k));
        }
      }
    }
    auto arg = [&](size_t idx) -> const Json* {
      if (args.is_array() && idx < args.size()) return &args[idx];
      if (kwargs.is_object() && kwargs.contains(params[idx])) return &kwargs[params[idx]];
      return nullptr;
    };
    (void)arg;  // unused for a function without parameters
    std::tuple<core::Result<std::decay_t<A>>...> converted{convert<A>(name, params[I], arg(I))...};
    core::Status bad;
    ((bad.ok() && !std::get<I>(converted).ok() ? (void)(bad = std::get<I>(converted).error())
                                               : (void)0),
     ...);
    if (!bad.ok()) return bad.error();
    try {
      if constexpr (std::is_void_v<R>) {
        f(std::move(*std::get<I>(converted))...);
        return Json();
      } else {
        return to_result(f(std::move(*std::get<I>(converted))...));
      }
    } catch (const std::exception& e) {
      return core::internal_error(fmt::format("host function {}() raised: {}", name, e.what()));
    } catch (...) {
      return core::internal_error(
          fmt::format("host function {}() raised an unknown exception", name));
    }
  };
  return h;
}

}  // namespace host_function_internal

// A typed host function; `params` names the callable's parameters in order (their count must
// match the callable's arity).
template <typename R, typename... A>
HostFunction host_function(std::string name, std::vector<std::string> params, std::string doc,
                           std::function<R(A...)> f) {
  if (params.size() != sizeof...(A)) {
    throw std::invalid_argument(
        fmt::format("host_function {}: {} parameter names for {} parameters", name, params.size(),
                    sizeof...(A)));
  }
  return host_function_internal::make<R, A...>(std::move(name), std::move(params), std::move(doc),
                                               std::move(f), std::index_sequence_for<A...>{});
}

template <typename F>
HostFunction host_function(std::string name, std::vector<std::string> params, std::string doc,
                           F f) {
  return host_function(std::move(name), std::move(params), std::move(doc),
                       std::function{std::move(f)});
}

// An untyped host function: any Python signature, raw JSON arguments.
HostFunction raw_host_function(
    std::string name, std::string signature, std::string doc,
    std::function<core::Result<Json>(const Json& args, const Json& kwargs)> call);

}  // namespace codeact::functions
