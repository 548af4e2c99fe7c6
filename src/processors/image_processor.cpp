// Resampling as Pillow's ImagingResample (src/libImaging/Resample.c) and transformers' CLIPImageProcessor
// (resize shortest edge, center crop, rescale, normalize).
//
// The resampler is a port of Pillow's algorithm, not an approximation of it: the same filters and
// supports, the same coefficient windows (rounded bounds, normalized to sum 1), the same 22-bit fixed
// point with round-half-up and clamping, the same pass order with an 8-bit image in between — so the
// bytes equal PIL's, which is what transformers resizes with.
#include <cmath>
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/io/safetensors.h"
#include "hfx/processors/image.h"
#include "processors/pixel_common.h"

namespace hfx::processors {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }
double bilinear_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}
double hamming_filter(double x) {
  x = std::fabs(x);
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x *= M_PI;
  return std::sin(x) / x * (0.54 + 0.46 * std::cos(x));
}
double bicubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
double sinc_filter(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}
double lanczos_filter(double x) {
  if (-3.0 <= x && x < 3.0) return sinc_filter(x) * sinc_filter(x / 3);
  return 0.0;
}

struct Filter {
  double (*fn)(double);
  double support;
};

Filter filter_of(Resample r) {
  switch (r) {
    case Resample::Box:
      return {box_filter, 0.5};
    case Resample::Bilinear:
      return {bilinear_filter, 1.0};
    case Resample::Hamming:
      return {hamming_filter, 1.0};
    case Resample::Bicubic:
      return {bicubic_filter, 2.0};
    case Resample::Lanczos:
      return {lanczos_filter, 3.0};
    case Resample::Nearest:
      break;
  }
  HFX_THROW("image",
            "expected resample 1 (lanczos), 2 (bilinear), 3 (bicubic), 4 (box) or 5 (hamming), got "
            "{} (nearest is not supported); set `resample` in preprocessor_config.json",
            static_cast<int>(r));
}

// One output pixel's window: first input index, count, and fixed-point weights.
struct Coeffs {
  int ksize = 0;
  std::vector<int> bounds;  // [out] → (xmin, xmax)
  std::vector<int32_t> kk;  // [out * ksize]
};

// Pillow's precompute_coeffs + normalize_coeffs_8bpc for the box [0, in_size).
Coeffs precompute(int in_size, int out_size, const Filter& f) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = f.support * filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(out_size) * 2);
  c.kk.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> k(static_cast<size_t>(c.ksize));
  for (int xx = 0; xx < out_size; xx++) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; x++) {
      k[x] = f.fn((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (int x = 0; x < xmax; x++) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      const double fixed = w * (1 << kPrecisionBits);
      c.kk[static_cast<size_t>(xx) * c.ksize + x] = static_cast<int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.bounds[xx * 2] = xmin;
    c.bounds[xx * 2 + 1] = xmax;
  }
  return c;
}

inline uint8_t clip8(int64_t in) {
  if (in >= (int64_t{1} << kPrecisionBits << 8)) return 255;
  if (in <= 0) return 0;
  return static_cast<uint8_t>(in >> kPrecisionBits);
}

// Rows [row0, row0 + out.height) of `in`, resampled along x to out.width.
void resample_horizontal(const Image& in, int64_t row0, Image& out, const Coeffs& c) {
  for (int64_t yy = 0; yy < out.height; yy++) {
    const uint8_t* src = in.rgb.data() + (yy + row0) * in.width * 3;
    uint8_t* dst = out.rgb.data() + yy * out.width * 3;
    for (int64_t xx = 0; xx < out.width; xx++) {
      const int xmin = c.bounds[xx * 2], xmax = c.bounds[xx * 2 + 1];
      const int32_t* k = &c.kk[static_cast<size_t>(xx) * c.ksize];
      for (int ch = 0; ch < 3; ch++) {
        int64_t ss = int64_t{1} << (kPrecisionBits - 1);
        for (int x = 0; x < xmax; x++) ss += static_cast<int64_t>(src[(x + xmin) * 3 + ch]) * k[x];
        dst[xx * 3 + ch] = clip8(ss);
      }
    }
  }
}

// `bounds` already shifted to `in`'s first row.
void resample_vertical(const Image& in, Image& out, const Coeffs& c, int row_shift) {
  for (int64_t yy = 0; yy < out.height; yy++) {
    const int ymin = c.bounds[yy * 2] - row_shift, ymax = c.bounds[yy * 2 + 1];
    const int32_t* k = &c.kk[static_cast<size_t>(yy) * c.ksize];
    uint8_t* dst = out.rgb.data() + yy * out.width * 3;
    for (int64_t i = 0; i < out.width * 3; i++) {
      int64_t ss = int64_t{1} << (kPrecisionBits - 1);
      for (int y = 0; y < ymax; y++) ss += static_cast<int64_t>(in.rgb[(y + ymin) * in.width * 3 + i]) * k[y];
      dst[i] = clip8(ss);
    }
  }
}

Image blank(int64_t w, int64_t h) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.assign(static_cast<size_t>(w * h * 3), 0);
  return img;
}

}  // namespace

