// export_for_generation from real calls: the generation loop of every architecture records the same calls
// (components, kinds, names, dtypes, shapes, cache flags) whether it runs eagerly with greedy tokens or on
// shapes only; the programs planned from the calls make dynamic exactly the dims that vary between them.
#include <gtest/gtest.h>

#include "hfx/capture/capture.h"
#include "hfx/models/tiny.h"

using namespace hfx;

namespace {

std::unique_ptr<Model> tiny(const std::string& arch) {
  nlohmann::json cfg = tiny_model_config(arch, TinyOptions{});
  ModelConfig mc = architecture(arch).parse_config(cfg);
  return make_model(cfg, io::WeightStore::from_tensors(tiny_weights(mc, DType::F32, 0)));
}

std::vector<std::string> arch_names() {
  std::vector<std::string> r;
  for (const Architecture* a : all_architectures()) r.push_back(a->model_type);
  return r;
}

const ProgramSpec& program(const std::vector<ProgramSpec>& ps, const std::string& name) {
  for (const auto& p : ps)
    if (p.name == name) return p;
  throw std::runtime_error("no program " + name);
}

class Recording : public testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Recording, EagerAndShapeOnlyRecordTheSameCalls) {
  auto m = tiny(GetParam());
  auto samples = default_generation_samples(m->config().vocab_size);
  std::vector<RecordedCall> eager = record_generation(*m, samples, true);
  std::vector<RecordedCall> shapes = record_generation(*m, samples, false);
  ASSERT_EQ(eager.size(), shapes.size());
  ASSERT_FALSE(eager.empty());
  for (size_t i = 0; i < eager.size(); i++) {
    SCOPED_TRACE(i);
    EXPECT_EQ(eager[i].component, shapes[i].component);
    EXPECT_EQ(eager[i].kind, shapes[i].kind);
    ASSERT_EQ(eager[i].inputs.size(), shapes[i].inputs.size());
    for (size_t j = 0; j < eager[i].inputs.size(); j++) {
      const auto &a = eager[i].inputs[j], &b = shapes[i].inputs[j];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.dtype, b.dtype);
      EXPECT_EQ(a.shape, b.shape) << a.name;
      EXPECT_EQ(a.cache, b.cache) << a.name;
      EXPECT_TRUE(a.value.defined());
      EXPECT_FALSE(b.value.defined());
    }
  }
  // Every program the loop declares is planned from these calls.
  std::vector<ProgramSpec> plan = plan_generation(*m, shapes, CaptureOptions{});
  EXPECT_FALSE(plan.empty());
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, Recording, testing::ValuesIn(arch_names()));

// The decoder-only loop on the default samples: batch 1 × 5 tokens and batch 2 × (7, 4) tokens, three
// new tokens each → prefill [1,5], decode over past 5 and 6; prefill [2,7], decode over past 7 and 8.
TEST(RecordingDecoderOnly, CallsAndDerivedDims) {
  auto m = tiny("llama");
  std::vector<RecordedCall> calls = record_generation(*m, default_generation_samples(m->config().vocab_size));
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[0].kind, "prefill");
  EXPECT_EQ(calls[0].inputs.size(), 3u);  // no past in the first call
  EXPECT_EQ(calls[0].inputs[0].shape, (Shape{1, 5}));
  EXPECT_EQ(calls[2].kind, "decode");
  EXPECT_EQ(calls[2].inputs[1].shape, (Shape{1, 7}));  // attention_mask spans past 6 + 1 new token
  const RecordedInput& past = calls[2].inputs[3];
  EXPECT_EQ(past.name, "past_key_values.0.key");
  EXPECT_TRUE(past.cache);
  EXPECT_EQ(past.shape[2], 6);
  EXPECT_EQ(calls[3].inputs[0].shape, (Shape{2, 7}));

  std::vector<ProgramSpec> plan = plan_generation(*m, calls, CaptureOptions{});
  const ProgramSpec& prefill = program(plan, "prefill");
  EXPECT_TRUE(prefill.dims.at("batch_size").dynamic);       // 1 and 2
  EXPECT_TRUE(prefill.dims.at("sequence_length").dynamic);  // 5 and 7
  EXPECT_EQ(prefill.inputs.size(), 3u);
  const ProgramSpec& decode = program(plan, "decode");
  EXPECT_FALSE(decode.dims.at("sequence_length").dynamic);  // always one new token
  EXPECT_EQ(decode.dims.at("sequence_length").hint, 1);
  EXPECT_TRUE(decode.dims.at("past_sequence_length").dynamic);
  EXPECT_EQ(decode.dims.at("past_sequence_length").min, 1);
  const ProgramSpec& merged = program(plan, "model");
  EXPECT_EQ(merged.dims.at("past_sequence_length").min, 0);  // prefill calls have no past
  EXPECT_EQ(merged.kinds, (std::vector<std::string>{"prefill", "decode"}));

  // Static export: every dim fixed at the last call's size.
  CaptureOptions fixed;
  fixed.dynamic = false;
  std::vector<ProgramSpec> fixed_plan = plan_generation(*m, calls, fixed);
  for (const auto& [dim, spec] : program(fixed_plan, "model").dims) EXPECT_FALSE(spec.dynamic) << dim;
}
