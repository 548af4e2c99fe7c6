// llava: LlavaForConditionalGeneration (transformers 4.47 layout): config (vision_config: CLIPVisionConfig,
// text_config: the language model's own config), every weight name and shape (vision_tower.vision_model.*,
// multi_modal_projector.linear_{1,2}, language_model.{model.*,lm_head}), `hfx create-tiny llava` with the
// processor files of a llava-1.5 checkpoint (preprocessor_config.json, processor_config.json,
// chat_template.json, an <image> token), and the model as three components, as Optimum and Transformers.js
// split it: `vision_encoder` (pixel_values → image_features: CLIP tower, feature layer, projector;
// src/models/llava_vision.h), `embed_tokens` (input_ids → inputs_embeds) and `decoder` (the text model on
// embeddings, with its KV cache). The vision-language generation loop (src/capture/generation_loops.cpp)
// writes the image features over the image tokens' embeddings between the two.
#include <filesystem>

#include "blocks.h"
#include "hfx/io/safetensors.h"
#include "llava_vision.h"
#include "tiny_hooks.h"

namespace hfx::models {
namespace {

// CLIPVisionConfig's defaults (transformers 4.47).
struct ClipVision {
  int64_t hidden = 768, intermediate = 3072, layers = 12, heads = 12, channels = 3, image = 224, patch = 32;
};

ClipVision clip_vision(const json& v) {
  ClipVision c;
  c.hidden = jget<int64_t>(v, "hidden_size", c.hidden);
  c.intermediate = jget<int64_t>(v, "intermediate_size", c.intermediate);
  c.layers = jget<int64_t>(v, "num_hidden_layers", c.layers);
  c.heads = jget<int64_t>(v, "num_attention_heads", c.heads);
  c.channels = jget<int64_t>(v, "num_channels", c.channels);
  c.image = jget<int64_t>(v, "image_size", c.image);
  c.patch = jget<int64_t>(v, "patch_size", c.patch);
  HFX_CHECK(c.patch > 0 && c.image % c.patch == 0, "model",
            "expected vision_config.image_size divisible by patch_size, got {} and {}", c.image, c.patch);
  HFX_CHECK(c.heads > 0 && c.hidden % c.heads == 0, "model",
            "expected vision_config.hidden_size divisible by num_attention_heads, got {} and {}", c.hidden,
            c.heads);
  return c;
}

const json& sub(const json& j, const char* key) {
  HFX_CHECK(j.contains(key) && j[key].is_object(), "model",
            "expected config.json.{} to be an object (the llava checkpoint's {}), got {}", key, key,
            j.contains(key) ? jsonc::describe(j[key]) : "none");
  return j[key];
}

const Architecture& text_architecture(const json& j) {
  return architecture(jget<std::string>(sub(j, "text_config"), "model_type", "llama"));
}

// The language model's numbers are the model's (vocab, hidden size, layers): they are what the tokenizer,
// generation and create-tiny read; `raw` keeps the whole llava config.
ModelConfig parse(const json& j) {
  ModelConfig c = text_architecture(j).parse_config(sub(j, "text_config"));
  clip_vision(sub(j, "vision_config"));
  const std::string strategy = jget<std::string>(j, "vision_feature_select_strategy", "default");
  HFX_CHECK(strategy == "default" || strategy == "full", "model",
            "expected config.json.vision_feature_select_strategy 'default' or 'full', got '{}'", strategy);
  c.model_type = "llava";
  c.raw = j;
  return c;
}

WeightSpecs weight_specs(const ModelConfig& cfg) {
  const ClipVision v = clip_vision(sub(cfg.raw, "vision_config"));
  const json& text = sub(cfg.raw, "text_config");
  const Architecture& ta = text_architecture(cfg.raw);
  WeightSpecs s;
  const std::string vt = "vision_tower.vision_model.";
  const int64_t positions = (v.image / v.patch) * (v.image / v.patch) + 1;
  s.push_back({vt + "embeddings.class_embedding", {v.hidden}});
  s.push_back({vt + "embeddings.patch_embedding.weight", {v.hidden, v.channels, v.patch, v.patch}});
  s.push_back({vt + "embeddings.position_embedding.weight", {positions, v.hidden}});
  for (const char* n : {"pre_layrnorm", "post_layernorm"}) {
    s.push_back({vt + n + ".weight", {v.hidden}});
    s.push_back({vt + n + ".bias", {v.hidden}});
  }
  vision_layer_specs(s, vt, v.hidden, v.intermediate, v.layers);
  // linear_1 takes the selected layers' features (vision hidden size per layer, concatenated).
  const int64_t th = cfg.hidden_size;
  const int64_t picked = static_cast<int64_t>(llava_feature_layers(cfg.raw, v.layers).size());
  const bool bias = jget<bool>(cfg.raw, "multimodal_projector_bias", true);
  s.push_back({"multi_modal_projector.linear_1.weight", {th, v.hidden * picked}});
  if (bias) s.push_back({"multi_modal_projector.linear_1.bias", {th}});
  s.push_back({"multi_modal_projector.linear_2.weight", {th, th}});
  if (bias) s.push_back({"multi_modal_projector.linear_2.bias", {th}});
  for (auto& [name, shape] : ta.weight_specs(ta.parse_config(text)))
    s.push_back({"language_model." + name, shape});
  return s;
}

// The language model is the text architecture's own CausalLM over the same weights, read under
// "language_model."; its `model` component becomes `decoder`, taking inputs_embeds instead of input_ids.
class Llava : public Model {
 public:
  Llava(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) : Model(std::move(cfg), std::move(w)) {
    const json& text = sub(config().raw, "text_config");
    const Architecture& ta = text_architecture(config().raw);
    std::unique_ptr<Model> m = ta.create(ta.parse_config(text), weights_ptr());
    lm_.reset(dynamic_cast<CausalLM*>(m.get()));
    HFX_CHECK(lm_, "model", "expected llava's text_config to be a decoder-only causal LM, got {}",
              ta.model_type);
    m.release();
    lm_->set_weight_prefix("language_model.");
    vision_ = clip_vision(sub(config().raw, "vision_config"));
  }
  Structure structure() const override { return Structure::VisionLanguage; }
  std::string head() const override { return "image_text_to_text"; }

