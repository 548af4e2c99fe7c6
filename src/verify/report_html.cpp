// The HTML page of a verify report: one self-contained file (inline CSS and SVG, no script, no font,
// no image, no link) that opens in a browser with no network. Plots: max abs error per named module
// (log scale, the tolerance drawn as a line) and warm latency per shape per component.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "hfx/verify/verify.h"

namespace hfx::verify {

namespace {
using nlohmann::json;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
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

double num(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string() && j.get<std::string>() == "inf") return INFINITY;
  return 0;
}

// Horizontal bars, one per label; log10 scale when `log` (values <= 0 drawn at the floor).
std::string bar_chart(const std::vector<std::pair<std::string, double>>& bars, const std::string& unit,
                      bool log, double line, const std::vector<bool>& red) {
  if (bars.empty()) return "<p class=muted>no data</p>";
  const int row = 18, label_w = 300, plot_w = 420, h = static_cast<int>(bars.size()) * row + 30;
  double lo = INFINITY, hi = 0;
  for (const auto& [l, v] : bars)
    if (std::isfinite(v)) {
      hi = std::max(hi, v);
      if (v > 0) lo = std::min(lo, v);
    }
  if (line > 0) hi = std::max(hi, line), lo = std::min(lo, line);
  if (!std::isfinite(lo)) lo = 1e-9;
  if (hi <= 0) hi = 1;
  double llo = std::floor(std::log10(lo)) - 0.5, lhi = std::ceil(std::log10(hi));
  auto x = [&](double v) {
    if (!std::isfinite(v)) return static_cast<double>(plot_w);
    if (log) return v <= 0 ? 0.0 : std::clamp((std::log10(v) - llo) / (lhi - llo), 0.0, 1.0) * plot_w;
    return std::clamp(v / hi, 0.0, 1.0) * plot_w;
  };
  std::string s = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img">)",
                              label_w + plot_w + 110, h);
  for (size_t i = 0; i < bars.size(); i++) {
    const int y = static_cast<int>(i) * row + 4;
    const double w = std::max(1.0, x(bars[i].second));
    const bool r = i < red.size() && red[i];
    s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" class="lbl">{}</text>)", label_w - 6, y + 12,
                     esc(bars[i].first));
    s += fmt::format(
        R"(<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {:.3g} {}</title></rect>)",
        label_w, y, w, row - 5, r ? "#c0392b" : "#2e86c1", esc(bars[i].first), bars[i].second, unit);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" class="val">{:.3g}</text>)", label_w + w + 4, y + 12,
                     bars[i].second);
  }
  const int axis_y = static_cast<int>(bars.size()) * row + 8;
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888"/>)", label_w, axis_y,
                   label_w + plot_w, axis_y);
  if (log)
    for (int e = static_cast<int>(std::ceil(llo)); e <= static_cast<int>(lhi); e++)
      s += fmt::format(R"(<text x="{:.1f}" y="{}" class="tick">1e{}</text>)",
                       label_w + x(std::pow(10.0, e)) - 8, axis_y + 14, e);
  else
    s += fmt::format(
        R"(<text x="{}" y="{}" class="tick">0</text><text x="{}" y="{}" class="tick">{:.3g} {}</text>)",
        label_w, axis_y + 14, label_w + plot_w - 30, axis_y + 14, hi, unit);
  if (line > 0)
    s += fmt::format(
        R"(<line x1="{0:.1f}" y1="0" x2="{0:.1f}" y2="{1}" stroke="#c0392b" stroke-dasharray="4 3"/><text x="{0:.1f}" y="{2}" class="tick">tolerance</text>)",
        label_w + x(line), axis_y, axis_y + 24 > h ? axis_y - 2 : axis_y + 24);
  s += "</svg>";
  return s;
}

