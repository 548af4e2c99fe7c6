// OrtSession: load a tiny ONNX model built here with the onnx protobuf API, run it, check numbers and errors.
#include "hfx/runtime/ort_session.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "hfx/core/error.h"

namespace fs = std::filesystem;
using hfx::rt::OrtSession;
using hfx::rt::RtTensor;
using ::testing::HasSubstr;

namespace {

void add_value_info(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
                    const std::vector<std::string>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

// c = a + b, a and b float32 [N,3]; d = Cast<int64>(a) — opset 17, IR 8.
fs::path write_add_model(const fs::path& dir) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("hfx-test");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* g = model.mutable_graph();
  g->set_name("add");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("a");
  add->add_input("b");
  add->add_output("c");
  auto* cast = g->add_node();
  cast->set_op_type("Cast");
  cast->add_input("a");
  cast->add_output("d");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::INT64);
  add_value_info(g->add_input(), "a", onnx::TensorProto::FLOAT, {"N", "3"});
  add_value_info(g->add_input(), "b", onnx::TensorProto::FLOAT, {"N", "3"});
  add_value_info(g->add_output(), "c", onnx::TensorProto::FLOAT, {"N", "3"});
  add_value_info(g->add_output(), "d", onnx::TensorProto::INT64, {"N", "3"});
  fs::path path = dir / "add.onnx";
  std::ofstream f(path, std::ios::binary);
  EXPECT_TRUE(model.SerializeToOstream(&f));
  return path;
}

class OrtSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("hfx_ort_session_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = write_add_model(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_, model_;
};

}  // namespace

TEST_F(OrtSessionTest, DescribesInputsAndOutputs) {
  OrtSession s(model_, {.intra_op_threads = 1});
  EXPECT_EQ(s.input_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.output_names(), (std::vector<std::string>{"c", "d"}));
  const auto& a = s.input("a");
  EXPECT_EQ(a.dtype, "float32");
  ASSERT_EQ(a.shape.size(), 2u);
  EXPECT_EQ(a.shape[0].value, -1);
  EXPECT_EQ(a.shape[0].symbol, "N");
  EXPECT_EQ(a.shape[1].value, 3);
  EXPECT_EQ(a.shape_str(), "[N,3]");
  EXPECT_EQ(s.output("d").dtype, "int64");
  EXPECT_FALSE(hfx::rt::ort_version().empty());
}

TEST_F(OrtSessionTest, RunsAddWithDynamicBatch) {
  OrtSession s(model_, {.intra_op_threads = 1, .graph_opt = hfx::rt::GraphOpt::Basic});
  for (int64_t n : {1, 2, 5}) {
    std::vector<float> a, b;
    for (int64_t i = 0; i < n * 3; ++i) {
      a.push_back(0.5f * i - 1.25f);
      b.push_back(10.0f * i);
    }
    auto out = s.run({{"a", RtTensor::f32({n, 3}, a)}, {"b", RtTensor::f32({n, 3}, b)}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, "c");
    const RtTensor& c = hfx::rt::find_tensor(out, "c");
    EXPECT_EQ(c.dtype, "float32");
    EXPECT_EQ(c.shape, (std::vector<int64_t>{n, 3}));
    std::vector<float> got = c.to_f32();
    ASSERT_EQ(got.size(), a.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], a[i] + b[i]) << i;
    const RtTensor& d = hfx::rt::find_tensor(out, "d");
    EXPECT_EQ(d.dtype, "int64");
    std::vector<int64_t> di = d.to_i64();
    for (size_t i = 0; i < di.size(); ++i) EXPECT_EQ(di[i], static_cast<int64_t>(a[i])) << i;
  }
}