  std::vector<ComponentDecl> components() const override {
    const std::string px = std::to_string(vision_.image);
    ComponentDecl vision{
        "vision_encoder",
        {{"pixel_values", DType::F32, {"batch_size", std::to_string(vision_.channels), px, px}}},
        {"image_features"},
        {}};
    ComponentDecl embed{"embed_tokens",
                        {{"input_ids", DType::I64, {"batch_size", "sequence_length"}}},
                        {"inputs_embeds"},
                        {}};
    ComponentDecl decoder = decoder_on_embeddings(*lm_, config().hidden_size);
    return {vision, embed, decoder};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    auto need = [&](const char* name) { return need_input(in, name, component, "llava"); };
    if (component == "vision_encoder")
      return {{"image_features", llava_image_features(b, weights(), config().raw, need("pixel_values"))}};
    if (component == "embed_tokens") {
      Scope s(b, "language_model.model.embed_tokens");
      Var e = F::to(F::embedding(w(b, "language_model.model.embed_tokens.weight"), need("input_ids")),
                    DType::F32);
      b.name_output(e);
      return {{"inputs_embeds", e}};
    }
    if (component == "decoder") {
      need("inputs_embeds");
      // Intermediates keep the text model's names (model.layers.N...); its weights are read and named
      // under language_model. (set_weight_prefix), as the checkpoint stores them.
      return lm_->call("model", b, in, opts);
    }
    (void)this->component(component);  // throws, listing the components
    return {};
  }

