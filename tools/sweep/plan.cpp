// tools/sweep/plan.cpp — reads a sweep plan (JSON, or YAML through plan_yaml.cpp) and expands it into
// tasks. Every key is checked: a misspelt or unsupported key is an error rather than a silently ignored
// setting.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/io/hub.h"
#include "hfx/io/safetensors.h"
#include "sweep.h"

namespace hfx::sweep {

namespace {

constexpr const char* kComp = "sweep";

void check_keys(const json& j, const std::set<std::string>& known, const std::string& where) {
  HFX_CHECK(j.is_object(), kComp, "expected {} to be a JSON object, got {}", where, j.type_name());
  for (const auto& [k, v] : j.items()) {
    if (known.count(k)) continue;
    std::string list;
    for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
    HFX_THROW(kComp, "unknown key '{}' in {}; expected one of: {}", k, where, list);
  }
}

template <typename T>
T get(const json& j, const std::string& key, const std::string& where, T dflt) {
  if (!j.contains(key)) return dflt;
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    HFX_THROW(kComp, "expected '{}' in {} to be a {}, got {} {}", key, where,
              std::is_same_v<T, std::string> ? "string"
              : std::is_same_v<T, bool>      ? "boolean"
                                             : "number/list",
              j.at(key).type_name(), j.at(key).dump());
  }
}

// Ids become folder names and Slurm log names: keep them to a safe alphabet.
std::string safe_name(const std::string& s, const std::string& where) {
  HFX_CHECK(!s.empty(), kComp, "expected a non-empty name in {}, got \"\"", where);
  for (char c : s)
    HFX_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_', kComp,
              "expected {} name of letters, digits, '-' or '_', got '{}'", where, s);
  return s;
}

// Verify options: the plan's, overridden key by key by the variant's.
std::vector<std::string> verify_args(const json& v, const std::string& where) {
  check_keys(v, {"shapes", "tokens", "warm_runs", "threads"}, where);
  std::vector<std::string> a;
  if (v.contains("shapes")) a.insert(a.end(), {"--shapes", get<std::string>(v, "shapes", where, "")});
  for (const char* k : {"tokens", "warm_runs", "threads"}) {
    if (!v.contains(k)) continue;
    std::string flag = std::string("--") + k;
    if (flag == "--warm_runs") flag = "--warm-runs";
    a.insert(a.end(), {flag, std::to_string(get<int>(v, k, where, 0))});
  }
  return a;
}

// A `dtypes` or `quantize` list: names that become part of task ids. Which values hfx export accepts is
// hfx export's to say: a value it refuses fails that task with its own message.
std::vector<std::string> option_list(const json& j, const std::string& key, const std::string& where,
                                     const std::vector<std::string>& dflt) {
  std::vector<std::string> v = get<std::vector<std::string>>(j, key, where, dflt);
  HFX_CHECK(!v.empty(), kComp, "expected {}.{} to be a non-empty list, got []", where, key);
  std::set<std::string> seen;
  for (const auto& x : v) {
    safe_name(x, where + "." + key);
    HFX_CHECK(seen.insert(x).second, kComp, "expected distinct values in {}.{}, got '{}' twice", where, key,
              x);
  }
  return v;
}

// One variant of the plan: its export options, then one Variant per dtype × quantize.
std::vector<Variant> parse_variant(const json& j, const json& plan, size_t i) {
  std::string where = fmt::format("variants[{}]", i);
  check_keys(j,
             {"name", "format", "target", "backend", "opset", "static", "external_data", "export_args",
              "verify", "dtypes", "quantize"},
             where);
  Variant v;
  v.format = get<std::string>(j, "format", where, "");
  HFX_CHECK(v.format == "onnx" || v.format == "executorch" || v.format == "dynamo" || v.format == "gguf",
            kComp, "expected {}.format onnx | executorch | dynamo | gguf, got '{}'", where, v.format);
  v.target = get<std::string>(j, "target", where, "");
  v.backend = get<std::string>(j, "backend", where, "");
  v.opset = get<int>(j, "opset", where, 0);
  v.is_static = get<bool>(j, "static", where, false);
  v.external_data = get<bool>(j, "external_data", where, false);
  HFX_CHECK(v.format == "onnx" || (v.target.empty() && v.opset == 0 && !v.external_data), kComp,
            "expected target/opset/external_data only on onnx variants, got them in {} (format {})", where,
            v.format);
  HFX_CHECK(v.format == "executorch" || v.backend.empty(), kComp,
            "expected backend only on executorch variants, got it in {} (format {})", where, v.format);
  v.export_args = get<std::vector<std::string>>(j, "export_args", where, {});
  json verify = plan.value("verify", json::object());
  // llama.cpp runs a GGUF file with its own context and threads: of the verify options only tokens (greedy
  // length) applies; the plan's others are for the other formats, a gguf variant's own are refused.
  const bool gguf = v.format == "gguf";
  if (gguf)
    for (const char* k : {"shapes", "warm_runs", "threads"}) verify.erase(k);
  if (j.contains("verify")) {
    check_keys(j["verify"],
               gguf ? std::set<std::string>{"tokens"}
                    : std::set<std::string>{"shapes", "tokens", "warm_runs", "threads"},
               where + ".verify");
    verify.update(j["verify"]);
  }
  v.verify_args = verify_args(verify, where + ".verify");
  std::string dflt =
      v.format + (v.target.empty() ? "" : "-" + v.target) + (v.backend.empty() ? "" : "-" + v.backend);
  v.base = safe_name(get<std::string>(j, "name", where, dflt), where);
  // The variant's own lists replace the plan's.
  auto dtypes = option_list(j.contains("dtypes") ? j : plan, "dtypes",
                            j.contains("dtypes") ? where : "the plan", {"f32"});
  auto quants = option_list(j.contains("quantize") ? j : plan, "quantize",
                            j.contains("quantize") ? where : "the plan", {"none"});
  std::vector<Variant> out;
  for (const auto& d : dtypes)
    for (const auto& q : quants) {
      Variant x = v;
      x.dtype = d;
      x.quantize = q;
      x.name = v.base + (d == "f32" ? "" : "-" + d) + (q == "none" ? "" : "-" + q);
      out.push_back(x);
    }
  return out;
}