Image resize(const Image& in, int64_t width, int64_t height, Resample resample) {
  HFX_CHECK(width > 0 && height > 0 && width * height <= kMaxImagePixels, "image",
            "expected a resize target of 1 to {} pixels, got {}x{}", kMaxImagePixels, width, height);
  const Filter f = filter_of(resample);
  if (width == in.width && height == in.height) return in;  // Pillow: box is the whole image → a copy
  const Coeffs horiz = precompute(static_cast<int>(in.width), static_cast<int>(width), f);
  const Coeffs vert = precompute(static_cast<int>(in.height), static_cast<int>(height), f);
  const bool need_h = width != in.width, need_v = height != in.height;
  // Pillow's horizontal pass covers only the input rows the vertical pass reads.
  const int ybox_first = vert.bounds[0];
  const int ybox_last = vert.bounds[height * 2 - 2] + vert.bounds[height * 2 - 1];
  if (!need_v) {
    Image out = blank(width, in.height);
    resample_horizontal(in, 0, out, horiz);
    return out;
  }
  if (!need_h) {
    Image out = blank(in.width, height);
    resample_vertical(in, out, vert, 0);
    return out;
  }
  Image tmp = blank(width, ybox_last - ybox_first);
  resample_horizontal(in, ybox_first, tmp, horiz);
  Image out = blank(width, height);
  resample_vertical(tmp, out, vert, ybox_first);
  return out;
}

Image center_crop(const Image& in, int64_t width, int64_t height) {
  Image out = blank(width, height);
  // transformers: top = (h - crop_h) // 2 (floor, also when negative: then the image is pasted centered
  // into a zero canvas).
  const int64_t top = (in.height - height) >= 0 ? (in.height - height) / 2 : -((height - in.height + 1) / 2);
  const int64_t left = (in.width - width) >= 0 ? (in.width - width) / 2 : -((width - in.width + 1) / 2);
  for (int64_t y = 0; y < height; y++) {
    const int64_t sy = y + top;
    if (sy < 0 || sy >= in.height) continue;
    for (int64_t x = 0; x < width; x++) {
      const int64_t sx = x + left;
      if (sx < 0 || sx >= in.width) continue;
      for (int ch = 0; ch < 3; ch++)
        out.rgb[(y * width + x) * 3 + ch] = in.rgb[(sy * in.width + sx) * 3 + ch];
    }
  }
  return out;
}

std::pair<int64_t, int64_t> clip_resize_size(const ClipImageProcessorConfig& cfg, int64_t width,
                                             int64_t height) {
  // transformers' get_resize_output_image_size(default_to_square=False): int(size * long / short).
  const bool portrait = width <= height;
  const int64_t s = portrait ? width : height, l = portrait ? height : width;
  const auto new_long = static_cast<int64_t>(static_cast<double>(cfg.shortest_edge) * l / s);
  return portrait ? std::pair{cfg.shortest_edge, new_long} : std::pair{new_long, cfg.shortest_edge};
}

Tensor clip_pixel_values(const ClipImageProcessorConfig& cfg, const std::vector<Image>& images) {
  HFX_CHECK(!images.empty(), "image processor", "expected at least one image, got none");
  std::vector<Image> ready;
  for (const Image& img : images) {
    Image cur = img;
    if (cfg.do_resize) {
      auto [w, h] = cfg.resize_height > 0 ? std::pair{cfg.resize_width, cfg.resize_height}
                                          : clip_resize_size(cfg, img.width, img.height);
      cur = resize(cur, w, h, cfg.resample);
    }
    if (cfg.do_center_crop) cur = center_crop(cur, cfg.crop_width, cfg.crop_height);
    HFX_CHECK(ready.empty() || (cur.width == ready[0].width && cur.height == ready[0].height),
              "image processor",
              "expected images of one size to batch (set do_center_crop), got {}x{} and {}x{}",
              ready[0].width, ready[0].height, cur.width, cur.height);
    ready.push_back(std::move(cur));
  }
  const int64_t H = ready[0].height, W = ready[0].width, N = static_cast<int64_t>(ready.size());
  Tensor out = Tensor::zeros({N, 3, H, W}, DType::F32);
  float* dst = out.data<float>();
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < 3; c++)
      for (int64_t i = 0; i < H * W; i++) {
        const uint8_t v = ready[n].rgb[i * 3 + c];
        // transformers' rescale: float64 multiply, then float32; normalize: float32 arithmetic.
        const float x = detail::rescale_normalize(v, c, cfg.do_rescale, cfg.rescale_factor, cfg.do_normalize,
                                                  cfg.image_mean, cfg.image_std);
        dst[(n * 3 + c) * H * W + i] = x;
      }
  return out;
}

