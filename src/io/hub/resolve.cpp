// src/io/hub/resolve.cpp — a model id to a snapshot folder: from the cache alone (offline, or a commit
// hash whose snapshot is complete), else through the Hub's API (the commit and the file list) and
// download.cpp for the files the snapshot lacks. The protocol is huggingface_hub's:
//   GET {endpoint}/api/models/{repo}/revision/{revision}  -> {"sha": commit, "siblings": [{"rfilename"}]}
//   HEAD/GET {endpoint}/{repo}/resolve/{commit}/{file}     -> see download.cpp
// refs/<revision> is written last, after every file of the snapshot is in place.
#include <filesystem>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/hub.h"
#include "io/hub/cache.h"
#include "io/hub/download.h"
#include "io/hub/http.h"

namespace fs = std::filesystem;

namespace hfx::hub {

using namespace detail;

namespace {

// Everything hfx reads from a checkpoint folder besides the weights: configs, every tokenizer format
// (fast tokenizer, BPE vocab/merges, WordPiece vocab, SentencePiece models), chat templates, processor
// configs and the sentence-transformers modules (embed's pooling and normalization).
const char* kSideFiles[] = {"config.json",
                            "generation_config.json",
                            "tokenizer.json",
                            "tokenizer_config.json",
                            "special_tokens_map.json",
                            "added_tokens.json",
                            "vocab.json",
                            "vocab.txt",
                            "merges.txt",
                            "tokenizer.model",
                            "spiece.model",
                            "sentencepiece.bpe.model",
                            "source.spm",
                            "target.spm",
                            "chat_template.jinja",
                            "chat_template.json",
                            "preprocessor_config.json",
                            "processor_config.json",
                            "modules.json",
                            "sentence_bert_config.json",
                            "config_sentence_transformers.json"};

std::string what_to_do_offline(const ModelId& id) {
  return fmt::format(
      "run the command once without HF_HUB_OFFLINE=1 to download it (or `huggingface-cli download {} "
      "--revision {}` in Python), or give a local checkpoint folder",
      id.repo, id.revision);
}

// The snapshot from the cache alone; nullopt with `why` set when the cache cannot answer.
std::optional<Snapshot> from_cache(const ModelId& id, const HubOptions& o, std::string* why) {
  const std::string repo_dir = repo_cache_dir(o.cache_dir, id.repo);
  if (!fs::is_directory(repo_dir)) {
    *why = fmt::format("no folder {}", repo_dir);
    return std::nullopt;
  }
  std::optional<std::string> commit =
      is_commit_hash(id.revision) ? id.revision : read_ref(repo_dir, id.revision);
  if (!commit) {
    *why = fmt::format("no refs/{} holding a commit hash in {}", id.revision, repo_dir);
    return std::nullopt;
  }
  Snapshot s{id.repo, id.revision, *commit, snapshot_dir(repo_dir, *commit), {}};
  if (!snapshot_has(repo_dir, *commit, "config.json")) {
    *why = fmt::format("no config.json in {}", s.dir);
    return std::nullopt;
  }
  std::vector<std::string> missing = missing_weights(s.dir);
  if (!missing.empty()) {
    *why = fmt::format("{} missing from {}", missing.front(), s.dir);
    return std::nullopt;
  }
  return s;
}

// The Hub's answer for a repo at a revision: the commit and the file list.
struct RepoInfo {
  std::string commit;
  std::vector<std::string> siblings;
};

// nullopt when the endpoint cannot be reached at all (no status line): the caller falls back to the cache,
// as huggingface_hub does.
std::optional<RepoInfo> fetch_repo_info(const ModelId& id, const HubOptions& o, std::string* unreachable) {
  const std::string url =
      fmt::format("{}/api/models/{}/revision/{}", o.endpoint, id.repo, url_quote(id.revision, false));
  HttpRequest req;
  req.url = url;
  req.token = o.token;
  req.follow_redirects = true;
  HttpResponse r = http_perform(req);
  if (r.status == 0 && r.transport_error) {
    *unreachable = fmt::format("GET {} failed: {}", url, r.transport_message);
    return std::nullopt;
  }
  check_response(r, id.repo, id.revision, "", url, o);
  RepoInfo info;
  try {
    nlohmann::json j = nlohmann::json::parse(r.body);
    info.commit = j.value("sha", "");
    for (const auto& s : j.value("siblings", nlohmann::json::array()))
      if (s.contains("rfilename")) info.siblings.push_back(s["rfilename"].get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("hub", "expected the Hub's JSON model info from {}, got a parse error: {}", url, e.what());
  }
  if (!is_commit_hash(info.commit))
    HFX_THROW("hub", "expected a 40-hex commit hash as \"sha\" in the answer of {}, got '{}'", url,
              info.commit);
  return info;
}

// The weight files to fetch: the shards of model.safetensors.index.json (the index itself first), or
// model.safetensors. hfx reads safetensors only.
std::vector<std::string> weight_files(const ModelId& id, const RepoInfo& info, Downloader& dl) {
  const std::set<std::string> have(info.siblings.begin(), info.siblings.end());
  if (have.count("model.safetensors.index.json")) {
    dl.fetch({"model.safetensors.index.json"});
    return index_shards((fs::path(dl.snapshot()) / "model.safetensors.index.json").string());
  }
  if (have.count("model.safetensors")) return {"model.safetensors"};
  std::vector<std::string> others;
  for (const auto& s : info.siblings)
    if (s.ends_with(".bin") || s.ends_with(".pt") || s.ends_with(".gguf") || s.ends_with(".h5") ||
        s.ends_with(".msgpack"))
      others.push_back(s);
  HFX_THROW(
      "hub",
      "expected model.safetensors or model.safetensors.index.json in {}@{} ({}), got {}: hfx reads "
      "safetensors "
      "weights only; convert the checkpoint to safetensors or pick a revision that has them",
      id.repo, id.revision, info.commit,
      others.empty() ? std::string("no weight files") : fmt::format("only {}", fmt::join(others, ", ")));
}

}  // namespace

std::vector<std::string> select_side_files(const std::vector<std::string>& siblings) {
  static const std::regex kPooling(R"([0-9]+_Pooling/config\.json)");
  const std::set<std::string> wanted(std::begin(kSideFiles), std::end(kSideFiles));
  std::vector<std::string> out;
  for (const auto& s : siblings)
    if (wanted.count(s) || std::regex_match(s, kPooling)) out.push_back(s);
  return out;
}

Snapshot resolve(const ModelId& id, const HubOptions& o) {
  std::string why;
  if (o.offline) {
    if (auto s = from_cache(id, o, &why)) return *s;
    HFX_THROW(
        "hub",
        "expected {}@{} in the Hugging Face cache {} (HF_HUB_OFFLINE=1 reads only the cache), got {}: {}",
        id.repo, id.revision, o.cache_dir, why, what_to_do_offline(id));
  }
  // A commit hash names content that never changes: a complete snapshot needs no request.
  if (is_commit_hash(id.revision))
    if (auto s = from_cache(id, o, &why)) return *s;
  std::string unreachable;
  std::optional<RepoInfo> got = fetch_repo_info(id, o, &unreachable);
  if (!got) {
    if (auto s = from_cache(id, o, &why)) return *s;
    HFX_THROW("hub",
              "expected an answer from the Hub at {} for {}@{}, got none ({}), and the cache {} cannot stand "
              "in ({}): "
              "check the network and HF_ENDPOINT, or give a local checkpoint folder",
              o.endpoint, id.repo, id.revision, unreachable, o.cache_dir, why);
  }
  const RepoInfo& info = *got;
  const std::set<std::string> have(info.siblings.begin(), info.siblings.end());
  if (!have.count("config.json"))
    HFX_THROW(
        "hub",
        "expected config.json in {}@{} ({}), got a repo without it: hfx exports transformers checkpoints; "
        "check the model id",
        id.repo, id.revision, info.commit);
  const std::string repo_dir = repo_cache_dir(o.cache_dir, id.repo);
  Downloader dl(id, info.commit, repo_dir, o);
  // One fetch for everything but a shard index (needed first to name the shards), so the byte total
  // the progress bar shows is known before the first byte.
  std::vector<std::string> files = weight_files(id, info, dl);
  for (const auto& f : select_side_files(info.siblings)) files.push_back(f);
  dl.fetch(files);
  if (id.revision != info.commit) write_ref(repo_dir, id.revision, info.commit);
  return {id.repo, id.revision, info.commit, snapshot_dir(repo_dir, info.commit), dl.downloaded()};
}

}  // namespace hfx::hub
