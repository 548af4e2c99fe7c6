// create-tiny: random checkpoints in the Hugging Face layout. Weights come from a counter-based
// generator seeded by (seed, tensor name), so a tensor's values do not depend on which others exist or
// in which order they are written; model.safetensors is streamed one tensor at a time.
#include "hfx/models/tiny.h"

#include <cmath>
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/tokenizer.h"
#include "tiny_hooks.h"
#include "tiny_writer.h"

namespace hfx {

namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool is_norm_weight(const std::string& name, const Shape& shape) {
  if (shape.size() != 1 || name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0) return false;
  return name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos ||
         name.find("LayerNorm") != std::string::npos;
}

tok::TinyTokenizerKind tokenizer_kind(const Architecture& a) {
  return tok::tiny_tokenizer_kind_from_name(a.tiny_tokenizer);
}

// config.json's `architectures` (and labels, for classification heads) for the chosen head.
void set_head(const Architecture& arch, nlohmann::json& j, const std::string& head) {
  if (arch.heads.empty()) {
    if (!head.empty() && head != "causal_lm")
      HFX_THROW("model", "expected head causal_lm for {}, got '{}'", arch.model_type, head);
    return;
  }
  const std::pair<std::string, std::string>* h = head.empty() ? &arch.heads.front() : nullptr;
  std::string known;
  for (const auto& x : arch.heads) {
    if (x.first == head) h = &x;
    known += (known.empty() ? "" : ", ") + x.first;
  }
  if (!h) HFX_THROW("model", "expected a head of {} among [{}], got '{}'", arch.model_type, known, head);
  j["architectures"] = nlohmann::json::array({h->second});
  int labels = h->first == "sequence_classification" ? 3 : h->first == "token_classification" ? 5 : 0;
  if (labels == 0) return;
  static const char* kTokLabels[] = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};
  static const char* kSeqLabels[] = {"negative", "neutral", "positive"};
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  for (int i = 0; i < labels; i++) {
    std::string name = labels == 5 ? kTokLabels[i] : kSeqLabels[i];
    id2label[std::to_string(i)] = name;
    label2id[name] = i;
  }
  j["id2label"] = id2label;
  j["label2id"] = label2id;
}

struct TinyText {
  std::string tokenizer_json, tokenizer_config_json;
  nlohmann::json config;
};

TinyText make_text(const std::string& model_type, const TinyOptions& opt) {
  const Architecture& arch = architecture(model_type);
  nlohmann::json j = arch.tiny_config(opt.preset);
  if (opt.dtype) j["torch_dtype"] = dtype_name(*opt.dtype);
  if (opt.layers > 0) {
    j[j.contains("n_layer")    ? "n_layer"
      : j.contains("n_layers") ? "n_layers"
                               : "num_hidden_layers"] = opt.layers;
    j.erase("layer_types");
  }
  if (opt.initializer_range > 0) j["initializer_range"] = opt.initializer_range;
  set_head(arch, j, opt.head);
  auto kind = tokenizer_kind(arch);
  TinyText t;
  t.tokenizer_json =
      tok::make_tiny_tokenizer_json(kind, static_cast<int>(j.value("vocab_size", int64_t{512})));
  t.tokenizer_config_json = tok::make_tiny_tokenizer_config_json(kind);
  auto tk = tok::Tokenizer::from_json_string(t.tokenizer_json, t.tokenizer_config_json);
  j["vocab_size"] = tk.vocab_size();
  if (auto b = tk.bos_id()) j["bos_token_id"] = *b;
  if (auto e = tk.eos_id()) j["eos_token_id"] = *e;
  if (auto p = tk.pad_id()) j["pad_token_id"] = *p;
  if (const auto* h = models::tiny_hooks(model_type); h && h->text)
    h->text(j, t.tokenizer_json, t.tokenizer_config_json);
  t.config = j;
  return t;
}

// The sentence-transformers files around a base encoder: Transformer → Pooling → Normalize.
void check_sentence_pooling(const Architecture& arch, const nlohmann::json& config,
                            const std::string& pooling) {
  if (pooling.empty()) return;
  if (pooling != "mean" && pooling != "cls" && pooling != "max")
    HFX_THROW("model", "expected sentence-transformers pooling mean, cls or max, got '{}'", pooling);
  std::string head = head_of(arch, config);
  if (head != "base")
    HFX_THROW("model",
              "expected an encoder base model (head base) for a sentence-transformers checkpoint, got {} "
              "with head {}",
              arch.model_type, head);
}

