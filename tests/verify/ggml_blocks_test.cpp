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
#include <random>
#include <string>
#include <vector>

#include "hfx/export/gguf.h"
#include "support/oracle.h"

namespace hfx {
namespace {

using Quantize = void (*)(const float*, void*, int64_t);
using Dequantize = void (*)(const void*, float*, int64_t);

struct Lib {
  void* h = nullptr;
  Lib() {
    const std::string path =
        std::string(HFX_NODE_MODULES) + "/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";
    h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  ~Lib() {
    if (h) ::dlclose(h);
  }
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

}  // namespace
}  // namespace hfx
