// Writing the PNG and JPEG files the image-processor tests feed to hfx and to the oracles: every color
// type the decoders convert (RGB, RGBA, gray, gray+alpha, palette, 16-bit, interlaced; baseline,
// progressive, grayscale JPEG), with content that has both gradients and fine detail so resampling
// differences show.
#pragma once
#include <png.h>
#include <stdio.h>

#include <jpeglib.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hfx::testsupport {

/// Deterministic test pattern: channel `c` of pixel (x, y) of a w × h image, seeded.
inline uint8_t pattern(int64_t x, int64_t y, int c, int64_t w, int64_t h, uint32_t seed) {
  uint32_t s = seed * 2654435761u ^ static_cast<uint32_t>(x * 73856093 ^ y * 19349663 ^ c * 83492791);
  s ^= s >> 13;
  s *= 0x5bd1e995u;
  s ^= s >> 15;
  const int64_t grad =
      (x * 255 / std::max<int64_t>(w - 1, 1) * (c + 1) + y * 255 / std::max<int64_t>(h - 1, 1)) / (c + 2);
  const int64_t stripes = ((x / (3 + c)) + (y / 5)) % 2 ? 40 : -40;
  return static_cast<uint8_t>(
      std::clamp<int64_t>(grad + stripes + static_cast<int64_t>(s % 31) - 15, 0, 255));
}

enum class PngKind { Rgb, Rgba, Gray, GrayAlpha, Palette, Rgb16, RgbInterlaced };

inline void write_png(const std::string& path, int64_t w, int64_t h, PngKind kind, uint32_t seed) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  int color = PNG_COLOR_TYPE_RGB, depth = 8, channels = 3;
  switch (kind) {
    case PngKind::Rgba:
      color = PNG_COLOR_TYPE_RGBA, channels = 4;
      break;
    case PngKind::Gray:
      color = PNG_COLOR_TYPE_GRAY, channels = 1;
      break;
    case PngKind::GrayAlpha:
      color = PNG_COLOR_TYPE_GRAY_ALPHA, channels = 2;
      break;
    case PngKind::Palette:
      color = PNG_COLOR_TYPE_PALETTE, channels = 1;
      break;
    case PngKind::Rgb16:
      depth = 16;
      break;
    default:
      break;
  }
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), depth, color,
               kind == PngKind::RgbInterlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (kind == PngKind::Palette) {
    std::vector<png_color> pal(256);
    for (int i = 0; i < 256; i++)
      pal[i] = {static_cast<png_byte>(i), static_cast<png_byte>(255 - i),
                static_cast<png_byte>((i * 7) % 256)};
    png_set_PLTE(png, info, pal.data(), 256);
  }
  png_write_info(png, info);
  if (kind == PngKind::RgbInterlaced) png_set_interlace_handling(png);
  const int64_t bps = depth / 8;
  std::vector<uint8_t> img(static_cast<size_t>(w * h * channels * bps));
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++)
      for (int c = 0; c < channels; c++) {
        const uint8_t v = pattern(x, y, c, w, h, seed);
        uint8_t* p = &img[((y * w + x) * channels + c) * bps];
        p[0] = v;
        if (bps == 2) p[1] = static_cast<uint8_t>(v * 37 + 11);  // low byte: PIL and hfx keep the high byte
      }
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; y++) rows[y] = img.data() + y * w * channels * bps;
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

enum class JpegKind { Baseline420, Progressive444, Gray };

inline void write_jpeg(const std::string& path, int64_t w, int64_t h, JpegKind kind, uint32_t seed) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = kind == JpegKind::Gray ? 1 : 3;
  c.in_color_space = kind == JpegKind::Gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  if (kind == JpegKind::Progressive444) {
    jpeg_simple_progression(&c);
    c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
  }
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(w * c.input_components));
  for (int64_t y = 0; y < h; y++) {
    for (int64_t x = 0; x < w; x++)
      for (int ch = 0; ch < c.input_components; ch++)
        row[x * c.input_components + ch] = pattern(x, y, ch, w, h, seed);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::fclose(f);
}

}  // namespace hfx::testsupport
