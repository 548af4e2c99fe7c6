// idefics3 and smolvlm: Idefics3ForConditionalGeneration (transformers 4.47) and
// SmolVLMForConditionalGeneration (transformers 4.50+: the same weights, connector and prompt format under
// another model_type) — SigLIP vision tower (model.vision_model.*), Idefics3Connector (pixel shuffle by
// scale_factor, modality_projection.proj) and a Llama text model (model.text_model.*, lm_head), as three
// components the way Transformers.js loads them: `vision_encoder` (pixel_values [batch, images, C, H, W] →
// image_features [batch·images, tokens, hidden]), `embed_tokens` and `decoder` (the text model on
// inputs_embeds). The images are whole tiles (the image processor's splits and global image): a partly padded
// image (pixel_attention_mask with zeros) or an all-zero padding image of a batch is not supported. `hfx
// create-tiny idefics3` (or smolvlm) writes the checkpoint with <fake_token_around_image>, <image>,
// <global-img> and the row/column tokens.
#include <filesystem>

#include "blocks.h"
#include "hfx/io/safetensors.h"
#include "llava_vision.h"
#include "tiny_hooks.h"

namespace hfx::models {
namespace {

const json& sub(const json& j, const char* key) {
  HFX_CHECK(j.contains(key) && j[key].is_object(), "model",
            "expected config.json.{} to be an object (the idefics3 checkpoint's {}), got {}", key, key,
            j.contains(key) ? jsonc::describe(j[key]) : "none");
  return j[key];
}

json text_config(const json& j) {
  json t = sub(j, "text_config");
  if (!t.contains("model_type")) t["model_type"] = "llama";
  return t;
}

const Architecture& text_architecture(const json& j) {
  return architecture(text_config(j)["model_type"].get<std::string>());
}

// Idefics3VisionConfig's defaults.
struct Vision {
  int64_t hidden = 1152, intermediate = 3072, layers = 12, channels = 3, image = 224, patch = 32, scale = 2;
  int64_t tokens() const { return (image / patch) * (image / patch) / (scale * scale); }
};

Vision vision(const json& j) {
  const json& v = sub(j, "vision_config");
  Vision r;
  r.hidden = jget<int64_t>(v, "hidden_size", r.hidden);
  r.intermediate = jget<int64_t>(v, "intermediate_size", r.intermediate);
  r.layers = jget<int64_t>(v, "num_hidden_layers", r.layers);
  r.channels = jget<int64_t>(v, "num_channels", r.channels);
  r.image = jget<int64_t>(v, "image_size", r.image);
  r.patch = jget<int64_t>(v, "patch_size", r.patch);
  r.scale = jget<int64_t>(j, "scale_factor", r.scale);
  HFX_CHECK(
      r.patch > 0 && r.image % r.patch == 0 && r.scale > 0 && (r.image / r.patch) % r.scale == 0, "model",
      "expected vision_config.image_size divisible by patch_size and the patches per side by scale_factor, "
      "got {}, {} and {}",
      r.image, r.patch, r.scale);
  return r;
}

ModelConfig parse(const json& j) {
  ModelConfig c = text_architecture(j).parse_config(text_config(j));
  vision(j);
  HFX_CHECK(jhas(j, "image_token_id"), "model", "expected config.json.image_token_id, got none");
  c.model_type = jget<std::string>(j, "model_type", "idefics3");
  c.raw = j;
  // Idefics3VisionConfig's defaults written out: the shared SigLIP code (llava_vision.h) assumes
  // SiglipVisionConfig's where a key is absent, and transformers saves only the keys that differ.
  const json defaults = {{"hidden_size", 1152},     {"intermediate_size", 3072},
                         {"num_hidden_layers", 12}, {"num_attention_heads", 16},
                         {"num_channels", 3},       {"image_size", 224},
                         {"patch_size", 32},        {"hidden_act", "gelu_pytorch_tanh"},
                         {"layer_norm_eps", 1e-6}};
  json& v = c.raw["vision_config"];
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (!v.contains(it.key()) || v[it.key()].is_null()) v[it.key()] = it.value();
  return c;
}

WeightSpecs weight_specs(const ModelConfig& cfg) {
  const Vision v = vision(cfg.raw);
  WeightSpecs s;
  siglip_weight_specs(s, "model.vision_model.", sub(cfg.raw, "vision_config"));
  s.push_back(
      {"model.connector.modality_projection.proj.weight", {cfg.hidden_size, v.hidden * v.scale * v.scale}});
  const Architecture& ta = text_architecture(cfg.raw);
  for (auto& [name, shape] : ta.weight_specs(ta.parse_config(text_config(cfg.raw))))
    s.push_back({name.rfind("model.", 0) == 0 ? "model.text_model." + name.substr(6) : name, shape});
  return s;
}

class Idefics3 : public Model {
 public:
  Idefics3(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) : Model(std::move(cfg), std::move(w)) {
    lm_ = make_text_decoder(text_architecture(config().raw), text_config(config().raw), weights_ptr(),
                            config().model_type);
    lm_->set_weight_rename("model.", "model.text_model.");  // lm_head.weight stays at the top
    vision_ = vision(config().raw);
  }
  Structure structure() const override { return Structure::VisionLanguage; }
  std::string head() const override { return "image_text_to_text"; }

