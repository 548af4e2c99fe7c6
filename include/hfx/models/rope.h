// hfx/models/rope.h — rotary position embedding parameters, as transformers computes them.
//
// `rope_config` reads the rope block the way transformers 4 (`rope_theta` + `rope_scaling`) and 5
// (`rope_parameters`, which also carries rope_theta and may carry partial_rotary_factor) write it, and
// `compute_rope` reproduces `ROPE_INIT_FUNCTIONS[rope_type](config, seq_len)`: inverse frequencies in
// float32 arithmetic plus the attention scaling applied to cos/sin. Supported types: default, linear,
// dynamic (NTK; depends on the sequence length), llama3, yarn.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/ops/builder.h"

namespace hfx {

struct ModelConfig;

/// The standardized rope block of a config.
struct RopeConfig {
  std::string type = "default";  ///< default | linear | dynamic | llama3 | yarn
  double theta = 10000.0;
  double partial_rotary_factor = 1.0;
  int64_t head_dim = 0;
  int64_t dim = 0;                      ///< rotary dims: int(head_dim * partial_rotary_factor)
  int64_t max_position_embeddings = 0;  ///< config.max_position_embeddings
  nlohmann::json params;                ///< the rope_parameters / rope_scaling object (factor, ...)
};

struct RopeFreqs {
  std::vector<float> inv_freq;     ///< [dim / 2]
  double attention_scaling = 1.0;  ///< multiplies cos and sin
};

/// Reads the rope block of `cfg.raw` (rope_parameters or rope_scaling + rope_theta).
RopeConfig rope_config(const ModelConfig& cfg);
/// inv_freq and attention scaling for `seq_len` (only the dynamic type uses it; absent = init time).
RopeFreqs compute_rope(const RopeConfig& rc, std::optional<int64_t> seq_len = std::nullopt);

/// cos/sin [B, S, dim] for positions [B, S] (int64), as transformers' rotary embedding forward computes
/// them: freqs = pos × inv_freq (f32), emb = cat(freqs, freqs), cos/sin × attention_scaling. For the
/// dynamic type with `total_len` > max_position_embeddings (decided by b.env().gt, which guards when
/// tracing) the NTK inverse frequencies are computed in the graph from the symbolic length.
std::pair<Var, Var> rope_cos_sin(Builder& b, const RopeConfig& rc, const Var& positions,
                                 const Sym& total_len);

}  // namespace hfx
