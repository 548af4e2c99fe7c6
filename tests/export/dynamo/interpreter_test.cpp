// Reads a written models/model.json back and runs it with hfx's own kernels — each ATen target is
// mapped back to the op it came from — on the archive's sample inputs, against the eager model.
// Agreement to 1e-5 shows the serialized arguments are complete (names, order, defaults, symbols).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "export/dynamo/dynamo_exporter.h"
#include "export/dynamo/dynamo_interpreter.h"
#include "export/dynamo/dynamo_support.h"
#include "export/dynamo/program.h"
#include "export/dynamo/pt2_archive.h"
#include "export/dynamo/torch_save.h"
#include "hfx/models/quantize_model.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/op_schema.h"
#include "models/model_test_util.h"
#include "verify/verify_internal.h"

namespace hfx::dynamo {
namespace {

using namespace testing;
namespace fs = std::filesystem;

using interp::dtype_of;
using interp::Interpreter;

Tensor read_payload(const Archive& ar, const std::string& dir, const json& meta) {
  std::string raw = ar.read(dir + meta["path_name"].get<std::string>());
  Shape s;
  for (const auto& d : meta["tensor_meta"]["sizes"]) s.push_back(d["as_int"]);
  Tensor t = Tensor::zeros(s, dtype_of(meta["tensor_meta"]["dtype"]));
  EXPECT_EQ(raw.size(), t.nbytes());
  std::memcpy(t.raw(), raw.data(), std::min(raw.size(), t.nbytes()));
  return t;
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  auto x = a.to_floats(), y = b.to_floats();
  double m = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); i++)
    m = std::max(m, static_cast<double>(std::fabs(x[i] - y[i])));
  return m;
}

// Runs `component`.pt2 of the export in `out` on its sample inputs and the eager model on the same ones:
// the max abs difference of the logits and of the worst present key/value.
std::pair<double, double> interpret_against_eager(const CausalLM& model, const fs::path& out,
                                                  const char* component) {
  Archive ar = Archive::open((out / (std::string(component) + ".pt2")).string());
  json ep = ar.read_json("models/model.json");
  const json& graph = ep["graph_module"]["graph"];
  Interpreter it;
  // Placeholders: parameters and constants from the archive, user inputs from the sample inputs.
  json wcfg = ar.read_json(weights_config_path("model"))["config"];
  json ccfg = ar.read_json(constants_config_path("model"))["config"];
  PyObj samples = torch_load(ar.read(sample_inputs_path("model")));
  std::vector<Tensor> flat;
  for (const auto& [k, v] : samples.items[1].entries) {
    if (v.kind == PyObj::Kind::Tensor)
      flat.push_back(v.t);
    else
      for (const auto& layer : v.items)
        for (const auto& leaf : layer.items) flat.push_back(leaf.t);
  }
  size_t user = 0;
  const auto& specs = ep["graph_module"]["signature"]["input_specs"];
  for (size_t i = 0; i < specs.size(); i++) {
    std::string name = graph["inputs"][i]["as_tensor"]["name"];
    if (specs[i].contains("parameter"))
      it.tensors[name] =
          read_payload(ar, "data/weights/", wcfg[specs[i]["parameter"]["parameter_name"].get<std::string>()]);
    else if (specs[i].contains("tensor_constant"))
      it.tensors[name] =
          read_payload(ar, "data/constants/",
                       ccfg[specs[i]["tensor_constant"]["tensor_constant_name"].get<std::string>()]);
    else
      it.tensors[name] = flat.at(user++);
  }
  EXPECT_EQ(user, flat.size());
  it.run(graph);

  // Eager on the same inputs.
  EagerBuilder b;
  ForwardArgs args;
  std::map<std::string, Tensor> named;
  for (const auto& [k, v] : samples.items[1].entries)
    if (v.kind == PyObj::Kind::Tensor) named[k] = v.t;
  args.input_ids = b.wrap(named.at("input_ids"));
  args.attention_mask = b.wrap(named.at("attention_mask"));
  args.position_ids = b.wrap(named.at("position_ids"));
  DynamicCache cache(model.cache_layout());
  for (const auto& [k, v] : samples.items[1].entries)
    if (k == "past_key_values")
      for (size_t l = 0; l < v.items.size(); l++)
        cache.set_past(static_cast<int>(l), b.wrap(v.items[l].items[0].t), b.wrap(v.items[l].items[1].t));
  args.cache = &cache;
  ForwardOut fo = model.forward(b, args);

  std::vector<Tensor> got;
  for (const auto& o : graph["outputs"]) got.push_back(it.tensors.at(o["as_tensor"]["name"]));
  EXPECT_EQ(got.size(), 1 + 2 * model.cache_layout().size());
  if (got.size() != 1 + 2 * model.cache_layout().size()) return {INFINITY, INFINITY};
  double kv = 0;
  for (size_t l = 0; l < model.cache_layout().size(); l++) {
    kv = std::max(kv, max_diff(got[1 + 2 * l], cache.key(static_cast<int>(l)).tensor()));
    kv = std::max(kv, max_diff(got[2 + 2 * l], cache.value(static_cast<int>(l)).tensor()));
  }
  return {max_diff(got[0], fo.logits.tensor()), kv};
}

