// Image-text-to-text over a llava model: what transformers' LlavaProcessor + generate() do — the image
// processor, the marker expansion to one image token per image feature, the vision encoder once, the image
// features written over the image tokens' embeddings, then greedy decoding with the decoder's KV cache —
// on the model's own components eagerly, or on the exported components in ONNX Runtime
// (src/runtime/ort_image_text.cpp).
#include "hfx/runtime/image_text.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/models/rope.h"
#include "hfx/processors/image.h"
#include "hfx/tokenizers/tokenizer.h"
#include "kernels/kernels.h"

namespace hfx::rt {
namespace {

namespace fs = std::filesystem;
constexpr const char* kComp = "generate";

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(io::read_file(path)); }

size_t count_markers(const std::string& prompt, const std::string& marker) {
  size_t n = 0;
  for (size_t at = prompt.find(marker); at != std::string::npos; at = prompt.find(marker, at + marker.size()))
    n++;
  return n;
}

// The eager engine: each call runs one component in its own EagerBuilder; the cache is kept as tensors
// (present.N.* of a call become past_key_values.N.* of the next).
class EagerImageText : public ImageTextEngine {
 public:
  EagerImageText(const std::string& dir, const quant::QuantOptions& q) : m_(load_model(dir)) {
    HFX_CHECK(m_->structure() == Structure::VisionLanguage, kComp,
              "expected a vision-language checkpoint, got {} {}", structure_name(m_->structure()),
              m_->config().model_type);
    if (q.enabled()) m_ = quant::quantize_model(*m_, q);
    decoder_ = m_->component("decoder");
    types_ = std::any_of(decoder_.inputs.begin(), decoder_.inputs.end(),
                         [](const InputDecl& d) { return d.name == "token_type_ids"; });
  }
  std::string name() const override { return "eager"; }

  std::vector<float> encode_images(std::span<const float> pixels, const std::vector<int64_t>& pshape,
                                   std::span<const int64_t> grid_thw, std::vector<int64_t>& shape) override {
    EagerBuilder b;
    const Tensor px =
        Tensor::from_floats(Shape(pshape.begin(), pshape.end()), {pixels.begin(), pixels.end()});
    NamedVars in{{"pixel_values", b.wrap(px)}};
    if (!grid_thw.empty())
      in.emplace_back("grid_thw", b.wrap(Tensor::from_ints({static_cast<int64_t>(grid_thw.size()) / 3, 3},
                                                           {grid_thw.begin(), grid_thw.end()})));
    const Tensor f = get(m_->call("vision_encoder", b, in), "image_features").tensor();
    shape.assign(f.shape().begin(), f.shape().end());
    return f.contiguous().to_floats();
  }

  std::vector<float> embed(std::span<const int64_t> ids) override {
    EagerBuilder b;
    const Tensor t = Tensor::from_ints({1, static_cast<int64_t>(ids.size())}, {ids.begin(), ids.end()});
    return get(m_->call("embed_tokens", b, {{"input_ids", b.wrap(t)}}), "inputs_embeds")
        .tensor()
        .contiguous()
        .to_floats();
  }

  void reset() override {
    past_.clear();
    total_ = 0;
  }

  std::vector<float> step(std::span<const float> embeds, int64_t seq, std::span<const int64_t> types,
                          std::span<const int64_t> positions) override {
    EagerBuilder b;
    const int64_t hidden = static_cast<int64_t>(embeds.size()) / seq;
    std::vector<int64_t> pos(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; i++) pos[static_cast<size_t>(i)] = total_ + i;
    if (!positions.empty()) pos.assign(positions.begin(), positions.end());
    total_ += seq;
    const Shape pshape = static_cast<int64_t>(pos.size()) == 3 * seq ? Shape{3, 1, seq} : Shape{1, seq};
    NamedVars in{
        {"inputs_embeds", b.wrap(Tensor::from_floats({1, seq, hidden}, {embeds.begin(), embeds.end()}))},
        {"attention_mask", b.wrap(Tensor::from_ints({1, total_}, std::vector<int64_t>(total_, 1)))},
        {"position_ids", b.wrap(Tensor::from_ints(pshape, pos))}};
    if (types_) {
      std::vector<int64_t> t(static_cast<size_t>(seq), 0);
      std::copy(types.begin(), types.begin() + std::min<int64_t>(seq, static_cast<int64_t>(types.size())),
                t.begin());
      in.emplace_back("token_type_ids", b.wrap(Tensor::from_ints({1, seq}, t)));
    }
    for (const auto& [name, t] : past_) in.emplace_back(name, b.wrap(t));
    const NamedVars out = m_->call("decoder", b, in, CallOptions{1, true});
    past_.clear();
    for (const CacheLeafDecl& c : decoder_.cache)
      past_.emplace_back(c.past_input, get(out, c.present_output).tensor());
    return get(out, "logits").tensor().contiguous().to_floats();  // [1, 1, V]
  }

