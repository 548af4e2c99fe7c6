// qwen2_vl: Qwen2VLForConditionalGeneration (transformers 4.47–4.51 layout; Qwen/Qwen2-VL-2B-Instruct) —
// the vision transformer (visual.*: Conv3d patch embedding, 2-D rotary attention, QuickGELU MLPs, the
// PatchMerger) and the Qwen2 text model (model.*, lm_head) with multimodal rotary positions (M-RoPE), as
// three components the way Transformers.js loads them: `vision_encoder` (pixel_values [patches, C·T·P·P]
// and grid_thw [images, 3] → image_features [patches / merge², hidden]), `embed_tokens` and `decoder`
// (the text model on inputs_embeds with position_ids [3, batch, sequence]: temporal, height, width).
//
// Everything the vision tower derives from grid_thw — each patch's image, frame, row and column, its
// rotary angles and the block-diagonal attention mask (transformers' cu_seqlens) — is computed with
// elementwise ops from the grid's values and the symbolic patch count, so the exported graph takes any
// number of images of any grid and no shape depends on a tensor's values. Integer division is a
// float division truncated by the cast to int64 (exact: the operands are small non-negative integers).
// `hfx create-tiny qwen2_vl` writes Qwen2VLImageProcessor's preprocessor_config.json, chat_template.json
// and the tokenizer's <|vision_start|>, <|vision_end|>, <|image_pad|> and <|video_pad|>.
#include <cmath>
#include <filesystem>
#include <limits>

#include "blocks.h"
#include "hfx/io/safetensors.h"
#include "tiny_hooks.h"

