// Token ids of generation_config.json and config.json (see generation_config.h).
#include "runtime/generation_config.h"

#include "hfx/core/error.h"
#include "hfx/runtime/generator.h"

namespace hfx {

namespace {
constexpr const char* kComp = "generate";
}  // namespace

std::vector<int64_t> ids_of(const nlohmann::json& j, const char* key) {
  std::vector<int64_t> r;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return r;
  if (it->is_number_integer()) {
    r.push_back(it->get<int64_t>());
  } else if (it->is_array()) {
    for (const auto& x : *it) {
      HFX_CHECK(x.is_number_integer(), kComp, "expected {} to be an int or a list of ints, got {}", key,
                it->dump());
      r.push_back(x.get<int64_t>());
    }
  } else {
    HFX_THROW(kComp, "expected {} to be an int or a list of ints, got {}", key, it->dump());
  }
  return r;
}

std::vector<int64_t> eos_ids_from_json_text(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW(kComp, "expected valid JSON with eos_token_id, got: {}", e.what());
  }
  return ids_of(j, "eos_token_id");
}

}  // namespace hfx
