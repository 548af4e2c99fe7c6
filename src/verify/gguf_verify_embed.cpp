// `hfx verify` of an embedding model's GGUF file (llama.cpp's bert arch): after the read-back, llama.cpp's
// embedding context (node-llama-cpp's, what its users call) embeds several token sequences, each pooled as
// the file says (bert.pooling_type: mean, cls; none gives the last position's hidden state), against the
// eager model on the file's weights pooled the same way; the tokenizer is compared on the decoders' corpus.
// No generation, no chat template: those checks are skipped with the reason.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/export/gguf.h"
#include "hfx/runtime/embed.h"
#include "verify/gguf_verify.h"

namespace hfx::verify::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// llama.cpp's pooled vectors against the eager model on the file's weights, relative to the eager vectors'
// max |value|, per matrix type: its CPU kernels round a matmul's activations to the weights' dot type (f16,
// bf16; q8_0 blocks for q8_0 / q5_0 / q4_0; q8_K for the k-quants); f32 runs the same GELU table as the eager
// model (gelu_ggml). The numbers tests/interop/test_gguf_bert.py holds the files to (its EMBED_BOUNDS: about
// 3 times the largest errors measured).
double embed_bound(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return 5e-5;
    case GgmlType::F16:
      return 1e-3;
    case GgmlType::BF16:
      return 6e-3;
    default:  // the block types
      return 2e-2;
  }
}

// The sequences embedded: [CLS] + seeded ids + [SEP] of several lengths (the judge adds neither when
// present).
std::vector<std::vector<int64_t>> sequences(int64_t vocab, int64_t cls, int64_t sep) {
  std::vector<std::vector<int64_t>> out;
  int64_t salt = 7;
  for (int64_t n : {12, 3, 24, 7}) {
    std::vector<int64_t> ids{cls};
    for (int64_t t : test_tokens(vocab, 0, n, salt++)) ids.push_back(t);
    ids.push_back(sep);
    out.push_back(std::move(ids));
  }
  return out;
}

enum class FilePooling { None, Mean, Cls };

// The eager model's vector for `ids`, pooled as the file is.
std::vector<float> eager_vector(const Model& m, const std::vector<int64_t>& ids, FilePooling p) {
  rt::TokenBatch tb;
  tb.batch = 1, tb.seq = static_cast<int64_t>(ids.size()), tb.input_ids = ids;
  tb.attention_mask.assign(ids.size(), 1);
  int64_t E = 0;
  const std::vector<float> h = rt::eager_last_hidden_state(m, tb, &E);
  if (p == FilePooling::None) return std::vector<float>(h.end() - E, h.end());
  return rt::pool(h, 1, tb.seq, E, tb.attention_mask,
                  p == FilePooling::Mean ? rt::Pooling::Mean : rt::Pooling::Cls, false)[0];
}

// The reference as BertModel (BertForMaskedLM's weights without their `bert.` scope): what the file holds.
std::unique_ptr<Model> base_of(const Model& reference) {
  json config = reference.config().raw;
  std::map<std::string, Tensor> w;
  for (const std::string& name : reference.weights().names()) w[name] = reference.weights().get(name);
  as_bert_model(config, w);
  return make_model(config, io::WeightStore::from_tensors(std::move(w)));
}

struct VecDiff {
  double err = 0, amax = 0;
};
VecDiff compare(const std::vector<std::vector<float>>& want, const json& got) {
  VecDiff d;
  for (size_t i = 0; i < want.size(); i++)
    for (size_t k = 0; k < want[i].size(); k++) {
      d.amax = std::max(d.amax, std::fabs(static_cast<double>(want[i][k])));
      const double g = k < got.at(i).size() ? got[i][k].get<double>() : NAN;
      d.err = std::max(d.err, std::isfinite(g) ? std::fabs(g - want[i][k]) : INFINITY);
    }
  return d;
}

}  // namespace

