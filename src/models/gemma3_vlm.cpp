// gemma3: Gemma3ForConditionalGeneration (transformers 4.51 layout; google/gemma-3-4b-it) — SigLIP vision
// tower (vision_tower.vision_model.*), Gemma3MultiModalProjector (average pooling to mm_tokens_per_image,
// RMSNorm, mm_input_projection_weight) and the Gemma 3 text model (language_model.{model.*,lm_head}), as
// three components the way Transformers.js loads them: `vision_encoder` (pixel_values → image_features),
// `embed_tokens` (input_ids → inputs_embeds, scaled by sqrt(hidden) as Gemma3TextScaledWordEmbedding) and
// `decoder` (gemma3_text on inputs_embeds). The decoder also takes token_type_ids (1 on image tokens): in
// transformers 4.51 the image tokens of a prompt attend to each other in both directions (the causal mask
// is opened between them), which only the caller knows. The vision-language loop
// (src/capture/generation_loops.cpp) writes the image features over the image tokens' embeddings.
// `hfx create-tiny gemma3` writes the processor files of a gemma-3 checkpoint (preprocessor_config.json:
// Gemma3ImageProcessor; processor_config.json: image_seq_length; chat_template.jinja) and the tokenizer's
// <start_of_image>, <end_of_image> and <image_soft_token>.
#include <filesystem>

#include "blocks.h"
#include "hfx/io/safetensors.h"
#include "llava_vision.h"
#include "tiny_hooks.h"

namespace hfx::models {
namespace {

const json& sub(const json& j, const char* key) {
  HFX_CHECK(j.contains(key) && j[key].is_object(), "model",
            "expected config.json.{} to be an object (the gemma3 checkpoint's {}), got {}", key, key,
            j.contains(key) ? jsonc::describe(j[key]) : "none");
  return j[key];
}

// Gemma3Config's text_config: its model_type is gemma3_text whatever the file says (transformers builds a
// Gemma3TextConfig from the dict).
json text_config(const json& j) {
  json t = sub(j, "text_config");
  t["model_type"] = "gemma3_text";
  return t;
}

const Architecture& text_architecture() { return architecture("gemma3_text"); }

struct Vision {
  int64_t hidden = 768, intermediate = 3072, layers = 12, channels = 3, image = 224, patch = 16, tokens = 256;
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
  r.tokens = jget<int64_t>(j, "mm_tokens_per_image", r.tokens);
  HFX_CHECK(r.patch > 0 && r.image % r.patch == 0, "model",
            "expected vision_config.image_size divisible by patch_size, got {} and {}", r.image, r.patch);
  HFX_CHECK(
      !jget<bool>(v, "vision_use_head", false), "model",
      "expected vision_config.vision_use_head false (gemma3 reads the tower's last hidden state), got true");
  return r;
}

ModelConfig parse(const json& j) {
  ModelConfig c = text_architecture().parse_config(text_config(j));
  vision(j);
  HFX_CHECK(jhas(j, "image_token_index"), "model", "expected config.json.image_token_index, got none");
  c.model_type = "gemma3";
  c.raw = j;
  return c;
}

WeightSpecs weight_specs(const ModelConfig& cfg) {
  const Vision v = vision(cfg.raw);
  WeightSpecs s;
  siglip_weight_specs(s, "vision_tower.vision_model.", sub(cfg.raw, "vision_config"));
  s.push_back({"multi_modal_projector.mm_input_projection_weight", {v.hidden, cfg.hidden_size}});
  s.push_back({"multi_modal_projector.mm_soft_emb_norm.weight", {v.hidden}});
  const Architecture& ta = text_architecture();
  for (auto& [name, shape] : ta.weight_specs(ta.parse_config(text_config(cfg.raw))))
    s.push_back({"language_model." + name, shape});
  return s;
}

class Gemma3Vlm : public Model {
 public:
  Gemma3Vlm(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) : Model(std::move(cfg), std::move(w)) {
    lm_ = make_text_decoder(text_architecture(), text_config(config().raw), weights_ptr(), "gemma3");
    lm_->set_weight_prefix("language_model.");
    vision_ = vision(config().raw);
  }
  Structure structure() const override { return Structure::VisionLanguage; }
  std::string head() const override { return "image_text_to_text"; }

