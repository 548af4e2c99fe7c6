// llava's vision encoder as transformers 4.47 computes it (CLIPVisionEmbeddings, CLIPEncoderLayer,
// LlavaForConditionalGeneration.get_image_features, LlavaMultiModalProjector).
//
// The patch embedding is a convolution with stride = kernel = patch_size, i.e. one matmul per
// non-overlapping patch: the pixels are cut into [B, patches, C·p·p] rows in the (c, ky, kx) order of
// the Conv2d weight and multiplied by the weight viewed as [D, C·p·p] — the same sums as the convolution,
// with no convolution op for the exporters to lower.
#include "llava_vision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/models/model.h"
#include "hfx/ops/functional.h"

namespace hfx::models {
namespace {

constexpr std::string_view kC = "model";

struct Vision {
  int64_t hidden, intermediate, layers, heads, channels, image, patch;
  double eps;
  std::string act;
};

// CLIPVisionConfig's defaults; SigLIP's differ in the patch, eps and activation.
Vision vision_of(const nlohmann::json& v, bool siglip = false) {
  auto get = [&](const char* k, int64_t d) {
    return jsonc::get_or<int64_t>(v, k, d, kC, "config.json.vision_config");
  };
  Vision r{get("hidden_size", 768),
           get("intermediate_size", 3072),
           get("num_hidden_layers", 12),
           get("num_attention_heads", 12),
           get("num_channels", 3),
           get("image_size", 224),
           get("patch_size", siglip ? 16 : 32),
           jsonc::get_or<double>(v, "layer_norm_eps", siglip ? 1e-6 : 1e-5, kC, "config.json.vision_config"),
           jsonc::get_or<std::string>(v, "hidden_act", siglip ? "gelu_pytorch_tanh" : "quick_gelu", kC,
                                      "config.json.vision_config")};
  HFX_CHECK(
      r.patch > 0 && r.image % r.patch == 0 && r.heads > 0 && r.hidden % r.heads == 0, "model",
      "expected vision_config.image_size divisible by patch_size and hidden_size by num_attention_heads, "
      "got {}, {}, {}, {}",
      r.image, r.patch, r.hidden, r.heads);
  return r;
}

Var act(const Var& x, const std::string& name) {
  if (name == "quick_gelu") return F::mul(x, F::sigmoid(F::mul(x, 1.702)));
  if (name == "gelu") return F::gelu(x);
  if (name == "gelu_pytorch_tanh" || name == "gelu_new") return F::gelu(x, "tanh");
  HFX_THROW("model",
            "expected an activation quick_gelu, gelu or gelu_pytorch_tanh in the llava config, got '{}'",
            name);
}

struct Weights {
  Builder& b;
  const io::WeightStore& w;
  Var operator()(const std::string& name) const {
    HFX_CHECK(w.has(name), "model", "expected tensor '{}' in the checkpoint, got none", name);
    return F::to(b.param(name, w.get(name)), DType::F32);
  }
  Var linear(const Var& x, const std::string& prefix) const {
    return F::linear(x, (*this)(prefix + ".weight"), (*this)(prefix + ".bias"));
  }
  Var norm(const Var& x, const std::string& prefix, double eps) const {
    return F::layer_norm(x, (*this)(prefix + ".weight"), (*this)(prefix + ".bias"), eps);
  }
};

constexpr const char* kTower = "vision_tower.vision_model.";

// The patch embedding (Conv2d, stride = kernel = patch) as one matmul per patch: [B, patches, hidden].
Var patch_embedding(const Weights& W, const Vision& v, const Var& pixels, const std::string& p, bool bias) {
  const int64_t g = v.image / v.patch;
  const Sym B = pixels.size(0);
  Var x = F::reshape(F::to(pixels, DType::F32), {B, v.channels, g, v.patch, g, v.patch});
  x = F::reshape(F::permute(x, {0, 2, 4, 1, 3, 5}), {B, g * g, v.channels * v.patch * v.patch});
  Var patches = F::matmul(
      x, F::transpose(F::reshape(W(p + "patch_embedding.weight"), {v.hidden, v.channels * v.patch * v.patch}),
                      0, 1));
  return bias ? F::add(patches, W(p + "patch_embedding.bias")) : patches;
}

// CLIPVisionEmbeddings: patches, class embedding first, learned positions.
Var embeddings(const Weights& W, const Vision& v, const Var& pixels) {
  const std::string p = std::string(kTower) + "embeddings.";
  const Sym B = pixels.size(0);
  Var patches = patch_embedding(W, v, pixels, p, false);
  Var cls = F::expand(F::reshape(W(p + "class_embedding"), {1, 1, v.hidden}), {B, 1, v.hidden});
  return F::add(F::cat({cls, patches}, 1), W(p + "position_embedding.weight"));
}

Var encoder_layer(const Weights& W, const Vision& v, const Var& h, int64_t i,
                  const std::string& tower = kTower) {
  const std::string p = tower + "encoder.layers." + std::to_string(i) + ".";
  const int64_t hd = v.hidden / v.heads;
  const Sym B = h.size(0), S = h.size(1);
  Var x = W.norm(h, p + "layer_norm1", v.eps);
  auto heads = [&](const Var& t) { return F::transpose(F::reshape(t, {B, S, v.heads, hd}), 1, 2); };
  Var q = heads(W.linear(x, p + "self_attn.q_proj")), k = heads(W.linear(x, p + "self_attn.k_proj"));
  Var val = heads(W.linear(x, p + "self_attn.v_proj"));
  Var att = F::sdpa(q, k, val, Var(), 1.0 / std::sqrt(static_cast<double>(hd)), false);
  att = W.linear(F::reshape(F::transpose(att, 1, 2), {B, S, v.hidden}), p + "self_attn.out_proj");
  Var r = F::add(h, att);
  x = W.linear(act(W.linear(W.norm(r, p + "layer_norm2", v.eps), p + "mlp.fc1"), v.act), p + "mlp.fc2");
  return F::add(r, x);
}

}  // namespace

Var llava_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config,
                         const Var& pixel_values) {
  const Vision v = vision_of(jsonc::at(config, "vision_config", kC, "config.json"));
  const Weights W{b, w};
  // hidden_states[0] is the embeddings after pre_layrnorm, [i] the output of layer i - 1; a list of layers
  // (transformers 4.50+) concatenates the selected ones along the features, in the list's order.
  const std::vector<int64_t> picked = llava_feature_layers(config, v.layers);
  HFX_CHECK(pixel_values.dim() == 4, "model", "expected pixel_values [batch, {}, {}, {}], got rank {}",
            v.channels, v.image, v.image, pixel_values.dim());
  std::vector<Var> hidden{
      W.norm(embeddings(W, v, pixel_values), "vision_tower.vision_model.pre_layrnorm", v.eps)};
  for (int64_t i = 0; i < *std::max_element(picked.begin(), picked.end()); i++)
    hidden.push_back(encoder_layer(W, v, hidden.back(), i));
  std::vector<Var> parts;
  for (int64_t i : picked) parts.push_back(hidden[static_cast<size_t>(i)]);
  Var h = parts.size() == 1 ? parts[0] : F::cat(parts, 2);
  const std::string strategy =
      jsonc::get_or<std::string>(config, "vision_feature_select_strategy", "default", kC, "config.json");
  if (strategy == "default") h = F::slice(h, 1, 1, h.size(1));  // drops the CLS position
  const std::string pact =
      jsonc::get_or<std::string>(config, "projector_hidden_act", "gelu", kC, "config.json");
  // multimodal_projector_bias (transformers 4.49+, default true): linear_1 and linear_2 without biases.
  const bool bias = jsonc::get_or<bool>(config, "multimodal_projector_bias", true, kC, "config.json");
  auto project = [&](const Var& x, const std::string& p) {
    return F::linear(x, W(p + ".weight"), bias ? W(p + ".bias") : Var());
  };
  h = act(project(h, "multi_modal_projector.linear_1"), pact);
  return project(h, "multi_modal_projector.linear_2");
}

