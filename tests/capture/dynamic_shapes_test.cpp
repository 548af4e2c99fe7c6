// Explicit dynamic_shapes against the recorded-call programs: names that the model does not have are an
// error listing the valid ones (library and CLI: non-zero exit, no output folder); the seeds' example
// (input_ids and attention_mask sharing Dim("batch") and Dim("sequence")) works for every program of a
// generation export — a single dim takes the Dim's name and range, an axis that sums past and new
// tokens (the attention mask of a cached call) has its total bounded by it; two Dims for one dim conflict.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hfx/capture/capture.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/models/tiny.h"
#ifdef HFX_HAVE_ORT
#include "hfx/runtime/ort_session.h"
#endif

namespace fs = std::filesystem;
using namespace hfx;

namespace {

std::unique_ptr<Model> tiny_model(const std::string& arch) {
  nlohmann::json cfg = tiny_model_config(arch, TinyOptions{});
  ModelConfig mc = architecture(arch).parse_config(cfg);
  return make_model(cfg, io::WeightStore::from_tensors(tiny_weights(mc, DType::F32, 0)));
}
std::unique_ptr<Model> tiny_llama() { return tiny_model("llama"); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const ProgramSpec& program(const std::vector<ProgramSpec>& ps, const std::string& name) {
  for (const auto& p : ps)
    if (p.name == name) return p;
  throw std::runtime_error("no program " + name);
}

CaptureOptions seeds_example() {
  CaptureOptions o;
  Dim batch{"batch", 1, 16}, sequence{"sequence", 1, 4096};
  o.dynamic_shapes["input_ids"] = {{0, batch}, {1, sequence}};
  o.dynamic_shapes["attention_mask"] = {{0, batch}, {1, sequence}};
  return o;
}

}  // namespace

TEST(DynamicShapes, UnknownInputNameListsTheValidOnes) {
  auto m = tiny_llama();
  CaptureOptions o;
  o.dynamic_shapes["input_idz"][1] = Dim{"seq", 1, 64};
  std::string msg = error_of([&] { generation_programs(*m, o); });
  EXPECT_NE(msg.find("[dynamic_shapes]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got 'input_idz'"), std::string::npos) << msg;
  for (const char* valid : {"input_ids", "attention_mask", "position_ids", "past_key_values.0.key"})
    EXPECT_NE(msg.find(valid), std::string::npos) << valid << " not listed in: " << msg;
}

TEST(DynamicShapes, UnknownAxisIsAnError) {
  auto m = tiny_llama();
  CaptureOptions o;
  o.dynamic_shapes["input_ids"][2] = Dim{"seq", 1, 64};
  std::string msg = error_of([&] { generation_programs(*m, o); });
  EXPECT_NE(msg.find("expected an axis of 'input_ids' in [0, 2), got 2"), std::string::npos) << msg;
}

TEST(DynamicShapes, TwoDimsForOneDimConflict) {
  auto m = tiny_llama();
  CaptureOptions o;
  o.dynamic_shapes["input_ids"][1] = Dim{"seq_a", 1, 64};
  o.dynamic_shapes["position_ids"][1] = Dim{"seq_b", 1, 64};
  std::string msg = error_of([&] { generation_programs(*m, o); });
  EXPECT_NE(msg.find("expected one Dim for 'sequence_length'"), std::string::npos) << msg;
}

// The seeds' OnnxConfig example, applied to the programs recorded from a real generation.
TEST(DynamicShapes, SeedsExampleNamesAndBoundsEveryProgram) {
  auto m = tiny_llama();
  std::vector<ProgramSpec> ps = generation_programs(*m, seeds_example());
  const ProgramSpec& prefill = program(ps, "prefill");
  EXPECT_EQ(prefill.dims.at("batch_size").symbol, "batch");
  EXPECT_EQ(prefill.dims.at("batch_size").max, 16);
  EXPECT_EQ(prefill.dims.at("sequence_length").symbol, "sequence");
  EXPECT_EQ(prefill.dims.at("sequence_length").max, 4096);
  // The prefill's attention mask has no past term: its axis 1 is the same dim as input_ids' axis 1.
  CapturedProgram cp = capture_program(*m, prefill);
  EXPECT_EQ(cp.contract.at("attention_mask")[1].symbol, "sequence");
  EXPECT_EQ(cp.contract.at("input_ids")[0].symbol, "batch");

  // The merged program's mask spans past + new tokens: the Dim bounds the total, so the past's range
  // shrinks to leave room for at least one new token.
  const ProgramSpec& merged = program(ps, "model");
  EXPECT_EQ(merged.dims.at("sequence_length").symbol, "sequence");
  EXPECT_EQ(merged.dims.at("past_sequence_length").min, 0);
  EXPECT_EQ(merged.dims.at("past_sequence_length").max, 4095);
  CapturedProgram cm = capture_program(*m, merged);
  EXPECT_EQ(cm.graph->find_input("attention_mask")->type.shape[1].str(), "past_sequence_length + sequence");

  // A tighter total is honoured too, and one that the recorded calls do not fit is an error.
  CaptureOptions o = seeds_example();
  o.dynamic_shapes["input_ids"][1] = o.dynamic_shapes["attention_mask"][1] = Dim{"sequence", 1, 100};
  ps = generation_programs(*m, o);
  EXPECT_EQ(program(ps, "decode").dims.at("past_sequence_length").max, 99);
  o.dynamic_shapes["input_ids"][1] = o.dynamic_shapes["attention_mask"][1] = Dim{"sequence", 1, 2};
  std::string msg = error_of([&] { generation_programs(*m, o); });
  EXPECT_NE(msg.find("inside Dim('sequence', min=1, max=2)"), std::string::npos) << msg;
  // In a prefill the mask's axis is the new tokens' dim itself: a second name for it conflicts.
  o = seeds_example();
  o.dynamic_shapes["attention_mask"][1] = Dim{"total", 1, 100};
  msg = error_of([&] { generation_programs(*m, o); });
  EXPECT_NE(msg.find("expected one Dim for 'sequence_length'"), std::string::npos) << msg;
}

// Issue 45: a name is resolved in each program's own component (t5's encoder and decoder both take
// input_ids, with different axes); "component.input" addresses one component only. Before, every program
// read the first declaration (the encoder's), so a Dim on input_ids axis 1 renamed the encoder length inside
// the decoder programs and the decoder's own input_ids could not be addressed.
TEST(DynamicShapes, EachComponentReadsItsOwnInputAndComponentDotInputAddressesOne) {
  auto m = tiny_model("t5");
  CaptureOptions o;
  o.dynamic_shapes["input_ids"] = {{1, Dim{"src", 1, 512}}};
  std::vector<ProgramSpec> ps = generation_programs(*m, o);
  EXPECT_EQ(program(ps, "encoder_model").dims.at("encoder_sequence_length").symbol, "src");
  EXPECT_EQ(program(ps, "encoder_model").dims.at("encoder_sequence_length").max, 512);
  // The decoder's input_ids axis 1 is its own dim; the encoder length keeps its name there.
  const ProgramSpec& dec = program(ps, "decoder_with_past_model");
  EXPECT_EQ(dec.dims.at("decoder_sequence_length").symbol, "src");
  EXPECT_NE(dec.dims.at("encoder_sequence_length").symbol, "src");

  o.dynamic_shapes.clear();
  o.dynamic_shapes["encoder.input_ids"] = {{1, Dim{"src", 1, 512}}};
  o.dynamic_shapes["decoder.encoder_attention_mask"] = {{1, Dim{"memory", 1, 256}}};
  ps = generation_programs(*m, o);
  EXPECT_EQ(program(ps, "encoder_model").dims.at("encoder_sequence_length").symbol, "src");
  for (const char* name : {"decoder_model", "decoder_with_past_model", "decoder_model_merged"}) {
    const ProgramSpec& d = program(ps, name);
    EXPECT_EQ(d.dims.at("encoder_sequence_length").symbol, "memory") << name;
    EXPECT_EQ(d.dims.at("encoder_sequence_length").max, 256) << name;
    EXPECT_NE(d.dims.at("decoder_sequence_length").symbol, "src") << name;
    // The cross-attention memory is the encoder's output: bounded with it.
    if (d.dims.count("past_encoder_sequence_length")) {
      EXPECT_EQ(d.dims.at("past_encoder_sequence_length").max, 256) << name;
    }
  }
  o.dynamic_shapes.clear();
  o.dynamic_shapes["encoder.encoder_attention_mask"][1] = Dim{"x", 1, 8};
  std::string msg = error_of([&] { generation_programs(*m, o); });
  EXPECT_NE(msg.find("expected an input name of t5 among [input_ids, encoder.input_ids"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("decoder.encoder_attention_mask"), std::string::npos) << msg;
}

// Issue 45: a Dim on the merged decoder's attention_mask axis 1 (past + new tokens) bounds the total, not
// each term: the contract states it, and the graph refuses a call whose terms fit their ranges but whose
// sum does not (before, each term was capped alone and past 300 + 300 new tokens ran under a 512 Dim).
TEST(DynamicShapes, ATotalBoundIsStatedAndEnforced) {
  auto m = tiny_llama();
  CaptureOptions o = seeds_example();
  o.dynamic_shapes["input_ids"][1] = o.dynamic_shapes["attention_mask"][1] = Dim{"sequence", 1, 100};
  const std::vector<ProgramSpec> ps = generation_programs(*m, o);
  const ProgramSpec& merged = program(ps, "model");
  ASSERT_EQ(merged.totals.size(), 1u);
  CapturedProgram cm = capture_program(*m, merged);
  EXPECT_EQ(cm.contract.at("attention_mask")[1].max, 100);
  EXPECT_EQ(cm.contract.at("past_key_values.0.key")[2].max, 99);
  EXPECT_EQ(cm.contract.at("input_ids")[1].max, 100);
  // The sum of the terms' maxima (199) is past the bound: a guard must say so.
  bool guarded = false;
  for (const Guard& g : cm.guards) guarded |= g.what.find("<= 100") != std::string::npos;
  EXPECT_TRUE(guarded) << "no guard bounds past + sequence";
#ifdef HFX_HAVE_ORT
  const fs::path out = fs::path(testing::TempDir()) / ("hfx_ds_total_" + std::to_string(::getpid()));
  fs::remove_all(out);
  OnnxConfig oc;
  oc.dynamic_shapes = o.dynamic_shapes;
  CaptureOptions co = contract_options(*m, oc);
  make_onnx_exporter()->export_for_generation(*m, co, {{"*", &oc}}, out.string());
  rt::OrtSession s(out / "onnx" / "model.onnx", rt::SessionOptions{});
  auto run = [&](int64_t past, int64_t seq) {
    rt::NamedTensors f;
    const auto& c = m->config();
    const int64_t kv = c.num_key_value_heads, hd = c.head_dim;
    std::vector<int64_t> ids(static_cast<size_t>(seq), 1), mask(static_cast<size_t>(past + seq), 1);
    for (const std::string& n : s.input_names()) {
      if (n == "input_ids")
        f.push_back({n, rt::RtTensor::i64({1, seq}, ids)});
      else if (n == "attention_mask")
        f.push_back({n, rt::RtTensor::i64({1, past + seq}, mask)});
      else if (n == "position_ids") {
        std::vector<int64_t> pos(static_cast<size_t>(seq));
        for (int64_t i = 0; i < seq; i++) pos[static_cast<size_t>(i)] = past + i;
        f.push_back({n, rt::RtTensor::i64({1, seq}, pos)});
      } else {
        f.push_back({n, rt::RtTensor::zeros("float32", {1, kv, past, hd})});
      }
    }
    try {
      s.run(f);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  EXPECT_TRUE(run(50, 50));  // total 100: in the contract
  EXPECT_TRUE(run(99, 1));
  EXPECT_FALSE(run(60, 60));  // each term in its range (past <= 99, new <= 100), the total 120 is not
  EXPECT_FALSE(run(99, 2));
  fs::remove_all(out);
#endif
}

#ifdef HFX_CLI
namespace {
int run_status(const std::string& cmd, std::string& out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
}  // namespace

// Through the CLI: an unknown name in --config's dynamic_shapes fails the export before anything is
// written, and a previous export in the same folder is kept.
TEST(DynamicShapes, CliUnknownNameFailsWithoutOutput) {
  fs::path dir = fs::path(testing::TempDir()) / ("hfx_ds_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  create_tiny("llama", (dir / "ckpt").string());
  std::ofstream((dir / "cfg.json").string())
      << R"({"format": "onnx", "dynamic_shapes": {"attention_mask": {"1": {"name": "sequence", "min": 1, "max": 64}},
            "input_idz": {"1": {"name": "sequence", "min": 1, "max": 64}}}})";
  std::string out;
  int rc =
      run_status(std::string(HFX_CLI) + " export " + (dir / "ckpt").string() + " --format onnx --config " +
                     (dir / "cfg.json").string() + " -o " + (dir / "out").string(),
                 out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("[dynamic_shapes] expected an input name of llama among [input_ids"), std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(dir / "out"));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".out.tmp"), std::string::npos);
  fs::remove_all(dir);
}
#endif
