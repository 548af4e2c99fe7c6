// Rotary embeddings: transformers' ROPE_INIT_FUNCTIONS in float32 arithmetic (the order of operations
// follows modeling_rope_utils.py so that inv_freq matches it to the last bit where libm allows), and the
// cos/sin computation of its rotary embedding forward on the functional API.
#include "hfx/models/rope.h"

#include <cmath>

#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/models/model.h"
#include "hfx/ops/functional.h"

namespace hfx {

namespace {
double num(const nlohmann::json& j, const char* k, double def) {
  return jsonc::get_or<double>(j, k, def, "model", "config.json rope parameters");
}
bool has(const nlohmann::json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && !it->is_null();
}
}  // namespace

RopeConfig rope_config(const ModelConfig& cfg) {
  const auto& j = cfg.raw;
  RopeConfig rc;
  rc.head_dim = cfg.head_dim;
  rc.max_position_embeddings = cfg.max_position_embeddings;
  nlohmann::json p = nlohmann::json::object();
  if (has(j, "rope_parameters") && j["rope_parameters"].is_object()) {
    p = j["rope_parameters"];
    // Per-layer-type blocks (transformers 5 hybrids): the full-attention one drives global layers.
    if (p.contains("full_attention") && p["full_attention"].is_object()) p = p["full_attention"];
  } else if (has(j, "rope_scaling") && j["rope_scaling"].is_object()) {
    p = j["rope_scaling"];
  }
  rc.theta = num(p, "rope_theta", cfg.rope_theta);
  rc.partial_rotary_factor = num(p, "partial_rotary_factor", num(j, "partial_rotary_factor", 1.0));
  std::string type = "default";
  if (has(p, "rope_type"))
    type = jsonc::get<std::string>(p, "rope_type", "model", "config.json rope parameters");
  else if (has(p, "type"))
    type = jsonc::get<std::string>(p, "type", "model", "config.json rope parameters");
  rc.type = type;
  if (type != "default" && type != "linear" && type != "dynamic" && type != "llama3" && type != "yarn")
    HFX_THROW("model", "expected rope type default, linear, dynamic, llama3 or yarn, got '{}' in config.json",
              type);
  if (type != "default" && !has(p, "factor") && type != "yarn")
    HFX_THROW("model", "expected rope_scaling.factor for rope type '{}', got none", type);
  // Checked before the conversion below: a factor of 1e300 would make it undefined behaviour.
  if (!(rc.partial_rotary_factor > 0 && rc.partial_rotary_factor <= 1))
    HFX_THROW("model", "expected config.json partial_rotary_factor in (0, 1], got {}",
              rc.partial_rotary_factor);
  rc.dim = static_cast<int64_t>(static_cast<double>(cfg.head_dim) * rc.partial_rotary_factor);
  if (rc.dim <= 0 || rc.dim % 2) HFX_THROW("model", "expected an even positive rotary dim, got {}", rc.dim);
  rc.params = p;
  return rc;
}

static std::vector<float> default_inv_freq(double base, int64_t dim) {
  // 1.0 / (base ** (arange(0, dim, 2).float() / dim)) in f32.
  std::vector<float> r(dim / 2);
  for (int64_t i = 0; i < dim / 2; i++) {
    float e = static_cast<float>(2 * i) / static_cast<float>(dim);
    r[i] = 1.0f / std::pow(static_cast<float>(base), e);
  }
  return r;
}

RopeFreqs compute_rope(const RopeConfig& rc, std::optional<int64_t> seq_len) {
  const auto& p = rc.params;
  const int64_t dim = rc.dim;
  RopeFreqs out;
  if (rc.type == "default") {
    out.inv_freq = default_inv_freq(rc.theta, dim);
  } else if (rc.type == "linear") {
    float factor = static_cast<float>(num(p, "factor", 1.0));
    out.inv_freq = default_inv_freq(rc.theta, dim);
    for (auto& f : out.inv_freq) f /= factor;
  } else if (rc.type == "dynamic") {
    double factor = num(p, "factor", 1.0);
    double maxpos = static_cast<double>(rc.max_position_embeddings);
    double L = seq_len && *seq_len > rc.max_position_embeddings ? static_cast<double>(*seq_len) : maxpos;
    // transformers computes this with a tensor seq_len at run time (f32) and with a python int at init
    // (f64); both round to the same f32 base for the sizes that matter here.
    double base =
        rc.theta * std::pow((factor * L / maxpos) - (factor - 1.0), static_cast<double>(dim) / (dim - 2));
    out.inv_freq = default_inv_freq(base, dim);
  } else if (rc.type == "llama3") {
    double factor = num(p, "factor", 8.0);
    double low = num(p, "low_freq_factor", 1.0), high = num(p, "high_freq_factor", 4.0);
    double old_ctx = num(p, "original_max_position_embeddings", 8192);
    double low_wl = old_ctx / low, high_wl = old_ctx / high;
    auto inv = default_inv_freq(rc.theta, dim);
    out.inv_freq.resize(inv.size());
    for (size_t i = 0; i < inv.size(); i++) {
      float f = inv[i];
      float wavelen = static_cast<float>(2 * M_PI) / f;
      float scaled = wavelen > static_cast<float>(low_wl) ? f / static_cast<float>(factor) : f;
      float smooth =
          (static_cast<float>(old_ctx) / wavelen - static_cast<float>(low)) / static_cast<float>(high - low);
      float smoothed = (1.0f - smooth) * scaled / static_cast<float>(factor) + smooth * scaled;
      bool medium = !(wavelen < static_cast<float>(high_wl)) && !(wavelen > static_cast<float>(low_wl));
      out.inv_freq[i] = medium ? smoothed : scaled;
    }
  } else if (rc.type == "yarn") {
    double orig = num(p, "original_max_position_embeddings", static_cast<double>(rc.max_position_embeddings));
    double factor =
        has(p, "factor") ? num(p, "factor", 1.0) : static_cast<double>(rc.max_position_embeddings) / orig;
    auto get_mscale = [](double scale, double m) {
      return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
    };
    double mscale = num(p, "mscale", 0.0), mscale_all = num(p, "mscale_all_dim", 0.0);
    if (has(p, "attention_factor"))
      out.attention_scaling = num(p, "attention_factor", 1.0);
    else if (mscale != 0.0 && mscale_all != 0.0)
      out.attention_scaling = get_mscale(factor, mscale) / get_mscale(factor, mscale_all);
    else
      out.attention_scaling = get_mscale(factor, 1.0);
    double beta_fast = num(p, "beta_fast", 0.0), beta_slow = num(p, "beta_slow", 0.0);
    if (beta_fast == 0.0) beta_fast = 32;
    if (beta_slow == 0.0) beta_slow = 1;
    bool truncate = p.contains("truncate") && p["truncate"].is_boolean() ? p["truncate"].get<bool>() : true;
    auto corr_dim = [&](double rot) {
      return (dim * std::log(orig / (rot * 2 * M_PI))) / (2 * std::log(rc.theta));
    };
    double lo = corr_dim(beta_fast), hi = corr_dim(beta_slow);
    if (truncate) {
      lo = std::floor(lo);
      hi = std::ceil(hi);
    }
    lo = std::max(lo, 0.0);
    hi = std::min(hi, static_cast<double>(dim - 1));
    if (lo == hi) hi += 0.001;
    out.inv_freq.resize(dim / 2);
    for (int64_t i = 0; i < dim / 2; i++) {
      float pos_freq =
          std::pow(static_cast<float>(rc.theta), static_cast<float>(2 * i) / static_cast<float>(dim));
      float extra = 1.0f / pos_freq;
      float inter = 1.0f / (static_cast<float>(factor) * pos_freq);
      float ramp = (static_cast<float>(i) - static_cast<float>(lo)) / static_cast<float>(hi - lo);
      ramp = std::min(std::max(ramp, 0.0f), 1.0f);
      float ef = 1.0f - ramp;
      out.inv_freq[i] = inter * (1.0f - ef) + extra * ef;
    }
  }
  return out;
}

std::pair<Var, Var> rope_cos_sin(Builder& b, const RopeConfig& rc, const Var& positions,
                                 const Sym& total_len) {
  Scope s(b, "rotary_emb");
  RopeFreqs fr = compute_rope(rc);
  const int64_t half = rc.dim / 2;
  Var inv;
  if (rc.type == "dynamic" && b.env().gt(total_len, Sym(rc.max_position_embeddings))) {
    // NTK: base' = base * ((factor * L / max) - (factor - 1)) ** (dim / (dim - 2)), L symbolic.
    double factor = rc.params.value("factor", 1.0);
    Var L = F::arange(b, total_len, total_len + Sym(1), DType::F32);  // [1] holding the length
    Var x = F::div(F::mul(L, factor),
                   b.constant(Tensor::scalar(static_cast<double>(rc.max_position_embeddings))));
    x = F::add(x, -(factor - 1.0));
    Var base = F::mul(F::pow(x, static_cast<double>(rc.dim) / (rc.dim - 2)), rc.theta);
    std::vector<float> e(half);
    for (int64_t i = 0; i < half; i++) e[i] = static_cast<float>(2 * i) / static_cast<float>(rc.dim);
    // base' ** e = exp(e * log(base')) (there is no tensor-tensor pow in the op table).
    Var p = F::exp(F::mul(b.constant(Tensor::from_floats({half}, e)), F::log(base)));
    inv = F::reciprocal(p);
  } else {
    inv = b.constant(Tensor::from_floats({half}, fr.inv_freq));
  }
  Var pos = F::unsqueeze(F::to(positions, DType::F32), -1);  // [B, S, 1]
  Var freqs = F::mul(pos, inv);                              // [B, S, dim/2]
  Var emb = F::cat({freqs, freqs}, -1);
  Var cos = F::cos(emb), sin = F::sin(emb);
  if (fr.attention_scaling != 1.0) {
    cos = F::mul(cos, fr.attention_scaling);
    sin = F::mul(sin, fr.attention_scaling);
  }
  return {cos, sin};
}

}  // namespace hfx