std::vector<int64_t> llava_feature_layers(const nlohmann::json& config, int64_t layers) {
  std::vector<int64_t> raw;
  const auto it = config.find("vision_feature_layer");
  if (it == config.end() || it->is_null())
    raw = {-2};
  else if (it->is_number_integer())
    raw = {it->get<int64_t>()};
  else if (it->is_array() && !it->empty() &&
           std::all_of(it->begin(), it->end(), [](const nlohmann::json& x) { return x.is_number_integer(); }))
    raw = it->get<std::vector<int64_t>>();
  else
    HFX_THROW("model",
              "expected vision_feature_layer as an integer or a list of integers in config.json, got {}",
              it->dump());
  std::vector<int64_t> out;
  for (int64_t fl : raw) {
    const int64_t at = fl < 0 ? layers + 1 + fl : fl;
    HFX_CHECK(at >= 0 && at <= layers, "model",
              "expected vision_feature_layer in [-{}, {}] (an index into the {} hidden states), got {}",
              layers + 1, layers, layers + 1, fl);
    out.push_back(at);
  }
  return out;
}

void vision_layer_specs(std::vector<std::pair<std::string, Shape>>& s, const std::string& tower,
                        int64_t hidden, int64_t intermediate, int64_t layers) {
  for (int64_t i = 0; i < layers; i++) {
    const std::string l = tower + "encoder.layers." + std::to_string(i) + ".";
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      s.push_back({l + "self_attn." + p + ".weight", {hidden, hidden}});
      s.push_back({l + "self_attn." + p + ".bias", {hidden}});
    }
    for (const char* n : {"layer_norm1", "layer_norm2"}) {
      s.push_back({l + n + ".weight", {hidden}});
      s.push_back({l + n + ".bias", {hidden}});
    }
    s.push_back({l + "mlp.fc1.weight", {intermediate, hidden}});
    s.push_back({l + "mlp.fc1.bias", {intermediate}});
    s.push_back({l + "mlp.fc2.weight", {hidden, intermediate}});
    s.push_back({l + "mlp.fc2.bias", {hidden}});
  }
}

