// The rotary and sliding-window keys of llama.cpp's decoder archs: rope.* (partial rotation, linear and
// llama3 scaling), the sliding-window period, and the layered ropes of Gemma 3 and Olmo 3 (their full and
// sliding layers' own bases and scalings).
#include <cmath>
#include <numbers>
#include <optional>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

namespace {

// llama3 rope scaling: llama.cpp multiplies each rotary frequency's period by rope_freqs (what the
// converter's LlamaModel.generate_extra_tensors computes from rope_scaling).
std::vector<float> llama3_rope_factors(const ModelConfig& c, const nlohmann::json& rs) {
  // In float32 throughout, as the converter's torch computes it (each freq a float32 tensor, the Python
  // numbers it meets taken as float32).
  const auto base = static_cast<float>(c.rope_theta), dim = static_cast<float>(c.head_dim);
  const auto factor = rs.value("factor", 8.0f), lo = rs.value("low_freq_factor", 1.0f),
             hi = rs.value("high_freq_factor", 4.0f);
  const auto old_ctx = rs.value("original_max_position_embeddings", 8192.0f);
  const float lo_wavelen = old_ctx / lo, hi_wavelen = old_ctx / hi,
              two_pi = static_cast<float>(2 * std::numbers::pi);
  std::vector<float> out;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / dim);
    const float wavelen = two_pi / freq;
    if (wavelen < hi_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > lo_wavelen) {
      out.push_back(factor);
    } else {
      const float smooth = (old_ctx / wavelen - lo) / (hi - lo);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

}  // namespace

int64_t rotary_dims(const ModelConfig& c) {
  // ERNIE 4.5 rotates the whole head whatever it says (as transformers)
  const bool half = c.model_type == "glm" || c.model_type == "glm4" || c.model_type == "bamba";
  const nlohmann::json rp = c.raw.value("rope_parameters", nlohmann::json());
  double prf = rp.is_object() ? rp.value("partial_rotary_factor", half ? 0.5 : 1.0) : half ? 0.5 : 1.0;
  prf = c.raw.value("partial_rotary_factor", c.raw.value("rotary_pct", prf));  // rotary_pct: GPT-NeoX's
  if (c.model_type == "ernie4_5") prf = 1.0;
  return static_cast<int64_t>(static_cast<double>(c.head_dim) * prf);
}

// Rotary keys and scaling: none, linear (a key) or llama3 (the rope_freqs tensor).
void rope_keys(Out& o, const std::string& arch, const ModelConfig& c) {
  o.f.kv_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(rotary_dims(c)));
  o.f.kv_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
  const nlohmann::json rs = c.raw.value("rope_scaling", nlohmann::json());
  if (!rs.is_object()) return;
  const std::string type = rs.value("rope_type", rs.value("type", std::string("default")));
  if (type == "default") return;
  if (type == "linear") {
    o.f.kv_str(arch + ".rope.scaling.type", "linear");
    o.f.kv_f32(arch + ".rope.scaling.factor", rs.value("factor", 1.0f));
    return;
  }
  HFX_CHECK(
      type == "llama3" && (arch == "llama" || arch == "exaone4"), "gguf",
      "expected no rope scaling, linear, or llama3 on the llama or exaone4 arch, got rope_type '{}' on {}",
      type, arch);
  const std::vector<float> v = llama3_rope_factors(c, rs);
  const auto n = static_cast<int64_t>(v.size());
  o.put("rope_freqs.weight", {n}, [v, n] { return Tensor::from_floats({n}, v); }, {});
}

int64_t swa_period(const std::string& arch, const ModelConfig& c) {
  const auto L = static_cast<int64_t>(c.layer_types.size());
  int64_t period = 0;
  for (int64_t p = 1; p <= L + 1 && period == 0; p++) {
    bool fits = true;
    for (int64_t i = 0; i < L; i++)
      fits = fits && (c.layer_types[static_cast<size_t>(i)] == "sliding_attention") == (i % p < p - 1);
    if (fits) period = p;
  }
  HFX_CHECK(period > 0, "gguf",
            "expected layer_types of a period P (layer i global when i % P == P - 1) for llama.cpp's {} "
            "arch, got {}",
            arch, fmt::join(c.layer_types, ", "));
  return period;
}

void swa_keys(File& f, const std::string& arch, const ModelConfig& c) {
  f.kv_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  f.kv_u32(arch + ".attention.sliding_window_pattern", static_cast<uint32_t>(swa_period(arch, c)));
}