namespace hfx::models {
namespace {

struct Vision {
  int64_t depth = 32, embed = 1280, out = 3584, heads = 16, channels = 3, patch = 14, merge = 2, temporal = 2;
  double mlp_ratio = 4;
  std::string act = "quick_gelu";
  int64_t patch_dim() const { return channels * temporal * patch * patch; }
  int64_t mlp() const { return static_cast<int64_t>(static_cast<double>(embed) * mlp_ratio); }
};

Vision vision(const json& j) {
  HFX_CHECK(j.contains("vision_config") && j["vision_config"].is_object(), "model",
            "expected config.json.vision_config to be an object (qwen2_vl's vision tower), got {}",
            j.contains("vision_config") ? jsonc::describe(j["vision_config"]) : "none");
  const json& v = j["vision_config"];
  Vision r;
  r.depth = jget<int64_t>(v, "depth", r.depth);
  r.embed = jget<int64_t>(v, "embed_dim", r.embed);
  r.out = jget<int64_t>(v, "hidden_size", r.out);
  r.heads = jget<int64_t>(v, "num_heads", r.heads);
  r.channels = jget<int64_t>(v, "in_channels", jget<int64_t>(v, "in_chans", r.channels));
  r.patch = jget<int64_t>(v, "patch_size", r.patch);
  r.merge = jget<int64_t>(v, "spatial_merge_size", r.merge);
  r.temporal = jget<int64_t>(v, "temporal_patch_size", r.temporal);
  r.mlp_ratio = jget<double>(v, "mlp_ratio", r.mlp_ratio);
  r.act = jget<std::string>(v, "hidden_act", r.act);
  HFX_CHECK(r.heads > 0 && r.embed % r.heads == 0 && (r.embed / r.heads) % 4 == 0, "model",
            "expected vision_config.embed_dim divisible by num_heads with a head size divisible by 4 (2-D "
            "rotary), got {} and {}",
            r.embed, r.heads);
  HFX_CHECK(r.depth > 0 && r.patch > 0 && r.merge > 0 && r.temporal > 0 && r.mlp() > 0, "model",
            "expected positive vision_config sizes, got depth {}, patch {}, merge {}, temporal {}", r.depth,
            r.patch, r.merge, r.temporal);
  return r;
}

// The text model's config: transformers 4.x keeps it at the top level, 5.x under text_config.
json text_config(const json& j) {
  json t = j.contains("text_config") && j["text_config"].is_object() ? j["text_config"] : j;
  t.erase("vision_config");
  t["model_type"] = "qwen2";
  return t;
}

const Architecture& text_architecture() { return architecture("qwen2"); }

ModelConfig parse(const json& j) {
  ModelConfig c = text_architecture().parse_config(text_config(j));
  const Vision v = vision(j);
  HFX_CHECK(
      v.out == c.hidden_size, "model",
      "expected vision_config.hidden_size (the merger's output) to equal the text hidden_size {}, got {}",
      c.hidden_size, v.out);
  HFX_CHECK(
      !rope_config(c).mrope_section.empty(), "model",
      "expected rope_scaling.mrope_section in qwen2_vl's config.json (multimodal rotary positions), got "
      "none");
  for (const char* key : {"image_token_id", "vision_start_token_id"})
    HFX_CHECK(jhas(j, key) && j[key].is_number_integer(), "model", "expected config.json.{}, got none", key);
  c.model_type = "qwen2_vl";
  c.raw = j;
  return c;
}

WeightSpecs weight_specs(const ModelConfig& cfg) {
  const Vision v = vision(cfg.raw);
  WeightSpecs s;
  s.push_back({"visual.patch_embed.proj.weight", {v.embed, v.channels, v.temporal, v.patch, v.patch}});
  for (int64_t i = 0; i < v.depth; i++) {
    const std::string p = "visual.blocks." + std::to_string(i) + ".";
    for (const char* n : {"norm1", "norm2"}) {
      s.push_back({p + n + ".weight", {v.embed}});
      s.push_back({p + n + ".bias", {v.embed}});
    }
    s.push_back({p + "attn.qkv.weight", {3 * v.embed, v.embed}});
    s.push_back({p + "attn.qkv.bias", {3 * v.embed}});
    s.push_back({p + "attn.proj.weight", {v.embed, v.embed}});
    s.push_back({p + "attn.proj.bias", {v.embed}});
    s.push_back({p + "mlp.fc1.weight", {v.mlp(), v.embed}});
    s.push_back({p + "mlp.fc1.bias", {v.mlp()}});
    s.push_back({p + "mlp.fc2.weight", {v.embed, v.mlp()}});
    s.push_back({p + "mlp.fc2.bias", {v.embed}});
  }
  const int64_t merged = v.embed * v.merge * v.merge;
  s.push_back({"visual.merger.ln_q.weight", {v.embed}});
  s.push_back({"visual.merger.ln_q.bias", {v.embed}});
  s.push_back({"visual.merger.mlp.0.weight", {merged, merged}});
  s.push_back({"visual.merger.mlp.0.bias", {merged}});
  s.push_back({"visual.merger.mlp.2.weight", {v.out, merged}});
  s.push_back({"visual.merger.mlp.2.bias", {v.out}});
  const Architecture& ta = text_architecture();
  for (auto& spec : ta.weight_specs(ta.parse_config(text_config(cfg.raw)))) s.push_back(spec);
  return s;
}

// trunc(a / b) for non-negative float operands holding integers: the float quotient is exact when b
// divides a and at least 1/b away from the next integer otherwise, so the cast's truncation is floor.
Var floordiv(const Var& a, const Var& b) { return F::to(F::to(F::div(a, b), DType::I64), DType::F32); }

// Per patch (in the processor's order: image, frame, merge window row-major, then the merge² patches of
// the window row-major) its image index, frame and (row, column) in the image's patch grid, as f32 [N].
struct PatchPositions {
  Var image, frame, row, col;
};

PatchPositions patch_positions(Builder& b, const Var& grid_thw, const Sym& n, int64_t merge) {
  const Var g = F::to(grid_thw, DType::F32);  // [M, 3]
  auto column = [&](int64_t c) { return F::squeeze(F::slice(g, 1, c, c + 1), 1); };
  const Var t = column(0), h = column(1), w = column(2);
  const Var hw = F::mul(h, w), ends = F::cumsum(F::mul(t, hw), 0), starts = F::sub(ends, F::mul(t, hw));
  const Var i = F::arange(b, 0, n, DType::F32);  // [N]
  // The image of patch i: how many images end at or before it.
  const Var image = F::sum(F::to(F::ge(F::unsqueeze(i, 1), F::unsqueeze(ends, 0)), DType::F32), {1});
  const Var idx = F::to(image, DType::I64);
  const Var local = F::sub(i, F::index_select(starts, 0, idx));
  const Var area = F::index_select(hw, 0, idx), width = F::index_select(w, 0, idx);
  const Var frame = floordiv(local, area);
  const Var in_frame = F::sub(local, F::mul(frame, area));
  const Var mm = b.constant(Tensor::scalar(static_cast<double>(merge * merge)));
  const Var m = b.constant(Tensor::scalar(static_cast<double>(merge)));
  const Var window = floordiv(in_frame, mm), j = F::sub(in_frame, F::mul(window, mm));
  const Var dy = floordiv(j, m), dx = F::sub(j, F::mul(dy, m));
  const Var windows_per_row = F::div(width, m);
  const Var wy = floordiv(window, windows_per_row), wx = F::sub(window, F::mul(wy, windows_per_row));
  return {image, frame, F::add(F::mul(wy, m), dy), F::add(F::mul(wx, m), dx)};
}

// VisionRotaryEmbedding(head_dim / 2) indexed by (row, column): cos/sin [1, N, head_dim] of
// cat(row·inv_freq, col·inv_freq) repeated twice, as apply_rotary_pos_emb_vision builds them.
std::pair<Var, Var> vision_rotary(Builder& b, const PatchPositions& p, int64_t head_dim) {
  const int64_t dim = head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(dim / 2));
  for (int64_t k = 0; k < dim / 2; k++)
    inv[static_cast<size_t>(k)] =
        1.0f / std::pow(10000.0f, static_cast<float>(2 * k) / static_cast<float>(dim));
  const Var f = b.constant(Tensor::from_floats({dim / 2}, inv));
  const Var freqs = F::cat({F::mul(F::unsqueeze(p.row, 1), f), F::mul(F::unsqueeze(p.col, 1), f)}, 1);
  const Var emb = F::unsqueeze(F::cat({freqs, freqs}, 1), 0);  // [1, N, head_dim]
  return {F::cos(emb), F::sin(emb)};
}

class Qwen2Vl : public Model {
 public:
  Qwen2Vl(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) : Model(std::move(cfg), std::move(w)) {
    lm_ = make_text_decoder(text_architecture(), text_config(config().raw), weights_ptr(), "qwen2_vl");
    v_ = vision(config().raw);
  }
  Structure structure() const override { return Structure::VisionLanguage; }
  std::string head() const override { return "image_text_to_text"; }