void siglip_weight_specs(std::vector<std::pair<std::string, Shape>>& s, const std::string& tower,
                         const nlohmann::json& vision_config) {
  const Vision v = vision_of(vision_config, /*siglip=*/true);
  const int64_t patches = (v.image / v.patch) * (v.image / v.patch);
  s.push_back({tower + "embeddings.patch_embedding.weight", {v.hidden, v.channels, v.patch, v.patch}});
  s.push_back({tower + "embeddings.patch_embedding.bias", {v.hidden}});
  s.push_back({tower + "embeddings.position_embedding.weight", {patches, v.hidden}});
  s.push_back({tower + "post_layernorm.weight", {v.hidden}});
  s.push_back({tower + "post_layernorm.bias", {v.hidden}});
  vision_layer_specs(s, tower, v.hidden, v.intermediate, v.layers);
}

Var siglip_last_hidden_state(Builder& b, const io::WeightStore& w, const nlohmann::json& vision_config,
                             const Var& pixel_values, const std::string& tower) {
  const Vision v = vision_of(vision_config, /*siglip=*/true);
  const Weights W{b, w};
  HFX_CHECK(pixel_values.dim() == 4, "model", "expected pixel_values [batch, {}, {}, {}], got rank {}",
            v.channels, v.image, v.image, pixel_values.dim());
  // SiglipVisionEmbeddings: patches (with bias) plus learned positions, no class token. (Idefics3's
  // embeddings bucketize the positions of a partly padded image; a whole image gets positions 0..P²-1.)
  const std::string p = tower + "embeddings.";
  Var h = F::add(patch_embedding(W, v, pixel_values, p, true), W(p + "position_embedding.weight"));
  for (int64_t i = 0; i < v.layers; i++) h = encoder_layer(W, v, h, i, tower);
  return W.norm(h, tower + "post_layernorm", v.eps);
}