 private:
  std::unique_ptr<Model> m_;
  ComponentDecl decoder_;
  std::vector<std::pair<std::string, Tensor>> past_;
  int64_t total_ = 0;
  bool types_ = false;  ///< the decoder takes token_type_ids (gemma3)
};

// The prompt's embeddings with the k-th image token's row replaced by the k-th image feature.
std::vector<float> merged_embeddings(ImageTextEngine& e, const std::vector<int64_t>& ids, int64_t image_token,
                                     const std::vector<float>& features, int64_t hidden) {
  std::vector<float> emb = e.embed(ids);
  HFX_CHECK(static_cast<int64_t>(emb.size()) == static_cast<int64_t>(ids.size()) * hidden, kComp,
            "expected inputs_embeds of hidden size {} from embed_tokens, got {} values for {} tokens", hidden,
            emb.size(), ids.size());
  size_t k = 0;
  const size_t n = features.size() / static_cast<size_t>(hidden);
  for (size_t i = 0; i < ids.size(); i++) {
    if (ids[i] != image_token) continue;
    HFX_CHECK(k < n, kComp, "expected at most {} image tokens (id {}) in the prompt, got more", n,
              image_token);
    std::copy_n(features.begin() + static_cast<std::ptrdiff_t>(k * hidden), hidden,
                emb.begin() + static_cast<std::ptrdiff_t>(i * hidden));
    k++;
  }
  HFX_CHECK(k == n, kComp, "expected {} image tokens (id {}) for the image features, got {}", n, image_token,
            k);
  return emb;
}

// What a prompt's images become: pixel_values for the vision encoder and, per image, the text its marker
// stands for (gemma3: Gemma3Processor's full_image_sequence; idefics3: Idefics3Processor's tiles and global
// image) — empty for llava, whose marker token is expanded after tokenization.
struct PreparedImages {
  std::string marker;
  Tensor pixels;
  std::vector<std::string> texts;
  std::vector<std::array<int64_t, 3>> grids;  ///< qwen2_vl: each image's {t, h, w} in patches
  int64_t merge = 1;
};

std::string token_of(const nlohmann::json& tc, const char* key, const std::string& dir) {
  HFX_CHECK(tc.contains(key) && tc[key].is_string(), kComp,
            "expected tokenizer_config.json.{} in '{}', got none", key, dir);
  return tc[key].get<std::string>();
}

int64_t processor_int(const std::string& dir, const char* key) {
  const fs::path proc = fs::path(dir) / "processor_config.json";
  HFX_CHECK(fs::exists(proc), kComp, "expected processor_config.json ({}) in '{}', got none", key, dir);
  const nlohmann::json pc = read_json(proc.string());
  HFX_CHECK(pc.contains(key) && pc[key].is_number_integer(), kComp,
            "expected processor_config.json.{} in '{}', got none", key, dir);
  return pc[key].get<int64_t>();
}

std::string repeat(const std::string& s, int64_t n) {
  std::string r;
  for (int64_t i = 0; i < n; i++) r += s;
  return r;
}

// Idefics3Processor's get_image_prompt_string (transformers 4.47).
std::string idefics3_image_text(int64_t rows, int64_t cols, int64_t seq) {
  const std::string fake = "<fake_token_around_image>", image = repeat("<image>", seq);
  if (rows == 0 && cols == 0) return fake + "<global-img>" + image + fake;
  std::string t;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++) t += fake + fmt::format("<row_{}_col_{}>", r + 1, c + 1) + image;
    t += "\n";
  }
  return t + "\n" + fake + "<global-img>" + image + fake;
}

