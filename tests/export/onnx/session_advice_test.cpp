// The ONNX Runtime session settings an export advises (onnx/session_options.json, hfx/export/onnx.h) follow
// what its graphs hold — prepacking on for block-quantized MatMuls, off for float weights — and every hfx
// session of the folder takes them unless the caller or HFX_ORT_PREPACK says otherwise.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/models/quantize_model.h"
#include "hfx/runtime/ort_session.h"
#include "models/model_test_util.h"

namespace hfx {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TEST(SessionAdvice, PrepackingFollowsTheQuantizedOps) {
  const OrtSessionAdvice f = advise_ort_session({{"MatMul", 14}, {"Gather", 1}});
  EXPECT_FALSE(f.prepacking) << f.why;
  EXPECT_EQ(f.config_entries().at("session.disable_prepacking"), "1");
  const OrtSessionAdvice q = advise_ort_session({{"MatMul", 1}, {"MatMulNBits", 15}});
  EXPECT_TRUE(q.prepacking);
  EXPECT_EQ(q.config_entries().at("session.disable_prepacking"), "0");
  EXPECT_NE(q.why.find("MatMulNBits x15"), std::string::npos) << q.why;
  // The standard target's quantized form stays off: with prepacking, ONNX Runtime's fusion of it runs int8
  // activations, other math than the graph states.
  EXPECT_FALSE(advise_ort_session({{"DequantizeLinear", 3}, {"MatMul", 3}}).prepacking);
  EXPECT_FALSE(advise_ort_session({{"MatMulNBits", 0}}).prepacking);  // a count of zero holds nothing
}

// An environment override for one scope.
struct Env {
  explicit Env(const char* v) {
    if (v)
      ::setenv("HFX_ORT_PREPACK", v, 1);
    else
      ::unsetenv("HFX_ORT_PREPACK");
  }
  ~Env() { ::unsetenv("HFX_ORT_PREPACK"); }
};

class SessionAdviceExport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("session_advice");
    auto model = test::tiny_in_memory("llama", 7);
    OnnxConfig f32;
    make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &f32}},
                                                (dir_->path / "f32").string());
    OnnxConfig q4;
    q4.target = "ort";
    q4.quantize = quant::parse_options("int4", 32, false);
    make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &q4}},
                                                (dir_->path / "int4").string());
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* SessionAdviceExport::dir_ = nullptr;

TEST_F(SessionAdviceExport, EveryProgramOfTheFolderIsAdvisedByItsGraph) {
  Env unset(nullptr);
  for (const char* program : {"prefill", "decode", "model"}) {
    SCOPED_TRACE(program);
    auto f = read_ort_session_advice(dir_->path / "f32" / "onnx" / (std::string(program) + ".onnx"));
    auto q = read_ort_session_advice(dir_->path / "int4" / "onnx" / (std::string(program) + ".onnx"));
    ASSERT_TRUE(f && q);
    EXPECT_FALSE(f->prepacking) << f->why;
    EXPECT_TRUE(q->prepacking) << q->why;
    EXPECT_FALSE(rt::resolve_prepacking(dir_->path / "f32" / "onnx" / (std::string(program) + ".onnx")));
    EXPECT_TRUE(rt::resolve_prepacking(dir_->path / "int4" / "onnx" / (std::string(program) + ".onnx")));
  }
  // A graph the file does not name, and a folder without the file: no advice, hfx's float default.
  EXPECT_FALSE(read_ort_session_advice(dir_->path / "int4" / "onnx" / "encoder.onnx"));
  EXPECT_FALSE(read_ort_session_advice(dir_->path / "nowhere" / "model.onnx"));
  EXPECT_FALSE(rt::resolve_prepacking(dir_->path / "nowhere" / "model.onnx"));
}

TEST_F(SessionAdviceExport, TheCallerAndTheEnvironmentOverrideTheAdvice) {
  const fs::path q = dir_->path / "int4" / "onnx" / "decode.onnx";
  {
    Env unset(nullptr);
    EXPECT_FALSE(rt::resolve_prepacking(q, false));
    EXPECT_TRUE(rt::resolve_prepacking(dir_->path / "f32" / "onnx" / "decode.onnx", true));
  }
  {
    Env off("0");
    EXPECT_FALSE(rt::resolve_prepacking(q));
    EXPECT_FALSE(rt::resolve_prepacking(q, true));
  }
  {
    Env on("1");
    EXPECT_TRUE(rt::resolve_prepacking(dir_->path / "f32" / "onnx" / "decode.onnx"));
  }
  {
    Env bad("yes");
    try {
      rt::resolve_prepacking(q);
      ADD_FAILURE() << "HFX_ORT_PREPACK=yes was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected HFX_ORT_PREPACK to be 0 or 1, got 'yes'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(SessionAdviceExport, AMalformedFileIsAnErrorNamingIt) {
  Env unset(nullptr);
  const fs::path onnx = dir_->path / "bad" / "onnx";
  fs::create_directories(onnx);
  std::ofstream(onnx / "session_options.json") << "{\"programs\": {\"model\": {\"config_entries\": "
                                                  "{\"session.disable_prepacking\": \"maybe\"}}}}";
  try {
    rt::resolve_prepacking(onnx / "model.onnx");
    ADD_FAILURE() << "a prepacking value 'maybe' was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("to be \"0\" or \"1\", got \"maybe\""), std::string::npos)
        << e.what();
  }
  std::ofstream(onnx / "session_options.json") << "{not json";
  EXPECT_THROW(read_ort_session_advice(onnx / "model.onnx"), Error);
}

}  // namespace
}  // namespace hfx
