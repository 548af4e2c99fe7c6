// llama.cpp's architectures as hfx writes them: for each model_type, the llama.cpp arch, its metadata keys
// and its tensors (names, layouts, transforms), as convert_hf_to_gguf.py writes them.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "export/gguf/gguf_file.h"
#include "hfx/models/model.h"

namespace hfx::gguf {

/// Adds general.architecture, the `<arch>.*` keys and every tensor of `m` (matrices in `matrix`, see
/// type_for) to `f`. Throws hfx::Error("gguf", ...) for a config llama.cpp's arch cannot express (a sliding
/// window on the llama arch, a rope scaling other than llama3 / linear).
void add_model(File& f, const Model& m, GgmlType matrix);

/// The type a tensor is stored in: f32 for 1-D tensors, norms and the state-space parameters llama.cpp reads
/// as f32; `matrix` for the rest, f16 where a row is not whole blocks of a quantized `matrix`.
GgmlType type_for(const std::string& name, const Shape& shape, GgmlType matrix);

using Make = std::function<Tensor()>;

/// The checkpoint's weights rebuilt from a file's tensors (read_back_gguf): each tensor, decoded to f32 in
/// the file's shape, is written back under the Hugging Face names it was made from.
struct Into {
  const io::WeightStore& W;  ///< the reference checkpoint: the names and shapes written back
  std::map<std::string, Tensor> out;
  std::vector<std::string> touched;  ///< the names set since the caller last cleared it
  /// `t` as the whole of `hf` (reshaped to its shape).
  void set(const std::string& hf, const Tensor& t);
  /// `part` as `hf`'s slice [from, from + part.size(dim)) along `dim` (the rest from other tensors).
  void set_slice(const std::string& hf, int64_t dim, int64_t from, const Tensor& part);
};
/// How one file tensor goes back into the checkpoint's weights (the inverse of its Make).
using Back = std::function<void(const Tensor&, Into&)>;

// What the tensors of one model are written from: its weights, the file and the matrix type. The producers
// run when the file is written, after this is gone: they hold the weight store (the model's), not it.
struct Out {
  File& f;
  const io::WeightStore& W;
  GgmlType matrix;
  /// When set, each tensor's inverse by name (read-back); tensors derived from the config (rope_freqs) have
  /// none.
  std::map<std::string, Back>* backs = nullptr;
  /// `consumed` is File::tensor's: which bytes of what `make` returned are written.
  void put(const std::string& name, const Shape& shape, Make make, Back back,
           std::function<void(uint64_t, uint64_t)> consumed = {}) {
    f.tensor(name, shape, std::move(make), type_for(name, shape, matrix), std::move(consumed));
    if (backs && back) (*backs)[name] = std::move(back);
  }
  /// The checkpoint's tensor `hf` as it is: a view of its mapping, widened row by row, whose pages are
  /// released as the rows are written.
  void copy(const std::string& name, const std::string& hf) {
    put(
        name, W.info(hf).shape, [w = &W, hf] { return w->get(hf); },
        [hf](const Tensor& t, Into& in) { in.set(hf, t); },
        [w = &W, hf](uint64_t from, uint64_t to) { w->release(hf, from, to); });
  }
  /// hf → name through `fn` (same shape; `fn` copies, so the source's pages go once it has run); `inv` undoes
  /// it.
  void map(const std::string& name, const std::string& hf, std::function<Tensor(Tensor)> fn,
           std::function<Tensor(Tensor)> inv) {
    put(
        name, W.info(hf).shape,
        [w = &W, hf, fn] {
          Tensor t = fn(w->get(hf));
          w->release(hf);
          return t;
        },
        [hf, inv](const Tensor& t, Into& in) { in.set(hf, inv(t)); });
  }
  /// The checkpoint's `hf` reshaped to `shape` (same elements in the same order).
  void reshaped(const std::string& name, const std::string& hf, const Shape& shape) {
    put(
        name, shape, [w = &W, hf, shape] { return w->get(hf).to(DType::F32).contiguous().reshape(shape); },
        [hf](const Tensor& t, Into& in) { in.set(hf, t); });
  }
  /// `hf`'s slice [from, from + n) along `dim`.
  void slice(const std::string& name, const std::string& hf, int64_t dim, int64_t from, int64_t n) {
    Shape s = W.info(hf).shape;
    s[static_cast<size_t>(dim)] = n;
    put(
        name, s,
        [w = &W, hf, dim, from, n] {
          return w->get(hf).to(DType::F32).slice(dim, from, from + n).contiguous();
        },
        [hf, dim, from](const Tensor& t, Into& in) { in.set_slice(hf, dim, from, t); });
  }
};

/// The tensors `add_model` would write for `m` with `matrix`, and each one's inverse, without reading a
/// weight (read-back's plan).
void plan_model(File& f, const Model& m, GgmlType matrix, std::map<std::string, Back>& backs);

/// llama.cpp's rope row order (interleaved pairs, its NORM rope) for `heads` heads of a [rows, cols] matrix,
/// in the matrix's dtype: of each head's first `rot` rows (the rotated ones; 0: the whole head); `back`
/// undoes it (convert_hf_to_gguf.py's LlamaModel.permute).
Tensor rope_rows(const Tensor& w, int64_t heads, bool back, int64_t rot = 0);
/// `w`'s rows in groups of `unit`, group g moved to group to(g), in `w`'s dtype (no f32 copy: a bf16 matrix
/// is then written as it is); `back` moves group to(g) to g (read-back).
Tensor move_row_groups(const Tensor& w, int64_t unit, const std::function<int64_t(int64_t)>& to, bool back);
/// attn_q / attn_k from `attn`q_proj / k_proj in llama.cpp's rope row order (the archs whose graph rotates
/// interleaved pairs and whose checkpoint holds halves).
void rope_ordered_qk(Out& o, const ModelConfig& c, const std::string& attn, const std::string& q,
                     int64_t rot = 0);
/// The LayerNorm archs' `<arch>.*` sizes: context length, feed-forward length, head count,
/// layer_norm_epsilon.
void layernorm_keys(File& f, const std::string& arch, const ModelConfig& c, float eps);
/// Refuses a sliding window shorter than the context for an arch whose graph attends over the whole context.
void check_full_attention(const std::string& arch, const ModelConfig& c);
/// The period P of `c.layer_types` as llama.cpp's set_swa_pattern reads it: layer i slides unless
/// i % P == P - 1 (hfx's and transformers' (i + 1) % P == 0); 1 when no layer slides, L + 1 when all do.
/// Refuses a pattern that is not periodic.
int64_t swa_period(const std::string& arch, const ModelConfig& c);
/// `<arch>.attention.sliding_window` and `.sliding_window_pattern` (swa_period).
void swa_keys(File& f, const std::string& arch, const ModelConfig& c);
/// Gemma 3's and Olmo 3's rope and window keys (gguf_archs_rope.cpp): their full and sliding layers' ropes;
/// refused: what the arch's graph cannot express of them.
void gemma3_keys(File& f, const ModelConfig& c);
void olmo3_keys(File& f, const ModelConfig& c);
/// The rotated dimensions of a head: config.json's partial_rotary_factor (at the top, in rope_parameters, or
/// GPT-NeoX's rotary_pct; by default GLM's and Bamba's half, the whole head otherwise) times head_dim.
int64_t rotary_dims(const ModelConfig& c);
/// `<arch>.rope.*`: the rotated dimensions (partial_rotary_factor), the base, a linear or llama3 scaling (the
/// latter as the rope_freqs tensor, llama only).
void rope_keys(Out& o, const std::string& arch, const ModelConfig& c);
/// The LayerNorm decoders (gguf_archs_ln.cpp): starcoder2, stablelm, phi2 (phi), olmo (non-parametric norms),
/// starcoder (gpt_bigcode), gptneox (gpt_neox), nemotron, command-r (cohere) and cohere2.
void add_layernorm_decoder(Out& o, const std::string& arch, const ModelConfig& c);

/// Mixture-of-experts feed-forwards (gguf_archs_moe.cpp): whether layer prefix `p` has one, the
/// `<arch>.expert_*` keys (refusing a norm_topk_prob llama.cpp's arch does not compute), and the layer's
/// tensors.
bool is_moe(const io::WeightStore& W, const std::string& p);
void moe_keys(Out& o, const std::string& arch, const ModelConfig& c);
void add_moe_ffn(Out& o, const ModelConfig& c, const std::string& p, const std::string& q);
/// Experts e = 0..E-1 of `name(e)` ([rows, cols] each) stacked into [E, rows, cols].
void stack_experts(Out& o, const std::string& gg, int64_t experts, std::function<std::string(int64_t)> name);

/// Granite's multipliers as llama.cpp's granite, granitemoe and granitehybrid graphs read them (scales).
void granite_keys(File& f, const std::string& arch, const nlohmann::json& config);

/// The state-space and hybrid archs (gguf_archs_ssm.cpp): their `<arch>.*` keys and tensors.
void add_mamba(Out& o, const ModelConfig& c);
void add_mamba2(Out& o, const ModelConfig& c);
void add_granitehybrid(Out& o, const ModelConfig& c);
void add_lfm2(Out& o, const ModelConfig& c);
void add_jamba(Out& o, const ModelConfig& c);

/// llama-quantize's k-quant mixes (gguf_mix.cpp).
enum class KMix { Q4_K_M, Q5_K_M };
/// The mix `--quantize` names ("q4_k_m", "q5_k_m"), if any; the mix of a file's general.file_type (15, 17).
std::optional<KMix> k_mix_of(const std::string& quantize);
std::optional<KMix> k_mix_of_file_type(uint32_t file_type);
/// general.file_type of a mix: LLAMA_FTYPE_MOSTLY_Q4_K_M 15, _Q5_K_M 17.
uint32_t k_mix_file_type(KMix mix);
/// The mix over the planned file `f` of llama.cpp arch `arch`: each quantized tensor's type as llama.cpp's
/// llama_model_quantize chooses it without an importance matrix (Q4_K / Q5_K by default; Q6_K for the output
/// and a third of the attn_v / ffn_down layers; Q8_0 / Q5_K on 8-expert models; its shape fallbacks), its
/// tensor order and dims.
void apply_k_mix(File& f, const std::string& arch, const ModelConfig& c, KMix mix);

/// llama.cpp's t5 arch (gguf_archs_t5.cpp): T5 / MT5ForConditionalGeneration's encoder and decoder, the
/// output matrix scaled where transformers scales a tied lm_head's input. Refuses another head, relative
/// buckets other than llama.cpp's (max distance 128), an MLP other than ReLU or gated GELU.
void add_t5(Out& o, const Model& m, const ModelConfig& c);

/// llama.cpp's bert arch (gguf_archs_bert.cpp): BertModel's tensors (BertForMaskedLM's without its head).
/// Refuses another head, a non-GELU activation, relative positions.
void add_bert(Out& o, const Model& m, const ModelConfig& c);
/// The masked-LM form's scope of a bert-arch model type with its dot: "roberta." for roberta, xlm-roberta and
/// camembert (one modeling code), "<model_type>." otherwise.
std::string bert_scope(const std::string& model_type);
/// Whether positions start at pad_token_id + 1 (RoBERTa's modeling code): the file holds the table from
/// there.
bool roberta_positions(const std::string& model_type);
/// llama.cpp's modern-bert arch (gguf_archs_bert.cpp): ModernBertModel's tensors, its windows and rope bases.
void add_modernbert(Out& o, const Model& m, const ModelConfig& c);
/// `<arch>.pooling_type` from the sentence-transformers Pooling module in `dir` (bert only; none without
/// modules.json). Refuses max pooling, which llama.cpp does not have.
void add_pooling(File& f, const std::string& arch, const std::string& dir);

}  // namespace hfx::gguf
