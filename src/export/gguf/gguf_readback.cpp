// A GGUF file read back into hfx's eager engine: the exporter's plan for the reference model (the tensors it
// writes and each one's inverse, plan_model) is matched with the file's table, and every tensor, decoded to
// f32, is turned back into the Hugging Face weights it was made from. The model built over them computes
// what the file's weights compute, which is what llama.cpp is then compared with.
#include <algorithm>
#include <cmath>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"
#include "hfx/export/gguf.h"

namespace hfx {

namespace {

// Of the matrix types, the one whose plan matches the file's types for the most tensors; of equals (a q6_k
// file whose rows all fell back to q8_0), the one general.file_type names.
GgmlType matrix_of(const GgufReader& r) {
  GgmlType best = GgmlType::F32;
  size_t best_hits = 0;
  const auto ftype = r.metadata().value("general.file_type", uint32_t{0});
  for (GgmlType t : ggml_types()) {
    size_t hits = 0;
    for (const GgufTensor& x : r.tensors()) hits += gguf::type_for(x.name, x.shape, t) == x.type;
    if (hits > best_hits || (hits == best_hits && ggml_file_type(t) == ftype)) best = t, best_hits = hits;
  }
  return best;
}

// The bound on a weight's read-back error relative to its tensor's max |w|: the type's rounding (f16 and
// bf16 half an ulp of their mantissa; q8_0 half a step of amax/127 plus its f16 scale's rounding; q4_0 a
// whole step of amax/8, as the code 15 clamps the value opposite the block's extreme) and f32 the inverse
// transforms' own rounding (Gemma's w + 1 - 1, Mamba's log(exp)).
double weight_bound(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return 1e-6;
    case GgmlType::F16:
      return 0.5 * std::ldexp(1.0, -10) + 1e-6;
    case GgmlType::BF16:
      return 0.5 * std::ldexp(1.0, -7) + 1e-6;
    case GgmlType::Q8_0:
      return 0.5 / 127 + std::ldexp(1.0, -11);
    case GgmlType::Q4_0:
      return 1.0 / 8 + std::ldexp(1.0, -11);
    case GgmlType::Q5_0:  // a whole step of amax/16, as q4_0's
      return 1.0 / 16 + std::ldexp(1.0, -11);
    case GgmlType::Q4_K:  // a whole 4-bit step of a group spanning [-amax, amax], plus its 6-bit scale and
                          // min
      return 2.0 / 15 + 2.0 / 63;
    case GgmlType::Q5_1:  // half a step of (max - min) / 31 ≤ 2 amax / 31, plus the f16 min's rounding
      return 1.0 / 31 + std::ldexp(1.0, -10);
    case GgmlType::Q5_K:  // a whole 5-bit step of a group spanning [-amax, amax], plus its 6-bit scale and
                          // min
      return 2.0 / 31 + 2.0 / 63;
    case GgmlType::Q6_K:  // a whole 6-bit step of the largest group's scale, plus its 8-bit rounding
      return 1.0 / 32 + 1.0 / 128;
  }
  return 0;
}

// The config of the model the file computes: f32, and the activation llama.cpp runs (its tanh GELU as ggml's
// f16 lookup, "gelu_ggml"; `ggml_gelu` says so). A BERT comes back as BertModel: BertForMaskedLM's weights
// without their `bert.` scope (the file has no MLM head).
nlohmann::json file_config(const Model& reference, std::map<std::string, Tensor>& weights, bool& ggml_gelu) {
  nlohmann::json config = reference.config().raw;
  for (const char* k : {"torch_dtype", "dtype"})
    if (config.contains(k)) config[k] = "float32";
  // llama.cpp runs the tanh GELU as ggml's f16 lookup (the activation "gelu_ggml"): the model of the file is
  // that.
  for (const char* k : {"hidden_act", "hidden_activation", "activation_function"})
    if (config.contains(k) && config[k].is_string())
      for (const char* tanh : {"gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_python_tanh"})
        if (config[k] == tanh) config[k] = "gelu_ggml", ggml_gelu = true;
  if (reference.config().model_type == "gemma" && !config.contains("hidden_activation") &&
      config.value("hidden_act", std::string()) == "gelu")
    config["hidden_act"] = "gelu_ggml", ggml_gelu = true;  // Gemma's legacy "gelu" is the tanh GELU
  // llama.cpp's gptneox, falcon, bloom and mpt graphs: ggml's tanh GELU for the exact one (BLOOM's tanh one)
  for (const auto& [type, key] : {std::pair{"gpt_neox", "hidden_act"}, std::pair{"falcon", "activation"},
                                  std::pair{"bloom", "hidden_act"}, std::pair{"mpt", "hidden_act"}})
    if (reference.config().model_type == type && config.value(key, std::string("gelu")) == "gelu")
      config[key] = "gelu_ggml", ggml_gelu = true;
  // llama.cpp's mamba graph: the layers' eps for FalconMamba's dt/B/C norms too (one key for both)
  if (reference.config().model_type == "falcon_mamba") config["mixer_rms_eps"] = reference.config().norm_eps;
  const std::string arch = gguf_arch_of(reference.config().model_type);
  if (gguf_embedding_arch(arch)) {
    // llama.cpp's bert graph runs ggml's GELU whatever the activation says, and is the base model:
    // the masked-LM form's weights come back without their scope (the file has no MLM head).
    const std::string& type = reference.config().model_type;
    const char* act = type == "distilbert"   ? "activation"
                      : type == "modernbert" ? "hidden_activation"
                                             : "hidden_act";
    if (config.value(act, std::string("gelu")) == "gelu") config[act] = "gelu_ggml";
    ggml_gelu = true;
    as_bert_model(config, weights);
  }
  return config;
}

}  // namespace