// The page head: title, style, the banner and the summary table (still open).
std::string page_head(const json& r) {
  std::string h;
  const bool passed = r.value("passed", false);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>hfx verify: ";
  h += esc(r.value("out_dir", std::string())) +
       "</title>\n<style>\n"
       "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
       "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px "
       "8px;font-size:13px;text-align:left;vertical-align:top}"
       "th{background:#f2f2f2}.passed{color:#1e8449;font-weight:bold}.failed{color:#c0392b;font-weight:bold}."
       "skipped,.not_judged,.info,.muted{color:#777}.not_judged{font-style:italic}"
       ".banner{padding:10px "
       "14px;border-radius:4px;font-size:18px;margin-bottom:16px}.ok{background:#d5f5e3}.bad{background:#"
       "fadbd8}"
       "svg .lbl{font-size:11px;font-family:monospace}svg .val,svg "
       ".tick{font-size:10px;fill:#555}code{font-size:12px}\n"
       "</style></head><body>\n";
  const std::string verdict = r.value("verdict", passed ? "verified" : "failed");
  const std::string why = passed                    ? r.value("out_dir", std::string())
                          : verdict == "not_judged" ? r.value("not_judged", std::string())
                                                    : r.value("first_failure", std::string());
  h += fmt::format("<div class=\"banner {}\">{} &mdash; {}</div>\n", passed ? "ok" : "bad",
                   passed                    ? "VERIFIED"
                   : verdict == "not_judged" ? "NOT JUDGED"
                                             : "FAILED",
                   esc(why));
  h += "<table><tr><th>export folder</th><td><code>" + esc(r.value("out_dir", std::string())) +
       "</code></td></tr>";
  h += "<tr><th>reference</th><td><code>" + esc(r.value("reference", std::string())) + "</code></td></tr>";
  h += "<tr><th>checked at</th><td>" + esc(r.value("checked_at", std::string())) + " (hfx " +
       esc(r.value("hfx_version", std::string())) + ")</td></tr>";
  if (r.contains("model") && r["model"].is_object())
    h += fmt::format("<tr><th>model</th><td>{} ({}, {} layers, vocab {})</td></tr>",
                     esc(r["model"].value("model_type", "")), esc(r["model"].value("dtype", "")),
                     r["model"].value("layers", 0), r["model"].value("vocab_size", 0));
  if (r.contains("tolerances") && r["tolerances"].is_object())
    h += "<tr><th>tolerances</th><td>" + esc(r["tolerances"].value("basis", std::string())) +
         "; relative error = " + esc(r["tolerances"].value("relative_error", std::string())) + "</td></tr>";
  if (r.contains("memory") && r["memory"].is_object() && r["memory"].contains("peak_rss_bytes"))
    h += fmt::format("<tr><th>peak memory</th><td>{:.1f} MiB peak RSS ({})</td></tr>",
                     num(r["memory"]["peak_rss_bytes"]) / 1048576.0,
                     esc(r["memory"].value("how", std::string())));
  return h;
}

// The table of checks.
std::string checks_table(const json& r) {
  std::string h;
  h += "</table>\n<h2>Checks</h2>\n<table><tr><th>component</th><th>check</th><th>status</th><th>detail</"
       "th></tr>\n";
  const json checks = r.value("checks", json::array());
  for (const auto& c : checks) {
    std::string st = c.value("status", std::string());
    h += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>\n",
                     esc(c.value("component", "")), esc(c.value("check", "")), esc(st), esc(st),
                     esc(c.value("message", "")));
  }
  h += "</table>\n";

  return h;
}

// The error of each named module against eager, as a bar chart (log scale).
std::string layer_section(const json& r) {
  std::string h;
  const json& ld = r.contains("layer_diff") ? r["layer_diff"] : json();
  if (ld.is_object() && ld.contains("layers")) {
    h += "<h2>Error per layer</h2>\n<p>Max abs error of each named module (Hugging Face names) against "
         "eager, component <code>" +
         esc(ld.value("component", std::string())) + "</code>, shape " +
         esc(ld.value("shape", std::string())) + " (log scale).";
    if (ld.contains("first_divergence") && ld["first_divergence"].is_object())
      h += " First divergence: <b>" + esc(ld["first_divergence"].value("name", std::string())) + "</b>.";
    h += "</p>\n";
    std::vector<std::pair<std::string, double>> bars;
    std::vector<bool> red;
    for (const auto& l : ld["layers"]) {
      bars.push_back({l.value("name", std::string()), num(l["max_abs"])});
      red.push_back(l.value("diverged", false));
    }
    double tol = r.contains("tolerances") ? r["tolerances"].value("layer_abs", 0.0) : 0.0;
    h += bar_chart(bars, "abs", true, tol, red) + "\n";
  }

  return h;
}

