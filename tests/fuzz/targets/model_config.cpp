// config.json → ModelConfig, as load_model reads it: JSON, model_type, the architecture's parse, the head
// class.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.h"
#include "hfx/io/safetensors.h"

void hfx_fuzz_model_config(const uint8_t* data, size_t size) {
  const auto dir = hfx::fuzz::put("config/config.json", data, size).parent_path();
  hfx::fuzz::refused_or_read([&] {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(hfx::fuzz::text(data, size));
    } catch (const nlohmann::json::exception&) {
      return;  // load_model turns this into "[model] expected valid JSON in ..."
    }
    (void)hfx::parse_model_config(j);
    // make_model: the head class, then the weights checked against the config (none here: refused).
    (void)hfx::make_model(j, hfx::io::WeightStore::from_tensors({}));
  });
}
