// mamba2: Mamba2ForCausalLM — a stack of Mamba-2 (SSD) mixers, no attention. Each layer keeps two cache
// leaves instead of a KV pair, named as Transformers.js names the mamba layers of its hybrids:
// past_conv.N [B, conv_dim, conv_kernel-1] (the last inputs x|B|C of the depthwise causal convolution) and
// past_ssm.N [B, num_heads, head_dim, state_size] (the recurrent state), present_conv.N / present_ssm.N out,
// layer type `mamba`. The empty past is the all-zero state (transformers' prefill zero-pads the convolution
// and starts the scan from zeros), so one graph serves prefill and decode. The mixer is src/models/ssd.cpp.
#include "blocks.h"
#include "hfx/core/error.h"
#include "ssd.h"

namespace hfx::models {
namespace {

SsdDims dims_of(const ModelConfig& c) {
  const json& j = c.raw;
  SsdDims d;
  d.hidden = c.hidden_size;
  d.inner = c.intermediate_size;
  d.state = jget<int64_t>(j, "state_size", 128);
  d.kernel = jget<int64_t>(j, "conv_kernel", 4);
  d.heads = jget<int64_t>(j, "num_heads", 128);
  d.head_dim = jget<int64_t>(j, "head_dim", 64);
  d.groups = jget<int64_t>(j, "n_groups", 8);
  d.chunk = jget<int64_t>(j, "chunk_size", 256);
  d.conv_bias = jget<bool>(j, "use_conv_bias", true);
  d.bias = jget<bool>(j, "use_bias", false);
  d.eps = c.norm_eps;
  read_time_step_limit(d, j);
  return d;
}

ModelConfig parse(const json& j) {
  json m = j;
  const int64_t H = jget<int64_t>(j, "hidden_size", 4096);
  m["hidden_size"] = H;
  m["num_hidden_layers"] = jget<int64_t>(j, "num_hidden_layers", 64);
  m["intermediate_size"] = scaled_size(jget<double>(j, "expand", 2.0), H, "expand");
  // No attention: one "head" keeps parse_common's divisibility checks meaningful.
  m["num_attention_heads"] = 1;
  m["num_key_value_heads"] = 1;
  m.erase("head_dim");
  m.erase("layer_types");
  ConfigDefaults d;
  d.vocab_size = 32768;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = false;
  d.bos = 0;
  d.eos = 2;
  ModelConfig c = parse_common(m, "mamba2", d);
  c.raw = j;
  if (!c.pad_token_id) c.pad_token_id = jget<int64_t>(j, "pad_token_id", 1);
  if (jhas(j, "layer_types"))
    set_layer_types(c, [](int64_t) { return false; }, {"mamba"});
  else
    c.layer_types.assign(static_cast<size_t>(c.num_hidden_layers), "mamba");
  check_ssd_dims(dims_of(c), "mamba2");
  const std::string act = jget<std::string>(j, "hidden_act", "silu");
  if (act != "silu" && act != "swish")
    HFX_THROW("model", "expected hidden_act 'silu' for mamba2, got '{}'", act);
  if (!jget<bool>(j, "rms_norm", true))
    HFX_THROW("model",
              "expected rms_norm true for mamba2 (the gated RMSNorm transformers always applies), got false");
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const SsdDims d = dims_of(c);
  WeightSpecs s{{"backbone.embeddings.weight", {c.vocab_size, d.hidden}}};
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "backbone.layers." + std::to_string(i) + ".";
    s.push_back({p + "norm.weight", {d.hidden}});
    ssd_weight_specs(s, p + "mixer.", d);
  }
  s.push_back({"backbone.norm_f.weight", {d.hidden}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {c.vocab_size, d.hidden}});
  return s;
}

class Mamba2LM : public CausalLM {
 public:
  using CausalLM::CausalLM;

  std::vector<CacheLayerSpec> cache_layout() const override {
    std::vector<CacheLayerSpec> r(static_cast<size_t>(config().num_hidden_layers));
    for (auto& s : r) s.layer_type = "mamba";
    return r;
  }

