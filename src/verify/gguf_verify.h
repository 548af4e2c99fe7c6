// What the two halves of `hfx verify` on a GGUF file share: the decoders' checks (gguf_verify.cpp: logits,
// greedy tokens, chat template) and the embedding models' (gguf_verify_embed.cpp: pooled vectors) both run
// llama_cpp_judge.mjs, at a bound per matrix type, and compare the tokenizer on one corpus.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/export/gguf.h"
#include "hfx/tokenizers/tokenizer.h"
#include "verify/verify_internal.h"

namespace hfx::verify::detail {

/// llama.cpp against the eager model on the file's weights, relative to the eager output's max |value|:
/// `logits_rel` for a decoder's log-probabilities (an encoder's vectors have their own,
/// gguf_verify_embed.cpp); `tie` the router margin under which llama.cpp's rounding may pick another expert.
struct GgufBound {
  double logits_rel, tie;
};
GgufBound gguf_bound(GgmlType t, bool ggml_gelu);

/// The strings the tokenizers are compared on (1,000: scripts, whitespace, code, emoji; seeded).
inline constexpr int64_t kCorpusStrings = 1000;
std::vector<std::string> corpus();

/// Runs llama_cpp_judge.mjs on `gguf` with `request` (node and node_modules from llama_cpp_judge); its JSON,
/// or throws hfx::Error("verify") with the script's last error line.
nlohmann::json run_judge(const std::string& node, const std::string& modules,
                         const std::filesystem::path& gguf, const nlohmann::json& request);

/// The "runtime tokenizer" check: llama.cpp's ids of `texts` (`got`) against `t.encode(text, false)`.
void judge_tokenizer(Context& cx, const std::string& file, const nlohmann::json& got,
                     const std::vector<std::string>& texts, const tok::Tokenizer& t,
                     const std::string& runtime);

/// The checks of an embedding model's file (llama.cpp's bert), after its read-back: pooled vectors of several
/// sequences against the eager model on the file's weights, the tokenizer, and the precision it costs.
void check_gguf_embeddings(Context& cx, const std::filesystem::path& path, const Model& reference,
                           const GgufReadBack& rb);

}  // namespace hfx::verify::detail
