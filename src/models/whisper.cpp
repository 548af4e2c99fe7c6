// whisper: WhisperForConditionalGeneration, following transformers' modeling_whisper.py line by line —
// the audio encoder (conv1 + GELU, conv2 stride 2 + GELU over the log-mel frames, learned positions,
// pre-LN layers, final layer_norm) and the text decoder (token + learned positions, pre-LN layers with
// causal self-attention and cross-attention, final layer_norm, proj_out tied to embed_tokens). k_proj has
// no bias, q is scaled by head_dim^-0.5. The two components are the encoder-decoder ones of seq2seq.h
// with the encoder taking `input_features` [batch, num_mel_bins, 2 * max_source_positions] and the
// decoder no encoder attention mask (Whisper has none; Transformers.js feeds none).
#include <cmath>

#include <fmt/format.h>

#include "hfx/audio/audio.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/tokenizer.h"
#include "seq2seq.h"
#include "tiny_writer.h"

namespace hfx::models {
namespace {

struct WhisperOptions {
  int64_t d_model = 0, mel_bins = 0, encoder_layers = 0, decoder_layers = 0, encoder_heads = 0,
          decoder_heads = 0, encoder_ffn = 0, decoder_ffn = 0, max_source = 0, max_target = 0, vocab = 0;
  std::string act = "gelu";
  bool scale_embedding = false;
  int64_t frames() const { return 2 * max_source; }  // conv1 stride 1, conv2 stride 2
};

WhisperOptions options(const ModelConfig& c) {
  const json& j = c.raw;
  WhisperOptions o;
  o.d_model = c.hidden_size;
  o.mel_bins = jget<int64_t>(j, "num_mel_bins", 80);
  o.encoder_layers = jget<int64_t>(j, "encoder_layers", 4);
  o.decoder_layers = jget<int64_t>(j, "decoder_layers", 4);
  o.encoder_heads = jget<int64_t>(j, "encoder_attention_heads", 6);
  o.decoder_heads = jget<int64_t>(j, "decoder_attention_heads", 6);
  o.encoder_ffn = jget<int64_t>(j, "encoder_ffn_dim", 1536);
  o.decoder_ffn = jget<int64_t>(j, "decoder_ffn_dim", 1536);
  o.max_source = jget<int64_t>(j, "max_source_positions", 1500);
  o.max_target = jget<int64_t>(j, "max_target_positions", 448);
  o.vocab = c.vocab_size;
  o.act = jget<std::string>(j, "activation_function", "gelu");
  o.scale_embedding = jget<bool>(j, "scale_embedding", false);
  for (int64_t h : {o.encoder_heads, o.decoder_heads})
    if (h <= 0 || o.d_model % h)
      HFX_THROW("model", "expected d_model ({}) to be a multiple of the attention heads, got {}", o.d_model,
                h);
  if (o.encoder_layers <= 0 || o.decoder_layers <= 0 || o.mel_bins <= 0 || o.max_source <= 0 ||
      o.max_target <= 0)
    HFX_THROW("model",
              "expected positive encoder_layers, decoder_layers, num_mel_bins, max_source_positions and "
              "max_target_positions, got {}, {}, {}, {}, {}",
              o.encoder_layers, o.decoder_layers, o.mel_bins, o.max_source, o.max_target);
  return o;
}

ModelConfig parse(const json& j) {
  if (!j.is_object()) HFX_THROW("model", "expected config.json to be an object, got {}", j.type_name());
  json m = j;
  m["hidden_size"] = jget<int64_t>(j, "d_model", 384);
  m["num_hidden_layers"] = jget<int64_t>(j, "decoder_layers", 4);
  m["num_attention_heads"] = jget<int64_t>(j, "decoder_attention_heads", 6);
  m["num_key_value_heads"] = m["num_attention_heads"];
  m["intermediate_size"] = jget<int64_t>(j, "decoder_ffn_dim", 1536);
  m["max_position_embeddings"] = jget<int64_t>(j, "max_target_positions", 448);
  m.erase("head_dim");
  ConfigDefaults d;
  d.vocab_size = 51865;
  d.tie_word_embeddings = true;
  d.bos = 50257;
  d.eos = 50257;
  ModelConfig c = parse_common(m, "whisper", d);
  c.raw = j;
  return c;
}

WeightSpecs weight_specs(const ModelConfig& c) {
  const WhisperOptions o = options(c);
  const int64_t E = o.d_model;
  WeightSpecs s = {{"model.encoder.conv1.weight", {E, o.mel_bins, 3}},
                   {"model.encoder.conv1.bias", {E}},
                   {"model.encoder.conv2.weight", {E, E, 3}},
                   {"model.encoder.conv2.bias", {E}},
                   {"model.encoder.embed_positions.weight", {o.max_source, E}}};
  auto attn = [&](const std::string& p) {
    for (const char* n : {"k_proj", "v_proj", "q_proj", "out_proj"}) {
      s.push_back({p + n + ".weight", {E, E}});
      if (std::string(n) != "k_proj") s.push_back({p + n + ".bias", {E}});
    }
  };
  auto norm = [&](const std::string& p) {
    s.push_back({p + ".weight", {E}});
    s.push_back({p + ".bias", {E}});
  };
  auto layers = [&](const std::string& p, int64_t n, int64_t F, bool dec) {
    for (int64_t i = 0; i < n; i++) {
      std::string l = p + "layers." + std::to_string(i) + ".";
      attn(l + "self_attn.");
      norm(l + "self_attn_layer_norm");
      if (dec) {
        attn(l + "encoder_attn.");
        norm(l + "encoder_attn_layer_norm");
      }
      s.push_back({l + "fc1.weight", {F, E}});
      s.push_back({l + "fc1.bias", {F}});
      s.push_back({l + "fc2.weight", {E, F}});
      s.push_back({l + "fc2.bias", {E}});
      norm(l + "final_layer_norm");
    }
    norm(p + "layer_norm");
  };
  layers("model.encoder.", o.encoder_layers, o.encoder_ffn, false);
  s.push_back({"model.decoder.embed_tokens.weight", {o.vocab, E}});
  s.push_back({"model.decoder.embed_positions.weight", {o.max_target, E}});
  layers("model.decoder.", o.decoder_layers, o.decoder_ffn, true);
  if (!c.tie_word_embeddings) s.push_back({"proj_out.weight", {o.vocab, E}});
  return s;
}

// nn.Conv1d(kernel_size=3, padding=1, stride) in the current scope, on time-major x [B, T, C] → [B, T', O]:
// the three shifted (strided) views of the zero-padded input side by side, times the kernel flattened to
// [O, 3·C] — im2col, so every backend runs it with slice, cat and one matmul.
Var conv1d_k3(Builder& b, const Model& m, const Var& x, const std::string& local, int64_t stride) {
  Scope s(b, local);
  const std::string n = b.scope();
  Var w = W(b, m, n + ".weight");  // [O, C, 3]
  const Sym O = w.size(0), C = w.size(1);
  auto T = x.size(1).maybe_value();
  HFX_CHECK(T.has_value(), "whisper", "expected a static number of frames for {}, got {}", n,
            x.size(1).str());
  const int64_t T_out = (*T + 2 - 3) / stride + 1;
  Var zeros = F::full(b, {x.size(0), Sym(1), C}, 0.0);
  Var xp = F::cat({zeros, x, zeros}, 1);  // [B, T + 2, C]
  std::vector<Var> taps;
  for (int64_t k = 0; k < 3; k++)
    taps.push_back(F::slice(xp, 1, Sym(k), Sym(k + stride * (T_out - 1) + 1), stride));
  Var cols = F::cat(taps, 2);                                      // [B, T', 3·C], tap-major
  Var wk = F::reshape(F::permute(w, {0, 2, 1}), {O, Sym(3) * C});  // [O, 3·C], tap-major
  Var y = F::linear(cols, wk, W(b, m, n + ".bias"));
  b.name_output(y);
  return y;
}

class WhisperLM : public Seq2SeqLM {
 public:
  WhisperLM(ModelConfig cfg, std::shared_ptr<io::WeightStore> w)
      : Seq2SeqLM(std::move(cfg), std::move(w)), o_(options(config())) {}