  std::vector<ComponentDecl> components() const override {
    ComponentDecl vis{"vision_encoder",
                      {{"pixel_values", DType::F32, {"num_patches", std::to_string(v_.patch_dim())}},
                       {"grid_thw", DType::I64, {"num_images", "3"}}},
                      {"image_features"},
                      {}};
    ComponentDecl embed{"embed_tokens",
                        {{"input_ids", DType::I64, {"batch_size", "sequence_length"}}},
                        {"inputs_embeds"},
                        {}};
    ComponentDecl decoder = decoder_on_embeddings(*lm_, config().hidden_size);
    for (InputDecl& d : decoder.inputs)
      if (d.name == "position_ids") d.axes = {"3", "batch_size", "sequence_length"};
    return {vis, embed, decoder};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    auto need = [&](const char* name) { return need_input(in, name, component, "qwen2_vl"); };
    if (component == "vision_encoder")
      return {{"image_features", image_features(b, need("pixel_values"), need("grid_thw"))}};
    if (component == "embed_tokens") {
      Scope s(b, "model");
      return {{"inputs_embeds", F::to(lm_->embed(b, need("input_ids")), DType::F32)}};
    }
    if (component == "decoder") {
      need("inputs_embeds");
      need("position_ids");
      return lm_->call("model", b, in, opts);
    }
    (void)this->component(component);  // throws, listing the components
    return {};
  }

 private:
  Var w(Builder& b, const std::string& name) const { return W(b, *this, name); }
  Var lin(Builder& b, const Var& x, const std::string& name) const {
    return F::linear(x, w(b, name + ".weight"), w(b, name + ".bias"));
  }
  Var norm(Builder& b, const Var& x, const std::string& name) const {
    return F::layer_norm(x, w(b, name + ".weight"), w(b, name + ".bias"), 1e-6);
  }