PreparedImages prepare_images(const std::string& dir, const std::string& type,
                              const std::vector<processors::Image>& images) {
  PreparedImages p;
  if (type == "idefics3" || type == "smolvlm") {
    p.marker = "<image>";
    const std::string path = (fs::path(dir) / "preprocessor_config.json").string();
    const auto cfg = processors::Idefics3ImageProcessorConfig::from_json(read_json(path), path);
    const int64_t seq = processor_int(dir, "image_seq_len");
    if (images.empty()) return p;
    processors::Idefics3Pixels px = processors::idefics3_pixel_values(cfg, images);
    p.pixels = px.pixel_values;
    for (size_t i = 0; i < images.size(); i++)
      p.texts.push_back(idefics3_image_text(px.rows[i], px.cols[i], seq));
    return p;
  }
  if (type == "qwen2_vl") {  // Qwen2VLProcessor: one <|image_pad|> per merged patch
    p.marker = "<|image_pad|>";
    const std::string path = (fs::path(dir) / "preprocessor_config.json").string();
    const auto cfg = processors::Qwen2VlImageProcessorConfig::from_json(read_json(path), path);
    p.merge = cfg.merge_size;
    if (images.empty()) return p;
    processors::Qwen2VlPixels px = processors::qwen2_vl_pixel_values(cfg, images);
    p.pixels = px.pixel_values;
    p.grids = px.grid_thw;
    for (const auto& g : p.grids)
      p.texts.push_back(repeat(p.marker, g[0] * g[1] * g[2] / (p.merge * p.merge)));
    return p;
  }
  if (type == "gemma3") {
    const nlohmann::json tc = read_json((fs::path(dir) / "tokenizer_config.json").string());
    p.marker = token_of(tc, "boi_token", dir);
    const std::string text =
        "\n\n" + p.marker + repeat(token_of(tc, "image_token", dir), processor_int(dir, "image_seq_length")) +
        token_of(tc, "eoi_token", dir) + "\n\n";
    p.texts.assign(images.size(), text);
  } else {
    p.marker = "<image>";
    const fs::path proc = fs::path(dir) / "processor_config.json";
    if (fs::exists(proc)) p.marker = read_json(proc.string()).value("image_token", p.marker);
  }
  if (!images.empty())
    p.pixels = processors::clip_pixel_values(processors::ClipImageProcessorConfig::load(dir), images);
  return p;
}

// The prompt's ids: each marker replaced by its image's text before tokenization (gemma3, idefics3), or the
// marker token repeated once per image feature after it (llava).
std::vector<int64_t> prompt_ids(const tok::Tokenizer& tok, const std::string& prompt, const PreparedImages& p,
                                int64_t image_token, int64_t per_image, bool add_special_tokens) {
  std::vector<int64_t> ids;
  if (p.texts.empty()) {
    for (int32_t id : tok.encode(prompt, add_special_tokens)) {
      if (id == image_token)
        ids.insert(ids.end(), static_cast<size_t>(per_image), image_token);
      else
        ids.push_back(id);
    }
    return ids;
  }
  std::string text;
  size_t from = 0, k = 0;
  for (size_t at = prompt.find(p.marker); at != std::string::npos; at = prompt.find(p.marker, from)) {
    text += prompt.substr(from, at - from) + p.texts.at(k++);
    from = at + p.marker.size();
  }
  text += prompt.substr(from);
  for (int32_t id : tok.encode(text, add_special_tokens)) ids.push_back(id);
  return ids;
}

}  // namespace

std::unique_ptr<ImageTextEngine> make_eager_image_text_engine(const std::string& checkpoint_dir,
                                                              const quant::QuantOptions& quantize) {
  return std::make_unique<EagerImageText>(checkpoint_dir, quantize);
}