  std::vector<ComponentDecl> components() const override {
    std::vector<ComponentDecl> c = Seq2SeqLM::components();
    c[0].inputs = {{"input_features",
                    DType::F32,
                    {"batch_size", std::to_string(o_.mel_bins), std::to_string(o_.frames())}}};
    auto& dec = c[1].inputs;
    std::erase_if(dec, [](const InputDecl& i) { return i.name == "encoder_attention_mask"; });
    for (InputDecl& i : dec)
      if (i.name == "encoder_hidden_states") i.axes[1] = std::to_string(o_.max_source);
    return c;
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    if (component != "encoder") return Seq2SeqLM::call(component, b, in, opts);
    Var f = get(in, "input_features");
    if (!f)
      HFX_THROW("model", "expected input 'input_features' for component 'encoder' of whisper, got none");
    return {{"last_hidden_state", encode_features(b, f)}};
  }

  Var encode(Builder&, const Var&, const Var&) const override {
    HFX_THROW("whisper", "expected input_features (a log-mel spectrogram) for the encoder, got input_ids");
  }
  Var decode(Builder& b, Seq2SeqDecoderArgs& args) const override;
  Seq2SeqDims dims() const override {
    return {o_.d_model, o_.decoder_layers, o_.decoder_heads, o_.d_model / o_.decoder_heads};
  }

