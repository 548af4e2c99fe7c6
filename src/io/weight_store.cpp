// src/io/weight_store.cpp — WeightStore: the tensors of a checkpoint folder (model.safetensors, or the
// shards a model.safetensors.index.json names, each validated as safetensors.cpp reads it) or of memory.
#include "hfx/io/safetensors.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "io/fileutil.h"
#include "io/safetensors_internal.h"

namespace hfx::io {
namespace fs = std::filesystem;
using json = nlohmann::json;
using detail::did_you_mean;
using detail::DupCheckedJson;
using detail::parse_json_checked;
using detail::short_dump;

// ------------------------------------------------------------------------------------------------
// WeightStore

namespace {

// model.safetensors.index.json: its weight_map (tensor name → shard file), checked for shape and duplicates.
json read_weight_map(const std::string& ipath) {
  const std::string text = read_file(ipath);
  DupCheckedJson parsed;
  try {
    parsed = parse_json_checked(text.data(), text.data() + text.size());
  } catch (const json::exception& e) {
    HFX_THROW("safetensors", "'{}': index is not valid JSON ({}); re-download the checkpoint", ipath,
              e.what());
  }
  const json& j = parsed.value;
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    HFX_THROW("safetensors",
              "'{}': expected an object with a 'weight_map' object (tensor name -> shard file), got "
              "{}; re-download the checkpoint",
              ipath, short_dump(j));
  if (parsed.has_dup && parsed.dup_parent == "weight_map")
    HFX_THROW("safetensors", "'{}': tensor '{}' is listed twice in weight_map; re-download the checkpoint",
              ipath, parsed.dup_key);
  const json& wm = j["weight_map"];
  if (wm.empty())
    HFX_THROW("safetensors", "'{}': expected a non-empty weight_map, got {{}}; re-download the checkpoint",
              ipath);
  return wm;
}

// The shard files of a weight_map, in first-listed order; each must be a relative name inside the folder.
std::vector<std::string> list_shards(const std::string& ipath, const json& wm) {
  std::vector<std::string> shard_names;  // in first-listed order
  std::set<std::string> seen;
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    if (!it.value().is_string())
      HFX_THROW("safetensors",
                "'{}': weight_map entry '{}' must be a shard file name, got {}; re-download the "
                "checkpoint",
                ipath, it.key(), short_dump(it.value()));
    const std::string s = it.value().get<std::string>();
    fs::path sp(s);
    bool escapes = s.empty() || sp.is_absolute();
    for (const auto& part : sp)
      if (part == "..") escapes = true;
    if (escapes)
      HFX_THROW("safetensors",
                "'{}': shard '{}' for tensor '{}' is not a file name inside the folder; expected a "
                "relative name like model-00001-of-00002.safetensors",
                ipath, s, it.key());
    if (seen.insert(s).second) shard_names.push_back(s);
  }
  return shard_names;
}

}  // namespace

// open_dir also accepts the path of a single .safetensors file (convenience for tools and tests).
std::shared_ptr<WeightStore> WeightStore::open_dir(const std::string& dir) {
  auto ws = std::make_shared<WeightStore>();
  std::error_code ec;
  if (fs::is_regular_file(dir, ec) && fs::path(dir).extension() == ".safetensors") {
    auto f = SafetensorsFile::open(dir);
    for (const auto& ti : f->tensors()) ws->by_name_[ti.name] = f;
    return ws;
  }
  if (!fs::is_directory(dir, ec))
    HFX_THROW("safetensors", "'{}': expected a checkpoint folder, got {}; check the path", dir,
              fs::exists(dir, ec) ? "a file that is not .safetensors" : "nothing at that path");
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single, ec)) {
    auto f = SafetensorsFile::open(single.string());
    for (const auto& ti : f->tensors()) ws->by_name_[ti.name] = f;
    return ws;
  }
  if (!fs::exists(index, ec)) {
    std::string hint;
    if (fs::exists(fs::path(dir) / "pytorch_model.bin", ec) ||
        fs::exists(fs::path(dir) / "pytorch_model.bin.index.json", ec))
      hint =
          "; it only has pytorch_model.bin (pickle): convert it with transformers, "
          "model.save_pretrained(out, safe_serialization=True)";
    HFX_THROW("safetensors",
              "'{}': expected model.safetensors or model.safetensors.index.json in the folder, found "
              "neither{}",
              dir, hint.empty() ? "; download the safetensors weights of the checkpoint" : hint);
  }

  const std::string ipath = index.string();
  const json wm = read_weight_map(ipath);
  const std::vector<std::string> shard_names = list_shards(ipath, wm);

  std::map<std::string, std::shared_ptr<SafetensorsFile>> shards;
  for (const auto& s : shard_names) {
    const fs::path sp = fs::path(dir) / s;
    if (!fs::exists(sp, ec))
      HFX_THROW("safetensors",
                "'{}': shard '{}' listed in the index does not exist in '{}'; download all the shards "
                "of the checkpoint",
                ipath, s, dir);
    auto f = SafetensorsFile::open(sp.string());
    for (const auto& ti : f->tensors()) {
      auto prev = ws->by_name_.find(ti.name);
      if (prev != ws->by_name_.end())
        HFX_THROW("safetensors",
                  "'{}': tensor '{}' is present in two shards, '{}' and '{}'; re-download the "
                  "checkpoint",
                  dir, ti.name, prev->second->path(), f->path());
      ws->by_name_[ti.name] = f;
    }
    shards[s] = std::move(f);
  }
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    const auto& f = shards.at(it.value().get<std::string>());
    if (!f->has(it.key())) {
      auto other = ws->by_name_.find(it.key());
      HFX_THROW("safetensors",
                "'{}': tensor '{}' is listed in the index under shard '{}' but that shard does not "
                "contain it{}; re-download the checkpoint",
                ipath, it.key(), f->path(),
                other == ws->by_name_.end() ? std::string(" (no shard does)")
                                            : fmt::format(" (it is in '{}')", other->second->path()));
    }
  }
  return ws;
}