// A model id's default name: its NAME with characters task ids do not allow turned into '-'.
std::string name_of_id(const std::string& repo) {
  std::string n = repo.substr(repo.find('/') + 1);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  return n;
}

// A model id through the Hugging Face cache (the code `hfx export` resolves ids with), pinned to the
// commit it resolved to: every task then reads that snapshot from the cache, without a request.
void resolve_id(Model& m, const std::string& text, const std::string& where) {
  std::string why;
  std::optional<hub::ModelId> id = hub::parse_model_id(text, &why);
  HFX_CHECK(
      id, kComp,
      "expected {} to be an existing checkpoint folder or a model id ORG/NAME[@REVISION], got '{}' ({})",
      where, text, why);
  hub::Snapshot s = cli::resolve_model_id(text);
  m.id = s.repo + "@" + s.commit;
  m.path = s.dir;
  if (m.name.empty()) m.name = name_of_id(s.repo);
}

Model parse_model(const json& j, const fs::path& base, size_t i) {
  std::string where = fmt::format("models[{}]", i);
  Model m;
  std::string path, id;
  if (j.is_string()) {
    // A string is a folder when one exists there, else a model id (as for `hfx export MODEL`).
    path = j.get<std::string>();
    std::error_code ec;
    if (!fs::is_directory(base / path, ec) && hub::looks_like_model_id(path)) id = std::move(path);
  } else {
    check_keys(j, {"name", "path", "id", "variants"}, where);
    path = get<std::string>(j, "path", where, "");
    id = get<std::string>(j, "id", where, "");
    HFX_CHECK(
        path.empty() != id.empty(), kComp,
        "expected exactly one of 'path' (a checkpoint folder) or 'id' (ORG/NAME[@REVISION]) in {}, got {}",
        where, path.empty() ? "neither" : "both");
    m.name = get<std::string>(j, "name", where, "");
    m.variants = get<std::vector<std::string>>(j, "variants", where, {});
  }
  if (!id.empty()) {
    resolve_id(m, id, where);
  } else {
    m.path = fs::weakly_canonical(base / path);
    HFX_CHECK(fs::is_regular_file(m.path / "config.json"), kComp,
              "expected {} to be a checkpoint folder with config.json or a model id ORG/NAME[@REVISION], got "
              "'{}' (no config.json there)",
              where, m.path.string());
    if (m.name.empty()) m.name = m.path.filename().string();
  }
  safe_name(m.name, where);
  return m;
}

Resources parse_resources(const json& j) {
  check_keys(j, {"cpus", "mem_mb", "time_min"}, "resources");
  Resources r;
  r.cpus = get<int>(j, "cpus", "resources", r.cpus);
  r.mem_mb = get<int64_t>(j, "mem_mb", "resources", r.mem_mb);
  r.time_min = get<double>(j, "time_min", "resources", r.time_min);
  HFX_CHECK(r.cpus >= 1 && r.mem_mb >= 64 && r.time_min > 0, kComp,
            "expected resources cpus >= 1, mem_mb >= 64, time_min > 0, got {}, {}, {}", r.cpus, r.mem_mb,
            r.time_min);
  return r;
}

// The plan file as JSON: parsed as JSON, or as YAML for .yaml/.yml. A file that does not parse is a
// usage error (exit 2), as a malformed command line is.
json read_plan(const fs::path& file) {
  HFX_CHECK(fs::is_regular_file(file), kComp, "expected a plan file, got '{}' (no such file)", file.string());
  std::string text = io::read_file(file.string()), ext = file.extension().string();
  if (ext == ".yaml" || ext == ".yml") return yaml_to_json(text, file);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw cli::UsageError(kComp, fmt::format("expected a JSON plan in {} (or YAML named .yaml/.yml), got a "
                                             "parse error: {}",
                                             file.string(), e.what()));
  }
}

