// src/io/safetensors_internal.h — helpers shared by the safetensors reader (safetensors.cpp), the
// checkpoint index and WeightStore (weight_store.cpp) and the writer (safetensors_write.cpp). Internal to
// src/io.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hfx::io::detail {

/// The largest header hfx reads or writes: the reference (Rust) implementation's limit.
inline constexpr uint64_t kMaxHeader = 100'000'000;

/// Whether `s` is valid UTF-8 (the safetensors header and names must be).
bool is_utf8(const std::string& s);

/// JSON parse that also reports duplicate object keys (nlohmann silently keeps the last one).
/// On a duplicate, `dup_key` is set and `dup_parent` names the enclosing top-level key ("" at top level).
struct DupCheckedJson {
  nlohmann::json value;
  bool has_dup = false;
  std::string dup_key, dup_parent;
};
DupCheckedJson parse_json_checked(const char* begin, const char* end);

/// `j` on one line, cut at 80 characters, for error messages.
std::string short_dump(const nlohmann::json& j);

size_t levenshtein(const std::string& a, const std::string& b);

/// "; did you mean 'X'?" for the key of [first, last) nearest to `name`, or "" when none is close.
template <typename It>
std::string did_you_mean(const std::string& name, It first, It last) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (auto it = first; it != last; ++it) {
    size_t d = levenshtein(name, it->first);
    if (d < best_d) {
      best_d = d;
      best = it->first;
    }
  }
  if (best.empty() || best_d > std::max<size_t>(3, name.size() / 3)) return "";
  return fmt::format("; did you mean '{}'?", best);
}

}  // namespace hfx::io::detail