  std::vector<ComponentDecl> components() const override {
    const std::string px = std::to_string(vision_.image);
    // num_images: the processor's tiles plus the global image of each prompt's images, as Transformers.js
    // passes them.
    ComponentDecl vis{"vision_encoder",
                      {{"pixel_values",
                        DType::F32,
                        {"batch_size", "num_images", std::to_string(vision_.channels), px, px}}},
                      {"image_features"},
                      {}};
    ComponentDecl embed{"embed_tokens",
                        {{"input_ids", DType::I64, {"batch_size", "sequence_length"}}},
                        {"inputs_embeds"},
                        {}};
    ComponentDecl decoder = decoder_on_embeddings(*lm_, config().hidden_size);
    return {vis, embed, decoder};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    auto need = [&](const char* name) { return need_input(in, name, component, config().model_type); };
    if (component == "vision_encoder")
      return {{"image_features", idefics3_image_features(b, weights(), config().raw, need("pixel_values"))}};
    if (component == "embed_tokens") {
      Scope s(b, "model.text_model");
      return {{"inputs_embeds", F::to(lm_->embed(b, need("input_ids")), DType::F32)}};
    }
    if (component == "decoder") {
      need("inputs_embeds");
      return lm_->call("model", b, in, opts);
    }
    (void)this->component(component);  // throws, listing the components
    return {};
  }