Var idefics3_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config,
                            const Var& pixel_values) {
  const nlohmann::json& vc = jsonc::at(config, "vision_config", kC, "config.json");
  const Vision v = vision_of(vc, /*siglip=*/true);
  const int64_t sf = jsonc::get_or<int64_t>(config, "scale_factor", 2, kC, "config.json");
  const int64_t side = v.image / v.patch;
  HFX_CHECK(sf > 0 && side % sf == 0, "model",
            "expected scale_factor to divide the {} patches per side, got {}", side, sf);
  HFX_CHECK(pixel_values.dim() == 5, "model",
            "expected pixel_values [batch, images, {}, {}, {}], got rank {}", v.channels, v.image, v.image,
            pixel_values.dim());
  const Sym N = pixel_values.size(0) * pixel_values.size(1);
  Var px = F::reshape(pixel_values, {N, v.channels, v.image, v.image});
  Var h = siglip_last_hidden_state(b, w, vc, px, "model.vision_model.");  // [N, side², D]
  // Idefics3Connector.pixel_shuffle: each sf×sf block of patches becomes one token of D·sf² channels.
  const int64_t D = v.hidden, s = side / sf;
  Var x = F::reshape(h, {N, side, s, D * sf});
  x = F::permute(x, {0, 2, 1, 3});
  x = F::reshape(x, {N, s, s, D * sf * sf});
  x = F::permute(x, {0, 2, 1, 3});
  x = F::reshape(x, {N, s * s, D * sf * sf});
  const Weights W{b, w};
  return F::matmul(x, F::transpose(W("model.connector.modality_projection.proj.weight"), 0, 1));
}

Var gemma3_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config,
                          const Var& pixel_values) {
  const nlohmann::json& vc = jsonc::at(config, "vision_config", kC, "config.json");
  const Vision v = vision_of(vc, /*siglip=*/true);
  const int64_t tokens = jsonc::get_or<int64_t>(config, "mm_tokens_per_image", 256, kC, "config.json");
  const int64_t side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(tokens))));
  const int64_t patches = v.image / v.patch;
  HFX_CHECK(side * side == tokens && side > 0 && patches % side == 0, "model",
            "expected mm_tokens_per_image a square whose side divides the {} patches per side, got {}",
            patches, tokens);
  Var h = siglip_last_hidden_state(b, w, vc, pixel_values, kTower);  // [B, P·P, D], rows y·P + x
  // Gemma3MultiModalProjector: AvgPool2d(k) over the P×P grid, RMSNorm x·(1 + w), then the projection.
  const int64_t k = patches / side;
  const Sym B = h.size(0);
  Var grid = F::reshape(h, {B, side, k, side, k, v.hidden});
  Var pooled = F::reshape(F::mean(grid, {2, 4}), {B, tokens, v.hidden});
  const Weights W{b, w};
  Var normed = F::rms_norm(pooled, W("multi_modal_projector.mm_soft_emb_norm.weight"), v.eps, 1.0);
  return F::matmul(normed, W("multi_modal_projector.mm_input_projection_weight"));
}

