// bench/shard_bench.cpp — not a Google Benchmark: the helper bench/export_bench.sh uses to make the
// sharded variant of a checkpoint, the layout of every large Hugging Face checkpoint:
// model-0000K-of-0000N.safetensors plus model.safetensors.index.json ({"metadata": {"total_size"},
// "weight_map": {tensor: file}}), tensors split in file order at about equal byte counts.
//
//   shard_bench SRC_DIR DST_DIR [SHARDS=2]
//
// Every other file of SRC_DIR (config.json, tokenizer files) is copied as is. Tensors are written from
// the mapped source (no conversion); each shard is written atomically.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SRC_DIR DST_DIR [SHARDS=2]\n", argv[0]);
    return 2;
  }
  const fs::path src = argv[1], dst = argv[2];
  const int shards = argc > 3 ? std::atoi(argv[3]) : 2;
  try {
    if (shards < 1) HFX_THROW("bench", "expected at least one shard, got {}", shards);
    auto store = hfx::io::WeightStore::open_dir(src.string());
    // File order (then name), so that each shard reads its source sequentially.
    std::vector<std::string> names = store->names();
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
      const auto &ia = store->info(a), &ib = store->info(b);
      return ia.file != ib.file ? ia.file < ib.file : ia.begin < ib.begin;
    });
    uint64_t total = 0;
    for (const auto& n : names) total += store->info(n).end - store->info(n).begin;
    fs::create_directories(dst);
    for (const auto& e : fs::directory_iterator(src)) {
      const std::string f = e.path().filename().string();
      if (!e.is_regular_file() || e.path().extension() == ".safetensors" ||
          f == "model.safetensors.index.json")
        continue;
      fs::copy_file(e.path(), dst / f, fs::copy_options::overwrite_existing);
    }
    nlohmann::json weight_map = nlohmann::json::object();
    size_t next = 0;
    uint64_t done = 0;
    for (int k = 0; k < shards; k++) {
      const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards);
      const uint64_t until = total * static_cast<uint64_t>(k + 1) / static_cast<uint64_t>(shards);
      std::vector<std::pair<std::string, hfx::Tensor>> part;
      while (next < names.size() && (done < until || k == shards - 1)) {
        const auto& n = names[next++];
        done += store->info(n).end - store->info(n).begin;
        part.emplace_back(n, store->get(n));
        weight_map[n] = file;
      }
      hfx::io::write_safetensors((dst / file).string(), part);
      for (const auto& [n, t] : part) store->release(n);
      std::printf("%s: %zu tensors\n", file.c_str(), part.size());
    }
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    hfx::io::write_file_atomic((dst / "model.safetensors.index.json").string(), index.dump(2));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shard_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
