// src/models/mamba1.h — the Mamba-1 selective state-space mixer (transformers' MambaMixer, FalconMambaMixer,
// JambaMambaMixer), shared by mamba, falcon_mamba and the Jamba hybrid.
//
// One call serves prefill and decode: the conv state [B, d_inner, conv_kernel - 1] and the SSM state
// [B, d_inner, d_state] come in (absent = the all-zero empty past) and go out updated.
#pragma once
#include <string>

#include "blocks.h"

namespace hfx::models {

/// The mixer's sizes and options, as each architecture's config names them.
struct Mamba1Dims {
  int64_t H = 0, I = 0, N = 0, K = 0, R = 0;  ///< hidden, d_inner, d_state, conv kernel, dt rank
  bool conv_bias = true, bias = false;        ///< use_conv_bias, use_bias (in_proj / out_proj)
  /// RMS norms on the time step, B and C right after x_proj: none (Mamba), weightless (FalconMamba,
  /// mixer_rms_eps), or with weights dt_layernorm / b_layernorm / c_layernorm (Jamba, rms_norm_eps).
  enum class Norms { none, weightless, weighted } norms = Norms::none;
  double norm_eps = 0.0;
  /// Jamba: the padding mask zeroes the mixer's input before in_proj (Mamba: in_proj's x half after it; the
  /// same without an in_proj bias).
  bool mask_input = false;
};

/// The mixer's weights under `prefix` ("backbone.layers.3.mixer."): in_proj, conv1d, x_proj, dt_proj, A_log,
/// D, out_proj (and Jamba's dt/b/c_layernorm), with transformers' names and shapes.
void mamba1_weight_specs(WeightSpecs& s, const std::string& prefix, const Mamba1Dims& d);

/// MambaMixer.slow_forward on x [B, S, H] in the current scope (the mixer module), `mask` [B, S, 1] f32
/// (the attention mask's last S columns, or absent). conv_state / ssm_state: the past in, the present out.
Var mamba1_mixer(Builder& b, const Model& m, const Mamba1Dims& d, const Var& x, const Var& mask,
                 Var& conv_state, Var& ssm_state);

}  // namespace hfx::models