 private:
  std::unique_ptr<CausalLM> lm_;
  ClipVision vision_;
};

std::unique_ptr<Model> create(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) {
  return std::make_unique<Llava>(std::move(cfg), std::move(w));
}

// A tiny llava-1.5: CLIP vision 30×30 pixels in 6×6 patches (25 image tokens after the CLS token is
// dropped), feature layer -2, and the Llama text model of the other tiny presets.
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("llava", preset, "tiny");
  json text = tiny_decoder_config("LlamaForCausalLM", "llama");
  text.erase("architectures");
  text.update(json{{"hidden_act", "silu"},
                   {"attention_bias", false},
                   {"mlp_bias", false},
                   {"rope_scaling", nullptr},
                   {"vocab_size", 514}});  // the tokenizer's 512 + <image> + <pad>
  return json{{"architectures", {"LlavaForConditionalGeneration"}},
              {"model_type", "llava"},
              {"ignore_index", -100},
              {"image_token_index", 512},
              {"pad_token_id", 513},
              {"image_seq_length", 25},
              {"projector_hidden_act", "gelu"},
              {"vision_feature_layer", -2},
              {"vision_feature_select_strategy", "default"},
              {"tie_word_embeddings", false},
              {"initializer_range", 0.1},
              {"vocab_size", 512},  // create-tiny's tokenizer size; tiny_text sets the full 514
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"},
              {"text_config", text},
              {"vision_config",
               {{"model_type", "clip_vision_model"},
                {"hidden_size", 32},
                {"intermediate_size", 64},
                {"num_hidden_layers", 2},
                {"num_attention_heads", 4},
                {"num_channels", 3},
                {"image_size", 30},
                {"patch_size", 6},
                {"hidden_act", "quick_gelu"},
                {"layer_norm_eps", 1e-5},
                {"projection_dim", 32}}}};
}

// llava-1.5's tokenizer: the Llama-2 one plus <image> (image_token_index) and <pad>.
void tiny_text(json& config, std::string& tokenizer_json, std::string& tokenizer_config_json) {
  const int64_t image = config.at("image_token_index").get<int64_t>(),
                pad = config.at("pad_token_id").get<int64_t>();
  json tj = json::parse(tokenizer_json), tc = json::parse(tokenizer_config_json);
  add_special_tokens(tj, tc, {{image, "<image>"}, {pad, "<pad>"}});
  tc["pad_token"] = "<pad>";
  tc["processor_class"] = "LlavaProcessor";
  tc.erase("chat_template");  // a processor's template lives in chat_template.json
  config["vocab_size"] = pad + 1;
  tokenizer_json = tj.dump(2) + "\n";
  tokenizer_config_json = tc.dump(2) + "\n";
}

// llava-hf/llava-1.5-7b-hf's chat template: "USER: <image>\n<text> ASSISTANT:".
constexpr const char* kChatTemplate =
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}{% "
    "endif %}"
    "{# Render all images first #}{% for content in message['content'] | selectattr('type', 'equalto', "
    "'image') %}"
    "{{ '<image>\\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' "
    "'}}"
    "{% endfor %}{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{% generation %}{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}";

void tiny_files(const std::string& dir, const json& config) {
  const ClipVision v = clip_vision(sub(config, "vision_config"));
  auto path = [&](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  const json pre = {{"crop_size", {{"height", v.image}, {"width", v.image}}},
                    {"do_center_crop", true},
                    {"do_convert_rgb", true},
                    {"do_normalize", true},
                    {"do_rescale", true},
                    {"do_resize", true},
                    {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
                    {"image_processor_type", "CLIPImageProcessor"},
                    {"image_std", {0.26862954, 0.26130258, 0.27577711}},
                    {"processor_class", "LlavaProcessor"},
                    {"resample", 3},
                    {"rescale_factor", 1.0 / 255.0},
                    {"size", {{"shortest_edge", v.image}}}};
  const json proc = {
      {"image_token", "<image>"},
      {"num_additional_image_tokens", 1},
      {"patch_size", v.patch},
      {"processor_class", "LlavaProcessor"},
      {"vision_feature_select_strategy", config.value("vision_feature_select_strategy", "default")}};
  io::write_file_atomic(path("preprocessor_config.json"), pre.dump(2) + "\n");
  io::write_file_atomic(path("processor_config.json"), proc.dump(2) + "\n");
  io::write_file_atomic(path("chat_template.json"), json{{"chat_template", kChatTemplate}}.dump(2) + "\n");
}

}  // namespace

const Architecture& llava_architecture() {
  static const Architecture a{.model_type = "llava",
                              .parse_config = parse,
                              .weight_specs = weight_specs,
                              .create = create,
                              .tiny_config = tiny,
                              .tiny_tokenizer = "sentencepiece",
                              .tiny_norm_mean = 1.0,
                              .optional_weights = {},
                              .heads = {{"image_text_to_text", "LlavaForConditionalGeneration"}},
                              .weight_layouts = {{"vision_tower.", "vision_tower.vision_model."}}};
  return a;
}

const TinyHooks& llava_tiny_hooks() {
  static const TinyHooks h{.text = tiny_text, .files = tiny_files};
  return h;
}

}  // namespace hfx::models