void as_bert_model(nlohmann::json& config, std::map<std::string, Tensor>& weights) {
  struct Base {
    const char* model_type;
    const char* architecture;
    bool pooler;
  };
  static const Base kBases[] = {
      {"bert", "BertModel", true},           {"distilbert", "DistilBertModel", false},
      {"roberta", "RobertaModel", true},     {"xlm-roberta", "XLMRobertaModel", true},
      {"camembert", "CamembertModel", true}, {"modernbert", "ModernBertModel", false}};
  const std::string type = config.value("model_type", std::string("bert"));
  const Base* base = &kBases[0];
  for (const Base& b : kBases)
    if (type == b.model_type) base = &b;
  config["architectures"] = {base->architecture};
  // The masked-LM form's: the `<model_type>.` scope only (its MLM head is not the base model's); ModernBERT's
  // is `model.`.
  const std::string scope = type == "modernbert" ? "model." : gguf::bert_scope(type);
  const bool scoped =
      std::any_of(weights.begin(), weights.end(), [&](const auto& w) { return w.first.starts_with(scope); });
  std::map<std::string, Tensor> kept;
  for (auto& [name, t] : weights)
    if (!scoped || name.starts_with(scope)) kept[scoped ? name.substr(scope.size()) : name] = std::move(t);
  weights = std::move(kept);
  if (!base->pooler) return;
  // The pooler, which the file does not carry (the converter drops it; the masked-LM form has none) and
  // last_hidden_state does not use: zeros, so that the base model builds.
  const int64_t E = config.at("hidden_size").get<int64_t>();
  weights.emplace("pooler.dense.weight", Tensor::zeros({E, E}));
  weights.emplace("pooler.dense.bias", Tensor::zeros({E}));
}

namespace {

// A shape without its leading 1s (one dim kept): llama-quantize's files write ggml_n_dims dims.
Shape squeezed(const Shape& s) {
  size_t lead = 0;
  while (lead + 1 < s.size() && s[lead] == 1) ++lead;
  return Shape(s.begin() + static_cast<ptrdiff_t>(lead), s.end());
}

}  // namespace