void detail::read_mean_std(const nlohmann::json& j, std::string_view where, float mean[3], float std[3]) {
  constexpr std::string_view kC = "image processor";
  for (const char* key : {"image_mean", "image_std"}) {
    if (!jsonc::has(j, key)) continue;
    auto v = jsonc::as<std::vector<double>>(j[key], kC, std::string(where) + "." + key);
    HFX_CHECK(v.size() == 3, std::string(kC), "expected 3 values (R, G, B) in {}.{}, got {}", where, key,
              v.size());
    float* dst = std::string_view(key) == "image_mean" ? mean : std;
    for (int i = 0; i < 3; i++) dst[i] = static_cast<float>(v[i]);
  }
}

ClipImageProcessorConfig ClipImageProcessorConfig::from_json(const nlohmann::json& j,
                                                             std::string_view where) {
  constexpr std::string_view kC = "image processor";
  jsonc::object(j, kC, where);
  ClipImageProcessorConfig c;
  const std::string type =
      jsonc::get_or<std::string>(j, "image_processor_type", "CLIPImageProcessor", kC, where);
  const bool clip = type == "CLIPImageProcessor" || type == "CLIPImageProcessorFast";
  const bool siglip = type == "SiglipImageProcessor" || type == "SiglipImageProcessorFast" ||
                      type == "Gemma3ImageProcessor" || type == "Gemma3ImageProcessorFast";
  HFX_CHECK(
      clip || siglip, std::string(kC),
      "expected image_processor_type CLIPImageProcessor, SiglipImageProcessor or Gemma3ImageProcessor in "
      "{}, got '{}' (the processors of llava and gemma3 checkpoints)",
      where, type);
  HFX_CHECK(
      !jsonc::get_or<bool>(j, "do_pan_and_scan", false, kC, where), std::string(kC),
      "expected do_pan_and_scan false or null in {}, got true; hfx does not implement Gemma 3's pan and "
      "scan crops",
      where);
  c.do_resize = jsonc::get_or<bool>(j, "do_resize", c.do_resize, kC, where);
  const auto& size = jsonc::at(j, "size", kC, where);
  if (siglip) {  // transformers' defaults: 224×224 bilinear, mean and std 0.5, no crop
    const std::string sw = std::string(where) + ".size";
    c.resize_height = jsonc::get<int64_t>(size, "height", kC, sw);
    c.resize_width = jsonc::get<int64_t>(size, "width", kC, sw);
    HFX_CHECK(c.resize_height > 0 && c.resize_width > 0, std::string(kC),
              "expected a positive size.height and size.width in {}, got {}x{}", where, c.resize_width,
              c.resize_height);
    c.do_center_crop = false;
    for (int i = 0; i < 3; i++) c.image_mean[i] = c.image_std[i] = 0.5f;
  } else {
    c.shortest_edge = size.is_object()
                          ? jsonc::get<int64_t>(size, "shortest_edge", kC, std::string(where) + ".size")
                          : jsonc::as<int64_t>(size, kC, std::string(where) + ".size");
  }
  c.resample = static_cast<Resample>(jsonc::get_or<int>(j, "resample", siglip ? 2 : 3, kC, where));
  if (c.do_resize) filter_of(c.resample);  // rejects an unsupported filter here, not at the first image
  if (clip) c.do_center_crop = jsonc::get_or<bool>(j, "do_center_crop", c.do_center_crop, kC, where);
  if (c.do_center_crop) {
    const auto& crop = jsonc::at(j, "crop_size", kC, where);
    const std::string cw = std::string(where) + ".crop_size";
    c.crop_height =
        crop.is_object() ? jsonc::get<int64_t>(crop, "height", kC, cw) : jsonc::as<int64_t>(crop, kC, cw);
    c.crop_width = crop.is_object() ? jsonc::get<int64_t>(crop, "width", kC, cw) : c.crop_height;
  }
  c.do_rescale = jsonc::get_or<bool>(j, "do_rescale", c.do_rescale, kC, where);
  c.rescale_factor = jsonc::get_or<double>(j, "rescale_factor", c.rescale_factor, kC, where);
  c.do_normalize = jsonc::get_or<bool>(j, "do_normalize", c.do_normalize, kC, where);
  detail::read_mean_std(j, where, c.image_mean, c.image_std);
  HFX_CHECK(c.shortest_edge > 0 && c.crop_height > 0 && c.crop_width > 0, std::string(kC),
            "expected positive size and crop_size in {}, got {} and {}x{}", where, c.shortest_edge,
            c.crop_height, c.crop_width);
  return c;
}

ClipImageProcessorConfig ClipImageProcessorConfig::load(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "preprocessor_config.json").string();
  HFX_CHECK(std::filesystem::exists(path), "image processor",
            "expected preprocessor_config.json in '{}', got none; a vision model folder needs its processor "
            "files",
            dir);
  return from_json(jsonc::parse(io::read_file(path), "image processor", path), path);
}

}  // namespace hfx::processors