TEST_F(OrtSessionTest, FetchesSelectedOutputs) {
  OrtSession s(model_);
  std::vector<float> a{1, 2, 3}, b{4, 5, 6};
  auto out = s.run({{"a", RtTensor::f32({1, 3}, a)}, {"b", RtTensor::f32({1, 3}, b)}}, {"d"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "d");
  EXPECT_EQ(out[0].second.to_i64(), (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(OrtSessionTest, WrongInputShapeNamesTheInput) {
  OrtSession s(model_);
  std::vector<float> a(8, 1.0f), b(6, 1.0f);
  try {
    s.run({{"a", RtTensor::f32({2, 4}, a)}, {"b", RtTensor::f32({2, 3}, b)}});
    FAIL() << "expected hfx::Error";
  } catch (const hfx::Error& e) {
    EXPECT_EQ(e.component(), "ort");
    EXPECT_THAT(e.what(), HasSubstr("input 'a'"));
    EXPECT_THAT(e.what(), HasSubstr("[N,3]"));
    EXPECT_THAT(e.what(), HasSubstr("[2,4]"));
  }
  // The same symbolic dim must get the same value in every input.
  std::vector<float> b3(9, 1.0f);
  try {
    s.run({{"a", RtTensor::f32({2, 3}, b)}, {"b", RtTensor::f32({3, 3}, b3)}});
    FAIL() << "expected hfx::Error";
  } catch (const hfx::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("input 'b'"));
    EXPECT_THAT(e.what(), HasSubstr("'N'"));
  }
}

TEST_F(OrtSessionTest, WrongDtypeOrNameIsAnError) {
  OrtSession s(model_);
  std::vector<int64_t> ai{1, 2, 3};
  std::vector<float> b{1, 2, 3};
  EXPECT_THROW(s.run({{"a", RtTensor::i64({1, 3}, ai)}, {"b", RtTensor::f32({1, 3}, b)}}), hfx::Error);
  EXPECT_THROW(s.run({{"x", RtTensor::f32({1, 3}, b)}}), hfx::Error);
  EXPECT_THROW(s.run({{"a", RtTensor::f32({1, 3}, b)}, {"b", RtTensor::f32({1, 3}, b)}}, {"nope"}),
               hfx::Error);
}

TEST_F(OrtSessionTest, MissingInputIsNamed) {
  OrtSession s(model_);
  std::vector<float> a{1, 2, 3};
  try {
    s.run({{"a", RtTensor::f32({1, 3}, a)}});
    FAIL() << "expected hfx::Error";
  } catch (const hfx::Error& e) {
    EXPECT_EQ(e.component(), "ort");
    EXPECT_THAT(e.what(), HasSubstr("'b' float32[N,3]"));
  }
}

TEST_F(OrtSessionTest, OrtErrorsKeepOrtMessage) {
  // A file that is not a model: ORT's own message survives, tagged [ort].
  fs::path junk = dir_ / "junk.onnx";
  std::ofstream(junk) << "not a protobuf";
  try {
    OrtSession bad(junk);
    FAIL() << "expected hfx::Error";
  } catch (const hfx::Error& e) {
    EXPECT_EQ(e.component(), "ort");
    EXPECT_THAT(e.what(), HasSubstr("junk.onnx"));
    EXPECT_THAT(e.what(), HasSubstr("Protobuf parsing failed"));
  }
  EXPECT_THROW(OrtSession(dir_ / "absent.onnx"), hfx::Error);
}

TEST_F(OrtSessionTest, ProfilingWritesAFile) {
  std::string prefix = (dir_ / "prof").string();
  OrtSession s(model_, {.intra_op_threads = 1, .profile_prefix = prefix});
  std::vector<float> a{1, 2, 3};
  s.run({{"a", RtTensor::f32({1, 3}, a)}, {"b", RtTensor::f32({1, 3}, a)}});
  std::string file = s.end_profiling();
  ASSERT_FALSE(file.empty());
  EXPECT_TRUE(fs::exists(file)) << file;
  EXPECT_EQ(s.end_profiling(), "");
}

TEST(RtTensorTest, ConversionsRoundTrip) {
  std::vector<float> v{0.5f, -2.0f, 65504.0f};
  RtTensor h = RtTensor::f16_from_f32({3}, v);
  EXPECT_EQ(h.dtype, "float16");
  EXPECT_EQ(h.data.size(), 6u);
  EXPECT_EQ(h.to_f32(), v);
  std::vector<int32_t> i{-1, 7};
  EXPECT_EQ(RtTensor::i32({2}, i).to_i64(), (std::vector<int64_t>{-1, 7}));
  RtTensor z = RtTensor::zeros("bool", {2, 0});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_TRUE(z.data.empty());
  EXPECT_THROW(RtTensor::f32({2, 2}, v), hfx::Error);
  EXPECT_THROW(hfx::rt::dtype_size("complex64"), hfx::Error);
}