GgufReadBack read_back_gguf(const GgufReader& r, const Model& reference) {
  GgufReadBack out;
  // A llama-quantize mix (Q4_K_M, Q5_K_M): the plan is its base type with the mix (gguf_mix.cpp)
  const auto mix = gguf::k_mix_of_file_type(r.metadata().value("general.file_type", uint32_t{0}));
  out.matrix = mix ? (*mix == gguf::KMix::Q4_K_M ? GgmlType::Q4_K : GgmlType::Q5_K) : matrix_of(r);
  gguf::File plan;
  std::map<std::string, gguf::Back> backs;
  gguf::plan_model(plan, reference, out.matrix, backs);
  if (mix) gguf::apply_k_mix(plan, gguf_arch_of(reference.config().model_type), reference.config(), *mix);
  // The table: every planned tensor present with its shape and type, nothing else.
  std::map<std::string, const GgufTensor*> in_file;
  for (const GgufTensor& t : r.tensors()) in_file[t.name] = &t;
  for (const auto& [name, shape, type] : plan.table()) {
    auto it = in_file.find(name);
    if (it == in_file.end()) {
      out.problems.push_back(fmt::format("expected tensor {} in the file, got none", name));
      continue;
    }
    const GgufTensor& t = *it->second;
    if (squeezed(t.shape) != squeezed(shape) || t.type != type)
      out.problems.push_back(fmt::format("expected {} as {} {}, got {} {}", name, ggml_type_name(type),
                                         shape_to_string(shape), ggml_type_name(t.type),
                                         shape_to_string(t.shape)));
    in_file.erase(it);
  }
  for (const auto& [name, t] : in_file)
    out.problems.push_back(fmt::format("expected no tensor {}, got one", name));
  // The weights back, each compared with the reference's.
  gguf::Into into{reference.weights(), {}, {}};
  std::map<std::string, GgmlType> type_of;
  std::map<std::string, Shape>
      planned_shape;  // the torch shape a tensor was planned in (the file may squeeze it)
  for (const auto& [name, shape, type] : plan.table()) planned_shape[name] = shape;
  for (const GgufTensor& t : r.tensors()) {
    auto b = backs.find(t.name);
    if (b == backs.end()) continue;  // derived from the config (rope_freqs) or not planned (a problem above)
    into.touched.clear();
    const auto planned = planned_shape.find(t.name);
    b->second(r.decode(t).reshape(planned == planned_shape.end() ? t.shape : planned->second), into);
    for (const std::string& hf : into.touched)  // a weight from several tensors: the coarsest type's bound
      if (!type_of.count(hf) || weight_bound(t.type) > weight_bound(type_of[hf])) type_of[hf] = t.type;
  }
  nlohmann::json worst = nlohmann::json::object();
  for (const auto& [hf, got] : into.out) {
    const std::vector<float> want = reference.weights().get(hf).to_floats(), have = got.to_floats();
    double amax = 0, err = 0;
    for (size_t i = 0; i < want.size(); i++) {
      amax = std::max(amax, std::fabs(static_cast<double>(want[i])));
      err = std::max(err, std::fabs(static_cast<double>(want[i]) - have[i]));
    }
    const GgmlType t = type_of.count(hf) ? type_of[hf] : GgmlType::F32;
    const double rel = amax > 0 ? err / amax : err, bound = weight_bound(t);
    nlohmann::json& w = worst[ggml_type_name(t)];
    if (w.is_null()) w = {{"weights", 0}, {"max_rel_error", 0.0}, {"bound", bound}, {"worst", ""}};
    w["weights"] = w["weights"].get<int>() + 1;
    if (rel > w["max_rel_error"].get<double>()) w["max_rel_error"] = rel, w["worst"] = hf;
    if (rel > bound)
      out.problems.push_back(
          fmt::format("expected {} within {:.3g} of the reference's max |w| ({}), got {:.3g}", hf, bound,
                      ggml_type_name(t), rel));
  }
  out.weights = worst;
  nlohmann::json config = file_config(reference, into.out, out.ggml_gelu);
  out.model = make_model(config, io::WeightStore::from_tensors(std::move(into.out)));
  return out;
}

}  // namespace hfx
