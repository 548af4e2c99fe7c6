// granitemoehybrid (GraniteMoeHybridForCausalLM) in the model library (the suites shared with the other
// state-space models are StateSpace in tests/models/mamba_test.cpp):
//   * goldens from the real transformers (tests/data/goldens/granitemoehybrid-lm.json, made by
//     `HFO_RUN=tools/hf_goldens/run_granitemoehybrid_oracle.sh tools/hf_goldens/make_nocache_goldens.sh
//     ./build/hfx granitemoehybrid` on the 4.52.0.dev0 tree that added the model): last-position logits of
//     prompts of 1, 6 and 13 tokens and 32 greedy tokens, which transformers decoded by full recomputation
//     and hfx decodes with its per-layer-type cache (conv/ssm leaves on mamba layers, KV on attention);
//   * the leaves keep their layer type and the names Transformers.js reads (past_conv.N / past_ssm.N,
//     past_key_values.N.key/value);
//   * config.json's "attention" is hfx's full_attention; an unknown type names the layer; bad weights name
//     the tensor.
#include <gtest/gtest.h>

#include "hfx/core/error.h"
#include "models/ssm_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;

TEST(GraniteMoeHybrid, MatchesTransformersGoldens) {
  auto [worst_logit, worst_step] = check_nocache_goldens("granitemoehybrid");
  EXPECT_LE(worst_logit, 1e-4);
  EXPECT_LE(worst_step, 1e-4);
}

TEST(GraniteMoeHybrid, LeavesByLayerType) {
  auto m = tiny_in_memory("granitemoehybrid");
  ComponentDecl c = m->component("model");
  std::vector<std::tuple<std::string, std::string, std::string>> got;
  for (const auto& l : c.cache) got.emplace_back(l.past_input, l.present_output, l.layer_type);
  const std::vector<std::tuple<std::string, std::string, std::string>> want = {
      {"past_conv.0", "present_conv.0", "mamba"},
      {"past_ssm.0", "present_ssm.0", "mamba"},
      {"past_key_values.1.key", "present.1.key", "full_attention"},
      {"past_key_values.1.value", "present.1.value", "full_attention"},
      {"past_conv.2", "present_conv.2", "mamba"},
      {"past_ssm.2", "present_ssm.2", "mamba"},
      {"past_conv.3", "present_conv.3", "mamba"},
      {"past_ssm.3", "present_ssm.3", "mamba"}};
  EXPECT_EQ(got, want);
  for (const auto& i : c.inputs) {
    if (i.name == "past_key_values.1.key") {
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "2", "past_sequence_length", "16"}));
    }
    if (i.name == "past_ssm.2") {
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "4", "32", "16"}));
    }
    EXPECT_NE(i.name, "position_ids") << "NoPE: no position input";
  }
}

std::string config_error(json cfg) {
  try {
    parse_model_config(cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GraniteMoeHybrid, ConfigErrorsNameTheLayer) {
  json cfg = architecture("granitemoehybrid").tiny_config("tiny");
  EXPECT_EQ(parse_model_config(cfg).layer_types,
            (std::vector<std::string>{"mamba", "full_attention", "mamba", "mamba"}));
  cfg["layer_types"] = {"mamba", "attention", "conv", "mamba"};
  EXPECT_NE(config_error(cfg).find(
                "[model] expected a layer type granitemoehybrid runs (mamba, full_attention), got 'conv' "
                "at layer 2"),
            std::string::npos)
      << config_error(cfg);
  cfg["layer_types"] = {"mamba", "attention", "mamba", "hyena"};
  EXPECT_NE(config_error(cfg).find("got 'hyena' at layer 3"), std::string::npos) << config_error(cfg);
  cfg["layer_types"] = {"mamba", "attention", "mamba"};
  EXPECT_NE(config_error(cfg).find("expected 4 layer_types (num_hidden_layers), got 3"), std::string::npos)
      << config_error(cfg);
  cfg["layer_types"] = {"mamba", "attention", "mamba", "mamba"};
  cfg["num_experts_per_tok"] = 5;
  EXPECT_NE(config_error(cfg).find("num_experts_per_tok"), std::string::npos) << config_error(cfg);
}

TEST(GraniteMoeHybrid, BadWeightsNameTheTensor) {
  json cfg = architecture("granitemoehybrid").tiny_config("tiny");
  ModelConfig mc = parse_model_config(cfg);
  auto w = tiny_weights(mc, DType::F32, 0);
  w["model.layers.2.mamba.dt_bias"] = Tensor::zeros({8}, DType::F32);
  try {
    make_causal_lm(cfg, io::WeightStore::from_tensors(w));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("expected tensor 'model.layers.2.mamba.dt_bias' of shape [4], got [8]"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hfx::test
