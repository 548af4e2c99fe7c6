// Scratch files and the tiny reference model of the fuzz targets (see fuzz_support.h).
#include "fuzz/fuzz_support.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "hfx/models/tiny.h"

namespace hfx::fuzz {

namespace fs = std::filesystem;

const fs::path& scratch() {
  static const fs::path dir = [] {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/hfx_fuzz_XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a scratch folder " + tmpl);
    static const fs::path made = tmpl;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(made, ec);
    });
    return made;
  }();
  return dir;
}

fs::path put(const std::string& rel, const uint8_t* data, size_t size) {
  fs::path p = scratch() / rel;
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p;
}

std::shared_ptr<const CausalLM> tiny_llama() {
  static const std::shared_ptr<const CausalLM> m = [] {
    TinyOptions opt;
    opt.layers = 1;
    const fs::path dir = scratch() / "tiny-llama";
    create_tiny("llama", dir.string(), opt);
    return std::shared_ptr<const CausalLM>(load_causal_lm(dir.string()));
  }();
  return m;
}

}  // namespace hfx::fuzz