  // VisionAttention over all patches at once; the mask keeps each frame's patches among themselves.
  Var attention(Builder& b, const Var& x, const std::string& p, const Var& cos, const Var& sin,
                const Var& mask) const {
    const int64_t hd = v_.embed / v_.heads;
    const Sym n = x.size(0);
    Var qkv = F::reshape(lin(b, x, p + "qkv"), {n, 3, v_.heads, hd});
    auto part = [&](int64_t k) {  // [1, heads, N, hd]
      return F::unsqueeze(F::transpose(F::squeeze(F::slice(qkv, 1, k, k + 1), 1), 0, 1), 0);
    };
    Var q = F::rope(part(0), cos, sin), k = F::rope(part(1), cos, sin);
    Var att = F::sdpa(q, k, part(2), mask, 1.0 / std::sqrt(static_cast<double>(hd)), false);
    att = F::reshape(F::transpose(F::squeeze(att, 0), 0, 1), {n, v_.embed});
    return lin(b, att, p + "proj");
  }

  Var image_features(Builder& b, const Var& pixels, const Var& grid_thw) const {
    Scope s(b, "visual");
    const Sym n = pixels.size(0);
    // Each image's grid is at least one merge window (merge x merge patches): the patches the grids tile
    // are at least that many per image. A relation of the sizes every valid call satisfies, so the contract
    // states it (a guard, checked at run time) instead of admitting more images than the patches can hold.
    // And every grid's rows and columns are whole merge windows, so the patches come in multiples of one.
    const Sym window(v_.merge * v_.merge);
    if (!b.env().ge(n, grid_thw.size(0) * window) || !b.env().eq(mod(n, window), Sym(0)))
      HFX_THROW("model",
                "expected whole {}-patch merge windows, at least one per image, got {} patches for {} images",
                v_.merge * v_.merge, b.env().hint(n), b.env().hint(grid_thw.size(0)));
    Var patch = F::reshape(w(b, "visual.patch_embed.proj.weight"), {v_.embed, v_.patch_dim()});
    Var h = F::linear(F::to(pixels, DType::F32), patch);  // Conv3d with stride = kernel: one matmul
    const PatchPositions pos = patch_positions(b, grid_thw, n, v_.merge);
    auto [cos, sin] = vision_rotary(b, pos, v_.embed / v_.heads);
    // cu_seqlens: attention stays within one frame of one image.
    auto pair = [](const Var& a) { return F::eq(F::unsqueeze(a, 1), F::unsqueeze(a, 0)); };
    Var same = F::logical_and(pair(pos.image), pair(pos.frame));
    Var mask =
        F::where(same, b.constant(Tensor::scalar(0.0)),
                 b.constant(Tensor::scalar(static_cast<double>(std::numeric_limits<float>::lowest()))));
    mask = F::unsqueeze(F::unsqueeze(mask, 0), 0);  // [1, 1, N, N]
    for (int64_t i = 0; i < v_.depth; i++) {
      const std::string p = "visual.blocks." + std::to_string(i) + ".";
      Scope sb(b, "blocks." + std::to_string(i));
      h = F::add(h, attention(b, norm(b, h, p + "norm1"), p + "attn.", cos, sin, mask));
      Var m = lin(b, activation(lin(b, norm(b, h, p + "norm2"), p + "mlp.fc1"), v_.act), p + "mlp.fc2");
      h = F::add(h, m);
      b.name_output(h);
    }
    Scope sm(b, "merger");
    const int64_t merged = v_.embed * v_.merge * v_.merge;
    Var x = F::reshape(norm(b, h, "visual.merger.ln_q"), {-1, merged});
    x = lin(b, F::gelu(lin(b, x, "visual.merger.mlp.0")), "visual.merger.mlp.2");
    b.name_output(x);
    return x;
  }

