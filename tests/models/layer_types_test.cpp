// Every layer type config.json's layer_types may name (kLayerTypes) is run by some architecture, and
// changes what it computes (issue 45: a layer type accepted with no implementation is a label that does
// nothing). For each type, each decoder-only architecture's tiny config gets it at layer 1: the
// architecture either refuses it (the [model] error of set_layer_types) or builds, runs a forward, and
// gives other logits than its default layer_types. A type no architecture runs fails the test: remove it
// from the vocabulary or implement it.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "hfx/core/error.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "models/blocks.h"
#include "models/model_test_util.h"

namespace hfx::test {
namespace {

// Logits of a short forward, or nothing when the config is refused.
std::optional<std::vector<float>> logits_of(const nlohmann::json& cfg) {
  std::unique_ptr<Model> m;
  try {
    ModelConfig mc = parse_model_config(cfg);
    m = make_model(cfg, io::WeightStore::from_tensors(tiny_weights(mc, DType::F32, 0)));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[model] expected"), std::string::npos) << e.what();
    return std::nullopt;
  }
  auto* lm = dynamic_cast<CausalLM*>(m.get());
  if (!lm) return std::nullopt;
  EagerBuilder b;
  ForwardArgs a;
  a.input_ids = b.wrap(Tensor::from_ints({1, 6}, {5, 9, 33, 2, 100, 7}));
  Tensor t = lm->forward(b, a).logits.tensor().contiguous();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(LayerTypes, EveryTypeOfTheVocabularyRunsSomewhereAndChangesTheModel) {
  for (const std::string& type : models::kLayerTypes) {
    std::vector<std::string> runs;
    for (const Architecture* arch : all_architectures()) {
      if (!is_decoder_only(*arch)) continue;
      nlohmann::json cfg = arch->tiny_config("tiny");
      const ModelConfig base = parse_model_config(cfg);
      if (base.layer_types.size() < 2 || base.layer_types[1] == type) continue;
      // A window shorter than the 6-token prompt, so sliding and full attention differ.
      if (type == "sliding_attention" || base.sliding_window > 0) cfg["sliding_window"] = 2;
      nlohmann::json changed = cfg;
      changed["layer_types"] = base.layer_types;
      changed["layer_types"][1] = type;
      auto got = logits_of(changed);
      if (!got) continue;
      runs.push_back(arch->model_type);
      // An alias (granitemoehybrid reads 5.x's linear_attention as its mamba layers) is the same layer.
      if (parse_model_config(changed).layer_types[1] == base.layer_types[1]) continue;
      auto want = logits_of(cfg);
      ASSERT_TRUE(want.has_value()) << arch->model_type;
      double diff = 0;
      for (size_t i = 0; i < got->size() && i < want->size(); i++)
        diff = std::max(diff, static_cast<double>(std::fabs((*got)[i] - (*want)[i])));
      EXPECT_GT(diff, 0.0) << arch->model_type << ": layer 1 as '" << type << "' computes the same logits";
    }
    EXPECT_FALSE(runs.empty()) << "'" << type << "' is in kLayerTypes but no architecture runs it";
    std::string list;
    for (const auto& r : runs) list += (list.empty() ? "" : ", ") + r;
    std::printf("  [layer types] %s: run by %s\n", type.c_str(), list.c_str());
  }
}

}  // namespace
}  // namespace hfx::test