std::shared_ptr<WeightStore> WeightStore::from_tensors(std::map<std::string, Tensor> tensors) {
  auto ws = std::make_shared<WeightStore>();
  for (auto& [name, t] : tensors) {
    HFX_CHECK(t.defined(), "safetensors",
              "in-memory weights: expected tensor '{}' to be defined, got an empty Tensor", name);
    TensorInfo ti;
    ti.name = name;
    ti.dtype = t.dtype();
    ti.shape = t.shape();
    ti.begin = 0;
    ti.end = t.nbytes();
    ws->mem_info_[name] = std::move(ti);
  }
  ws->mem_ = std::move(tensors);
  return ws;
}

bool WeightStore::has(const std::string& name) const { return mem_.count(name) || by_name_.count(name); }

std::string WeightStore::stored(const std::string& name) const {
  auto it = stored_.find(name);
  return it == stored_.end() ? name : it->second;
}

size_t WeightStore::rename_prefix(const std::string& from, const std::string& to) {
  std::vector<std::string> old;
  for (const auto& kv : by_name_)
    if (kv.first.rfind(from, 0) == 0) old.push_back(kv.first);
  for (const auto& kv : mem_)
    if (kv.first.rfind(from, 0) == 0) old.push_back(kv.first);
  for (const auto& name : old) {
    const std::string now = to + name.substr(from.size());
    HFX_CHECK(!has(now), "safetensors",
              "expected no weight named '{}' beside '{}' (both name one tensor), got both", now, name);
    if (auto it = by_name_.find(name); it != by_name_.end()) {
      by_name_[now] = it->second;
      stored_[now] = stored(name);
      by_name_.erase(it);
    } else {
      mem_[now] = mem_.at(name);
      mem_info_[now] = mem_info_.at(name);
      mem_info_[now].name = now;
      mem_.erase(name);
      mem_info_.erase(name);
    }
  }
  return old.size();
}

const TensorInfo& WeightStore::info(const std::string& name) const {
  if (auto it = mem_info_.find(name); it != mem_info_.end()) return it->second;
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second->info(stored(name));
  const bool mem = !mem_info_.empty();
  HFX_THROW("safetensors", "expected a weight named '{}', got none among the {} weights of this checkpoint{}",
            name, mem ? mem_info_.size() : by_name_.size(),
            mem ? did_you_mean(name, mem_info_.begin(), mem_info_.end())
                : did_you_mean(name, by_name_.begin(), by_name_.end()));
}

Tensor WeightStore::get(const std::string& name) const {
  if (auto it = mem_.find(name); it != mem_.end()) return it->second;
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second->get(stored(name));
  info(name);  // throws the descriptive error
  return {};
}

void WeightStore::release(const std::string& name) const {
  if (auto it = by_name_.find(name); it != by_name_.end()) it->second->release(stored(name));
}

void WeightStore::release(const std::string& name, uint64_t from, uint64_t to) const {
  if (auto it = by_name_.find(name); it != by_name_.end()) it->second->release(stored(name), from, to);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(mem_.size() + by_name_.size());
  for (const auto& kv : mem_) out.push_back(kv.first);
  for (const auto& kv : by_name_) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> WeightStore::files() const {
  std::set<std::string> s;
  for (const auto& kv : by_name_) s.insert(kv.second->path());
  return {s.begin(), s.end()};
}

}  // namespace hfx::io
