// hfx/core/json.h — checked reads of untrusted JSON (config.json, tokenizer files, generation_config.json,
// manifest.json, export configs).
//
// nlohmann's own accessors throw `type_error`/`out_of_range` with messages that name no file and no key
// ("[json.exception.type_error.302] type must be number, but is string"). Every reader of a file hfx did
// not write goes through these instead, so a wrong type or a missing key reads
//   [component] expected <where>.<key> to be an integer, got a string "12" — fix <where> ...
// `where` names the file or object being read (e.g. "config.json", "tokenizer.json model").
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx::jsonc {

using nlohmann::json;

/// "a string \"x\"", "an integer 3", "a list of 2", "null", ... (values cut to 60 characters).
std::string describe(const json& v);

/// Throws hfx::Error(component, "expected <where> to be <want>, got <describe(v)> ...").
[[noreturn]] void type_mismatch(std::string_view component, std::string_view where, std::string_view want,
                                const json& v);

/// Throws hfx::Error(component, "expected <where> to be <kind> from <lo> to <hi>, got <describe(v)> ...").
[[noreturn]] void out_of_range(std::string_view component, std::string_view where, std::string_view kind,
                               long double lo, long double hi, const json& v);

namespace detail {
// "<where>.<key>" and "<where>[i]", built out of line: inlined at every accessor call, GCC 12 reported false
// -Wstringop-overflow / -Warray-bounds on these concatenations.
std::string member(std::string_view where, const char* key);
std::string element(std::string_view where, size_t i);

template <typename T>
struct Kind;
template <>
struct Kind<bool> {
  static constexpr const char* name = "a boolean";
};
template <>
struct Kind<int64_t> {
  static constexpr const char* name = "an integer";
};
template <>
struct Kind<int> {
  static constexpr const char* name = "an integer";
};
template <>
struct Kind<uint64_t> {
  static constexpr const char* name = "a non-negative integer";
};
template <>
struct Kind<double> {
  static constexpr const char* name = "a number";
};
template <>
struct Kind<float> {
  static constexpr const char* name = "a number";
};
template <>
struct Kind<std::string> {
  static constexpr const char* name = "a string";
};
template <typename T>
struct Kind<std::vector<T>> {
  static constexpr const char* name = "a list";
};

// An integral value: an integer, or a finite float with no fraction (configs written by other tools say
// 4096.0).
inline bool integral(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::trunc(d);
}
inline bool negative(const json& v) { return !v.is_number_unsigned() && v.get<double>() < 0; }
// Whether an integral `v` lies in T's range. Checked before any conversion: a float outside int64's range
// (a 40-digit integer in a fuzzed config.json) converted to an integer is undefined behaviour, and a value
// outside T's range would wrap silently.
template <typename T>
bool fits(const json& v) {
  using L = std::numeric_limits<T>;
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(L::max());
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>)
      return i >= 0;
    else
      return i >= static_cast<int64_t>(L::min()) && i <= static_cast<int64_t>(L::max());
  }
  // [L::min(), L::max() + 1): both bounds are exact in double (0 or -2^k, and 2^k for k = 31, 63, 64).
  const double d = v.get<double>(), lo = static_cast<double>(L::min());
  const double hi = 2.0 * static_cast<double>(L::max() / 2 + 1);
  return d >= lo && d < hi;
}
}  // namespace detail

/// `v` as T, or a clear error naming `where`. T: bool, int, int64_t, uint64_t, double, float, std::string,
/// std::vector of those.
template <typename T>
T as(const json& v, std::string_view component, std::string_view where) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) type_mismatch(component, where, detail::Kind<T>::name, v);
    return v.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) type_mismatch(component, where, detail::Kind<T>::name, v);
    return v.get<std::string>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!detail::integral(v) || (std::is_unsigned_v<T> && detail::negative(v)))
      type_mismatch(component, where, detail::Kind<T>::name, v);
    using L = std::numeric_limits<T>;
    if (!detail::fits<T>(v))
      out_of_range(component, where, detail::Kind<T>::name, static_cast<long double>(L::min()),
                   static_cast<long double>(L::max()), v);
    if (v.is_number_float()) return static_cast<T>(v.get<double>());
    if (v.is_number_unsigned()) return static_cast<T>(v.get<uint64_t>());
    return static_cast<T>(v.get<int64_t>());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) type_mismatch(component, where, detail::Kind<T>::name, v);
    return v.get<T>();
  } else {  // std::vector<E>
    if (!v.is_array()) type_mismatch(component, where, detail::Kind<T>::name, v);
    T out;
    for (size_t i = 0; i < v.size(); i++)
      out.push_back(as<typename T::value_type>(v[i], component, detail::element(where, i)));
    return out;
  }
}

/// `obj` itself checked to be an object (else a clear error naming `where`).
const json& object(const json& obj, std::string_view component, std::string_view where);
/// `v` checked to be a list.
const json& array(const json& v, std::string_view component, std::string_view where);
/// obj[key], which must be present (and not null): else "expected key 'k' in <where>, got none".
const json& at(const json& obj, const char* key, std::string_view component, std::string_view where);
/// Whether obj has `key` with a non-null value (obj must be an object).
bool has(const json& obj, const char* key);

/// obj[key] as T; a missing key or null gives `def`, a wrong type a clear error.
template <typename T>
T get_or(const json& obj, const char* key, T def, std::string_view component, std::string_view where) {
  if (!obj.is_object()) type_mismatch(component, where, "an object", obj);
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return def;
  return as<T>(*it, component, detail::member(where, key));
}

/// obj[key] as T; the key must be present.
template <typename T>
T get(const json& obj, const char* key, std::string_view component, std::string_view where) {
  return as<T>(at(obj, key, component, where), component, detail::member(where, key));
}

/// Parses `text` (the contents of `where`), turning a syntax error into hfx::Error(component, ...).
json parse(std::string_view text, std::string_view component, std::string_view where);

}  // namespace hfx::jsonc