  std::vector<ComponentDecl> components() const override {
    const std::string px = std::to_string(vision_.image);
    ComponentDecl vis{
        "vision_encoder",
        {{"pixel_values", DType::F32, {"batch_size", std::to_string(vision_.channels), px, px}}},
        {"image_features"},
        {}};
    ComponentDecl embed{"embed_tokens",
                        {{"input_ids", DType::I64, {"batch_size", "sequence_length"}}},
                        {"inputs_embeds"},
                        {}};
    ComponentDecl decoder = decoder_on_embeddings(*lm_, config().hidden_size);
    InputDecl types{"token_type_ids", DType::I64, {"batch_size", "sequence_length"}};
    types.zero_default =
        true;  // Transformers.js does not pass it (its Gemma3 is LlavaForConditionalGeneration)
    decoder.inputs.insert(decoder.inputs.begin() + 1, types);
    return {vis, embed, decoder};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    auto need = [&](const char* name) { return need_input(in, name, component, "gemma3"); };
    if (component == "vision_encoder")
      return {{"image_features", gemma3_image_features(b, weights(), config().raw, need("pixel_values"))}};
    if (component == "embed_tokens") {
      Scope s(b, "language_model.model");
      return {{"inputs_embeds", F::to(lm_->embed(b, need("input_ids")), DType::F32)}};
    }
    if (component == "decoder") {
      need("inputs_embeds");
      need("token_type_ids");
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
  return std::make_unique<Gemma3Vlm>(std::move(cfg), std::move(w));
}

// A tiny gemma-3: SigLIP 32×32 pixels in 8×8 patches (16), pooled to 4 image tokens, and the gemma3_text
// tiny text model (local/global layers, window 8, q/k norms); <start_of_image> 512, <end_of_image> 513,
// <image_soft_token> 514 after the tokenizer's 512.
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gemma3", preset, "tiny");
  json text = text_architecture().tiny_config("tiny");
  text.erase("architectures");
  text["vocab_size"] = 515;
  return json{{"architectures", {"Gemma3ForConditionalGeneration"}},
              {"model_type", "gemma3"},
              {"boi_token_index", 512},
              {"eoi_token_index", 513},
              {"image_token_index", 514},
              {"mm_tokens_per_image", 4},
              {"initializer_range", 0.1},
              {"vocab_size", 512},  // create-tiny's tokenizer size; tiny_text sets the full 515
              {"torch_dtype", "float32"},
              {"transformers_version", "4.51.0"},
              {"text_config", text},
              {"vision_config",
               {{"model_type", "siglip_vision_model"},
                {"hidden_size", 32},
                {"intermediate_size", 64},
                {"num_hidden_layers", 2},
                {"num_attention_heads", 4},
                {"num_channels", 3},
                {"image_size", 32},
                {"patch_size", 8},
                {"hidden_act", "gelu_pytorch_tanh"},
                {"layer_norm_eps", 1e-6},
                {"vision_use_head", false}}}};
}

void tiny_text(json& config, std::string& tokenizer_json, std::string& tokenizer_config_json) {
  json tj = json::parse(tokenizer_json), tc = json::parse(tokenizer_config_json);
  add_special_tokens(tj, tc,
                     {{config.at("boi_token_index").get<int64_t>(), "<start_of_image>"},
                      {config.at("eoi_token_index").get<int64_t>(), "<end_of_image>"},
                      {config.at("image_token_index").get<int64_t>(), "<image_soft_token>"}});
  tc["boi_token"] = "<start_of_image>";
  tc["eoi_token"] = "<end_of_image>";
  tc["image_token"] = "<image_soft_token>";
  tc["processor_class"] = "Gemma3Processor";
  tc.erase("chat_template");  // a processor's template lives in chat_template.jinja
  config["vocab_size"] = config["text_config"]["vocab_size"];
  tokenizer_json = tj.dump(2) + "\n";
  tokenizer_config_json = tc.dump(2) + "\n";
}

// gemma-3-it's chat template, shortened to what images and text need:
// "<start_of_turn>user\n…<end_of_turn>\n".
constexpr const char* kChatTemplate =
    "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' "
    "else "
    "message['role'] %}{{ '<start_of_turn>' + role + '\\n' }}{% if message['content'] is string %}{{ "
    "message['content'] | trim }}{% else %}{% for item in message['content'] %}{% if item['type'] == 'image' "
    "%}{{ '<start_of_image>' }}{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}{% "
    "endfor "
    "%}{% endif %}{{ '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<start_of_turn>model\\n' "
    "}}{% endif %}";

void tiny_files(const std::string& dir, const json& config) {
  const Vision v = vision(config);
  auto path = [&](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  const json pre = {{"do_convert_rgb", nullptr},
                    {"do_normalize", true},
                    {"do_pan_and_scan", nullptr},
                    {"do_rescale", true},
                    {"do_resize", true},
                    {"image_mean", {0.5, 0.5, 0.5}},
                    {"image_processor_type", "Gemma3ImageProcessor"},
                    {"image_seq_length", v.tokens},
                    {"image_std", {0.5, 0.5, 0.5}},
                    {"processor_class", "Gemma3Processor"},
                    {"resample", 2},
                    {"rescale_factor", 1.0 / 255.0},
                    {"size", {{"height", v.image}, {"width", v.image}}}};
  const json proc = {{"image_seq_length", v.tokens}, {"processor_class", "Gemma3Processor"}};
  io::write_file_atomic(path("preprocessor_config.json"), pre.dump(2) + "\n");
  io::write_file_atomic(path("processor_config.json"), proc.dump(2) + "\n");
  // chat_template.jinja, as transformers 4.51 saves a processor's template (Transformers.js' Gemma3Processor
  // reads only this file).
  io::write_file_atomic(path("chat_template.jinja"), kChatTemplate);
}

}  // namespace

const Architecture& gemma3_architecture() {
  static const Architecture a{.model_type = "gemma3",
                              .parse_config = parse,
                              .weight_specs = weight_specs,
                              .create = create,
                              .tiny_config = tiny,
                              .tiny_tokenizer = "sentencepiece",
                              .tiny_norm_mean = 0.0,
                              .optional_weights = {R"(language_model\.lm_head\.weight)"},
                              .heads = {{"image_text_to_text", "Gemma3ForConditionalGeneration"}},
                              .weight_layouts = {{"vision_tower.", "vision_tower.vision_model."}}};
  return a;
}

const TinyHooks& gemma3_tiny_hooks() {
  static const TinyHooks h{.text = tiny_text, .files = tiny_files};
  return h;
}

}  // namespace hfx::models
