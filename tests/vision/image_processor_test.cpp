// hfx's CLIP image processor (decode, Pillow's resampler, center crop, rescale, normalize) against two
// independent references on images this test writes (PNG and JPEG of many color types, sizes and aspect
// ratios):
//   - Pillow (Debian's python3-pil), run as transformers' CLIPImageProcessor runs it
//     (clip_pil_oracle.py): the cropped bytes must be IDENTICAL and pixel_values within 1e-6 (float32
//     rounding of rescale/normalize) for every image, resized or not;
//   - Transformers.js 4.3.1's AutoImageProcessor (clip_tjs_oracle.mjs): pixel_values within 1e-6
//   (measured 2.4e-7) for
//     every image whose shortest edge is already the target (no resampling). Transformers.js resizes
//     with sharp's affine bicubic interpolation (libvips, no antialiasing), not Pillow's filter, so
//     resized images differ from it by design; the test prints that difference (figures in docs/vision.md).
// A missing oracle is a failure with HFX_REQUIRE_ORACLES=1.
#include <gtest/gtest.h>

#include <unistd.h>

#include <zlib.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/processors/image.h"
#include "support/oracle.h"
#include "support/shell.h"
#include "vision/image_writers.h"

namespace fs = std::filesystem;
using hfx::testsupport::JpegKind;
using hfx::testsupport::PngKind;
namespace hp = hfx::processors;

namespace {

constexpr const char* kPython = "/usr/bin/python3";

// llava-hf/llava-1.5-7b-hf's preprocessor_config.json.
const char* kLlavaPreprocessor = R"({
  "crop_size": {"height": 336, "width": 336},
  "do_center_crop": true, "do_convert_rgb": true, "do_normalize": true, "do_rescale": true, "do_resize": true,
  "image_mean": [0.48145466, 0.4578275, 0.40821073],
  "image_processor_type": "CLIPImageProcessor",
  "image_std": [0.26862954, 0.26130258, 0.27577711],
  "processor_class": "LlavaProcessor",
  "resample": 3,
  "rescale_factor": 0.00392156862745098,
  "size": {"shortest_edge": 336}
})";

struct Case {
  std::string name;
  int64_t w, h;
  bool png;
  int kind;
  bool tjs_reads = true;  ///< false: Transformers.js 4.3.1 cannot load it (gray+alpha PNG: "unsupported
                          ///< number of channels: 4" in RawImage.read)
};

// Shortest edge 336 (no resampling) first, then images Pillow must resample (down and up).
const std::vector<Case> kCases = {
    {"square_rgb.png", 336, 336, true, int(PngKind::Rgb)},
    {"wide_rgba.png", 500, 336, true, int(PngKind::Rgba)},
    {"tall_gray.png", 336, 601, true, int(PngKind::Gray)},
    {"odd_ycc420.jpg", 337, 336, false, int(JpegKind::Baseline420)},
    {"tall_gray.jpg", 336, 900, false, int(JpegKind::Gray)},
    {"wide_palette.png", 700, 336, true, int(PngKind::Palette)},
    {"rgb16.png", 336, 420, true, int(PngKind::Rgb16)},
    {"progressive444.jpg", 1000, 336, false, int(JpegKind::Progressive444)},
    {"gray_alpha.png", 336, 337, true, int(PngKind::GrayAlpha), false},
    {"interlaced.png", 1500, 336, true, int(PngKind::RgbInterlaced)},
    {"tall_ycc420.jpg", 336, 1201, false, int(JpegKind::Baseline420)},
    {"photo_down.jpg", 640, 480, false, int(JpegKind::Baseline420)},
    {"small_up.png", 100, 60, true, int(PngKind::Rgb)},
    {"wide_down_rgba.png", 1200, 400, true, int(PngKind::Rgba)},
    {"tiny_up_gray.png", 50, 50, true, int(PngKind::Gray)},
    {"odd_portrait.jpg", 333, 777, false, int(JpegKind::Progressive444)},
    {"large_down.jpg", 2000, 1500, false, int(JpegKind::Baseline420)},
};