// One row per shape of the matrix.
std::string shape_table(const json& c) {
  std::string h;
  if (c.contains("shapes")) {
    h += "<h3>Shape "
         "matrix</h3>\n<table><tr><th>shape</th><th>batch</th><th>sequence</th><th>past</th><th>logits max "
         "abs</th><th>worst KV</th><th>result</th></tr>";
    for (const auto& s : c["shapes"]) {
      std::string res = s.contains("skipped")   ? s["skipped"].get<std::string>()
                        : s.value("ok", false)  ? "ok"
                        : s.contains("failure") ? s["failure"].get<std::string>()
                                                : s.value("error", std::string("failed"));
      h += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td "
          "class=\"{}\">{}</td></tr>",
          esc(s.value("label", "")), s.value("batch", 0), s.value("sequence", 0), s.value("past", 0),
          s.contains("logits") ? fmt::format("{:.2g}", num(s["logits"]["max_abs"])) : "-",
          s.contains("kv_worst") ? fmt::format("{} {:.2g}", esc(s["kv_worst"].value("name", "")),
                                               num(s["kv_worst"]["stats"]["max_abs"]))
                                 : "-",
          s.value("ok", false) ? "passed" : "failed", esc(res));
    }
    h += "</table>\n";
  }
  return h;
}

// One component: its facts, warm latency per shape, shape matrix and op inventory.
std::string component_section(const std::string& name, const json& c) {
  std::string h;
  h += "<h2>Component " + esc(name) + "</h2>\n<table>";
  if (c.contains("file"))
    h += "<tr><th>file</th><td><code>" + esc(c["file"].get<std::string>()) + "</code></td></tr>";
  if (c.contains("size_bytes"))
    h += fmt::format("<tr><th>size</th><td>{:.2f} MiB</td></tr>", num(c["size_bytes"]) / 1048576.0);
  if (c.contains("cold_start_ms"))
    h += fmt::format("<tr><th>cold start</th><td>{:.1f} ms (session {:.1f} ms)</td></tr>",
                     num(c["cold_start_ms"]), num(c.value("session_create_ms", json(0))));
  if (c.contains("peak_rss_delta_bytes"))
    h += fmt::format("<tr><th>peak RSS growth</th><td>{:.1f} MiB</td></tr>",
                     num(c["peak_rss_delta_bytes"]) / 1048576.0);
  if (c.contains("contract_source"))
    h += "<tr><th>contract</th><td>" + esc(c["contract_source"].get<std::string>()) + "</td></tr>";
  if (c.contains("placement") && c["placement"].contains("providers"))
    for (const auto& [p, v] : c["placement"]["providers"].items())
      h += fmt::format("<tr><th>{}</th><td>{} nodes after ORT optimization</td></tr>", esc(p),
                       v.value("nodes", 0));
  h += "</table>\n";
  if (c.contains("latency") && !c["latency"].empty()) {
    h += "<h3>Warm latency per shape (median, ms)</h3>\n";
    std::vector<std::pair<std::string, double>> bars;
    for (const auto& l : c["latency"])
      bars.push_back({fmt::format("{} ({}x{}+{})", l.value("shape", ""), l.value("batch", 0),
                                  l.value("sequence", 0), l.value("past", 0)),
                      num(l["warm_median_ms"])});
    h += bar_chart(bars, "ms", false, 0, {}) + "\n";
  }
  h += shape_table(c);
  if (c.contains("ops")) {
    h += "<details><summary>Op inventory (nodes in the file by op "
         "type)</summary><table><tr><th>op</th><th>nodes</th></tr>";
    for (const auto& [op, n] : c["ops"].items())
      h += fmt::format("<tr><td>{}</td><td>{}</td></tr>", esc(op), n.get<int64_t>());
    h += "</table></details>\n";
  }
  return h;
}

}  // namespace

std::string render_html(const json& r) {
  std::string h = page_head(r) + checks_table(r) + layer_section(r);
  const json components = r.value("components", json::object());  // items() must not outlive it
  for (const auto& [name, c] : components.items()) h += component_section(name, c);
  h += "</body></html>\n";
  return h;
}

}  // namespace hfx::verify