namespace {

// The full-attention layers' rope (rope_parameters.full_attention, else rope_scaling with rope_theta,
// `theta` by default) and the sliding layers' (rope_parameters.sliding_attention, else a default rope of base
// `local`, or the global base).
struct LayeredRope {
  nlohmann::json global, local;
};
LayeredRope layered_rope(const ModelConfig& c, double theta, std::optional<double> local) {
  const nlohmann::json& j = c.raw;
  const nlohmann::json rp = j.value("rope_parameters", nlohmann::json::object());
  LayeredRope r;
  r.global = rp.is_object() && rp.contains("full_attention") ? rp["full_attention"] : nlohmann::json();
  if (!r.global.is_object()) {
    r.global = j.value("rope_scaling", nlohmann::json::object());
    if (!r.global.is_object()) r.global = nlohmann::json::object();
    r.global["rope_theta"] = j.value("rope_theta", theta);
  }
  r.local = rp.is_object() && rp.contains("sliding_attention") ? rp["sliding_attention"] : nlohmann::json();
  if (!r.local.is_object())
    r.local = {{"rope_type", "default"}, {"rope_theta", local.value_or(r.global.value("rope_theta", theta))}};
  return r;
}

std::string rope_type_of(const nlohmann::json& rope) {
  return rope.value("rope_type", rope.value("type", std::string("default")));
}

// A linear scaling of the full-attention layers' rope; other scalings refused.
void rope_scaling_keys(File& f, const std::string& arch, const nlohmann::json& global) {
  const std::string type = rope_type_of(global);
  HFX_CHECK(type == "default" || type == "linear", "gguf",
            "expected no rope scaling or linear for llama.cpp's {} arch, got rope_type '{}'", arch, type);
  if (type == "linear") {
    f.kv_str(arch + ".rope.scaling.type", "linear");
    f.kv_f32(arch + ".rope.scaling.factor", global.value("factor", 1.0f));
  }
}

}  // namespace

// Olmo 3 (llama.cpp's olmo2 arch with a window): its sliding layers rotate with the global base and no
// scaling, the full ones with the global rope.
void olmo3_keys(File& f, const ModelConfig& c) {
  const LayeredRope r = layered_rope(c, c.rope_theta, std::nullopt);
  HFX_CHECK(
      rope_type_of(r.local) == "default" &&
          r.local.value("rope_theta", 0.0) == r.global.value("rope_theta", 0.0),
      "gguf",
      "expected the sliding layers' rope to be the full layers' base unscaled for llama.cpp's olmo2 arch "
      "(one base for both), got {} and {}",
      r.local.dump(), r.global.dump());
  f.kv_u32("olmo2.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  f.kv_f32("olmo2.rope.freq_base", r.global.value("rope_theta", 10000.0f));
  rope_scaling_keys(f, "olmo2", r.global);
  if (swa_period("olmo2", c) > 1) swa_keys(f, "olmo2", c);
}

// Gemma 3: global layers' rope (rope.freq_base, linear scaling), local layers' base (rope.freq_base_swa), the
// window and its period (swa_keys), the final softcap. Refused: what its graph computes otherwise (an
// attention softcap, a query scale other than 1/sqrt(head_dim), a layer pattern that is not periodic).
void gemma3_keys(File& f, const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  const LayeredRope r = layered_rope(c, 1000000.0, j.value("rope_local_base_freq", 10000.0));
  f.kv_u32("gemma3.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  f.kv_f32("gemma3.rope.freq_base", r.global.value("rope_theta", 1000000.0f));
  f.kv_f32("gemma3.rope.freq_base_swa", r.local.value("rope_theta", 10000.0f));
  rope_scaling_keys(f, "gemma3", r.global);
  HFX_CHECK(j.value("attn_logit_softcapping", nlohmann::json()).is_null(), "gguf",
            "expected no attn_logit_softcapping for llama.cpp's gemma3 arch, got {}",
            j["attn_logit_softcapping"].dump());
  const double qpas = j.value("query_pre_attn_scalar", static_cast<double>(c.head_dim));
  HFX_CHECK(
      qpas == static_cast<double>(c.head_dim), "gguf",
      "expected query_pre_attn_scalar equal to head_dim {} for llama.cpp's gemma3 arch (it scales queries "
      "by 1/sqrt(head_dim)), got {}",
      c.head_dim, qpas);
  if (j.contains("final_logit_softcapping") && j["final_logit_softcapping"].is_number())
    f.kv_f32("gemma3.final_logit_softcapping", j["final_logit_softcapping"].get<float>());
  if (swa_period("gemma3", c) > 1) swa_keys(f, "gemma3", c);  // some layers slide
}

}  // namespace hfx::gguf