std::vector<float> read_f32(const std::string& path) {
  std::string b = hfx::io::read_file(path);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

class ImageProcessorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hfx_image_proc_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
    fs::create_directories(dir_ / "pil");
    fs::create_directories(dir_ / "tjs");
    std::ofstream(dir_ / "model" / "preprocessor_config.json") << kLlavaPreprocessor;
    uint32_t seed = 1;
    for (const Case& c : kCases) {
      const std::string p = (dir_ / c.name).string();
      if (c.png)
        hfx::testsupport::write_png(p, c.w, c.h, PngKind(c.kind), seed++);
      else
        hfx::testsupport::write_jpeg(p, c.w, c.h, JpegKind(c.kind), seed++);
      paths_ += " '" + p + "'";
      if (c.tjs_reads) tjs_paths_ += " '" + p + "'";
    }
    cfg_ = hp::ClipImageProcessorConfig::load((dir_ / "model").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string paths_, tjs_paths_;
  hp::ClipImageProcessorConfig cfg_;
};

TEST_F(ImageProcessorTest, EqualsPillowBytesAndTransformersJsPixelValues) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  auto pil = hfx::testsupport::sh(std::string(kPython) + " -c 'import PIL'");
  if (pil.rc != 0) {
    const std::string why =
        "[oracle] expected Pillow for /usr/bin/python3 (Debian's python3-pil; scripts/setup.sh "
        "installs it), got: " +
        pil.out;
    if (hfx::test::oracles_required()) GTEST_FAIL() << why;
    GTEST_SKIP() << why;
  }
  const std::string here = std::string(HFX_SOURCE_DIR) + "/tests/vision/";
  auto r = hfx::testsupport::sh(std::string(kPython) + " " + here + "clip_pil_oracle.py '" +
                                (dir_ / "model" / "preprocessor_config.json").string() + "' '" +
                                (dir_ / "pil").string() + "'" + paths_);
  ASSERT_EQ(r.rc, 0) << r.out;
  r = hfx::testsupport::sh("node " + here + "clip_tjs_oracle.mjs '" HFX_NODE_MODULES "' '" +
                           (dir_ / "model").string() + "' '" + (dir_ / "tjs").string() + "'" + tjs_paths_);
  ASSERT_EQ(r.rc, 0) << r.out;
  size_t tjs_index = 0, tjs_equal = 0;
  for (size_t i = 0; i < kCases.size(); i++) {
    const Case& c = kCases[i];
    SCOPED_TRACE(c.name);
    const hp::Image img = hp::read_image((dir_ / c.name).string());
    ASSERT_EQ(img.width, c.w);
    ASSERT_EQ(img.height, c.h);
    auto [rw, rh] = hp::clip_resize_size(cfg_, img.width, img.height);
    const hp::Image cropped = hp::center_crop(hp::resize(img, rw, rh, cfg_.resample), 336, 336);
    const std::string pil_bytes = hfx::io::read_file((dir_ / "pil" / (std::to_string(i) + ".u8")).string());
    ASSERT_EQ(pil_bytes.size(), cropped.rgb.size());
    size_t differing = 0;
    for (size_t k = 0; k < pil_bytes.size(); k++) differing += uint8_t(pil_bytes[k]) != cropped.rgb[k];
    EXPECT_EQ(differing, 0u) << "bytes that differ from Pillow's resize + crop";

    const hfx::Tensor pv = hp::clip_pixel_values(cfg_, {img});
    ASSERT_EQ(pv.shape(), (hfx::Shape{1, 3, 336, 336}));
    const float* mine = pv.data<float>();
    const auto pil_f = read_f32((dir_ / "pil" / (std::to_string(i) + ".f32")).string());
    ASSERT_EQ(pil_f.size(), size_t(pv.numel()));
    double max_pil = 0, max_tjs = 0, sum_tjs = 0;
    for (size_t k = 0; k < pil_f.size(); k++)
      max_pil = std::max(max_pil, double(std::fabs(mine[k] - pil_f[k])));
    EXPECT_LE(max_pil, 1e-6);  // measured 2.4e-7: one float32 ulp of values near 2
    const bool resampled = std::min(c.w, c.h) != 336;
    if (c.tjs_reads) {
      const auto tjs_f = read_f32((dir_ / "tjs" / (std::to_string(tjs_index++) + ".f32")).string());
      ASSERT_EQ(tjs_f.size(), size_t(pv.numel()));
      for (size_t k = 0; k < tjs_f.size(); k++) {
        max_tjs = std::max(max_tjs, double(std::fabs(mine[k] - tjs_f[k])));
        sum_tjs += std::fabs(mine[k] - tjs_f[k]);
      }
      sum_tjs /= double(tjs_f.size());
      if (!resampled) {
        EXPECT_LE(max_tjs, 1e-6);  // measured 2.4e-7
        tjs_equal++;
      }
    }
    const std::string vs_tjs =
        c.tjs_reads ? fmt::format("max|hfx-tjs|={:.3g}  mean|hfx-tjs|={:.3g}", max_tjs, sum_tjs)
                    : std::string("(Transformers.js cannot read it)");
    std::printf("[image processor] %-22s %4lldx%-4lld resampled=%d  max|hfx-pil|=%.3g  %s\n", c.name.c_str(),
                (long long)c.w, (long long)c.h, resampled, max_pil, vs_tjs.c_str());
  }
  EXPECT_GE(tjs_equal, 10u) << "images compared to Transformers.js without resampling";
}

}  // namespace

namespace {

std::string cut(const std::string& bytes, double frac) {
  return bytes.substr(0, size_t(bytes.size() * frac));
}

// A valid PNG whose IHDR claims w × h (CRC fixed), so only the size check can refuse it.
std::string with_ihdr_size(std::string png, uint32_t w, uint32_t h) {
  auto put = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) png[at + i] = char((v >> (24 - 8 * i)) & 0xff);
  };
  put(16, w);
  put(20, h);
  put(29, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17)));
  return png;
}

