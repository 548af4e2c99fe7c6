// hfx/models/rope.h — rotary position embedding parameters, as transformers computes them.
//
// `rope_config` reads the rope block the way transformers 4 (`rope_theta` + `rope_scaling`) and 5
// (`rope_parameters`, which also carries rope_theta and may carry partial_rotary_factor) write it, and
// `compute_rope` reproduces `ROPE_INIT_FUNCTIONS[rope_type](config, seq_len)`: inverse frequencies in
// float32 arithmetic plus the attention scaling applied to cos/sin. Supported types: default, linear,
// dynamic (NTK; depends on the sequence length), llama3, yarn.
#pragma once
#include <array>
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
  /// GPT-J-style pairs (2i, 2i + 1) (Cohere, GLM): cos/sin are repeat_interleave(freqs, 2) and hfx.rope
  /// rotates interleaved; else Llama's halves (i, i + dim/2) with cat(freqs, freqs).
  bool interleaved = false;
  /// Qwen2-VL's multimodal rope (rope_scaling {"type": "mrope", "mrope_section": [t, h, w]}): the rotary
  /// frequencies are split in sections of t, h and w entries (t + h + w = dim / 2), each rotated by its own
  /// position (temporal, height, width). Empty: one position per token.
  std::vector<int64_t> mrope_section;
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
/// them: freqs = pos × inv_freq (f32), emb = cat(freqs, freqs) (interleaved: each repeated twice), cos/sin ×
/// attention_scaling. For the
/// dynamic type with `total_len` > max_position_embeddings (decided by b.env().gt, which guards when
/// tracing) the NTK inverse frequencies are computed in the graph from the symbolic length. With
/// `mrope_section` the positions may be [3, B, S] (temporal, height, width): frequency i takes the position
/// of its section, as transformers' apply_multimodal_rotary_pos_emb selects cos/sin; [B, S] positions
/// are the same for all three.
/// Qwen2-VL's multimodal positions of one prompt, as transformers' get_rope_index computes them.
struct MropePositions {
  std::vector<int64_t> pos;  ///< [3, S]: temporal, then height, then width positions of each token
  int64_t delta = 0;         ///< max position + 1 - S
  /// The position (in all three) of a decode step's token fed at cache length `cache_length`.
  int64_t decode_position(int64_t cache_length) const { return cache_length + delta; }
};
/// get_rope_index (transformers 4.47) for `ids` (one prompt without padding): text tokens count on from the
/// last position in all three; the image tokens after each `vision_start` token take, for image k of
/// `grids` ({t, h, w} in patches), the positions offset + (frame, row, column) of its merge×merge-merged
/// grid. Throws hfx::Error("generate", …) when the prompt has more images than grids or an image run is
/// shorter than its grid.
MropePositions mrope_positions(const std::vector<int64_t>& ids, int64_t image_token, int64_t vision_start,
                               const std::vector<std::array<int64_t, 3>>& grids, int64_t merge);

std::pair<Var, Var> rope_cos_sin(Builder& b, const RopeConfig& rc, const Var& positions,
                                 const Sym& total_len);

}  // namespace hfx
