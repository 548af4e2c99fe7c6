// hfx/models/component.h — the vocabulary of a model as a set of named components.
//
// A component is one callable part of a model (`model`, `encoder`, `decoder`, later `vision_encoder`,
// `projector`) with named inputs and named outputs. Its declaration lists every input it may take with
// the dtype and, per axis, the named dimension it has ("batch_size", "sequence_length",
// "past_sequence_length+sequence_length", or a fixed size such as "64"), and the cache leaves it reads
// and writes. The declaration names the dims; which of them are dynamic in an exported program, and
// over which range, is decided from the real calls that generation makes (hfx/capture/capture.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hfx/core/dtype.h"
#include "hfx/ops/builder.h"

namespace hfx {

/// Which generation loop drives a model's components.
enum class Structure {
  DecoderOnly,     ///< `model` with a self-attention cache: prefill, then one decode call per token
  EncoderOnly,     ///< `model` called once on the whole input (no generation)
  EncoderDecoder,  ///< `encoder` once, then `decoder` with self- and cross-attention caches per token
  /// `vision_encoder` once per image, `embed_tokens` on the prompt, the image features written over the
  /// embeddings of the image tokens, then `decoder` on embeddings: prefill and one decode call per token
  VisionLanguage,
};
/// "decoder-only", "encoder-only", "encoder-decoder", "vision-language".
const char* structure_name(Structure s);

/// One input a component may take. Each entry of `axes` is a named dim ("batch_size"), a sum of named
/// dims ("past_sequence_length+sequence_length") or a fixed size ("64").
struct InputDecl {
  std::string name;
  DType dtype = DType::I64;
  std::vector<std::string> axes;
  /// May be absent from a call (a past cache in the first call, token_type_ids). An absent cache input
  /// of a merged program is fed as an empty tensor instead (size 0 along its past axis).
  bool optional = false;
  /// The ONNX export backs it with an initializer of zeros [1, …, 1] (an ONNX graph input's default), so a
  /// caller may leave it out and the graph broadcasts the default; gemma3's decoder token_type_ids, which
  /// Transformers.js does not pass. Other formats take it as a plain input.
  bool zero_default = false;
};

/// One leaf of a component's cache: the input that carries it in and the output that carries it out.
struct CacheLeafDecl {
  int layer = 0;
  std::string kind;        ///< "key" | "value" | "decoder.key" | "encoder.value" | ...
  std::string layer_type;  ///< "full_attention", "sliding_attention", "cross_attention", ...
  int64_t window = 0;
  std::string past_input;      ///< e.g. past_key_values.0.decoder.key
  std::string present_output;  ///< e.g. present.0.decoder.key
};

struct ComponentDecl {
  std::string name;
  std::vector<InputDecl> inputs;
  std::vector<std::string> outputs;  ///< output names in signature order
  std::vector<CacheLeafDecl> cache;
};

/// Named values in signature order.
using NamedVars = std::vector<std::pair<std::string, Var>>;
/// The value named `name`, or an absent Var.
Var get(const NamedVars& vars, const std::string& name);

/// Options of one component call that are not tensors.
struct CallOptions {
  /// Logits only for the last N positions (0: all). Generation loops use 1.
  int64_t logits_to_keep = 0;
  /// false: a single forward without any cache (no present outputs).
  bool use_cache = true;
};

}  // namespace hfx