 private:
  std::unique_ptr<DecoderLM> lm_;
  Vision vision_;
};

std::unique_ptr<Model> create(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) {
  return std::make_unique<Idefics3>(std::move(cfg), std::move(w));
}

// The special tokens after the tokenizer's 512: <fake_token_around_image>, <image>, <global-img>, then
// <row_R_col_C> for R, C in 1..4 (the processor's splits of up to 4×4 tiles).
constexpr int64_t kVocab = 512;
std::vector<std::string> special_tokens() {
  std::vector<std::string> t{"<fake_token_around_image>", "<image>", "<global-img>"};
  for (int r = 1; r <= 4; r++)
    for (int c = 1; c <= 4; c++) t.push_back("<row_" + std::to_string(r) + "_col_" + std::to_string(c) + ">");
  return t;
}

// A tiny idefics3: SigLIP 32×32 pixels in 8×8 patches (16), pixel shuffle by 2 (4 image tokens per tile), and
// the Llama text model of the other tiny presets.
// The class names of each model_type: the model, its vision config, image processor and processor.
struct Names {
  const char* model_class;
  const char* vision_type;
  const char* image_processor;
  const char* processor;
  const char* transformers;
};
Names names_of(const std::string& model_type) {
  if (model_type == "smolvlm")
    return {"SmolVLMForConditionalGeneration", "smolvlm_vision", "SmolVLMImageProcessor", "SmolVLMProcessor",
            "4.51.0"};
  return {"Idefics3ForConditionalGeneration", "idefics3_vision", "Idefics3ImageProcessor",
          "Idefics3Processor", "4.47.0"};
}

json tiny_of(const std::string& model_type, const std::string& preset) {
  if (preset != "tiny") unknown_preset(model_type, preset, "tiny");
  const Names n = names_of(model_type);
  json text = tiny_decoder_config("LlamaForCausalLM", "llama");
  text.erase("architectures");
  text.update(json{{"hidden_act", "silu"},
                   {"attention_bias", false},
                   {"mlp_bias", false},
                   {"rope_scaling", nullptr},
                   {"vocab_size", kVocab + static_cast<int64_t>(special_tokens().size())},
                   {"pad_token_id", 0}});
  return json{{"architectures", {n.model_class}},
              {"model_type", model_type},
              {"image_token_id", kVocab + 1},
              {"scale_factor", 2},
              {"pad_token_id", 0},
              {"tie_word_embeddings", false},
              {"initializer_range", 0.1},
              {"vocab_size", kVocab},  // create-tiny's tokenizer size; tiny_text sets the full one
              {"torch_dtype", "float32"},
              {"transformers_version", n.transformers},
              {"text_config", text},
              {"vision_config",
               {{"model_type", n.vision_type},
                {"hidden_size", 32},
                {"intermediate_size", 64},
                {"num_hidden_layers", 2},
                {"num_attention_heads", 4},
                {"num_channels", 3},
                {"image_size", 32},
                {"patch_size", 8},
                {"hidden_act", "gelu_pytorch_tanh"},
                {"layer_norm_eps", 1e-6}}}};
}

json tiny(const std::string& preset) { return tiny_of("idefics3", preset); }
json tiny_smolvlm(const std::string& preset) { return tiny_of("smolvlm", preset); }

void tiny_text(json& config, std::string& tokenizer_json, std::string& tokenizer_config_json) {
  json tj = json::parse(tokenizer_json), tc = json::parse(tokenizer_config_json);
  std::vector<std::pair<int64_t, std::string>> tokens;
  int64_t id = kVocab;
  for (const std::string& t : special_tokens()) tokens.push_back({id++, t});
  add_special_tokens(tj, tc, tokens);
  tc["processor_class"] = names_of(config.value("model_type", "idefics3")).processor;
  tc.erase("chat_template");
  config["vocab_size"] = config["text_config"]["vocab_size"];
  tokenizer_json = tj.dump(2) + "\n";
  tokenizer_config_json = tc.dump(2) + "\n";
}

void tiny_files(const std::string& dir, const json& config) {
  const Vision v = vision(config);
  const Names n = names_of(config.value("model_type", "idefics3"));
  auto path = [&](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  const json pre = {{"do_convert_rgb", true},
                    {"do_image_splitting", true},
                    {"do_normalize", true},
                    {"do_pad", true},
                    {"do_rescale", true},
                    {"do_resize", true},
                    {"image_mean", {0.5, 0.5, 0.5}},
                    {"image_processor_type", n.image_processor},
                    {"image_std", {0.5, 0.5, 0.5}},
                    {"max_image_size", {{"longest_edge", v.image}}},
                    {"processor_class", n.processor},
                    {"resample", 1},
                    {"rescale_factor", 1.0 / 255.0},
                    {"size", {{"longest_edge", 2 * v.image}}}};  // at most 2×2 tiles
  const json proc = {{"image_seq_len", v.tokens()}, {"processor_class", n.processor}};
  io::write_file_atomic(path("preprocessor_config.json"), pre.dump(2) + "\n");
  io::write_file_atomic(path("processor_config.json"), proc.dump(2) + "\n");
}

}  // namespace

const Architecture& idefics3_architecture() {
  static const Architecture a{.model_type = "idefics3",
                              .parse_config = parse,
                              .weight_specs = weight_specs,
                              .create = create,
                              .tiny_config = tiny,
                              .tiny_tokenizer = "sentencepiece",
                              .tiny_norm_mean = 1.0,
                              .optional_weights = {},
                              .heads = {{"image_text_to_text", "Idefics3ForConditionalGeneration"}}};
  return a;
}

const Architecture& smolvlm_architecture() {
  static const Architecture a{.model_type = "smolvlm",
                              .parse_config = parse,
                              .weight_specs = weight_specs,
                              .create = create,
                              .tiny_config = tiny_smolvlm,
                              .tiny_tokenizer = "sentencepiece",
                              .tiny_norm_mean = 1.0,
                              .optional_weights = {},
                              .heads = {{"image_text_to_text", "SmolVLMForConditionalGeneration"}}};
  return a;
}

const TinyHooks& idefics3_tiny_hooks() {
  static const TinyHooks h{.text = tiny_text, .files = tiny_files};
  return h;
}

}  // namespace hfx::models