 private:
  Var encode_features(Builder& b, const Var& features) const;
  AttnLayout layout(int64_t heads) const {
    AttnLayout a{heads, o_.d_model / heads, 0.0, true, "q_proj", "k_proj", "v_proj", "out_proj"};
    a.scale = 1.0 / std::sqrt(static_cast<double>(a.head_dim));
    a.k_bias = false;
    return a;
  }
  Var ffn(Builder& b, const Var& x) const {
    Var y = activation(linear(b, *this, x, "fc1", true), o_.act);
    return linear(b, *this, y, "fc2", true);
  }
  Var decoder_layer(Builder& b, const Var& h, const Var& enc, Seq2SeqLayerCache* c) const;
  WhisperOptions o_;
};

Var WhisperLM::encode_features(Builder& b, const Var& features) const {
  Scope sm(b, "model.encoder");
  HFX_CHECK(features.shape().size() == 3 && b.env().eq(features.size(1), Sym(o_.mel_bins)) &&
                b.env().eq(features.size(2), Sym(o_.frames())),
            "whisper", "expected input_features [batch, {}, {}] (max_source_positions * 2 frames), got {}",
            o_.mel_bins, o_.frames(), shape_str(features.shape()));
  Var x = F::transpose(features, 1, 2);  // [B, frames, mel]: the convolutions run time-major
  x = F::gelu(conv1d_k3(b, *this, x, "conv1", 1));
  x = F::gelu(conv1d_k3(b, *this, x, "conv2", 2));
  {
    Scope s(b, "embed_positions");
    x = F::add(x, W(b, *this, "model.encoder.embed_positions.weight"));
    b.name_output(x);
  }
  const AttnLayout a = layout(o_.encoder_heads);
  for (int64_t i = 0; i < o_.encoder_layers; i++) {
    Scope sl(b, "layers." + std::to_string(i));
    Var y = layer_norm(b, *this, x, "self_attn_layer_norm", 1e-5);
    {
      Scope s(b, "self_attn");
      y = seq2seq_self_attention(b, *this, y, a, Var(), false, Var(), Var(), nullptr, nullptr);
    }
    x = F::add(x, y);
    x = F::add(x, ffn(b, layer_norm(b, *this, x, "final_layer_norm", 1e-5)));
    b.name_output(x);
  }
  return layer_norm(b, *this, x, "layer_norm", 1e-5);
}

Var WhisperLM::decoder_layer(Builder& b, const Var& h, const Var& enc, Seq2SeqLayerCache* c) const {
  const AttnLayout a = layout(o_.decoder_heads);
  Var y = layer_norm(b, *this, h, "self_attn_layer_norm", 1e-5);
  {
    Scope s(b, "self_attn");
    y = seq2seq_self_attention(b, *this, y, a, Var(), /*causal=*/true, c ? c->past_self_k : Var(),
                               c ? c->past_self_v : Var(), c ? &c->self_k : nullptr,
                               c ? &c->self_v : nullptr);
  }
  Var x = F::add(h, y);
  y = layer_norm(b, *this, x, "encoder_attn_layer_norm", 1e-5);
  {
    Scope s(b, "encoder_attn");
    y = seq2seq_cross_attention(b, *this, y, enc, a, Var(), c ? c->past_cross_k : Var(),
                                c ? c->past_cross_v : Var(), c ? &c->cross_k : nullptr,
                                c ? &c->cross_v : nullptr);
  }
  x = F::add(x, y);
  x = F::add(x, ffn(b, layer_norm(b, *this, x, "final_layer_norm", 1e-5)));
  b.name_output(x);
  return x;
}

Var WhisperLM::decode(Builder& b, Seq2SeqDecoderArgs& a) const {
  Var h;
  {
    Scope sm(b, "model.decoder");
    Sym past = a.cache && (*a.cache)[0].past_self_k ? (*a.cache)[0].past_self_k.size(2) : Sym(0);
    const Sym S = a.input_ids.size(1);
    {
      Scope s(b, "embed_tokens");
      h = F::to(F::embedding(w(b, "model.decoder.embed_tokens.weight"), a.input_ids), DType::F32);
      if (o_.scale_embedding) h = F::mul(h, std::sqrt(static_cast<double>(o_.d_model)));
      b.name_output(h);
    }
    // A guard that export turns into a runtime check, as bart's positions do.
    if (!b.env().le(past + S, Sym(o_.max_target)))
      HFX_THROW("whisper", "expected past + sequence <= max_target_positions = {}, got {}", o_.max_target,
                b.env().hint(past + S));
    {
      Scope s(b, "embed_positions");
      Var pos = F::arange(b, past, past + S);
      h = F::add(h, F::to(F::embedding(w(b, "model.decoder.embed_positions.weight"), pos), DType::F32));
      b.name_output(h);
    }
    for (int64_t i = 0; i < o_.decoder_layers; i++) {
      Scope sl(b, "layers." + std::to_string(i));
      h = decoder_layer(b, h, a.encoder_hidden_states,
                        a.cache ? &(*a.cache)[static_cast<size_t>(i)] : nullptr);
    }
    h = layer_norm(b, *this, h, "layer_norm", 1e-5);
  }
  h = keep_last(h, a.logits_to_keep);
  Var logits;
  {
    Scope sl(b, "proj_out");
    logits = F::linear(
        h,
        W(b, *this, config().tie_word_embeddings ? "model.decoder.embed_tokens.weight" : "proj_out.weight"));
    b.name_output(logits, "logits");
  }
  return logits;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("whisper", preset, "tiny");
  return json{{"architectures", {"WhisperForConditionalGeneration"}},
              {"model_type", "whisper"},
              {"vocab_size", 2000},
              {"num_mel_bins", 80},
              {"d_model", 64},
              {"encoder_layers", 2},
              {"decoder_layers", 2},
              {"encoder_attention_heads", 4},
              {"decoder_attention_heads", 4},
              {"encoder_ffn_dim", 128},
              {"decoder_ffn_dim", 128},
              {"max_source_positions", 1500},
              {"max_target_positions", 448},
              {"activation_function", "gelu"},
              {"scale_embedding", false},
              {"init_std", 0.1},
              {"initializer_range", 0.1},  // create-tiny's std
              {"is_encoder_decoder", true},
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"}};
}

}  // namespace

// A real checkpoint's processor and generation files: preprocessor_config.json (WhisperFeatureExtractor's
// fields) and the ids generation reads, looked up by name in the tokenizer create-tiny wrote.
void whisper_tiny_extras(const std::string& dir, json& config, json& gen) {
  tok::Tokenizer tk = tok::Tokenizer::from_dir(dir);
  auto id = [&](const std::string& t) {
    auto i = tk.token_to_id(t);
    if (!i) HFX_THROW("model", "expected token '{}' in the whisper tokenizer of {}, got none", t, dir);
    return static_cast<int64_t>(*i);
  };
  const int64_t sot = id("<|startoftranscript|>"), eot = id("<|endoftext|>"), translate = id("<|translate|>");
  json lang = json::object();
  for (int64_t i = sot + 1; i < translate; i++) lang[tk.id_to_token(static_cast<int32_t>(i))] = i;
  const auto space = tk.token_to_id("\xC4\xA0");  // "Ġ": a lone space, as 220 in the real vocabulary
  json begin_suppress = space ? json{*space, eot} : json{eot};
  // The real lists suppress punctuation-like pieces and the task/marker tokens; these keep that shape.
  json suppress = json::array();
  for (const char* t : {"\"", "#", "(",  ")", "*", "+", "/", ":", ";", "<", "=", ">",
                        "@",  "[", "\\", "]", "^", "_", "`", "{", "|", "}", "~"})
    if (auto i = tk.token_to_id(t)) suppress.push_back(*i);
  for (const char* t :
       {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>"})
    suppress.push_back(id(t));
  config["decoder_start_token_id"] = sot;
  config["begin_suppress_tokens"] = begin_suppress;
  config["suppress_tokens"] = suppress;
  config["forced_decoder_ids"] = {
      {1, lang.begin().value()}, {2, id("<|transcribe|>")}, {3, id("<|notimestamps|>")}};
  gen.erase("_from_model_config");
  gen["decoder_start_token_id"] = sot;
  gen["begin_suppress_tokens"] = begin_suppress;
  gen["suppress_tokens"] = suppress;
  gen["forced_decoder_ids"] = {{1, nullptr}, {2, id("<|transcribe|>")}};
  gen["is_multilingual"] = true;
  gen["lang_to_id"] = lang;
  gen["task_to_id"] = {{"translate", translate}, {"transcribe", id("<|transcribe|>")}};
  gen["no_timestamps_token_id"] = id("<|notimestamps|>");
  gen["prev_sot_token_id"] = id("<|startofprev|>");
  gen["max_initial_timestamp_index"] = 50;
  gen["max_length"] = config.value("max_target_positions", 448);
  gen["return_timestamps"] = false;
  io::write_file_atomic(dir + "/preprocessor_config.json",
                        audio::WhisperFeatureConfig{}.to_json().dump(2) + "\n");
}

const Architecture& whisper_architecture() {
  static const Architecture a{
      .model_type = "whisper",
      .parse_config = parse,
      .weight_specs = weight_specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<WhisperLM>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "whisper_bpe",
      .tiny_norm_mean = 1.0,
      .heads = {{"seq2seq_lm", "WhisperForConditionalGeneration"}},
  };
  return a;
}

}  // namespace hfx::models