class DynamoInterpret : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamoInterpret, WrittenProgramMatchesEager) {
  const Architecture& arch = architecture(GetParam());
  auto model = tiny_model(arch);
  fs::path out =
      fs::temp_directory_path() / ("hfx_dynamo_interp_" + GetParam() + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  for (const char* component : {"prefill", "decode"}) {
    SCOPED_TRACE(component);
    auto [logits, kv] = interpret_against_eager(*model, out, component);
    EXPECT_LE(logits, 1e-5) << "logits";
    EXPECT_LE(kv, 1e-5) << "present key/value";
  }
  fs::remove_all(out);
}

// --quantize int4 (asymmetric, groups of 32) and int8 (symmetric): the program holds the codes and
// de-quantizes them in the graph (hfx.linear_q's decomposition, a stage-2 patch); run by the interpreter it
// equals the eager model quantized the same way (the fused kernel over the same codes): measured worst over
// the architectures 4.2e-7 (logits) and 2.1e-6 (key/value, gemma3_text), within the float programs' 1e-5.
TEST_P(DynamoInterpret, QuantizedProgramMatchesEagerQuantized) {
  const Architecture& arch = architecture(GetParam());
  auto model = tiny_model(arch);
  for (const char* method : {"int4", "int8"}) {
    SCOPED_TRACE(method);
    DynamoConfig cfg;
    cfg.from_json({{"quantize", {{"method", method}, {"group_size", 32}, {"symmetric", method[3] == '8'}}}});
    int count = 0;
    auto qm = quant::quantize_model(*model, cfg.quantize, &count);
    if (count == 0) GTEST_SKIP() << "no linear weight of " << GetParam() << " has K a multiple of 32";
    fs::path out = fs::temp_directory_path() /
                   ("hfx_dynamo_q_" + GetParam() + method + "_" + std::to_string(::getpid()));
    fs::remove_all(out);
    make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
    Archive ar = Archive::open((out / "decode.pt2").string());
    const std::string doc = ar.read("models/model.json");
    EXPECT_EQ(doc.find("hfx.linear_q"), std::string::npos);
    EXPECT_NE(doc.find("torch.ops.aten.embedding.default"), std::string::npos);
    for (const char* component : {"prefill", "decode"}) {
      SCOPED_TRACE(component);
      auto [logits, kv] = interpret_against_eager(as_causal_lm(*qm), out, component);
      EXPECT_LE(logits, 1e-5) << "logits";
      EXPECT_LE(kv, 1e-5) << "present key/value";
      RecordProperty(std::string("max_abs_logits_") + method + "_" + component,
                     fmt::format("{:.3g}", logits));
      RecordProperty(std::string("max_abs_kv_") + method + "_" + component, fmt::format("{:.3g}", kv));
    }
    fs::remove_all(out);
  }
}

// Encoder-decoder archives (encoder_model, decoder_model, decoder_with_past_model): the written program
// run by the interpreter on its sample inputs equals the model's own component call on them, every
// output by name.
class DynamoInterpretSeq2Seq : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(DynamoInterpretSeq2Seq, WrittenProgramsMatchEagerComponents) {
  const auto& [arch, preset] = GetParam();
  auto model = tiny_any_model(architecture(arch), preset);
  fs::path out = fs::temp_directory_path() /
                 ("hfx_dynamo_interp_s2s_" + arch + preset + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  for (const char* program : {"encoder_model", "decoder_model", "decoder_with_past_model"}) {
    SCOPED_TRACE(program);
    Archive ar = Archive::open((out / (std::string(program) + ".pt2")).string());
    json ep = ar.read_json("models/model.json");
    const json& graph = ep["graph_module"]["graph"];
    Interpreter it;
    json wcfg = ar.read_json(weights_config_path("model"))["config"];
    json ccfg = ar.read_json(constants_config_path("model"))["config"];
    PyObj samples = torch_load(ar.read(sample_inputs_path("model")));
    EagerBuilder b;
    NamedVars inputs;
    std::vector<Tensor> flat;
    const ComponentDecl decl =
        model->component(std::string(program) == "encoder_model" ? "encoder" : "decoder");
    for (const auto& [k, v] : samples.items[1].entries) {
      ASSERT_EQ(v.kind, PyObj::Kind::Tensor) << k << ": encoder-decoder cache leaves are flat keywords";
      flat.push_back(v.t);
      std::string name = k;  // the keyword is the input's name as a Python identifier (kwarg_name)
      for (const InputDecl& d : decl.inputs)
        if (kwarg_name(d.name) == k) name = d.name;
      inputs.emplace_back(name, b.wrap(v.t));
    }
    size_t user = 0;
    const auto& specs = ep["graph_module"]["signature"]["input_specs"];
    for (size_t i = 0; i < specs.size(); i++) {
      std::string name = graph["inputs"][i]["as_tensor"]["name"];
      if (specs[i].contains("parameter"))
        it.tensors[name] = read_payload(ar, "data/weights/",
                                        wcfg[specs[i]["parameter"]["parameter_name"].get<std::string>()]);
      else if (specs[i].contains("tensor_constant"))
        it.tensors[name] =
            read_payload(ar, "data/constants/",
                         ccfg[specs[i]["tensor_constant"]["tensor_constant_name"].get<std::string>()]);
      else
        it.tensors[name] = flat.at(user++);
    }
    ASSERT_EQ(user, flat.size());
    it.run(graph);
    const bool encoder = std::string(program) == "encoder_model";
    NamedVars ref = model->call(encoder ? "encoder" : "decoder", b, inputs, CallOptions{0, true});
    ASSERT_EQ(graph["outputs"].size(), ref.size());
    for (size_t i = 0; i < ref.size(); i++) {
      const Tensor& got = it.tensors.at(graph["outputs"][i]["as_tensor"]["name"]);
      for (float x : got.to_floats()) ASSERT_TRUE(std::isfinite(x)) << ref[i].first;  // max_diff skips NaN
      EXPECT_LE(max_diff(got, ref[i].second.tensor()), 1e-5) << ref[i].first;
    }
  }
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(EncoderDecoder, DynamoInterpretSeq2Seq,
                         ::testing::Values(std::pair<std::string, std::string>{"t5", "tiny"},
                                           std::pair<std::string, std::string>{"t5", "tiny-gated"},
                                           std::pair<std::string, std::string>{"bart", "tiny"},
                                           std::pair<std::string, std::string>{"marian", "tiny"}),
                         [](const auto& i) {
                           return i.param.first + (i.param.second == "tiny" ? "" : "_gated");
                         });

// Decoders with a KV cache (past_key_values as a list of (key, value) tuples); the flat leaves of
// state-space and hybrid decoders are checked by DynamoInterpretStateLeaves below.
std::vector<std::string> arch_names() {
  std::vector<std::string> v;
  for (const Architecture* a : all_architectures())
    if ((a->heads.empty() || a->heads.front().first == "causal_lm") && test::has_kv_cache_only(*a))
      v.push_back(a->model_type);
  return v;
}

// Decoders whose cache is not all KV pairs (mamba's conv/ssm states, lfm2's conv states beside the
// attention layers' keys/values): prefill.pt2 and decode.pt2 (every leaf a flat keyword, past_conv_N,
// past_ssm_N: the leaf's name as a Python identifier) run by the interpreter on their sample inputs equal the
// model's component `model` on them, every output by name.
std::vector<std::string> state_leaf_arch_names() {
  std::vector<std::string> v;
  for (const Architecture* a : all_architectures())
    if ((a->heads.empty() || a->heads.front().first == "causal_lm") && !test::has_kv_cache_only(*a))
      v.push_back(a->model_type);
  return v;
}

class DynamoInterpretStateLeaves : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamoInterpretStateLeaves, WrittenProgramsMatchEagerComponent) {
  auto model = tiny_model(architecture(GetParam()));
  fs::path out =
      fs::temp_directory_path() / ("hfx_dynamo_interp_" + GetParam() + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  for (const char* program : {"prefill", "decode"}) {
    SCOPED_TRACE(program);
    Archive ar = Archive::open((out / (std::string(program) + ".pt2")).string());
    json ep = ar.read_json("models/model.json");
    const json& graph = ep["graph_module"]["graph"];
    Interpreter it;
    json wcfg = ar.read_json(weights_config_path("model"))["config"];
    json ccfg = ar.read_json(constants_config_path("model"))["config"];
    PyObj samples = torch_load(ar.read(sample_inputs_path("model")));
    EagerBuilder b;
    NamedVars inputs;
    std::vector<Tensor> flat;
    for (const auto& [k, v] : samples.items[1].entries) {
      if (k == "past_key_values") {  // a hybrid's attention layers: (key, value) per layer, () elsewhere
        for (size_t l = 0; l < v.items.size(); l++)
          for (size_t j = 0; j < v.items[l].items.size(); j++) {
            flat.push_back(v.items[l].items[j].t);
            std::string name = "past_key_values." + std::to_string(l) + (j ? ".value" : ".key");
            inputs.emplace_back(name, b.wrap(flat.back()));
          }
        continue;
      }
      ASSERT_EQ(v.kind, PyObj::Kind::Tensor) << k << ": state leaves are flat keywords";
      flat.push_back(v.t);
      // The keyword is the leaf's name as a Python identifier (past_conv.0 -> past_conv_0: kwarg_name).
      std::string leaf = k;
      for (const CacheLeafDecl& l : model->component("model").cache)
        if (kwarg_name(l.past_input) == k) leaf = l.past_input;
      inputs.emplace_back(leaf, b.wrap(v.t));
    }
    if (std::string(program) == "decode") {
      for (const CacheLeafDecl& l : model->component("model").cache)
        EXPECT_TRUE(get(inputs, l.past_input).defined()) << l.past_input;
    }
    size_t user = 0;
    const auto& specs = ep["graph_module"]["signature"]["input_specs"];
    for (size_t i = 0; i < specs.size(); i++) {
      std::string name = graph["inputs"][i]["as_tensor"]["name"];
      if (specs[i].contains("parameter"))
        it.tensors[name] = read_payload(ar, "data/weights/",
                                        wcfg[specs[i]["parameter"]["parameter_name"].get<std::string>()]);
      else if (specs[i].contains("tensor_constant"))
        it.tensors[name] =
            read_payload(ar, "data/constants/",
                         ccfg[specs[i]["tensor_constant"]["tensor_constant_name"].get<std::string>()]);
      else
        it.tensors[name] = flat.at(user++);
    }
    ASSERT_EQ(user, flat.size());
    // The treespecs a torch consumer unflattens with hold exactly the program's user inputs / outputs.
    std::function<int(const json&)> leaves = [&](const json& spec) {
      int n = spec["type"].is_null() ? 1 : 0;
      for (const auto& c : spec["children_spec"]) n += leaves(c);
      return n;
    };
    const json& sig = ep["graph_module"]["module_call_graph"][0]["signature"];
    EXPECT_EQ(leaves(json::parse(sig["in_spec"].get<std::string>())[1]), static_cast<int>(flat.size()));
    EXPECT_EQ(leaves(json::parse(sig["out_spec"].get<std::string>())[1]),
              static_cast<int>(graph["outputs"].size()));
    it.run(graph);
    NamedVars ref = model->call("model", b, inputs, CallOptions{0, true});
    ASSERT_EQ(graph["outputs"].size(), ref.size());
    for (size_t i = 0; i < ref.size(); i++) {
      const Tensor& got = it.tensors.at(graph["outputs"][i]["as_tensor"]["name"]);
      for (float x : got.to_floats()) ASSERT_TRUE(std::isfinite(x)) << ref[i].first;
      EXPECT_LE(max_diff(got, ref[i].second.tensor()), 1e-5) << ref[i].first;
    }
  }
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(StateLeaves, DynamoInterpretStateLeaves,
                         ::testing::ValuesIn(state_leaf_arch_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

INSTANTIATE_TEST_SUITE_P(All, DynamoInterpret, ::testing::ValuesIn(arch_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// --dtype f16/bf16 on dynamo: the archive's parameters hold that dtype (one _to_copy widens each), and the
// program matches the f32 eager model within the verify tolerances of that precision.
TEST(DynamoDtype, HalfWeightsAreStoredHalfAndMatchEagerWithinTheirTolerance) {
  auto model = tiny_model(architecture("llama"));
  for (auto [name, st] : {std::pair{"f16", 6}, std::pair{"bf16", 13}}) {
    SCOPED_TRACE(name);
    fs::path out = fs::temp_directory_path() /
                   (std::string("hfx_dynamo_dtype_") + name + "_" + std::to_string(::getpid()));
    fs::remove_all(out);
    DynamoConfig cfg;
    cfg.dtype = name;
    make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
    Archive ar = Archive::open((out / "decode.pt2").string());
    json w = ar.read_json(weights_config_path("model"))["config"];
    ASSERT_TRUE(w.contains("model.layers.0.self_attn.q_proj.weight"));
    EXPECT_EQ(w["model.layers.0.self_attn.q_proj.weight"]["tensor_meta"]["dtype"], st);
    const verify::detail::Tolerance tol = verify::detail::tolerance_for(name, DType::F32);
    for (const char* component : {"prefill", "decode"}) {
      auto [logits, kv] = interpret_against_eager(*model, out, component);
      std::printf("[measured] dynamo %s %s: logits max abs %.3g, present max abs %.3g\n", name, component,
                  logits, kv);
      EXPECT_LE(logits, tol.logits_abs) << component;
      EXPECT_LE(kv, tol.kv_abs) << component;
      EXPECT_GT(logits, 0) << component
                           << ": rounded weights must change the logits (else the dtype did nothing)";
    }
    fs::remove_all(out);
  }
}

// Encoder-only models: model.pt2 read back and run by the interpreter on its sample inputs equals the
// eager model's output (last_hidden_state or logits) to 1e-5.
class DynamoInterpretEncoder : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(DynamoInterpretEncoder, WrittenProgramMatchesEager) {
  const auto& [arch, head] = GetParam();
  auto model = tiny_encoder(arch, head);
  fs::path out = fs::temp_directory_path() / ("hfx_dynamo_interp_enc_" + encoder_case_name({GetParam(), 0}) +
                                              "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  Archive ar = Archive::open((out / "model.pt2").string());
  json ep = ar.read_json("models/model.json");
  const json& graph = ep["graph_module"]["graph"];
  Interpreter it;
  json wcfg = ar.read_json(weights_config_path("model"))["config"];
  json ccfg = ar.read_json(constants_config_path("model"))["config"];
  PyObj samples = torch_load(ar.read(sample_inputs_path("model")));
  std::vector<Tensor> flat;
  EagerBuilder b;
  NamedVars named;
  for (const auto& [k, v] : samples.items[1].entries) {
    flat.push_back(v.t);
    named.emplace_back(k, b.wrap(v.t));
  }
  size_t user = 0;
  const auto& specs = ep["graph_module"]["signature"]["input_specs"];
  for (size_t i = 0; i < specs.size(); i++) {
    std::string name = graph["inputs"][i]["as_tensor"]["name"];
    if (specs[i].contains("parameter"))
      it.tensors[name] =
          read_payload(ar, "data/weights/", wcfg[specs[i]["parameter"]["parameter_name"].get<std::string>()]);
    else if (specs[i].contains("tensor_constant"))
      it.tensors[name] =
          read_payload(ar, "data/constants/",
                       ccfg[specs[i]["tensor_constant"]["tensor_constant_name"].get<std::string>()]);
    else
      it.tensors[name] = flat.at(user++);
  }
  ASSERT_EQ(user, flat.size());
  it.run(graph);
  NamedVars ref = model->call("model", b, named);
  ASSERT_EQ(graph["outputs"].size(), 1u);
  double d = max_diff(it.tensors.at(graph["outputs"][0]["as_tensor"]["name"]), ref.at(0).second.tensor());
  EXPECT_LE(d, 1e-5);
  std::printf("  [%s %s] max |pt2 interpreted - eager| = %.3g\n", arch.c_str(), head.c_str(), d);
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Encoders, DynamoInterpretEncoder, ::testing::ValuesIn(encoder_arch_heads()),
                         encoder_case_name);

}  // namespace
}  // namespace hfx::dynamo
