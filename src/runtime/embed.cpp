// Sentence embeddings (hfx/runtime/embed.h): sentence-transformers' Pooling and Normalize modules over the
// eager model's or the exported graph's last_hidden_state.
#include "hfx/runtime/embed.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/ops/builder.h"
#include "hfx/tokenizers/tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::rt {

TokenBatch tokenize_batch(const tok::Tokenizer& tk, const std::vector<std::string>& texts, int64_t pad,
                          int64_t max_tokens) {
  if (texts.empty()) HFX_THROW("embed", "expected at least one text, got none");
  std::vector<std::vector<int32_t>> rows;
  TokenBatch b;
  for (const auto& t : texts) {
    rows.push_back(tk.encode(t, true));
    const int64_t n = static_cast<int64_t>(rows.back().size());
    if (n == 0) HFX_THROW("embed", "expected text '{}' to give at least one token, got none", t);
    if (n > max_tokens)
      HFX_THROW("embed", "expected at most {} tokens per text (the model's positions), got {}", max_tokens,
                n);
    b.seq = std::max(b.seq, n);
  }
  b.batch = static_cast<int64_t>(rows.size());
  for (const auto& r : rows)
    for (int64_t j = 0; j < b.seq; j++) {
      const bool real = j < static_cast<int64_t>(r.size());
      b.input_ids.push_back(real ? r[j] : pad);
      b.attention_mask.push_back(real ? 1 : 0);
    }
  return b;
}

std::vector<std::vector<float>> pool(const std::vector<float>& h, int64_t B, int64_t T, int64_t E,
                                     const std::vector<int64_t>& mask, Pooling p, bool normalize) {
  std::vector<std::vector<float>> out(B, std::vector<float>(E, 0.0f));
  for (int64_t b = 0; b < B; b++) {
    std::vector<float>& v = out[b];
    if (p == Pooling::Cls) {
      for (int64_t e = 0; e < E; e++) v[e] = h[(b * T) * E + e];
    } else {
      double count = 0;
      std::vector<double> acc(E, p == Pooling::Max ? -std::numeric_limits<double>::infinity() : 0.0);
      for (int64_t t = 0; t < T; t++) {
        if (!mask[b * T + t]) continue;
        count += 1;
        for (int64_t e = 0; e < E; e++) {
          double x = h[(b * T + t) * E + e];
          acc[e] = p == Pooling::Max ? std::max(acc[e], x) : acc[e] + x;
        }
      }
      // sentence-transformers clamps the token count at 1e-9.
      for (int64_t e = 0; e < E; e++)
        v[e] = static_cast<float>(p == Pooling::Max ? acc[e] : acc[e] / std::max(count, 1e-9));
    }
    if (!normalize) continue;
    double n2 = 0;
    for (float x : v) n2 += static_cast<double>(x) * x;
    const double n = std::max(std::sqrt(n2), 1e-12);  // F.normalize(p=2, eps=1e-12)
    for (float& x : v) x = static_cast<float>(x / n);
  }
  return out;
}

namespace {

bool is_checkpoint(const fs::path& dir) {
  return fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.index.json");
}

}  // namespace

std::vector<float> eager_last_hidden_state(const Model& m, const TokenBatch& tb, int64_t* dim) {
  EagerBuilder b;
  NamedVars in{{"input_ids", b.wrap(Tensor::from_ints({tb.batch, tb.seq}, tb.input_ids))},
               {"attention_mask", b.wrap(Tensor::from_ints({tb.batch, tb.seq}, tb.attention_mask))}};
  for (const auto& d : m.component("model").inputs)
    if (d.name == "token_type_ids")
      in.emplace_back(d.name, b.wrap(Tensor::from_ints({tb.batch, tb.seq},
                                                       std::vector<int64_t>(tb.input_ids.size(), 0))));
  Tensor h = get(m.call("model", b, in), "last_hidden_state").tensor().contiguous();
  *dim = h.size(2);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

EmbedResult embed(const std::string& dir, const std::vector<std::string>& texts,
                  std::optional<Pooling> pooling) {
  if (texts.empty()) HFX_THROW("embed", "expected at least one text, got none");
  fs::path d(dir);
  if (!fs::exists(d / "config.json"))
    HFX_THROW("embed", "expected a model folder with config.json at {}, got none", dir);
  EmbedResult r;
  r.settings = read_embed_settings(dir);
  if (pooling) r.settings.pooling = *pooling;
  json config = json::parse(io::read_file((d / "config.json").string()));
  ModelConfig cfg = parse_model_config(config);
  auto tk = tok::Tokenizer::from_dir(dir);
  int64_t pad = cfg.pad_token_id.value_or(tk.pad_id().value_or(0));
  r.tokens = tokenize_batch(tk, texts, pad, cfg.max_position_embeddings);
  std::vector<float> h;
  int64_t E = 0;
  if (is_checkpoint(d)) {
    auto m = load_model(dir);
    if (m->structure() != Structure::EncoderOnly || m->head() != "base")
      HFX_THROW("embed",
                "expected an encoder-only base model (last_hidden_state), got the {} {} model with head {}",
                structure_name(m->structure()), cfg.model_type, m->head());
    h = eager_last_hidden_state(*m, r.tokens, &E);
    r.engine = "eager";
  } else if (fs::exists(d / "onnx" / "model.onnx")) {
#ifdef HFX_HAVE_ORT
    h = ort_last_hidden_state(dir, r.tokens, &E);
    r.engine = "ort";
#else
    HFX_THROW("embed", "expected hfx built with ONNX Runtime to run {}, got a build without it",
              (d / "onnx/model.onnx").string());
#endif
  } else {
    HFX_THROW(
        "embed",
        "expected a checkpoint (model.safetensors) or an export folder (onnx/model.onnx) at {}, got neither",
        dir);
  }
  r.vectors = pool(h, r.tokens.batch, r.tokens.seq, E, r.tokens.attention_mask, r.settings.pooling,
                   r.settings.normalize);
  return r;
}

}  // namespace hfx::rt