TEST_F(ImageProcessorTest, CorruptTruncatedOrOversizedImagesFailClearly) {
  const std::string png = hfx::io::read_file((dir_ / "square_rgb.png").string());
  const std::string jpg = hfx::io::read_file((dir_ / "photo_down.jpg").string());
  std::string bad_crc = png;
  bad_crc[bad_crc.size() / 2] ^= 0x5a;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"truncated.png", cut(png, 0.5)},
      {"truncated.jpg", cut(jpg, 0.5)},
      {"corrupt_idat.png", bad_crc},
      {"not_an_image.png", "GIF89a this is not a PNG"},
      {"empty.jpg", ""},
      {"huge.png", with_ihdr_size(png, 20000, 20000)},
  };
  for (const auto& [name, bytes] : bad) {
    SCOPED_TRACE(name);
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    try {
      hp::read_image(p);
      ADD_FAILURE() << "decoded a bad image";
    } catch (const hfx::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[image] expected ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(", got "), std::string::npos) << e.what();
    }
    const auto r =
        hfx::testsupport::sh(std::string(HFX_CLI) + " preprocess '" + (dir_ / "model").string() +
                             "' --image '" + p + "' -o '" + (dir_ / "pv.safetensors").string() + "'");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("[image] expected "), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir_ / "pv.safetensors")) << "nothing half-written";
  }
  // The good image through the same command: the written pixel_values equal the library's.
  const auto r = hfx::testsupport::sh(std::string(HFX_CLI) + " preprocess '" + (dir_ / "model").string() +
                                      "' --image '" + (dir_ / "wide_rgba.png").string() + "' --image '" +
                                      (dir_ / "photo_down.jpg").string() + "' -o '" +
                                      (dir_ / "pv.safetensors").string() + "'");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto st = hfx::io::SafetensorsFile::open((dir_ / "pv.safetensors").string());
  const hfx::Tensor got = st->get("pixel_values");
  const hfx::Tensor want = hp::clip_pixel_values(cfg_, {hp::read_image((dir_ / "wide_rgba.png").string()),
                                                        hp::read_image((dir_ / "photo_down.jpg").string())});
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
}

TEST(ImageProcessorConfig, RejectsWhatItDoesNotImplement) {
  auto j = nlohmann::json::parse(kLlavaPreprocessor);
  j["image_processor_type"] = "SiglipImageProcessor";
  EXPECT_THROW(hp::ClipImageProcessorConfig::from_json(j, "p.json"), hfx::Error);
  j = nlohmann::json::parse(kLlavaPreprocessor);
  j["resample"] = 0;
  try {
    hp::ClipImageProcessorConfig::from_json(j, "p.json");
    ADD_FAILURE() << "accepted nearest";
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("got 0"), std::string::npos) << e.what();
  }
  j = nlohmann::json::parse(kLlavaPreprocessor);
  j["image_mean"] = {0.5, 0.5};
  EXPECT_THROW(hp::ClipImageProcessorConfig::from_json(j, "p.json"), hfx::Error);
  j = nlohmann::json::parse(kLlavaPreprocessor);
  j["size"] = 224;  // older configs: one integer
  j["crop_size"] = 224;
  const auto c = hp::ClipImageProcessorConfig::from_json(j, "p.json");
  EXPECT_EQ(c.shortest_edge, 224);
  EXPECT_EQ(c.crop_width, 224);
}

}  // namespace

namespace {

// Damaged files of every kind the decoders take: each truncation point and byte flip either decodes (a flip
// in pixel data can leave a valid file) or is an "[image] expected …" error — never a crash, a hang or
// another exception (the sanitizer tier runs this under ASan/UBSan).
TEST_F(ImageProcessorTest, DamagedFilesDecodeOrFailCleanly) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  int decoded = 0, refused = 0;
  for (const char* name : {"square_rgb.png", "wide_palette.png", "interlaced.png", "rgb16.png",
                           "odd_ycc420.jpg", "progressive444.jpg", "tall_gray.jpg"}) {
    const std::string good = hfx::io::read_file((dir_ / name).string());
    for (int k = 0; k < 40; k++) {
      std::string bad = good;
      if (k % 2 == 0) {
        bad.resize(next() % good.size());
      } else {
        for (int f = 0; f < 1 + int(next() % 4); f++) bad[next() % bad.size()] ^= char(1 + next() % 255);
      }
      try {
        const hp::Image img = hp::decode_image(bad, name);
        EXPECT_EQ(img.rgb.size(), size_t(img.width * img.height * 3));
        decoded++;
      } catch (const hfx::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("[image] expected ", 0), 0u) << e.what();
        refused++;
      }
    }
  }
  std::printf("[image processor] damaged files: %d decoded, %d refused\n", decoded, refused);
  EXPECT_GT(refused, 0);
}

}  // namespace