  std::unique_ptr<DecoderLM> lm_;
  Vision v_;
};

std::unique_ptr<Model> create(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) {
  return std::make_unique<Qwen2Vl>(std::move(cfg), std::move(w));
}

// A tiny Qwen2-VL: the qwen2 tiny text model (head_dim 16: mrope_section [2, 3, 3]) and a 2-block vision
// tower (embed 32, 4 heads, patches of 4×4 pixels × 2 frames, merge 2); <|vision_start|> 512,
// <|vision_end|> 513, <|image_pad|> 514, <|video_pad|> 515 after the tokenizer's 512.
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("qwen2_vl", preset, "tiny");
  json j = text_architecture().tiny_config("tiny");
  j["architectures"] = {"Qwen2VLForConditionalGeneration"};
  j["model_type"] = "qwen2_vl";
  j["vocab_size"] = 512;  // create-tiny's tokenizer size; tiny_text sets the full 516
  // As Qwen2-VL-2B-Instruct: no sliding window. (transformers 4.47's Qwen2VLConfig keeps sliding_window even
  // when use_sliding_window is false and masks by it; with the checkpoints' 32768 that changes nothing.)
  j["sliding_window"] = 32768;
  j["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {2, 3, 3}}};
  j["vision_start_token_id"] = 512;
  j["vision_end_token_id"] = 513;
  j["image_token_id"] = 514;
  j["video_token_id"] = 515;
  j["transformers_version"] = "4.47.0";
  j["vision_config"] = {{"depth", 2},
                        {"embed_dim", 32},
                        {"hidden_size", j["hidden_size"]},
                        {"hidden_act", "quick_gelu"},
                        {"mlp_ratio", 2},
                        {"num_heads", 4},
                        {"in_channels", 3},
                        {"patch_size", 4},
                        {"spatial_merge_size", 2},
                        {"temporal_patch_size", 2}};
  return j;
}

void tiny_text(json& config, std::string& tokenizer_json, std::string& tokenizer_config_json) {
  json tj = json::parse(tokenizer_json), tc = json::parse(tokenizer_config_json);
  add_special_tokens(tj, tc,
                     {{config.at("vision_start_token_id").get<int64_t>(), "<|vision_start|>"},
                      {config.at("vision_end_token_id").get<int64_t>(), "<|vision_end|>"},
                      {config.at("image_token_id").get<int64_t>(), "<|image_pad|>"},
                      {config.at("video_token_id").get<int64_t>(), "<|video_pad|>"}});
  tc["processor_class"] = "Qwen2VLProcessor";
  tc.erase("chat_template");  // the processor's template lives in chat_template.json
  config["vocab_size"] = 516;
  tokenizer_json = tj.dump(2) + "\n";
  tokenizer_config_json = tc.dump(2) + "\n";
}

// Qwen2-VL-Instruct's chat template, shortened to what images and text need.
constexpr const char* kChatTemplate =
    "{% for message in messages %}{{ message['role'] + ': ' }}{% if message['content'] is string %}{{ "
    "message['content'] }}{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' "
    "%}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}{% elif content['type'] == 'text' %}{{ "
    "content['text'] }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}{% if add_generation_prompt "
    "%}{{ 'assistant: ' }}{% endif %}";

void tiny_files(const std::string& dir, const json& config) {
  const Vision v = vision(config);
  auto path = [&](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  const int64_t factor = v.patch * v.merge;
  const json pre = {{"do_convert_rgb", true},
                    {"do_normalize", true},
                    {"do_rescale", true},
                    {"do_resize", true},
                    {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
                    {"image_processor_type", "Qwen2VLImageProcessor"},
                    {"image_std", {0.26862954, 0.26130258, 0.27577711}},
                    {"max_pixels", 6 * factor * 6 * factor},
                    {"merge_size", v.merge},
                    {"min_pixels", 2 * factor * 2 * factor},
                    {"patch_size", v.patch},
                    {"processor_class", "Qwen2VLProcessor"},
                    {"resample", 3},
                    {"rescale_factor", 1.0 / 255.0},
                    {"temporal_patch_size", v.temporal}};
  io::write_file_atomic(path("preprocessor_config.json"), pre.dump(2) + "\n");
  io::write_file_atomic(path("chat_template.json"), json{{"chat_template", kChatTemplate}}.dump(2) + "\n");
}

}  // namespace

const Architecture& qwen2_vl_architecture() {
  static const Architecture a{.model_type = "qwen2_vl",
                              .parse_config = parse,
                              .weight_specs = weight_specs,
                              .create = create,
                              .tiny_config = tiny,
                              .tiny_tokenizer = "byte_level",
                              .tiny_norm_mean = 1.0,
                              .optional_weights = kRotaryBuffers,
                              .heads = {{"image_text_to_text", "Qwen2VLForConditionalGeneration"}}};
  return a;
}

const TinyHooks& qwen2_vl_tiny_hooks() {
  static const TinyHooks h{.text = tiny_text, .files = tiny_files};
  return h;
}

}  // namespace hfx::models