void check_gguf_embeddings(Context& cx, const fs::path& path, const Model& reference,
                           const GgufReadBack& rb) {
  const std::string file = path.filename().string();
  const GgufReader r(path.string());
  const json& meta = r.metadata();
  const auto pooling_type =
      meta.value(meta.value("general.architecture", std::string("bert")) + ".pooling_type", uint32_t{0});
  const FilePooling pooling = pooling_type == 1   ? FilePooling::Mean
                              : pooling_type == 2 ? FilePooling::Cls
                                                  : FilePooling::None;
  const char* pooling_label = pooling == FilePooling::Mean  ? "mean-pooled"
                              : pooling == FilePooling::Cls ? "[CLS]"
                                                            : "last-position";
  const std::vector<std::vector<int64_t>> seqs =
      sequences(reference.config().vocab_size, meta.value("tokenizer.ggml.bos_token_id", int64_t{0}),
                meta.value("tokenizer.ggml.seperator_token_id", int64_t{0}));
  std::vector<std::vector<float>> want, checkpoint;
  std::unique_ptr<Model> base = reference.head() == "base" ? nullptr : base_of(reference);
  for (const auto& ids : seqs) {
    want.push_back(eager_vector(*rb.model, ids, pooling));
    checkpoint.push_back(eager_vector(base ? *base : reference, ids, pooling));
  }
  json as_json = json::array();
  for (const auto& v : want) as_json.push_back(v);
  const VecDiff cost = compare(checkpoint, as_json);
  cx.add(
      file, "precision", "info",
      fmt::format("the eager model on the file's {} weights with llama.cpp's GELU vs the checkpoint's: max "
                  "|{} vector diff| {:.3g} (max |value| {:.3g}) over {} sequences (reported, not bounded)",
                  ggml_type_name(rb.matrix), pooling_label, cost.err, cost.amax, seqs.size()),
      {{"max_abs_diff", cost.err}, {"max_abs_value", cost.amax}});
  for (const char* c : {"runtime greedy", "chat template"})
    cx.add(file, c, "skipped", "an embedding model (llama.cpp's bert arch): no generation, no chat");
  std::string why, node;
  const std::string modules = llama_cpp_judge(node, why);
  if (modules.empty()) {
    for (const char* c : {"runtime numerics", "runtime tokenizer"}) cx.add(file, c, "not_judged", why);
    return;
  }
  cx.step("llama.cpp embeds with " + file);
  json req = {{"embed", seqs}, {"threads", std::max(cx.opt.threads, 1)}};
  const std::vector<std::string> texts = corpus();
  const bool has_tokenizer = fs::exists(cx.out / "tokenizer.json");
  if (has_tokenizer) req["tokenize"] = texts;
  json got;
  try {
    got = run_judge(node, modules, path, req);
  } catch (const Error& e) {
    cx.add(file + ":embeddings", "runtime numerics", "failed", e.what());
    return;
  }
  const std::string runtime =
      fmt::format("llama.cpp {} (node-llama-cpp {})", got["versions"].value("llama.cpp", "?"),
                  got["versions"].value("node-llama-cpp", "?"));
  const VecDiff d = compare(want, got["embed"]);
  const double bound = embed_bound(rb.matrix), rel = d.amax > 0 ? d.err / d.amax : d.err;
  const bool ok = got["embed"].size() == seqs.size() && rel <= bound;
  const std::string msg = fmt::format(
      "{} vectors of {} sequences ({} to {} tokens): {} vs the eager model on the file's weights, max |diff| "
      "{:.3g} of max |value| (bound {:.3g})",
      pooling_label, seqs.size(), seqs[1].size(), seqs[2].size(), runtime, rel, bound);
  cx.add(file + ":embeddings", "runtime numerics", ok ? "passed" : "failed", ok ? msg : "expected " + msg,
         {{"max_rel_error", rel}, {"bound", bound}, {"sequences", seqs.size()}, {"pooling", pooling_label}});
  if (has_tokenizer)
    judge_tokenizer(cx, file, got["tokenize"], texts, tok::Tokenizer::from_dir(cx.out.string()), runtime);
  else
    cx.add(file, "runtime tokenizer", "skipped",
           "no tokenizer.json in the folder: the file carries no vocabulary");
}

}  // namespace hfx::verify::detail