void write_sentence_transformers(const std::string& dir, const ModelConfig& cfg, const std::string& pooling) {
  namespace fs = std::filesystem;
  auto path = [&](const std::string& f) { return (fs::path(dir) / f).string(); };
  nlohmann::json modules = nlohmann::json::array(
      {{{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
       {{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}},
       {{"idx", 2},
        {"name", "2"},
        {"path", "2_Normalize"},
        {"type", "sentence_transformers.models.Normalize"}}});
  nlohmann::json pool = {{"word_embedding_dimension", cfg.hidden_size},
                         {"pooling_mode_cls_token", pooling == "cls"},
                         {"pooling_mode_mean_tokens", pooling == "mean"},
                         {"pooling_mode_max_tokens", pooling == "max"},
                         {"pooling_mode_mean_sqrt_len_tokens", false},
                         {"pooling_mode_weightedmean_tokens", false},
                         {"pooling_mode_lasttoken", false},
                         {"include_prompt", true}};
  fs::create_directories(fs::path(dir) / "1_Pooling");
  fs::create_directories(fs::path(dir) / "2_Normalize");
  io::write_file_atomic(path("modules.json"), modules.dump(2) + "\n");
  io::write_file_atomic(path("1_Pooling/config.json"), pool.dump(2) + "\n");
  io::write_file_atomic(
      path("sentence_bert_config.json"),
      nlohmann::json{{"max_seq_length", cfg.max_position_embeddings}, {"do_lower_case", false}}.dump(2) +
          "\n");
  io::write_file_atomic(
      path("config_sentence_transformers.json"),
      nlohmann::json{{"__version__", {{"sentence_transformers", "3.0.1"}, {"transformers", "4.47.0"}}},
                     {"prompts", nlohmann::json::object()},
                     {"default_prompt_name", nullptr},
                     {"similarity_fn_name", "cosine"}}
              .dump(2) +
          "\n");
}

}  // namespace

Tensor tiny_random_tensor(const std::string& name, const Shape& shape, DType dt, uint64_t seed, double mean,
                          double std) {
  Tensor t = Tensor::empty(shape, dt);
  const int64_t n = t.numel();
  uint64_t state = seed * 0x9e3779b97f4a7c15ull ^ fnv1a(name);
  constexpr int64_t kChunk = 1 << 16;
  std::vector<float> buf(kChunk);
  char* out = static_cast<char*>(t.raw());
  for (int64_t base = 0; base < n; base += kChunk) {
    int64_t m = std::min(kChunk, n - base);
    for (int64_t i = 0; i < m; i += 2) {
      // Box-Muller on two 32-bit uniforms in (0, 1].
      uint64_t r = splitmix64(state);
      float u1 = (static_cast<float>(r >> 40) + 1.0f) * (1.0f / 16777216.0f);
      float u2 = static_cast<float>((r >> 8) & 0xffffff) * (1.0f / 16777216.0f);
      float rad = std::sqrt(-2.0f * std::log(u1));
      float a = 6.2831853f * u2;
      buf[i] = static_cast<float>(mean + std * rad * std::cos(a));
      if (i + 1 < m) buf[i + 1] = static_cast<float>(mean + std * rad * std::sin(a));
    }
    convert_elements(buf.data(), DType::F32, out + base * dtype_size(dt), dt, static_cast<size_t>(m));
  }
  return t;
}

static std::pair<double, double> init_of(const Architecture& a, const ModelConfig& cfg,
                                         const std::string& name, const Shape& shape) {
  double std = cfg.raw.value("initializer_range", 0.02);
  if (is_norm_weight(name, shape)) return {a.tiny_norm_mean, std};
  return {0.0, std};
}

std::map<std::string, Tensor> tiny_weights(const ModelConfig& cfg, DType dt, uint64_t seed) {
  const Architecture& arch = architecture(cfg.model_type);
  std::map<std::string, Tensor> m;
  for (const auto& [name, shape] : arch.weight_specs(cfg)) {
    auto [mean, std] = init_of(arch, cfg, name, shape);
    m[name] = tiny_random_tensor(name, shape, dt, seed, mean, std);
  }
  return m;
}

nlohmann::json tiny_model_config(const std::string& model_type, const TinyOptions& opt) {
  return make_text(model_type, opt).config;
}

nlohmann::json create_tiny(const std::string& model_type, const std::string& dir, const TinyOptions& opt) {
  namespace fs = std::filesystem;
  TinyText t = make_text(model_type, opt);
  ModelConfig cfg = parse_model_config(t.config);
  const Architecture& arch = architecture(model_type);
  check_sentence_pooling(arch, t.config, opt.sentence_pooling);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) HFX_THROW("model", "cannot create folder '{}': {}", dir, ec.message());
  auto path = [&](const char* f) { return (fs::path(dir) / f).string(); };

  auto specs = arch.weight_specs(cfg);
  std::vector<models::StreamTensorDecl> decls;
  for (const auto& [name, shape] : specs) decls.push_back({name, cfg.dtype, shape});
  {
    models::SafetensorsStreamWriter w(path("model.safetensors"), decls);
    for (const auto& [name, shape] : specs) {
      auto [mean, std] = init_of(arch, cfg, name, shape);
      w.write(name, tiny_random_tensor(name, shape, cfg.dtype, opt.seed, mean, std));
    }
    w.commit();
  }
  nlohmann::json gen = {{"_from_model_config", true},
                        {"transformers_version", t.config.value("transformers_version", "4.56.0")}};
  for (const char* k : {"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id",
                        "forced_bos_token_id", "forced_eos_token_id", "bad_words_ids"})
    if (t.config.contains(k)) gen[k] = t.config[k];
  io::write_file_atomic(path("tokenizer.json"), t.tokenizer_json);
  io::write_file_atomic(path("tokenizer_config.json"), t.tokenizer_config_json);
  if (models::TinyExtras extras = models::tiny_extras(model_type)) extras(dir, t.config, gen);
  io::write_file_atomic(path("config.json"), t.config.dump(2) + "\n");
  io::write_file_atomic(path("generation_config.json"), gen.dump(2) + "\n");
  if (!opt.sentence_pooling.empty()) write_sentence_transformers(dir, cfg, opt.sentence_pooling);
  if (const auto* h = models::tiny_hooks(model_type); h && h->files) h->files(dir, t.config);
  return t.config;
}

}  // namespace hfx
