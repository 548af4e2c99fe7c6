// Qwen2VLImageProcessor (transformers 4.47, image_processing_qwen2_vl.py): smart_resize on hfx's
// Pillow-exact resampler, rescale and normalize as transformers does them, then the patches flattened in
// the order the vision tower's merger expects (image, frame, merge window, patch in the window).
#include <algorithm>
#include <cmath>

#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/processors/image.h"
#include "processors/pixel_common.h"

namespace hfx::processors {
namespace {

constexpr std::string_view kC = "image processor";

// Python's round(): halves to even.
int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

Qwen2VlImageProcessorConfig Qwen2VlImageProcessorConfig::from_json(const nlohmann::json& j,
                                                                   std::string_view where) {
  jsonc::object(j, kC, where);
  Qwen2VlImageProcessorConfig c;
  const std::string type =
      jsonc::get_or<std::string>(j, "image_processor_type", "Qwen2VLImageProcessor", kC, where);
  HFX_CHECK(type == "Qwen2VLImageProcessor" || type == "Qwen2VLImageProcessorFast", std::string(kC),
            "expected image_processor_type Qwen2VLImageProcessor in {}, got '{}'", where, type);
  const std::string w(where);
  c.do_resize = jsonc::get_or<bool>(j, "do_resize", c.do_resize, kC, where);
  if (jsonc::has(j, "size") && j["size"].is_object()) {
    c.min_pixels = jsonc::get_or<int64_t>(j["size"], "min_pixels", c.min_pixels, kC, w + ".size");
    c.max_pixels = jsonc::get_or<int64_t>(j["size"], "max_pixels", c.max_pixels, kC, w + ".size");
  }
  c.min_pixels = jsonc::get_or<int64_t>(j, "min_pixels", c.min_pixels, kC, where);
  c.max_pixels = jsonc::get_or<int64_t>(j, "max_pixels", c.max_pixels, kC, where);
  c.patch_size = jsonc::get_or<int64_t>(j, "patch_size", c.patch_size, kC, where);
  c.merge_size = jsonc::get_or<int64_t>(j, "merge_size", c.merge_size, kC, where);
  c.temporal_patch_size = jsonc::get_or<int64_t>(j, "temporal_patch_size", c.temporal_patch_size, kC, where);
  c.resample = static_cast<Resample>(jsonc::get_or<int>(j, "resample", 3, kC, where));
  c.do_rescale = jsonc::get_or<bool>(j, "do_rescale", c.do_rescale, kC, where);
  c.rescale_factor = jsonc::get_or<double>(j, "rescale_factor", c.rescale_factor, kC, where);
  c.do_normalize = jsonc::get_or<bool>(j, "do_normalize", c.do_normalize, kC, where);
  detail::read_mean_std(j, where, c.image_mean, c.image_std);
  HFX_CHECK(c.patch_size > 0 && c.merge_size > 0 && c.temporal_patch_size > 0 && c.min_pixels > 0 &&
                c.max_pixels >= c.min_pixels,
            std::string(kC),
            "expected positive patch_size, merge_size, temporal_patch_size and 0 < min_pixels <= max_pixels "
            "in {}, got {}, {}, {}, {} and {}",
            where, c.patch_size, c.merge_size, c.temporal_patch_size, c.min_pixels, c.max_pixels);
  return c;
}

std::pair<int64_t, int64_t> qwen2_vl_resize_size(const Qwen2VlImageProcessorConfig& cfg, int64_t height,
                                                 int64_t width) {
  const int64_t factor = cfg.patch_size * cfg.merge_size;
  HFX_CHECK(height >= factor && width >= factor, std::string(kC),
            "expected an image of at least {}x{} pixels (patch_size × merge_size), got {}x{}", factor, factor,
            width, height);
  const double h = static_cast<double>(height), w = static_cast<double>(width),
               f = static_cast<double>(factor);
  HFX_CHECK(std::max(h, w) / std::min(h, w) <= 200, std::string(kC),
            "expected an aspect ratio of at most 200, got {}x{}", width, height);
  int64_t hb = round_half_even(h / f) * factor, wb = round_half_even(w / f) * factor;
  if (hb * wb > cfg.max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(cfg.max_pixels));
    hb = static_cast<int64_t>(std::floor(h / beta / f)) * factor;
    wb = static_cast<int64_t>(std::floor(w / beta / f)) * factor;
  } else if (hb * wb < cfg.min_pixels) {
    const double beta = std::sqrt(static_cast<double>(cfg.min_pixels) / (h * w));
    hb = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    wb = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {hb, wb};
}

Qwen2VlPixels qwen2_vl_pixel_values(const Qwen2VlImageProcessorConfig& cfg,
                                    const std::vector<Image>& images) {
  HFX_CHECK(!images.empty(), std::string(kC), "expected at least one image, got none");
  const int64_t P = cfg.patch_size, M = cfg.merge_size, T = cfg.temporal_patch_size, D = 3 * T * P * P;
  Qwen2VlPixels r;
  std::vector<float> out;
  for (const Image& img : images) {
    Image cur = img;
    if (cfg.do_resize) {
      auto [h, w] = qwen2_vl_resize_size(cfg, img.height, img.width);
      cur = resize(cur, w, h, cfg.resample);
    }
    HFX_CHECK(cur.height % (P * M) == 0 && cur.width % (P * M) == 0, std::string(kC),
              "expected an image size divisible by {} (set do_resize), got {}x{}", P * M, cur.width,
              cur.height);
    const int64_t gh = cur.height / P, gw = cur.width / P, W = cur.width;
    std::vector<float> px(static_cast<size_t>(3 * cur.height * W));  // CHW, rescaled and normalized
    for (int64_t c = 0; c < 3; c++)
      for (int64_t i = 0; i < cur.height * W; i++) {
        const uint8_t v = cur.rgb[static_cast<size_t>(i * 3 + c)];
        const float x = detail::rescale_normalize(v, c, cfg.do_rescale, cfg.rescale_factor, cfg.do_normalize,
                                                  cfg.image_mean, cfg.image_std);
        px[static_cast<size_t>(c * cur.height * W + i)] = x;
      }
    // reshape(t, T, C, gh/M, M, P, gw/M, M, P).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8); one frame repeated T
    // times (np.tile), so the T axis copies the same pixels.
    for (int64_t by = 0; by < gh / M; by++)
      for (int64_t bx = 0; bx < gw / M; bx++)
        for (int64_t my = 0; my < M; my++)
          for (int64_t mx = 0; mx < M; mx++)
            for (int64_t c = 0; c < 3; c++)
              for (int64_t t = 0; t < T; t++)
                for (int64_t py = 0; py < P; py++)
                  for (int64_t qx = 0; qx < P; qx++) {
                    const int64_t y = (by * M + my) * P + py, x = (bx * M + mx) * P + qx;
                    out.push_back(px[static_cast<size_t>((c * cur.height + y) * W + x)]);
                  }
    r.grid_thw.push_back({1, gh, gw});
  }
  const int64_t n = static_cast<int64_t>(out.size()) / D;
  r.pixel_values = Tensor::from_floats({n, D}, out);
  return r;
}

}  // namespace hfx::processors
