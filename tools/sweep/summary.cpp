// tools/sweep/summary.cpp — every task's result.json gathered into summary.json, the terminal matrix,
// summary.html, and the comparison of two results folders. The summary only copies results: the task's
// result.json stays the one source of each figure.
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "sweep.h"

namespace hfx::sweep {

namespace {

constexpr const char* kComp = "sweep";

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string sci(const json& v) { return v.is_number() ? fmt::format("{:.1e}", v.get<double>()) : "-"; }

std::string size_str(const json& v) {
  if (!v.is_number()) return "-";
  double b = v.get<double>();
  return b >= 1 << 20 ? fmt::format("{:.2f} MiB", b / (1 << 20)) : fmt::format("{:.1f} KiB", b / 1024);
}

const json* find_task(const json& summary, const std::string& model, const std::string& variant) {
  for (const auto& t : summary["tasks"])
    if (t["model"] == model && t["variant"] == variant) return &t;
  return nullptr;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

json write_summary(const Plan& plan, const fs::path& results, const std::string& engine) {
  json tasks = json::array();
  std::map<std::string, int> counts;
  for (const Task& t : plan.tasks) {
    auto r = read_result(results, t);
    json row = r ? *r
                 : json{{"id", t.id},
                        {"index", t.index},
                        {"model", t.model->name},
                        {"variant", t.variant->name},
                        {"format", t.variant->format},
                        {"status", "missing"},
                        {"reason", "no result yet"}};
    if (r && fs::exists(task_dir(results, t) / "export" / "verify.html"))
      row["report"] = "tasks/" + t.id + "/export/verify.html";
    counts[row.value("status", "missing")]++;
    tasks.push_back(row);
  }
  json models = json::array(), variants = json::array();
  for (const Model& m : plan.models) models.push_back(m.name);
  for (const Variant& v : plan.variants) variants.push_back(v.name);
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json s = {{"schema", "hfx.sweep/1"},
            {"plan", plan.name},
            {"engine", engine},
            {"written_at", buf},
            {"models", models},
            {"variants", variants},
            {"counts", counts},
            {"tasks", tasks},
            {"passed", counts["passed"] == static_cast<int>(plan.tasks.size())}};
  io::write_file_atomic((results / "summary.json").string(), s.dump(2));
  io::write_file_atomic((results / "summary.html").string(), render_html(s));
  return s;
}

std::string render_table(const json& s) {
  std::string out = fmt::format("{:<20}", "model");
  for (const auto& v : s["variants"]) out += fmt::format(" {:<20}", v.get<std::string>());
  out += "\n";
  for (const auto& m : s["models"]) {
    out += fmt::format("{:<20}", m.get<std::string>());
    for (const auto& v : s["variants"]) {
      const json* t = find_task(s, m, v);
      std::string st = t ? t->value("status", "missing") : "n/a";
      std::string cell = st == "passed" ? "PASS " + sci(t->value("worst_abs", json())) : t ? upper(st) : st;
      if (t && st != "passed" && t->contains("stage")) cell += " (" + (*t)["stage"].get<std::string>() + ")";
      out += fmt::format(" {:<20}", cell);
    }
    out += "\n";
  }
  std::string counts;
  for (const auto& [k, v] : s["counts"].items())
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v.get<int>(), k);
  out += fmt::format(
      "{} tasks: {}  (PASS e: worst max abs error against eager; - : no numerics check; n/a: not in the "
      "plan)\n",
      s["tasks"].size(), counts);
  for (const auto& t : s["tasks"])
    if (t.value("status", "") != "passed")
      out += fmt::format("  {} {}: {}\n", t.value("id", ""), upper(t.value("status", "")),
                         t.value("reason", ""));
  return out;
}

std::string render_html(const json& s) {
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>hfx sweep {0}</title>\n<style>"
      "body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse}}td,th{{border:1px solid "
      "#bbb;"
      "padding:.3em .6em;vertical-align:top}}td.passed{{background:#e3f6e3}}"
      "td.failed,td.killed,td.timeout,td.out_of_memory{{background:#fbe2e2}}"
      "td.missing,td.na{{background:#eee}}.f{{font-size:.85em;color:#333}}</style></"
      "head>\n<body>"
      "<h1>hfx sweep: {0}</h1>\n<p>engine {1}, written {2}; cells: status, worst max abs error against "
      "eager, "
      "artifact size, cold start, batch-1 decode speed; a cell links its verify report.</p>\n"
      "<table id=\"matrix\"><tr><th>model</th>",
      esc(s.value("plan", "")), esc(s.value("engine", "")), esc(s.value("written_at", "")));
  for (const auto& v : s["variants"]) h += "<th>" + esc(v.get<std::string>()) + "</th>";
  h += "</tr>\n";
  for (const auto& m : s["models"]) {
    h += "<tr><th>" + esc(m.get<std::string>()) + "</th>";
    for (const auto& v : s["variants"]) {
      const json* t = find_task(s, m, v);
      std::string st = t ? t->value("status", "missing") : "n/a";
      std::string label = upper(st);
      if (t && t->contains("report")) label = "<a href=\"" + esc((*t)["report"]) + "\">" + label + "</a>";
      h += fmt::format("<td class=\"{}\" id=\"{}\">{}", t ? esc(st) : "na", t ? esc(t->value("id", "")) : "",
                       label);
      if (t && st == "passed")
        h += fmt::format(
            "<div class=\"f\">err {}<br>{}<br>load {}<br>decode {}</div>", sci(t->value("worst_abs", json())),
            size_str(t->value("artifact_bytes", json())),
            t->contains("load_ms") ? fmt::format("{:.0f} ms", (*t)["load_ms"].get<double>()) : "-",
            t->contains("decode_tok_s") ? fmt::format("{:.0f} tok/s", (*t)["decode_tok_s"].get<double>())
                                        : "-");
      else if (t)
        h += "<div class=\"f\">" + esc(t->value("reason", "")) + "</div>";
      h += "</td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n<h2>Tasks not passed</h2>\n<ul id=\"failures\">";
  for (const auto& t : s["tasks"])
    if (t.value("status", "") != "passed")
      h +=
          fmt::format("<li><b>{}</b> {}: {} (<a href=\"tasks/{}/\">outputs</a>)</li>", esc(t.value("id", "")),
                      esc(upper(t.value("status", ""))), esc(t.value("reason", "")), esc(t.value("id", "")));
  return h + "</ul>\n</body></html>\n";
}

std::string compare_results(const fs::path& old_dir, const fs::path& new_dir, int& worse) {
  auto load = [](const fs::path& d) {
    fs::path f = d / "summary.json";
    HFX_CHECK(fs::exists(f), kComp, "expected a sweep results folder with summary.json, got '{}'",
              d.string());
    return json::parse(io::read_file(f.string()));
  };
  json a = load(old_dir), b = load(new_dir);
  std::map<std::string, json> old_by_id;
  for (const auto& t : a["tasks"]) old_by_id[t["id"]] = t;
  std::string out;
  worse = 0;
  int same = 0, better = 0;
  auto flag = [&](const std::string& id, const std::string& what) {
    out += fmt::format("  WORSE {:<32} {}\n", id, what);
    ++worse;
  };
  for (const auto& n : b["tasks"]) {
    std::string id = n["id"];
    if (!old_by_id.count(id)) {
      out += fmt::format("  new   {:<32} {}\n", id, n.value("status", ""));
      continue;
    }
    const json& o = old_by_id[id];
    int before = worse;
    std::string so = o.value("status", ""), sn = n.value("status", "");
    if (so == "passed" && sn != "passed")
      flag(id, fmt::format("status passed -> {}: {}", sn, n.value("reason", "")));
    if (so != "passed" && sn == "passed") ++better;
    auto num = [](const json& t, const char* k) {
      return t.contains(k) && t[k].is_number() ? t[k].get<double>() : NAN;
    };
    double eo = num(o, "worst_abs"), en = num(n, "worst_abs");
    // Numerics: worse when the error at least doubles and grows by more than float32's rounding at unit
    // scale.
    if (en > 2 * eo && en - eo > 1e-6) flag(id, fmt::format("worst error {:.2e} -> {:.2e}", eo, en));
    double zo = num(o, "artifact_bytes"), zn = num(n, "artifact_bytes");
    if (zn > zo * 1.01)
      flag(id,
           fmt::format("artifact size {} -> {} (+{:.1f}%)", size_str(zo), size_str(zn), 100 * (zn / zo - 1)));
    double so_ = num(o, "decode_tok_s"), sn_ = num(n, "decode_tok_s");
    if (sn_ < so_ * 0.8) flag(id, fmt::format("batch-1 decode {:.0f} -> {:.0f} tok/s", so_, sn_));
    double lo = num(o, "load_ms"), ln = num(n, "load_ms");
    if (ln > lo * 1.25 + 50) flag(id, fmt::format("cold start {:.0f} -> {:.0f} ms", lo, ln));
    if (worse == before) ++same;
    old_by_id.erase(id);
  }
  for (const auto& [id, o] : old_by_id) flag(id, "missing from the new results");
  return fmt::format("compare {} -> {}: {} worse, {} fixed, {} not worse\n{}", old_dir.string(),
                     new_dir.string(), worse, better, same, out);
}

}  // namespace hfx::sweep
