// Image decoding: PNG through libpng, JPEG through libjpeg(-turbo), to 8-bit RGB as PIL's
// Image.open(f).convert("RGB") gives it (see hfx/processors/image.h for the conversions chosen).
//
// Both libraries report errors through longjmp. Each decode runs in a function whose only locals
// across setjmp are plain pointers into a heap `State`, so a jump skips no destructor and reads no
// indeterminate local; the error text is kept in the state and thrown after the library is cleaned up.
#include <png.h>
#include <stdio.h>  // jpeglib.h needs FILE and size_t first

#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>
#include <memory>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/processors/image.h"

namespace hfx::processors {
namespace {

void check_size(int64_t w, int64_t h, const std::string& what) {
  HFX_CHECK(w > 0 && h > 0, "image", "expected an image of at least 1x1 pixels in {}, got {}x{}", what, w, h);
  HFX_CHECK(w * h <= kMaxImagePixels, "image",
            "expected at most {} pixels (Pillow's decompression-bomb limit) in {}, got {}x{} = {}; "
            "downscale the image first",
            kMaxImagePixels, what, w, h, w * h);
}

// ── PNG ──

struct PngState {
  std::string_view bytes;
  size_t pos = 8;  // the signature was checked before libpng starts
  std::string error;
  std::vector<png_bytep> rows;  // here, not a local: a local set after setjmp is indeterminate after longjmp
  std::jmp_buf jmp;
};

void png_read_fn(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (s->bytes.size() - s->pos < n) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, s->bytes.data() + s->pos, n);
  s->pos += n;
}

void png_error_fn(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  if (s->error.empty()) s->error = msg;
  std::longjmp(s->jmp, 1);
}

void png_warning_fn(png_structp, png_const_charp) {}  // benign (e.g. an unknown ancillary chunk)

// PIL's conversions: palette looked up with no transparency, gray expanded and replicated, 16-bit to the
// high byte (png_set_strip_16 truncates, as PIL's ";16B" unpackers), alpha dropped, no gamma.
void png_set_rgb8(png_structp png, png_infop info) {
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
}

// Returns false with s->error set; `img` is filled only on success.
bool decode_png_into(PngState* s, Image* img, const std::string* what) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, png_error_fn, png_warning_fn);
  if (!png) return s->error = "out of memory", false;
  png_infop info = png_create_info_struct(png);
  if (setjmp(s->jmp)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, s, png_read_fn);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  const int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  try {
    check_size(w, h, *what);
  } catch (const Error& e) {
    s->error = e.what();
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_rgb8(png, info);
  img->width = w;
  img->height = h;
  img->rgb.assign(static_cast<size_t>(w * h * 3), 0);
  s->rows.resize(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; y++) s->rows[y] = img->rgb.data() + y * w * 3;
  png_read_image(png, s->rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// ── JPEG ──

struct JpegError {
  jpeg_error_mgr mgr;
  std::string error;
  std::jmp_buf jmp;
};

void jpeg_error_exit(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  char msg[JMSG_LENGTH_MAX];
  c->err->format_message(c, msg);
  if (e->error.empty()) e->error = msg;
  std::longjmp(e->jmp, 1);
}

// A truncated file is a warning to libjpeg, which then goes on with gray pixels; PIL refuses it ("image file
// is truncated"), and so does hfx. Other corrupt-data warnings (extraneous bytes before a marker) PIL lets
// pass, and so does hfx.
void jpeg_emit_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) jpeg_error_exit(c);
}

bool decode_jpeg_into(JpegError* e, std::string_view bytes, Image* img, const std::string* what) {
  auto* cinfo = new jpeg_decompress_struct();
  cinfo->err = jpeg_std_error(&e->mgr);
  e->mgr.error_exit = jpeg_error_exit;
  e->mgr.emit_message = jpeg_emit_message;
  if (setjmp(e->jmp)) {
    jpeg_destroy_decompress(cinfo);
    delete cinfo;
    return false;
  }
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    e->error = "a CMYK JPEG (convert it to RGB first, e.g. `convert in.jpg -colorspace sRGB out.jpg`)";
    jpeg_destroy_decompress(cinfo);
    delete cinfo;
    return false;
  }
  const int64_t w = cinfo->image_width, h = cinfo->image_height;
  try {
    check_size(w, h, *what);
  } catch (const Error& err) {
    e->error = err.what();
    jpeg_destroy_decompress(cinfo);
    delete cinfo;
    return false;
  }
  cinfo->out_color_space = JCS_RGB;
  jpeg_start_decompress(cinfo);
  img->width = w;
  img->height = h;
  img->rgb.assign(static_cast<size_t>(w * h * 3), 0);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = img->rgb.data() + static_cast<int64_t>(cinfo->output_scanline) * w * 3;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  jpeg_destroy_decompress(cinfo);
  delete cinfo;
  return true;
}

}  // namespace

Image decode_image(std::string_view bytes, const std::string& what) {
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Image img;
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) {
    auto s = std::make_unique<PngState>();
    s->bytes = bytes;
    if (!decode_png_into(s.get(), &img, &what)) {
      if (s->error.rfind("[image]", 0) == 0) throw Error("image", s->error.substr(8));
      HFX_THROW("image",
                "expected a valid PNG in {}, got libpng error: {}; re-export or re-download the file", what,
                s->error);
    }
    return img;
  }
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
      static_cast<unsigned char>(bytes[1]) == 0xD8 && static_cast<unsigned char>(bytes[2]) == 0xFF) {
    auto e = std::make_unique<JpegError>();
    if (!decode_jpeg_into(e.get(), bytes, &img, &what)) {
      if (e->error.rfind("[image]", 0) == 0) throw Error("image", e->error.substr(8));
      HFX_THROW("image",
                "expected a valid JPEG in {}, got libjpeg error: {}; re-export or re-download the file", what,
                e->error);
    }
    return img;
  }
  HFX_THROW("image",
            "expected a PNG or JPEG file in {}, got {} bytes with neither signature; convert the "
            "image to PNG or JPEG",
            what, bytes.size());
}

Image read_image(const std::string& path) {
  std::string bytes;
  try {
    bytes = io::read_file(path);
  } catch (const Error& e) {
    HFX_THROW("image", "expected a readable image file, got {}", e.what());
  }
  return decode_image(bytes, "'" + path + "'");
}

}  // namespace hfx::processors