  std::vector<ComponentDecl> components() const override {
    const SsdDims d = dims_of(config());
    ComponentDecl c;
    c.name = "model";
    // The mask spans past + new tokens as the decoder-only loop (and Transformers.js) feed it; only its last
    // sequence_length columns are read, so its length is a dim of its own (no leaf has a past axis).
    c.inputs = {{"input_ids", DType::I64, {"batch_size", "sequence_length"}},
                {"attention_mask", DType::I64, {"batch_size", "total_sequence_length"}}};
    c.outputs = {"logits"};
    for (int64_t i = 0; i < config().num_hidden_layers; i++) {
      const std::string type = config().layer_types[static_cast<size_t>(i)];
      c.inputs.push_back({fmt::format("past_conv.{}", i),
                          DType::F32,
                          {"batch_size", std::to_string(d.conv_dim()), std::to_string(d.kernel - 1)},
                          true});
      c.inputs.push_back(
          {fmt::format("past_ssm.{}", i),
           DType::F32,
           {"batch_size", std::to_string(d.heads), std::to_string(d.head_dim), std::to_string(d.state)},
           true});
      for (const char* kind : {"conv", "ssm"}) {
        c.outputs.push_back(fmt::format("present_{}.{}", kind, i));
        c.cache.push_back({static_cast<int>(i), kind, type, 0, fmt::format("past_{}.{}", kind, i),
                           fmt::format("present_{}.{}", kind, i)});
      }
    }
    return {c};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    if (component != "model") (void)this->component(component);
    Var ids = get(in, "input_ids");
    if (!ids) HFX_THROW("model", "expected input 'input_ids' for component 'model' of mamba2, got none");
    const auto L = static_cast<size_t>(config().num_hidden_layers);
    std::vector<Var> conv(L), ssm(L);
    for (size_t i = 0; i < L; i++) {
      conv[i] = get(in, fmt::format("past_conv.{}", i));
      ssm[i] = get(in, fmt::format("past_ssm.{}", i));
    }
    Var logits = run(b, ids, get(in, "attention_mask"), conv, ssm, opts.logits_to_keep);
    NamedVars r{{"logits", logits}};
    if (!opts.use_cache) return r;
    for (size_t i = 0; i < L; i++) {
      r.emplace_back(fmt::format("present_conv.{}", i), conv[i]);
      r.emplace_back(fmt::format("present_ssm.{}", i), ssm[i]);
    }
    return r;
  }

  // A full recomputation from the zero state; a KV cache cannot hold conv/ssm states.
  ForwardOut forward(Builder& b, const ForwardArgs& a) const override {
    if (a.cache)
      HFX_THROW(
          "model",
          "expected no KV cache for mamba2 (its cache is the conv/ssm leaves of component 'model'), got one");
    std::vector<Var> conv(static_cast<size_t>(config().num_hidden_layers)), ssm(conv.size());
    return {run(b, a.input_ids, a.attention_mask, conv, ssm, a.logits_to_keep)};
  }

 private:
  Var run(Builder& b, const Var& ids, const Var& attention_mask, std::vector<Var>& conv,
          std::vector<Var>& ssm, int64_t keep) const {
    const auto& c = config();
    const SsdDims d = dims_of(c);
    Sym S = ids.size(1);
    Var mask;  // [B, S, 1] f32: the last S columns of the attention mask
    if (attention_mask) {
      Sym T = attention_mask.size(1);
      mask = F::unsqueeze(F::to(F::slice(attention_mask, 1, T - S, T), DType::F32), 2);
    }
    Var h;
    {
      Scope sb(b, "backbone");
      {
        Scope s(b, "embeddings");
        h = F::to(F::embedding(w(b, "backbone.embeddings.weight"), ids), DType::F32);
        b.name_output(h);
      }
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sl(b, "layers." + std::to_string(i));
        Var x = rms_norm(b, *this, h, "norm", c.norm_eps, 0.0);
        Var m;
        {
          Scope sm(b, "mixer");
          m = ssd_mixer(b, *this, d, x, mask, conv[static_cast<size_t>(i)], ssm[static_cast<size_t>(i)]);
        }
        h = F::add(h, m);
        b.name_output(h);
      }
      h = rms_norm(b, *this, h, "norm_f", c.norm_eps, 0.0);
    }
    h = keep_last(h, keep);
    Scope sl(b, "lm_head");
    Var logits =
        matmul_weight(b, *this, h, c.tie_word_embeddings ? "backbone.embeddings.weight" : "lm_head.weight");
    b.name_output(logits);
    return logits;
  }
};

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("mamba2", preset, "tiny");
  // num_heads = n_groups: transformers' uncached prefill (4.47, 4.51) tiles B/C over heads (repeat) where
  // its decode and mamba_ssm interleave them (repeat_interleave); with one head per group both agree, so
  // its goldens are exact. chunk_size 8 makes the goldens' 13-token prompt and the tests' 64-token prefills
  // span chunks.
  return json{{"architectures", {"Mamba2ForCausalLM"}},
              {"model_type", "mamba2"},
              {"vocab_size", 512},
              {"hidden_size", 64},
              {"state_size", 16},
              {"num_heads", 4},
              {"head_dim", 32},
              {"n_groups", 4},
              {"expand", 2},
              {"conv_kernel", 4},
              {"chunk_size", 8},
              {"num_hidden_layers", 2},
              {"layer_norm_epsilon", 1e-5},
              {"pad_token_id", 0},
              {"bos_token_id", 0},
              {"eos_token_id", 0},
              {"use_bias", false},
              {"use_conv_bias", true},
              {"hidden_act", "silu"},
              {"initializer_range", 0.1},
              {"residual_in_fp32", true},
              {"rms_norm", true},
              {"time_step_rank", "auto"},
              {"time_step_min", 0.001},
              {"time_step_max", 0.1},
              {"time_step_floor", 1e-4},
              {"rescale_prenorm_residual", false},
              {"tie_word_embeddings", false},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.51.0"}};
}

}  // namespace

const Architecture& mamba2_architecture() {
  static const Architecture a{
      .model_type = "mamba2",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<Mamba2LM>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "byte_level",
      .tiny_norm_mean = 1.0,
  };
  return a;
}

}  // namespace hfx::models