namespace {

// The text model over the merged embeddings. The merge (image features replace the embeddings of the
// image tokens, in order) is done as a lookup: the features become K extra rows of the embedding table and
// the k-th image token reads row vocab + k, so the unchanged text model computes exactly
// LlavaForConditionalGeneration's merged forward; the K extra logit columns (zero rows of lm_head) are cut.
struct MergedLM {
  std::unique_ptr<CausalLM> lm;
  int64_t vocab = 0, image_token = 0, features = 0, images = 0;
};

Tensor append_rows(const Tensor& table, const std::vector<float>& rows, int64_t n) {
  const Tensor t = table.to(DType::F32).contiguous();
  const int64_t V = t.shape()[0], D = t.shape()[1];
  Tensor out = Tensor::zeros({V + n, D}, DType::F32);
  std::memcpy(out.data<float>(), t.data<float>(), static_cast<size_t>(V * D) * sizeof(float));
  if (!rows.empty()) std::memcpy(out.data<float>() + V * D, rows.data(), rows.size() * sizeof(float));
  return out;
}

MergedLM merged_lm(const io::WeightStore& w, const nlohmann::json& config, const Tensor& pixel_values) {
  MergedLM m;
  m.image_token = jsonc::get<int64_t>(config, "image_token_index", "llava", "config.json");
  std::vector<float> feats;
  int64_t D = 0;
  if (pixel_values.defined()) {
    EagerBuilder b;
    const Tensor f = llava_image_features(b, w, config, b.wrap(pixel_values)).tensor().contiguous();
    D = f.shape().back();
    m.features = f.numel() / D;
    m.images = f.shape()[0];
    feats = f.to_floats();
  }
  std::map<std::string, Tensor> text;
  const std::string prefix = "language_model.";
  for (const std::string& name : w.names())
    if (name.rfind(prefix, 0) == 0) text[name.substr(prefix.size())] = w.get(name);
  Tensor& embed = text.at("model.embed_tokens.weight");
  m.vocab = embed.shape()[0];
  HFX_CHECK(D == 0 || D == embed.shape()[1], "llava",
            "expected image features of the text hidden size {}, got {}", embed.shape()[1], D);
  embed = append_rows(embed, feats, m.features);
  if (text.count("lm_head.weight"))
    text["lm_head.weight"] = append_rows(text["lm_head.weight"], {}, m.features);
  nlohmann::json tc = jsonc::at(config, "text_config", "llava", "config.json");
  tc["vocab_size"] = m.vocab + m.features;
  m.lm = make_causal_lm(tc, io::WeightStore::from_tensors(std::move(text)));
  return m;
}

// input_ids with the k-th image token replaced by vocab + k; the counts must match.
std::vector<int64_t> merged_ids(const MergedLM& m, std::vector<int64_t> ids) {
  int64_t k = 0;
  for (int64_t& id : ids)
    if (id == m.image_token) id = m.vocab + k++;
  HFX_CHECK(
      k == m.features, "llava",
      "expected {} image tokens (id {}) in input_ids — {} image(s) × {} features each — got {}; give one "
      "image per <image> marker of the prompt",
      m.features, m.image_token, m.images, m.images ? m.features / m.images : 0, k);
  return ids;
}

Tensor run(const MergedLM& m, const std::vector<int64_t>& ids, int64_t B) {
  EagerBuilder b;
  ForwardArgs a;
  const int64_t S = static_cast<int64_t>(ids.size()) / B;
  a.input_ids = b.wrap(Tensor::from_ints({B, S}, ids));
  const Tensor logits = m.lm->forward(b, a).logits.tensor();
  return logits.slice(2, 0, m.vocab).contiguous();
}

}  // namespace

Tensor llava_logits(const io::WeightStore& w, const nlohmann::json& config, const Tensor& input_ids,
                    const Tensor& pixel_values) {
  HFX_CHECK(input_ids.shape().size() == 2, "llava", "expected input_ids [batch, sequence], got rank {}",
            input_ids.shape().size());
  const MergedLM m = merged_lm(w, config, pixel_values);
  return run(m, merged_ids(m, input_ids.to_ints()), input_ids.shape()[0]);
}

std::vector<int64_t> llava_greedy(const io::WeightStore& w, const nlohmann::json& config,
                                  const std::vector<int64_t>& prompt, const Tensor& pixel_values, int n_new) {
  const MergedLM m = merged_lm(w, config, pixel_values);
  std::vector<int64_t> ids = merged_ids(m, prompt), out;
  const auto& eos = m.lm->config().eos_token_ids;
  for (int step = 0; step < n_new; step++) {
    const Tensor logits = run(m, ids, 1);
    const int64_t S = logits.shape()[1];
    const float* last = logits.data<float>() + (S - 1) * m.vocab;
    const int64_t next = std::max_element(last, last + m.vocab) - last;
    out.push_back(next);
    ids.push_back(next);
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
  }
  return out;
}

}  // namespace hfx::models