#ifndef HFX_HAVE_ORT
std::unique_ptr<ImageTextEngine> make_ort_image_text_engine(const std::string& dir, int) {
  HFX_THROW(kComp,
            "expected an hfx built with ONNX Runtime to run {}, got a build without it (use --engine eager)",
            dir);
}
#endif

namespace {

// hfx::Engine over a vision-language model's decoder: a prefill (an empty cache) gets the prompt's
// embeddings with the image features written over its image tokens, token_type_ids (gemma3) and qwen2_vl's
// multimodal positions; later steps embed their ids and continue the positions. Batch 1. It cannot crop its
// cache, so a chat whose re-rendered conversation departs from the cache prefills the whole conversation,
// images included.
class ImageTextDecoder : public Engine {
 public:
  struct Images {
    std::vector<float> features;  ///< [tokens, hidden] of every image, in order
    int64_t hidden = 0, image_token = 0, vision_start = -1;
    std::vector<std::array<int64_t, 3>> grids;  ///< qwen2_vl (mrope positions); empty otherwise
    int64_t merge = 1;
  };
  ImageTextDecoder(std::unique_ptr<ImageTextEngine> e, Images images, int64_t vocab)
      : e_(std::move(e)), im_(std::move(images)), vocab_(vocab) {}
  std::string name() const override { return e_->name(); }
  int64_t vocab_size() const override { return vocab_; }
  void reset() override {
    e_->reset();
    past_ = 0;
  }
  int64_t past_length() const override { return past_; }

  void step(std::span<const int64_t> input_ids, std::span<const int64_t>, std::span<const int64_t>,
            int64_t batch, int64_t seq, std::vector<float>& logits) override {
    HFX_CHECK(batch == 1, kComp, "expected one prompt for a vision-language model, got a batch of {}", batch);
    const std::vector<int64_t> ids(input_ids.begin(), input_ids.end());
    std::vector<int64_t> types, pos;
    std::vector<float> embeds;
    if (past_ == 0) {
      embeds = merged_embeddings(*e_, ids, im_.image_token, im_.features, im_.hidden);
      for (int64_t id : ids) types.push_back(id == im_.image_token ? 1 : 0);
      if (im_.vision_start >= 0) {
        mrope_ = mrope_positions(ids, im_.image_token, im_.vision_start, im_.grids, im_.merge);
        pos = mrope_.pos;
      }
    } else {
      // An image token generated later is only a token (transformers merges features at the prefill alone).
      embeds = e_->embed(ids);
      if (im_.vision_start >= 0)
        for (int r = 0; r < 3; r++)
          for (int64_t i = 0; i < seq; i++) pos.push_back(mrope_.decode_position(past_ + i));
    }
    logits = e_->step(embeds, seq, types, pos);
    past_ += seq;
  }

 private:
  std::unique_ptr<ImageTextEngine> e_;
  Images im_;
  int64_t vocab_;
  int64_t past_ = 0;
  MropePositions mrope_;
};

}  // namespace

