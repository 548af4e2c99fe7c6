// ggml's block types against llama.cpp's own: the released libggml-base.so of node-llama-cpp's prebuilt
// linux-x64 build (deps/npm; support/oracle.h), loaded with dlopen. On rows of several distributions (normal,
// uniform, heavy-tailed, all zero, one constant, tiny and huge magnitudes) hfx's encoder writes the bytes of
// llama.cpp's quantize_row_*_ref (what llama-quantize and convert_hf_to_gguf.py write), and its decoder gives
// the values of llama.cpp's dequantize_row_*, for q8_0, q4_0, q5_0, q4_k and q6_k. Negative control: a
// changed value changes the bytes.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "hfx/core/dtype.h"
#include "hfx/export/gguf.h"
#include "hfx/ops/builder.h"
#include "models/blocks.h"
#include "support/oracle.h"

namespace hfx {
namespace {

using Quantize = void (*)(const float*, void*, int64_t);
using Dequantize = void (*)(const void*, float*, int64_t);

// A library of node-llama-cpp's prebuilt linux-x64 build, loaded once and kept (ggml's static state does not
// survive an unload and a second load in one process).
void* ggml_library(const std::string& name) {
  static std::map<std::string, void*> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second;
  const std::string path =
      std::string(HFX_NODE_MODULES) + "/@node-llama-cpp/linux-x64/bins/linux-x64/" + name;
  return loaded[name] = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
}

struct Lib {
  void* h = ggml_library("libggml-base.so");
  template <typename F>
  F fn(const char* name) const {
    return reinterpret_cast<F>(::dlsym(h, name));
  }
};

// Rows of 1024 values (4 super-blocks, 32 blocks) of several shapes.
std::vector<std::vector<float>> rows() {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 0.02f);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::student_t_distribution<float> heavy(2);
  std::vector<std::vector<float>> out(7, std::vector<float>(1024));
  for (size_t i = 0; i < 1024; i++) {
    out[0][i] = normal(rng);
    out[1][i] = uniform(rng);
    out[2][i] = heavy(rng);
    out[3][i] = 0;
    out[4][i] = 0.5f;
    out[5][i] = uniform(rng) * 1e-6f;
    out[6][i] = uniform(rng) * 3e4f;
  }
  for (size_t i = 256; i < 512; i++) out[0][i] = 0;  // a zero super-block inside a row
  return out;
}

TEST(GgmlBlocks, EqualLlamaCppReference) {
  HFX_REQUIRE_ORACLE(test::kNodeLlamaCpp);
  Lib lib;
  ASSERT_NE(lib.h, nullptr) << ::dlerror();
  const struct {
    GgmlType type;
    const char *quantize, *dequantize;
  } kinds[] = {{GgmlType::Q8_0, "quantize_row_q8_0_ref", "dequantize_row_q8_0"},
               {GgmlType::Q4_0, "quantize_row_q4_0_ref", "dequantize_row_q4_0"},
               {GgmlType::Q5_0, "quantize_row_q5_0_ref", "dequantize_row_q5_0"},
               {GgmlType::Q4_K, "quantize_row_q4_K_ref", "dequantize_row_q4_K"},
               {GgmlType::Q6_K, "quantize_row_q6_K_ref", "dequantize_row_q6_K"}};
  for (const auto& k : kinds) {
    SCOPED_TRACE(ggml_type_name(k.type));
    const auto q = lib.fn<Quantize>(k.quantize);
    const auto dq = lib.fn<Dequantize>(k.dequantize);
    ASSERT_NE(q, nullptr);
    ASSERT_NE(dq, nullptr);
    for (const auto& x : rows()) {
      std::vector<uint8_t> got, want(x.size() / static_cast<size_t>(ggml_block_size(k.type)) *
                                     static_cast<size_t>(ggml_block_bytes(k.type)));
      ggml_encode_row(k.type, x, got);
      q(x.data(), want.data(), static_cast<int64_t>(x.size()));
      ASSERT_EQ(got, want) << "row starting " << x[0];
      std::vector<float> mine(x.size()), theirs(x.size());
      ggml_decode(k.type, got.data(), static_cast<int64_t>(x.size()), mine.data());
      dq(want.data(), theirs.data(), static_cast<int64_t>(x.size()));
      ASSERT_EQ(0, std::memcmp(mine.data(), theirs.data(), mine.size() * sizeof(float)));
    }
    // Negative control: one value moved by a tenth of the row's range changes the blocks.
    std::vector<float> x = rows()[1], y = x;
    y[7] += 0.2f;
    std::vector<uint8_t> a, b;
    ggml_encode_row(k.type, x, a);
    ggml_encode_row(k.type, y, b);
    EXPECT_NE(a, b);
  }
}

// The activation "gelu_ggml" (the eager model of a GGUF file) against ggml's own GELU table, read from
// llama.cpp's released libggml-cpu after ggml_cpu_init: equal on every f16 input below 10 in magnitude but
// one (ggml's build contracts 1 + A x x into an fma there), and x itself / 0 beyond.
TEST(GgmlBlocks, GeluGgmlIsLlamaCppsTable) {
  HFX_REQUIRE_ORACLE(test::kNodeLlamaCpp);
  ASSERT_NE(ggml_library("libggml-base.so"), nullptr) << ::dlerror();
  void* cpu = ggml_library("libggml-cpu-haswell.so");
  ASSERT_NE(cpu, nullptr) << ::dlerror();
  reinterpret_cast<void (*)()>(::dlsym(cpu, "ggml_cpu_init"))();
  const auto* table = static_cast<const uint16_t*>(::dlsym(cpu, "ggml_table_gelu_f16"));
  ASSERT_NE(table, nullptr);
  std::vector<float> x;
  for (uint32_t h = 0; h < 65536; h++) {
    const float v = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isfinite(v) && std::fabs(v) < 12) x.push_back(v);
  }
  EagerBuilder b;
  const auto n = static_cast<int64_t>(x.size());
  const std::vector<float> y =
      models::activation(b.wrap(Tensor::from_floats({n}, x)), "gelu_ggml").tensor().to_floats();
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); i++) {
    const float want = x[i] <= -10 ? 0.0f : x[i] >= 10 ? x[i] : f16_to_f32(table[f32_to_f16(x[i])]);
    differ += y[i] != want;
  }
  EXPECT_EQ(differ, 0) << "of " << x.size();
  // Negative control: the tanh GELU unrounded is not the table.
  const std::vector<float> t =
      models::activation(b.wrap(Tensor::from_floats({n}, x)), "gelu_pytorch_tanh").tensor().to_floats();
  int64_t plain = 0;
  for (size_t i = 0; i < x.size(); i++) plain += t[i] != y[i];
  EXPECT_GT(plain, 1000);
}

}  // namespace
}  // namespace hfx
