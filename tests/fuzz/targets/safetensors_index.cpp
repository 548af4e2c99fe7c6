// model.safetensors.index.json: the weight_map (tensor -> shard file) against two real shards in the folder.
#include "fuzz/fuzz_support.h"
#include "hfx/io/safetensors.h"

namespace {
const std::filesystem::path& folder() {
  static const std::filesystem::path dir = [] {
    auto d = hfx::fuzz::scratch() / "sharded";
    std::filesystem::create_directories(d);
    auto t = [](std::vector<float> v) {
      return hfx::Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
    };
    hfx::io::write_safetensors((d / "model-00001-of-00002.safetensors").string(),
                               {{"a", t({1, 2})}, {"b", t({3})}});
    hfx::io::write_safetensors((d / "model-00002-of-00002.safetensors").string(), {{"c", t({4, 5, 6})}});
    return d;
  }();
  return dir;
}
}  // namespace

void hfx_fuzz_safetensors_index(const uint8_t* data, size_t size) {
  const auto& dir = folder();
  hfx::fuzz::put("sharded/model.safetensors.index.json", data, size);
  hfx::fuzz::refused_or_read([&] {
    auto w = hfx::io::WeightStore::open_dir(dir.string());
    for (const auto& n : w->names()) (void)w->get(n).to_floats();
  });
}