ImageTextGenerator open_image_text(const std::string& dir, const std::vector<std::string>& image_paths,
                                   const GeneratorConfig& gc) {
  const std::string& engine = gc.engine;
  const nlohmann::json config = read_json((fs::path(dir) / "config.json").string());
  const std::string type = config.value("model_type", "");
  HFX_CHECK(
      type == "llava" || type == "gemma3" || type == "idefics3" || type == "smolvlm" || type == "qwen2_vl",
      kComp,
      "expected a llava, gemma3, idefics3, smolvlm or qwen2_vl checkpoint or export folder for --image "
      "(the vision-language models hfx runs so far), got model_type '{}' in '{}'",
      type, dir);
  HFX_CHECK(engine == "auto" || engine == "eager" || engine == "ort", kComp,
            "expected engine auto, eager or ort, got '{}'", engine);
  std::vector<processors::Image> images;
  for (const auto& p : image_paths) images.push_back(processors::read_image(p));
  auto prepared = std::make_shared<const PreparedImages>(prepare_images(dir, type, images));
  const bool onnx = fs::exists(fs::path(dir) / "onnx" / "vision_encoder.onnx");
  const bool use_ort = engine == "ort" || (engine == "auto" && onnx);
  HFX_CHECK(!(use_ort && gc.quantize.enabled()), kComp,
            "expected --quantize only with the eager engine, got engine ort on '{}': an export folder is "
            "quantized when exported (hfx export --quantize)",
            dir);
  if (!use_ort && gc.threads > 0) kernels::set_num_threads(gc.threads);
  std::unique_ptr<ImageTextEngine> e =
      use_ort ? make_ort_image_text_engine(dir, gc.threads) : make_eager_image_text_engine(dir, gc.quantize);

  const ModelConfig text = parse_model_config(config);  // the text model's numbers (the VLM's parse)
  ImageTextDecoder::Images im;
  im.hidden = text.hidden_size;
  im.image_token =
      config.at(config.contains("image_token_id") ? "image_token_id" : "image_token_index").get<int64_t>();
  int64_t per_image = 0;
  if (!images.empty()) {
    const Tensor px = prepared->pixels.contiguous();
    const std::vector<float> pixels = px.to_floats();
    std::vector<int64_t> shape, grids;
    for (const auto& g : prepared->grids) grids.insert(grids.end(), g.begin(), g.end());
    im.features = e->encode_images(pixels, {px.shape().begin(), px.shape().end()}, grids, shape);
    HFX_CHECK(shape.size() == (grids.empty() ? 3u : 2u), kComp,
              "expected image_features [images, K, hidden] (or [tokens, hidden] with grid_thw), got rank {}",
              shape.size());
    per_image = shape.size() == 3 ? shape[1] : 0;
    im.hidden = shape.back();
  }
  if (type == "qwen2_vl") {
    im.vision_start = config.at("vision_start_token_id").get<int64_t>();
    im.grids = prepared->grids;
    im.merge = prepared->merge;
  }
  auto tok = std::make_shared<const tok::Tokenizer>(tok::Tokenizer::from_dir(dir));
  SpecialIds special = special_ids_of(dir, tok.get());
  const int64_t image_token = im.image_token;
  auto decoder = std::make_unique<ImageTextDecoder>(std::move(e), std::move(im), text.vocab_size);
  const size_t n_images = image_paths.size();
  auto encode = [tok, prepared, image_token, per_image, n_images](const std::string& prompt,
                                                                  bool add_special_tokens) {
    const size_t markers = count_markers(prompt, prepared->marker);
    HFX_CHECK(
        markers == n_images, kComp,
        "expected one {} marker per image in the prompt ({} image(s) given), got {} marker(s); write {} "
        "where each image goes, e.g. 'USER: {}\\nWhat is this? ASSISTANT:'",
        prepared->marker, n_images, markers, prepared->marker, prepared->marker);
    return prompt_ids(*tok, prompt, *prepared, image_token, per_image, add_special_tokens);
  };
  return {Generator(std::move(decoder), tok, std::move(special.eos), special.pad), prepared->marker,
          std::move(encode)};
}

std::vector<int64_t> encode_chat_prompt(const ImageTextGenerator& g, const std::string& rendered) {
  const auto& bos = g.generator.tokenizer()->config().bos_token;
  return g.encode(rendered, !(bos && !bos->empty() && rendered.starts_with(*bos)));
}

ImageTextResult generate_with_images(const std::string& dir, const std::vector<std::string>& image_paths,
                                     const std::string& prompt, int64_t max_new_tokens,
                                     const std::string& engine) {
  ImageTextGenerator g = open_image_text(dir, image_paths, {.engine = engine});
  GenerationOptions o;
  o.max_new_tokens = max_new_tokens;
  o.skip_special_tokens = false;
  GenerationResult r = g.generator.generate_ids({g.encode(prompt, true)}, o);
  return {g.generator.engine().name(), r.prompt_ids[0], r.ids[0], r.texts[0]};
}

}  // namespace hfx::rt