// Task ids: models × their variants, model-major; a model's `variants` names variants or base names.
void expand_tasks(Plan& p) {
  std::set<std::string> ids, names;
  for (const Variant& v : p.variants) names.insert({v.name, v.base});
  for (size_t i = 0; i < p.models.size(); ++i)
    for (const auto& v : p.models[i].variants)
      HFX_CHECK(names.count(v), kComp, "expected models[{}].variants to name variants of the plan, got '{}'",
                i, v);
  for (const Model& m : p.models)
    for (const Variant& v : p.variants) {
      auto listed = [&](const std::string& n) {
        return std::find(m.variants.begin(), m.variants.end(), n) != m.variants.end();
      };
      if (!m.variants.empty() && !listed(v.name) && !listed(v.base)) continue;
      Task t{static_cast<int>(p.tasks.size()), m.name + "." + v.name, &m, &v};
      HFX_CHECK(ids.insert(t.id).second, kComp,
                "expected unique model and variant names, got task '{}' twice; "
                "give the models or variants distinct 'name's",
                t.id);
      p.tasks.push_back(t);
    }
}

}  // namespace

Plan load_plan(const fs::path& file) {
  Plan p;
  p.file = file;
  json j = read_plan(file);
  check_keys(j, {"name", "models", "variants", "verify", "resources", "dtypes", "quantize"}, "the plan");
  p.name = get<std::string>(j, "name", "the plan", file.stem().string());
  HFX_CHECK(j.contains("models") && j["models"].is_array() && !j["models"].empty(), kComp,
            "expected 'models' to be a non-empty list of checkpoint folders or model ids in {}",
            file.string());
  HFX_CHECK(j.contains("variants") && j["variants"].is_array() && !j["variants"].empty(), kComp,
            "expected 'variants' to be a non-empty list in {}, e.g. [{{\"format\": \"onnx\"}}]",
            file.string());
  check_keys(j.value("verify", json::object()), {"shapes", "tokens", "warm_runs", "threads"}, "verify");
  fs::path base = fs::absolute(file).parent_path();
  for (size_t i = 0; i < j["models"].size(); ++i) p.models.push_back(parse_model(j["models"][i], base, i));
  for (size_t i = 0; i < j["variants"].size(); ++i)
    for (Variant& v : parse_variant(j["variants"][i], j, i)) p.variants.push_back(std::move(v));
  if (j.contains("resources")) p.resources = parse_resources(j["resources"]);
  // The plan as run: model folders absolute, model ids pinned to their commit.
  p.source = j;
  for (size_t i = 0; i < p.models.size(); ++i) {
    const Model& m = p.models[i];
    p.source["models"][i] = {{"name", m.name}};
    if (m.id.empty())
      p.source["models"][i]["path"] = m.path;
    else
      p.source["models"][i]["id"] = m.id;
    if (!m.variants.empty()) p.source["models"][i]["variants"] = m.variants;
  }
  expand_tasks(p);
  return p;
}

std::vector<std::string> export_argv(const Task& t, const fs::path& out) {
  const Variant& v = *t.variant;
  const std::string model = t.model->id.empty() ? t.model->path.string() : t.model->id;
  std::vector<std::string> a = {"export", model, "--format", v.format};
  if (!v.target.empty()) a.insert(a.end(), {"--target", v.target});
  if (!v.backend.empty()) a.insert(a.end(), {"--backend", v.backend});
  if (v.opset) a.insert(a.end(), {"--opset", std::to_string(v.opset)});
  if (v.is_static) a.push_back("--static");
  if (v.external_data) a.push_back("--external-data");
  if (v.dtype != "f32") a.insert(a.end(), {"--dtype", v.dtype});
  if (v.quantize != "none") a.insert(a.end(), {"--quantize", v.quantize});
  a.insert(a.end(), v.export_args.begin(), v.export_args.end());
  a.insert(a.end(), {"-o", out.string()});
  return a;
}

std::vector<std::string> verify_argv(const Task& t, const fs::path& out) {
  std::vector<std::string> a = {"verify", out.string()};
  a.insert(a.end(), t.variant->verify_args.begin(), t.variant->verify_args.end());
  return a;
}

json describe_tasks(const Plan& plan) {
  json tasks = json::array();
  for (const Task& t : plan.tasks)
    tasks.push_back({{"index", t.index},
                     {"id", t.id},
                     {"model", t.model->name},
                     {"variant", t.variant->name},
                     {"dtype", t.variant->dtype},
                     {"quantize", t.variant->quantize},
                     {"export", export_argv(t, "OUT")},
                     {"verify", verify_argv(t, "OUT")}});
  return {{"name", plan.name}, {"tasks", tasks}};
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  HFX_CHECK(!ec, kComp, "expected /proc/self/exe to name the hfx binary, got an error: {}", ec.message());
  return p.string();
}

std::string new_run_id() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return fmt::format("{}-{}", buf, ::getpid());
}

}  // namespace hfx::sweep
