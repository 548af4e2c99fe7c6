// src/models/ssd.h — the Mamba-2 mixer (transformers' Mamba2Mixer / BambaMixer, the state-space duality
// "SSD" layer), shared by mamba2 and the hybrids that interleave it with attention (granitemoehybrid).
//
// One call serves prefill and decode: the conv state [B, conv_dim, conv_kernel - 1] and the SSM state
// [B, num_heads, head_dim, state_size] come in (absent = the all-zero empty past) and go out updated.
#pragma once
#include <string>

#include "blocks.h"

namespace hfx::models {

/// Mamba2Mixer's sizes and options, as each architecture's config names them.
struct SsdDims {
  int64_t hidden = 0, inner = 0;        ///< hidden_size, intermediate_size = expand · hidden
  int64_t state = 0, kernel = 0;        ///< state_size, conv_kernel
  int64_t heads = 0, head_dim = 0;      ///< num_heads · head_dim = inner
  int64_t groups = 1;                   ///< n_groups of B and C (heads / groups heads share one)
  int64_t chunk = 256;                  ///< chunk_size of the chunked scan
  bool conv_bias = true, bias = false;  ///< use_conv_bias, use_bias (in_proj / out_proj)
  double dt_min = 0.0, dt_max = 0.0;    ///< time_step_limit (dt_max 0: unbounded)
  double eps = 1e-5;                    ///< the gated RMSNorm's epsilon
  int64_t conv_dim() const { return inner + 2 * groups * state; }
};

/// Checks the sizes (positive, heads · head_dim = inner, heads divisible by groups, kernel >= 1):
/// `[model] expected …, got …` naming `model_type`.
void check_ssd_dims(const SsdDims& d, const std::string& model_type);

/// The mixer's weights under `prefix` ("backbone.layers.3.mixer."): in_proj, conv1d, dt_bias, A_log, D,
/// norm, out_proj, with transformers' names and shapes.
void ssd_weight_specs(WeightSpecs& s, const std::string& prefix, const SsdDims& d);

/// torch.nn.functional.softplus (beta 1, threshold 20): the time step of both Mamba mixers.
Var softplus(const Var& z);

/// time_step_limit of config.json ([lo, hi], hi may be Infinity/null) into d.dt_min / d.dt_max.
void read_time_step_limit(SsdDims& d, const json& j);

/// Mamba2Mixer.forward on x [B, S, hidden] in the current scope (the mixer module), `mask` [B, S, 1] f32
/// (the attention mask's last S columns, or absent). conv_state / ssm_state: the past in, the present out.
Var ssd_mixer(Builder& b, const Model& m, const SsdDims& d, const Var& x, const Var& mask, Var& conv_state,
              Var& ssm_state);

}  // namespace hfx::models
