// Rotary embeddings: transformers' ROPE_INIT_FUNCTIONS in float32 arithmetic (the order of operations
// follows modeling_rope_utils.py so that inv_freq matches it to the last bit where libm allows), and the
// cos/sin computation of its rotary embedding forward on the functional API.
#include "hfx/models/rope.h"

#include <algorithm>
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
  // Qwen2VLConfig turns rope type "mrope" into the default rope (transformers 5 writes "default" with the
  // sections); mrope_section says which position each frequency takes.
  if (type == "mrope") {
    type = "default";
    HFX_CHECK(p.contains("mrope_section"), "model",
              "expected rope_scaling.mrope_section (a list of 3 sizes) for rope type 'mrope', got none");
  }
  if (has(p, "mrope_section")) {
    HFX_CHECK(p["mrope_section"].is_array(), "model",
              "expected rope_scaling.mrope_section to be a list of 3 sizes, got {}",
              jsonc::describe(p["mrope_section"]));
    for (const auto& v : p["mrope_section"]) {
      HFX_CHECK(v.is_number_integer() && v.get<int64_t>() > 0, "model",
                "expected rope_scaling.mrope_section of positive integers, got {}", jsonc::describe(v));
      rc.mrope_section.push_back(v.get<int64_t>());
    }
  }
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
  int64_t sections = 0;
  for (int64_t v : rc.mrope_section) sections += v;
  HFX_CHECK(rc.mrope_section.empty() || (rc.mrope_section.size() == 3 && sections == rc.dim / 2), "model",
            "expected rope_scaling.mrope_section to be 3 sizes summing to head_dim / 2 = {}, got {} size(s) "
            "summing to {}",
            rc.dim / 2, rc.mrope_section.size(), sections);
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
  Var pos = F::unsqueeze(F::to(positions, DType::F32), -1);  // [B, S, 1] or [3, B, S, 1]
  Var freqs = F::mul(pos, inv);                              // [B, S, dim/2] or [3, B, S, dim/2]
  if (!rc.mrope_section.empty() && positions.dim() == 3) {
    // Frequencies [off, off + n) of section c rotate by position c (temporal, height, width).
    std::vector<Var> parts;
    int64_t off = 0;
    for (size_t c = 0; c < rc.mrope_section.size(); c++) {
      const int64_t ci = static_cast<int64_t>(c), n = rc.mrope_section[c];
      parts.push_back(F::slice(F::squeeze(F::slice(freqs, 0, ci, ci + 1), 0), 2, off, off + n));
      off += n;
    }
    freqs = F::cat(parts, -1);  // [B, S, dim/2]
  }
  Var emb = F::cat({freqs, freqs}, -1);
  if (rc.interleaved) {  // repeat_interleave(freqs, 2, -1): pair (2i, 2i + 1) shares frequency i
    Var f = F::unsqueeze(freqs, -1);
    emb = F::reshape(F::cat({f, f}, -1), {freqs.size(0), freqs.size(1), Sym(2) * freqs.size(2)});
  }
  Var cos = F::cos(emb), sin = F::sin(emb);
  if (fr.attention_scaling != 1.0) {
    cos = F::mul(cos, fr.attention_scaling);
    sin = F::mul(sin, fr.attention_scaling);
  }
  return {cos, sin};
}

MropePositions mrope_positions(const std::vector<int64_t>& ids, int64_t image_token, int64_t vision_start,
                               const std::vector<std::array<int64_t, 3>>& grids, int64_t merge) {
  const int64_t S = static_cast<int64_t>(ids.size());
  std::vector<std::array<int64_t, 3>> p;  // per token
  p.reserve(ids.size());
  int64_t images = 0;
  for (int64_t i = 0; i + 1 < S; i++) images += ids[i] == vision_start && ids[i + 1] == image_token;
  HFX_CHECK(images <= static_cast<int64_t>(grids.size()), "generate",
            "expected at most {} image(s) after <|vision_start|> in the prompt (one per image), got {}",
            grids.size(), images);
  auto next = [&] { return p.empty() ? 0 : std::max({p.back()[0], p.back()[1], p.back()[2]}) + 1; };
  int64_t st = 0;
  for (int64_t k = 0; k < images; k++) {
    const int64_t ed = std::find(ids.begin() + st, ids.end(), image_token) - ids.begin();
    const int64_t t = grids[k][0], h = grids[k][1] / merge, w = grids[k][2] / merge;
    HFX_CHECK(ed + t * h * w <= S, "generate",
              "expected {} image tokens for image {} (grid {}×{}×{} merged by {}), got a prompt of {} tokens",
              t * h * w, k + 1, grids[k][0], grids[k][1], grids[k][2], merge, S);
    const int64_t text0 = next();
    for (int64_t i = st; i < ed; i++) p.push_back({text0 + i - st, text0 + i - st, text0 + i - st});
    const int64_t off = text0 + ed - st;
    for (int64_t a = 0; a < t; a++)
      for (int64_t r = 0; r < h; r++)
        for (int64_t c = 0; c < w; c++) p.push_back({off + a, off + r, off + c});
    st = ed + t * h * w;
  }
  const int64_t text0 = next();
  for (int64_t i = st; i < S; i++) p.push_back({text0 + i - st, text0 + i - st, text0 + i - st});
  MropePositions r;
  r.pos.resize(static_cast<size_t>(3 * S));
  int64_t mx = -1;
  for (int64_t i = 0; i < S; i++)
    for (int64_t d = 0; d < 3; d++) {
      r.pos[static_cast<size_t>(d * S + i)] = p[static_cast<size_t>(i)][static_cast<size_t>(d)];
      mx = std::max(mx, p[static_cast<size_t>(i)][static_cast<size_t>(d)]);
    }
  r.delta = mx + 1 - S;
  return r;
}

}  // namespace hfx
