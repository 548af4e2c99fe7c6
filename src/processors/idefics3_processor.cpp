// Idefics3ImageProcessor (transformers 4.47, image_processing_idefics3.py): the sizes it computes, the tiles
// it cuts and the global image, on hfx's Pillow-exact resampler (hfx/processors/image.h).
#include <cmath>

#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/processors/image.h"
#include "processors/pixel_common.h"

namespace hfx::processors {
namespace {

constexpr std::string_view kC = "image processor";
constexpr int64_t kMaxImageSize = 4096;  // MAX_IMAGE_SIZE: 4k as the absolute maximum

// _resize_output_size_rescale_to_max_len, then _resize_output_size_scale_below_upper_bound: (height, width).
std::pair<int64_t, int64_t> longest_edge_size(int64_t h, int64_t w, int64_t max_len) {
  const double aspect = static_cast<double>(w) / static_cast<double>(h);
  if (w >= h) {
    w = max_len;
    h = static_cast<int64_t>(static_cast<double>(w) / aspect);
    if (h % 2 != 0) h += 1;
  } else {
    h = max_len;
    w = static_cast<int64_t>(static_cast<double>(h) * aspect);
    if (w % 2 != 0) w += 1;
  }
  h = std::max<int64_t>(h, 1);
  w = std::max<int64_t>(w, 1);
  const double a2 = static_cast<double>(w) / static_cast<double>(h);
  if (w >= h && w > kMaxImageSize) {
    w = kMaxImageSize;
    h = static_cast<int64_t>(static_cast<double>(w) / a2);
  } else if (h > w && h > kMaxImageSize) {
    h = kMaxImageSize;
    w = static_cast<int64_t>(static_cast<double>(h) * a2);
  }
  return {std::max<int64_t>(h, 1), std::max<int64_t>(w, 1)};
}

int64_t ceil_to(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// resize_for_vision_encoder: both sides up to multiples of the tile side, aspect kept.
std::pair<int64_t, int64_t> tile_multiple_size(int64_t h, int64_t w, int64_t tile) {
  const double aspect = static_cast<double>(w) / static_cast<double>(h);
  if (w >= h) {
    w = ceil_to(w, tile);
    h = ceil_to(static_cast<int64_t>(static_cast<double>(w) / aspect), tile);
  } else {
    h = ceil_to(h, tile);
    w = ceil_to(static_cast<int64_t>(static_cast<double>(h) * aspect), tile);
  }
  return {h, w};
}

Image crop(const Image& in, int64_t x0, int64_t y0, int64_t w, int64_t h) {
  Image out{w, h, std::vector<uint8_t>(static_cast<size_t>(w * h * 3))};
  for (int64_t y = 0; y < h; y++)
    std::copy_n(in.rgb.begin() + ((y0 + y) * in.width + x0) * 3, w * 3, out.rgb.begin() + y * w * 3);
  return out;
}

}  // namespace

Idefics3ImageProcessorConfig Idefics3ImageProcessorConfig::from_json(const nlohmann::json& j,
                                                                     std::string_view where) {
  jsonc::object(j, kC, where);
  Idefics3ImageProcessorConfig c;
  const std::string type =
      jsonc::get_or<std::string>(j, "image_processor_type", "Idefics3ImageProcessor", kC, where);
  HFX_CHECK(type == "Idefics3ImageProcessor" || type == "SmolVLMImageProcessor", std::string(kC),
            "expected image_processor_type Idefics3ImageProcessor in {}, got '{}'", where, type);
  const std::string w(where);
  c.do_resize = jsonc::get_or<bool>(j, "do_resize", c.do_resize, kC, where);
  if (jsonc::has(j, "size"))
    c.longest_edge = jsonc::get<int64_t>(jsonc::at(j, "size", kC, where), "longest_edge", kC, w + ".size");
  if (jsonc::has(j, "max_image_size"))
    c.max_image_size = jsonc::get<int64_t>(jsonc::at(j, "max_image_size", kC, where), "longest_edge", kC,
                                           w + ".max_image_size");
  c.do_image_splitting = jsonc::get_or<bool>(j, "do_image_splitting", c.do_image_splitting, kC, where);
  c.resample = static_cast<Resample>(jsonc::get_or<int>(j, "resample", 1, kC, where));
  c.do_rescale = jsonc::get_or<bool>(j, "do_rescale", c.do_rescale, kC, where);
  c.rescale_factor = jsonc::get_or<double>(j, "rescale_factor", c.rescale_factor, kC, where);
  c.do_normalize = jsonc::get_or<bool>(j, "do_normalize", c.do_normalize, kC, where);
  detail::read_mean_std(j, where, c.image_mean, c.image_std);
  HFX_CHECK(c.longest_edge > 0 && c.max_image_size > 0, std::string(kC),
            "expected a positive size.longest_edge and max_image_size.longest_edge in {}, got {} and {}",
            where, c.longest_edge, c.max_image_size);
  return c;
}

Idefics3Pixels idefics3_pixel_values(const Idefics3ImageProcessorConfig& cfg,
                                     const std::vector<Image>& images) {
  HFX_CHECK(!images.empty(), std::string(kC), "expected at least one image, got none");
  const int64_t S = cfg.max_image_size;
  std::vector<Image> frames;
  Idefics3Pixels r;
  for (const Image& img : images) {
    Image cur = img;
    if (cfg.do_resize) {
      auto [h, w] = longest_edge_size(cur.height, cur.width, cfg.longest_edge);
      cur = resize(cur, w, h, cfg.resample);
    }
    int64_t rows = 0, cols = 0;
    if (cfg.do_image_splitting) {
      auto [h, w] = tile_multiple_size(cur.height, cur.width, S);
      cur = resize(cur, w, h, cfg.resample);
      if (cur.height > S || cur.width > S) {
        rows = (cur.height + S - 1) / S;
        cols = (cur.width + S - 1) / S;
        const int64_t th = (cur.height + rows - 1) / rows, tw = (cur.width + cols - 1) / cols;
        for (int64_t y = 0; y < rows; y++)
          for (int64_t x = 0; x < cols; x++)
            frames.push_back(crop(cur, x * tw, y * th, std::min(tw, cur.width - x * tw),
                                  std::min(th, cur.height - y * th)));
        cur = resize(cur, S, S, Resample::Lanczos);  // split_image resizes the global image with its default
      }
    } else {
      cur = resize(cur, S, S, cfg.resample);
    }
    frames.push_back(std::move(cur));
    r.rows.push_back(rows);
    r.cols.push_back(cols);
  }
  const int64_t N = static_cast<int64_t>(frames.size());
  r.pixel_values = Tensor::zeros({1, N, 3, S, S}, DType::F32);
  float* dst = r.pixel_values.data<float>();
  for (int64_t n = 0; n < N; n++) {
    HFX_CHECK(frames[n].width == S && frames[n].height == S, std::string(kC),
              "expected {}x{} tiles, got {}x{}: a tile that needs padding is not supported", S, S,
              frames[n].width, frames[n].height);
    for (int64_t c = 0; c < 3; c++)
      for (int64_t i = 0; i < S * S; i++) {
        const uint8_t v = frames[n].rgb[i * 3 + c];
        const float x = detail::rescale_normalize(v, c, cfg.do_rescale, cfg.rescale_factor, cfg.do_normalize,
                                                  cfg.image_mean, cfg.image_std);
        dst[(n * 3 + c) * S * S + i] = x;
      }
  }
  return r;
}

}  // namespace hfx::processors
