// The architectures of llama.cpp hfx writes, each what convert_hf_to_gguf.py's model class writes for it:
// the decoder family (llama incl. mistral, qwen2, qwen3, gemma, gemma2, phi3 and the others add_decoder
// names) and gpt2 here; their rope and window keys in gguf_archs_rope.cpp, the LayerNorm decoders in
// gguf_archs_ln.cpp, the state-space and hybrid ones in gguf_archs_ssm.cpp.
#include "export/gguf/gguf_archs.h"

#include <cstring>

#include "hfx/core/error.h"
#include "hfx/export/gguf.h"

namespace hfx {

namespace {
struct ArchRow {
  const char* model_type;
  const char* arch;
};
// model_type → llama.cpp arch (llama-arch.cpp's LLM_ARCH_NAMES).
const ArchRow kArchs[] = {{"llama", "llama"},
                          {"mistral", "llama"},
                          {"mixtral", "llama"},
                          {"qwen2", "qwen2"},
                          {"qwen3", "qwen3"},
                          {"qwen2_moe", "qwen2moe"},
                          {"qwen3_moe", "qwen3moe"},
                          {"olmoe", "olmoe"},
                          {"granite", "granite"},
                          {"granitemoe", "granitemoe"},
                          {"gemma", "gemma"},
                          {"gemma2", "gemma2"},
                          {"gemma3_text", "gemma3"},
                          {"phi3", "phi3"},
                          {"gpt2", "gpt2"},
                          {"mamba", "mamba"},
                          {"mamba2", "mamba2"},
                          {"granitemoehybrid", "granitehybrid"},
                          {"lfm2", "lfm2"},
                          {"bert", "bert"},
                          {"olmo2", "olmo2"},
                          {"seed_oss", "seed_oss"},
                          {"smollm3", "smollm3"},
                          {"arcee", "arcee"},
                          {"ernie4_5", "ernie4_5"},
                          {"starcoder2", "starcoder2"},
                          {"stablelm", "stablelm"},
                          {"phi", "phi2"},
                          {"olmo", "olmo"},
                          {"gpt_bigcode", "starcoder"},
                          {"gpt_neox", "gptneox"},
                          {"falcon_mamba", "mamba"},
                          {"nemotron", "nemotron"},
                          {"cohere", "command-r"},
                          {"granitemoeshared", "granitemoe"},
                          {"glm", "chatglm"},
                          {"glm4", "glm4"},
                          {"cohere2", "cohere2"},
                          {"exaone4", "exaone4"},
                          {"olmo3", "olmo2"},
                          {"hunyuan_v1_dense", "hunyuan-dense"},
                          {"hunyuan_v1_moe", "hunyuan-moe"},
                          {"falcon", "falcon"},
                          {"bloom", "bloom"},
                          {"mpt", "mpt"},
                          {"distilbert", "bert"},
                          {"roberta", "bert"},
                          {"xlm-roberta", "bert"},
                          {"t5", "t5"},
                          {"mt5", "t5"},
                          {"camembert", "bert"},
                          {"bamba", "granitehybrid"},
                          {"jamba", "jamba"},
                          {"modernbert", "modern-bert"}};
// Model types llama.cpp has an arch for whose graph computes another model than transformers.
struct Unfaithful {
  const char* model_type;
  const char* why;
};
const Unfaithful kUnfaithful[] = {
    {"phimoe",
     "llama.cpp's phimoe graph (phi3's) normalizes with RMSNorm and routes by softmax top-k, where "
     "PhiMoE has LayerNorms and sparsemixer routing: the file would compute another model"}};
}  // namespace

std::string gguf_arch_of(const std::string& model_type) {
  for (const ArchRow& r : kArchs)
    if (model_type == r.model_type) return r.arch;
  return "";
}

bool gguf_embedding_arch(const std::string& arch) { return arch == "bert" || arch == "modern-bert"; }

std::string gguf_refusal(const std::string& model_type, Structure structure) {
  const std::string arch = gguf_arch_of(model_type);
  for (const Unfaithful& u : kUnfaithful)
    if (model_type == u.model_type)
      return fmt::format(
          "expected a model llama.cpp computes as transformers does, got {}: {}; export it with "
          "--format onnx, executorch or dynamo",
          model_type, u.why);
  if (structure == Structure::EncoderOnly) {
    if (gguf_embedding_arch(arch)) return "";
    std::vector<std::string> encoders;
    for (const ArchRow& r : kArchs)
      if (gguf_embedding_arch(r.arch)) encoders.emplace_back(r.model_type);
    return fmt::format(
        "expected an encoder whose llama.cpp arch hfx maps ({}) for llama.cpp's embeddings, got {}; "
        "export it with --format onnx, executorch or dynamo",
        fmt::join(encoders, ", "), model_type);
  }
  if (structure == Structure::EncoderDecoder && arch == "t5") return "";
  if (structure != Structure::DecoderOnly)
    return fmt::format(
        "expected a decoder-only model (llama.cpp's text generation), a BERT-family encoder (its "
        "embeddings) or T5 / mT5 (its t5 arch), got {} ({})",
        model_type, structure_name(structure));
  if (arch.empty())
    return fmt::format("expected a model_type llama.cpp runs and hfx maps ({}), got {}",
                       fmt::join(gguf_model_types(), ", "), model_type);
  return "";
}

std::vector<std::string> gguf_model_types() {
  std::vector<std::string> out;
  for (const ArchRow& r : kArchs) out.emplace_back(r.model_type);
  return out;
}

namespace gguf {

namespace {

// Gemma's RMSNorm scales by (1 + w); llama.cpp's gemma graph by the weight, so the converter adds the 1.
Tensor plus(const Tensor& t, float k) {
  auto v = t.to_floats();
  for (auto& x : v) x += k;
  return Tensor::from_floats(t.shape(), v);
}
Tensor plus_one(Tensor t) { return plus(t, 1.0f); }
Tensor minus_one(Tensor t) { return plus(t, -1.0f); }

Tensor transposed(const Tensor& t) { return t.to(DType::F32).transpose(0, 1).contiguous(); }

}  // namespace

Tensor move_row_groups(const Tensor& w, int64_t unit, const std::function<int64_t(int64_t)>& to, bool back) {
  Tensor t = w.contiguous();
  Tensor r = Tensor::empty(t.shape(), t.dtype());
  const int64_t groups = t.size(0) / unit;
  const size_t bytes = static_cast<size_t>(t.numel() / groups) * dtype_size(t.dtype());
  const char* s = static_cast<const char*>(t.raw());
  char* d = static_cast<char*>(r.raw());
  for (int64_t g = 0; g < groups; g++) {
    const int64_t from = back ? to(g) : g, into = back ? g : to(g);
    std::memcpy(d + static_cast<size_t>(into) * bytes, s + static_cast<size_t>(from) * bytes, bytes);
  }
  return r;
}

// llama.cpp's rope row order: per head of D rows, of the first `rot` (the rotated ones; all when 0) row
// (half * rot/2 + i) becomes (2i + half) (convert_hf_to_gguf.py's LlamaModel.permute for the whole head).
Tensor rope_rows(const Tensor& w, int64_t heads, bool back, int64_t rot) {
  const int64_t D = w.size(0) / heads, R = rot > 0 ? rot : D;
  return move_row_groups(
      w, 1,
      [D, R](int64_t r) {
        const int64_t h = r / D, j = r % D;
        return j >= R ? r : h * D + 2 * (j % (R / 2)) + j / (R / 2);
      },
      back);
}

void rope_ordered_qk(Out& o, const ModelConfig& c, const std::string& attn, const std::string& q,
                     int64_t rot) {
  const int64_t H = c.num_attention_heads, K = c.num_key_value_heads;
  o.map(
      q + "attn_q.weight", attn + "q_proj.weight", [H, rot](Tensor t) { return rope_rows(t, H, false, rot); },
      [H, rot](Tensor t) { return rope_rows(t, H, true, rot); });
  o.map(
      q + "attn_k.weight", attn + "k_proj.weight", [K, rot](Tensor t) { return rope_rows(t, K, false, rot); },
      [K, rot](Tensor t) { return rope_rows(t, K, true, rot); });
}

void layernorm_keys(File& f, const std::string& arch, const ModelConfig& c, float eps) {
  f.kv_u32(arch + ".context_length", static_cast<uint32_t>(c.max_position_embeddings));
  f.kv_u32(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  f.kv_u32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  f.kv_f32(arch + ".attention.layer_norm_epsilon", eps);
}

void check_full_attention(const std::string& arch, const ModelConfig& c) {
  HFX_CHECK(
      c.sliding_window == 0 || c.sliding_window >= c.max_position_embeddings, "gguf",
      "expected no sliding window for llama.cpp's {} arch (it attends over the whole context), got "
      "sliding_window {} < max_position_embeddings {}; set \"sliding_window\": null in config.json if the "
      "model never sees that many tokens",
      arch, c.sliding_window, c.max_position_embeddings);
}

void common_keys(File& f, const std::string& arch, const ModelConfig& c) {
  f.kv_str("general.architecture", arch);
  // The checkpoint's name where config.json has it (saved from a Hub id). Not the model_type: llama.cpp sets
  // token attributes by name ("phi3" expects Phi-3's special tokens, which a tiny vocabulary lacks).
  if (c.raw.contains("_name_or_path") && c.raw["_name_or_path"].is_string())
    f.kv_str("general.name", c.raw["_name_or_path"].get<std::string>());
  f.kv_str("general.type", "model");  // general.alignment left out: its default is File::kAlignment
  // t5: the encoder's layers (llama.cpp's n_layer; decoder_block_count, gguf_archs_t5.cpp, the decoder's)
  f.kv_u32(arch + ".block_count",
           static_cast<uint32_t>(arch == "t5" ? c.raw.value("num_layers", int64_t{6}) : c.num_hidden_layers));
  f.kv_u32(arch + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
  if (arch != "bert")  // the converter's BertModel writes none (llama.cpp counts the token list)
    f.kv_u32(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
}

namespace {

void decoder_keys(Out& o, const std::string& arch, const ModelConfig& c) {
  File& f = o.f;
  f.kv_u32(arch + ".context_length", static_cast<uint32_t>(c.max_position_embeddings));
  f.kv_u32(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  f.kv_u32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  f.kv_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  f.kv_u32(arch + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
  f.kv_u32(arch + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
  f.kv_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  if (arch == "gemma3") return gemma3_keys(f, c);
  if (c.model_type == "olmo3") return olmo3_keys(f, c);
  rope_keys(o, arch, c);
  if (arch == "gemma2") {
    f.kv_f32(arch + ".attn_logit_softcapping",
             static_cast<float>(c.raw.value("attn_logit_softcapping", 0.0)));
    f.kv_f32(arch + ".final_logit_softcapping",
             static_cast<float>(c.raw.value("final_logit_softcapping", 0.0)));
    f.kv_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  } else if (arch == "exaone4") {
    // llama.cpp's exaone4 graph slides in its 64-layer shape alone (rotating only the sliding layers, as
    // transformers with a window); in any other shape every layer rotates, transformers' without a window.
    const bool slides = c.sliding_window > 0;
    HFX_CHECK(slides == (c.num_hidden_layers == 64), "gguf",
              "expected a sliding_window exactly when there are 64 layers for llama.cpp's exaone4 arch (it "
              "slides in EXAONE 4.0 32B's shape only), got sliding_window {} with {} layers",
              c.sliding_window, c.num_hidden_layers);
    if (slides) swa_keys(f, arch, c);
  } else {
    // llama.cpp's llama and phi3 graphs attend over the whole context: a window shorter than it changes the
    // model (convert_hf_to_gguf.py writes these files all the same; hfx refuses).
    check_full_attention(arch, c);
  }
}

void attention(Out& o, const std::string& arch, const ModelConfig& c, const std::string& p,
               const std::string& q,
               const std::function<void(const std::string&, const std::string&)>& norm) {
  const io::WeightStore& W = o.W;
  if (W.has(p + "self_attn.qkv_proj.weight")) {
    o.copy(q + "attn_qkv.weight", p + "self_attn.qkv_proj.weight");
  } else if (arch == "llama" || arch == "granite" || arch == "granitemoe" || arch == "smollm3" ||
             arch == "arcee") {  // rope NORM: interleaved pairs (ernie4_5's checkpoint has them already)
    rope_ordered_qk(o, c, p + "self_attn.", q);
    o.copy(q + "attn_v.weight", p + "self_attn.v_proj.weight");
  } else {
    for (const char* b : {"q", "k", "v"})
      o.copy(q + "attn_" + b + ".weight", p + "self_attn." + b + "_proj.weight");
  }
  for (const char* b : {"q", "k", "v"})
    if (W.has(p + "self_attn." + b + "_proj.bias"))
      o.copy(q + "attn_" + b + ".bias", p + "self_attn." + b + "_proj.bias");
  if (W.has(p + "self_attn.q_norm.weight")) {
    norm(q + "attn_q_norm.weight", p + "self_attn.q_norm.weight");
    norm(q + "attn_k_norm.weight", p + "self_attn.k_norm.weight");
  } else if (W.has(p + "self_attn.query_layernorm.weight")) {  // HunYuan's, after rope (as llama.cpp's)
    norm(q + "attn_q_norm.weight", p + "self_attn.query_layernorm.weight");
    norm(q + "attn_k_norm.weight", p + "self_attn.key_layernorm.weight");
  }
  o.copy(q + "attn_output.weight", p + "self_attn.o_proj.weight");
  if (W.has(p + "self_attn.o_proj.bias")) {
    HFX_CHECK(
        arch == "ernie4_5", "gguf",
        "expected no o_proj bias for llama.cpp's {} arch (its graph adds none), got one (attention_out_bias)",
        arch);
    o.copy(q + "attn_output.bias", p + "self_attn.o_proj.bias");
  }
}

// What an arch's graph cannot express of a config.
void check_decoder(const std::string& arch, const ModelConfig& c) {
  const nlohmann::json& raw = c.raw;
  if (arch == "smollm3") {  // llama.cpp's smollm3 graph: layer i without rope where (i + 1) % 4 == 0
    const auto every = raw.value("no_rope_layer_interval", int64_t{4});
    std::vector<int64_t> want;
    for (int64_t i = 0; i < c.num_hidden_layers; i++) want.push_back((i + 1) % 4 != 0);
    const auto got = raw.value("no_rope_layers", nlohmann::json());
    HFX_CHECK((got.is_null() && every == 4) || got == nlohmann::json(want), "gguf",
              "expected every 4th layer without rope for llama.cpp's smollm3 arch (its fixed pattern), got "
              "no_rope_layers {} / no_rope_layer_interval {}",
              got.dump(), every);
  }
  HFX_CHECK(arch != "arcee" || raw.value("hidden_act", std::string("relu2")) == "relu2", "gguf",
            "expected hidden_act relu2 for llama.cpp's arcee arch (its graph squares the ReLU), got '{}'",
            raw.value("hidden_act", std::string()));
  HFX_CHECK(
      arch != "olmoe" || c.num_key_value_heads == c.num_attention_heads, "gguf",
      "expected as many key/value heads as heads for llama.cpp's olmoe arch (its k_norm spans n_embd), got "
      "{} and {}",
      c.num_key_value_heads, c.num_attention_heads);
  HFX_CHECK(arch != "chatglm" || c.num_attention_heads * c.head_dim == c.hidden_size, "gguf",
            "expected num_attention_heads x head_dim equal to hidden_size for llama.cpp's chatglm arch (its "
            "attn_output is square), got {} x {} and {}",
            c.num_attention_heads, c.head_dim, c.hidden_size);
  const nlohmann::json& j = c.raw;
  HFX_CHECK(arch != "qwen2moe" || (j.value("decoder_sparse_step", 1) == 1 &&
                                   j.value("mlp_only_layers", nlohmann::json::array()).empty()),
            "gguf",
            "expected every layer a mixture of experts for llama.cpp's qwen2moe arch, got "
            "decoder_sparse_step {} and mlp_only_layers {}",
            j.value("decoder_sparse_step", 1), j.value("mlp_only_layers", nlohmann::json::array()).dump());
}

// llama (mistral, mixtral), qwen2, qwen3, qwen2moe, qwen3moe, olmoe, granite(moe), gemma, gemma2, phi3,
// chatglm (glm), glm4, exaone4, olmo2 (olmo2, olmo3), hunyuan-dense: Hugging Face's
// model.layers.N.{self_attn,mlp} layout.
void add_decoder(Out& o, const std::string& arch, const ModelConfig& c) {
  check_decoder(arch, c);
  HFX_CHECK(
      !o.W.has("model.layers.0.mlp.up_proj.bias") && !o.W.has("model.layers.0.mlp.down_proj.bias"), "gguf",
      "expected no MLP biases for llama.cpp's {} arch (its graph adds none), got mlp.up_proj / down_proj "
      "biases",
      arch);
  decoder_keys(o, arch, c);
  if (arch == "granite" || arch == "granitemoe") granite_keys(o.f, arch, c.raw);
  if (is_moe(o.W, "model.layers.0.")) moe_keys(o, arch, c);
  const bool gemma = arch == "gemma" || arch == "gemma2" || arch == "gemma3";
  auto norm = [&](const std::string& name, const std::string& hf) {
    if (gemma)
      o.map(name, hf, plus_one, minus_one);
    else
      o.copy(name, hf);
  };
  o.copy("token_embd.weight", "model.embed_tokens.weight");
  const bool after = arch == "olmo2" || arch == "exaone4";  // norms on the sublayers' outputs only
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    if (!after) norm(q + "attn_norm.weight", p + "input_layernorm.weight");
    attention(o, arch, c, p, q, norm);
    if (arch == "gemma2" || arch == "gemma3") {
      norm(q + "post_attention_norm.weight", p + "post_attention_layernorm.weight");
      norm(q + "ffn_norm.weight", p + "pre_feedforward_layernorm.weight");
      norm(q + "post_ffw_norm.weight", p + "post_feedforward_layernorm.weight");
    } else if (after) {
      norm(q + "post_attention_norm.weight", p + "post_attention_layernorm.weight");
      norm(q + "post_ffw_norm.weight", p + "post_feedforward_layernorm.weight");
    } else if (arch == "glm4") {  // norms on both sublayers' outputs besides their inputs
      norm(q + "post_attention_norm.weight", p + "post_self_attn_layernorm.weight");
      norm(q + "ffn_norm.weight", p + "post_attention_layernorm.weight");
      norm(q + "post_ffw_norm.weight", p + "post_mlp_layernorm.weight");
    } else {  // the FFN's input norm; seed_oss's graph reads it as post_attention_norm
      norm(q + (arch == "seed_oss" ? "post_attention_norm.weight" : "ffn_norm.weight"),
           p + "post_attention_layernorm.weight");
    }
    if (is_moe(o.W, p)) {
      add_moe_ffn(o, c, p, q);
      continue;
    }
    if (o.W.has(p + "mlp.gate_up_proj.weight")) {
      o.copy(q + "ffn_up.weight", p + "mlp.gate_up_proj.weight");
    } else {
      if (o.W.has(p + "mlp.gate_proj.weight"))  // arcee's MLP has none (relu² of up)
        o.copy(q + "ffn_gate.weight", p + "mlp.gate_proj.weight");
      o.copy(q + "ffn_up.weight", p + "mlp.up_proj.weight");
    }
    o.copy(q + "ffn_down.weight", p + "mlp.down_proj.weight");
  }
  norm("output_norm.weight", "model.norm.weight");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

// GPT-2: Conv1D weights [in, out] transposed to [out, in], LayerNorm biases, learned positions.
void add_gpt2(Out& o, const ModelConfig& c) {
  layernorm_keys(o.f, "gpt2", c, static_cast<float>(c.norm_eps));
  auto conv1d = [&](const std::string& name, const std::string& hf) {
    const Shape s = o.W.info(hf).shape;
    o.put(
        name, {s[1], s[0]}, [w = &o.W, hf] { return transposed(w->get(hf)); },
        [hf](const Tensor& t, Into& in) { in.set(hf, transposed(t)); });
  };
  o.copy("token_embd.weight", "transformer.wte.weight");
  o.copy("position_embd.weight", "transformer.wpe.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "transformer.h." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    for (const auto& [gg, hf] :
         std::vector<std::pair<std::string, std::string>>{{"attn_norm", "ln_1"}, {"ffn_norm", "ln_2"}}) {
      o.copy(q + gg + ".weight", p + hf + ".weight");
      o.copy(q + gg + ".bias", p + hf + ".bias");
    }
    for (const auto& [gg, hf] :
         std::vector<std::pair<std::string, std::string>>{{"attn_qkv", "attn.c_attn"},
                                                          {"attn_output", "attn.c_proj"},
                                                          {"ffn_up", "mlp.c_fc"},
                                                          {"ffn_down", "mlp.c_proj"}}) {
      conv1d(q + gg + ".weight", p + hf + ".weight");
      o.copy(q + gg + ".bias", p + hf + ".bias");
    }
  }
  o.copy("output_norm.weight", "transformer.ln_f.weight");
  o.copy("output_norm.bias", "transformer.ln_f.bias");
}

}  // namespace

// Granite's multipliers (granite.cpp's graph reads them as scales).
void granite_keys(File& f, const std::string& arch, const nlohmann::json& j) {
  f.kv_f32(arch + ".attention.scale", j.value("attention_multiplier", 1.0f));
  f.kv_f32(arch + ".embedding_scale", j.value("embedding_multiplier", 1.0f));
  f.kv_f32(arch + ".residual_scale", j.value("residual_multiplier", 1.0f));
  f.kv_f32(arch + ".logit_scale", j.value("logits_scaling", 1.0f));
}

GgmlType type_for(const std::string& name, const Shape& shape, GgmlType matrix) {
  // convert_hf_to_gguf.py's prepare_tensors (after llama.cpp's llama_model_quantize_internal): 1-D tensors
  // and norms, the MoE router, learned positions, token types and the state-space convolutions stay f32.
  static const char* const kF32[] = {"ffn_gate_inp.",   "position_embd.", "token_types.", "ssm_conv1d.",
                                     "shortconv.conv.", "ssm_a",          "ssm_d"};
  bool f32 = shape.size() <= 1 || name.ends_with("_norm.weight");
  for (const char* k : kF32) f32 = f32 || name.find(k) != std::string::npos;
  if (f32) return GgmlType::F32;
  // A row that is not whole blocks: llama-quantize's tensor_type_fallback (q4_k → q5_0, q6_k → q8_0), then
  // f16.
  GgmlType t = matrix;
  if (shape.back() % ggml_block_size(t) != 0)
    t = t == GgmlType::Q4_K ? GgmlType::Q5_0 : t == GgmlType::Q6_K ? GgmlType::Q8_0 : t;
  return shape.back() % ggml_block_size(t) == 0 ? t : GgmlType::F16;
}

namespace {

void add_tensors(File& f, const Model& m, GgmlType matrix, std::map<std::string, Back>* backs) {
  const ModelConfig& c = m.config();
  const std::string arch = gguf_arch_of(c.model_type);
  HFX_CHECK(!arch.empty(), "gguf", "expected a model_type llama.cpp runs and hfx maps ({}), got {}",
            fmt::join(gguf_model_types(), ", "), c.model_type);
  common_keys(f, arch, c);
  Out o{f, m.weights(), matrix, backs};
  if (arch == "gpt2")
    add_gpt2(o, c);
  else if (arch == "mamba")
    add_mamba(o, c);
  else if (arch == "mamba2")
    add_mamba2(o, c);
  else if (arch == "granitehybrid")
    add_granitehybrid(o, c);
  else if (arch == "lfm2")
    add_lfm2(o, c);
  else if (arch == "jamba")
    add_jamba(o, c);
  else if (arch == "bert")
    add_bert(o, m, c);
  else if (arch == "modern-bert")
    add_modernbert(o, m, c);
  else if (arch == "t5")
    add_t5(o, m, c);
  else if (arch == "starcoder2" || arch == "stablelm" || arch == "phi2" || arch == "olmo" ||
           arch == "starcoder" || arch == "gptneox" || arch == "nemotron" || arch == "command-r" ||
           arch == "cohere2" || arch == "falcon" || arch == "bloom" || arch == "mpt")
    add_layernorm_decoder(o, arch, c);
  else
    add_decoder(o, arch, c);
}

}  // namespace

void add_model(File& f, const Model& m, GgmlType matrix) { add_tensors(f, m, matrix, nullptr); }

void plan_model(File& f, const Model& m, GgmlType matrix, std::map<std::string, Back>& backs) {
  add_tensors(f, m, matrix, &backs);
}

void Into::set(const std::string& hf, const Tensor& t) {
  const Shape& s = W.info(hf).shape;
  out[hf] = t.to(DType::F32).contiguous().reshape(s).contiguous();
  touched.push_back(hf);
}

void Into::set_slice(const std::string& hf, int64_t dim, int64_t from, const Tensor& part) {
  const Shape& s = W.info(hf).shape;
  auto it = out.find(hf);
  if (it == out.end()) it = out.emplace(hf, Tensor::zeros(s)).first;
  touched.push_back(hf);
  const Tensor p = part.to(DType::F32).contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; d++) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); d++) inner *= s[d];
  const int64_t n = p.size(dim), whole = s[static_cast<size_t>(dim)];
  HFX_CHECK(from + n <= whole && p.numel() == outer * n * inner, "gguf",
            "expected a slice [{}, {}) of {} along dim {} (size {}), got one of shape {}", from, from + n, hf,
            dim, whole, shape_to_string(p.shape()));
  for (int64_t o = 0; o < outer; o++)
    std::memcpy(it->second.data<float>() + (o * whole + from) * inner, p.data<float>() + o * n * inner,
                static_cast<size_t>(n * inner) * sizeof(float));
}

}  // namespace gguf
}  // namespace hfx
