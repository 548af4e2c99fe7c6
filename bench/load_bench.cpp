// ONNX Runtime session creation of hfx's weight layout against PyTorch-style initializers, and the peak
// memory of `hfx generate` against the bytes of the weights it runs. One JSON line.
//
//   load_bench OUT [--threads 2] [--reps 1] [--hfx HFX_BIN --max-new-tokens 16]
//
// OUT is an `hfx export --format onnx` folder whose weights are external data (onnx/model.onnx_data).
// The baseline is built here, in the same run, from the same bytes: every MatMul weight (stored [in, out]
// by hfx) is written back as [out, in] behind a Transpose node, as torch.onnx writes linear layers, and a
// tied embedding gathered on axis 1 gets its axis-0 Gather back — so the two graphs differ only in
// the layout ONNX Runtime has to fold at load. Each session is created in a forked child (time and peak
// RSS of that child), alternating hfx / baseline `reps` times, under ONNX Runtime's defaults and again with
// MLAS prepacking off (the session options `hfx generate` uses), plus hfx's graph with ONNX Runtime's
// graph optimizations off (the floor: what reading the weights costs). With --hfx, `HFX_BIN generate OUT`
// runs greedily on ONNX Runtime and its peak RSS (wait4) is compared with the size of the weight file.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "hfx/runtime/ort_session.h"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void die(const std::string& m) {
  std::fprintf(stderr, "load_bench: %s\n", m.c_str());
  std::exit(1);
}

long vm_hwm_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

std::map<std::string, std::string> ext(const onnx::TensorProto& t) {
  std::map<std::string, std::string> kv;
  for (const auto& e : t.external_data()) kv[e.key()] = e.value();
  return kv;
}

// Bytes of initializer `t` of the export in `dir` (external data only: the bench needs --external-data).
std::string read_bytes(const fs::path& dir, const onnx::TensorProto& t) {
  auto kv = ext(t);
  if (kv.empty())
    die("expected external data for initializer " + t.name() + " (export with --external-data)");
  std::ifstream f(dir / kv["location"], std::ios::binary);
  std::string b(std::stoull(kv["length"]), '\0');
  f.seekg(static_cast<std::streamoff>(std::stoull(kv.count("offset") ? kv["offset"] : "0")));
  f.read(b.data(), static_cast<std::streamsize>(b.size()));
  if (!f) die("expected to read the external data of " + t.name());
  return b;
}

std::string transposed(const std::string& b, int64_t rows, int64_t cols) {  // f32 [rows, cols] → [cols, rows]
  std::string o(b.size(), '\0');
  const float* s = reinterpret_cast<const float*>(b.data());
  float* d = reinterpret_cast<float*>(o.data());
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c];
  return o;
}

// The PyTorch-style copy of `src` (hfx's model.onnx) at `dst`, weights in dst's model.onnx_data.
void build_baseline(const fs::path& src, const fs::path& dst) {
  onnx::ModelProto m;
  std::ifstream in(src, std::ios::binary);
  if (!m.ParseFromIstream(&in)) die("expected an ONNX model at " + src.string());
  auto* g = m.mutable_graph();
  std::map<std::string, onnx::TensorProto*> inits;
  for (auto& t : *g->mutable_initializer()) inits[t.name()] = &t;
  std::set<std::string> flip;  // initializers read by MatMul as B, 2-D f32
  for (const auto& n : g->node())
    if (n.op_type() == "MatMul" && inits.count(n.input(1)) && inits[n.input(1)]->dims_size() == 2 &&
        inits[n.input(1)]->data_type() == onnx::TensorProto::FLOAT)
      flip.insert(n.input(1));
  // A tied table stored [H, V]: Gather axis 1 + Transpose becomes Gather axis 0 of the [V, H] table.
  std::map<std::string, std::string> rename;  // Transpose output → Gather output
  std::set<int> drop;
  for (int i = 0; i < g->node_size(); i++) {
    auto* n = g->mutable_node(i);
    if (n->op_type() != "Gather" || !flip.count(n->input(0))) continue;
    for (auto& a : *n->mutable_attribute())
      if (a.name() == "axis") a.set_i(0);
    for (int j = i + 1; j < g->node_size(); j++)
      if (g->node(j).op_type() == "Transpose" && g->node(j).input(0) == n->output(0)) {
        rename[g->node(j).output(0)] = n->output(0);
        drop.insert(j);
      }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& w : flip) {
    auto* t = nodes.Add();
    t->set_op_type("Transpose");
    t->add_input(w);
    t->add_output(w + "/torch_t");
    auto* a = t->add_attribute();
    a->set_name("perm");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
    a->add_ints(0);
  }
  for (int i = 0; i < g->node_size(); i++) {
    if (drop.count(i)) continue;
    auto* n = nodes.Add();
    *n = g->node(i);
    for (auto& x : *n->mutable_input())
      if (rename.count(x)) x = rename[x];
    if (n->op_type() == "MatMul" && flip.count(n->input(1))) n->set_input(1, n->input(1) + "/torch_t");
  }
  g->mutable_node()->Swap(&nodes);
  fs::create_directories(dst.parent_path());
  std::ofstream data(dst.string() + "_data", std::ios::binary);
  uint64_t off = 0;
  for (auto& [name, t] : inits) {
    if (t->external_data_size() == 0) {  // small constants stay embedded in both graphs
      if (flip.count(name))
        die("expected the weight " + name + " in external data (export with --external-data)");
      continue;
    }
    std::string b = read_bytes(src.parent_path(), *t);
    if (flip.count(name)) {
      b = transposed(b, t->dims(0), t->dims(1));
      int64_t r = t->dims(0);
      t->set_dims(0, t->dims(1));
      t->set_dims(1, r);
    }
    off = (off + 4095) / 4096 * 4096;  // aligned as hfx aligns, so only the layout differs
    data.seekp(static_cast<std::streamoff>(off));
    data.write(b.data(), static_cast<std::streamsize>(b.size()));
    t->clear_external_data();
    for (auto [k, v] : std::map<std::string, std::string>{{"location", dst.filename().string() + "_data"},
                                                          {"offset", std::to_string(off)},
                                                          {"length", std::to_string(b.size())}}) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    off += b.size();
  }
  std::ofstream out(dst, std::ios::binary);
  if (!m.SerializeToOstream(&out)) die("expected to write " + dst.string());
}

struct Load {
  double seconds = 0;
  long peak_kib = 0;
};

// Session creation in a forked child: its wall time and peak RSS (VmHWM reset first: a forked child
// inherits the parent's high-water mark).
Load load_in_child(const fs::path& model, int threads, hfx::rt::GraphOpt opt = hfx::rt::GraphOpt::All,
                   bool prepacking = true) {
  int fd[2];
  if (pipe(fd) != 0) die("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    std::ofstream("/proc/self/clear_refs") << "5";
    auto t0 = std::chrono::steady_clock::now();
    hfx::rt::OrtSession s(model, {.intra_op_threads = threads, .graph_opt = opt, .prepacking = prepacking});
    Load l{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), vm_hwm_kib()};
    if (write(fd[1], &l, sizeof l) != sizeof l) _exit(2);
    _exit(0);
  }
  close(fd[1]);
  Load l;
  bool ok = read(fd[0], &l, sizeof l) == sizeof l;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!ok || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("expected a session for " + model.string());
  return l;
}

// `hfx generate OUT` as a child process: wall seconds and peak RSS (KiB).
Load generate(const std::string& hfx, const fs::path& out, int tokens) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    std::string n = std::to_string(tokens);
    execl(hfx.c_str(), hfx.c_str(), "--quiet", "generate", out.c_str(), "--prompt",
          "The capital of France is", "--max-new-tokens", n.c_str(), "--greedy", "--engine", "ort",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("expected `hfx generate` to succeed on " + out.string());
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), ru.ru_maxrss};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: load_bench OUT [--threads 2] [--reps 1] [--hfx HFX_BIN --max-new-tokens 16]");
  fs::path out = argv[1];
  int threads = 2, reps = 1, tokens = 16;
  std::string hfx;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (k == "--reps")
      reps = std::stoi(argv[i + 1]);
    else if (k == "--hfx")
      hfx = argv[i + 1];
    else if (k == "--max-new-tokens")
      tokens = std::stoi(argv[i + 1]);
    else
      die("unknown option " + k);
  }
  const fs::path model = out / "onnx" / "model.onnx";
  const fs::path base = out.string() + ".torch_layout/onnx/model.onnx";
  auto t0 = std::chrono::steady_clock::now();
  build_baseline(model, base);
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double hfx_s = 1e30, torch_s = 1e30, floor_s = 1e30, hfx_np = 1e30, torch_np = 1e30;
  long hfx_kib = 0, torch_kib = 0;
  for (int r = 0; r < reps; r++) {
    Load a = load_in_child(model, threads), b = load_in_child(base, threads);
    // The floor: hfx's graph with ONNX Runtime's graph optimizations off (reading weights, no rewriting).
    Load c = load_in_child(model, threads, hfx::rt::GraphOpt::Disabled);
    // Both layouts again under the session options `hfx generate` uses (every graph optimization, MLAS
    // prepacking off): the same options on both sides.
    Load d = load_in_child(model, threads, hfx::rt::GraphOpt::All, false);
    Load e = load_in_child(base, threads, hfx::rt::GraphOpt::All, false);
    hfx_s = std::min(hfx_s, a.seconds), torch_s = std::min(torch_s, b.seconds),
    floor_s = std::min(floor_s, c.seconds), hfx_np = std::min(hfx_np, d.seconds),
    torch_np = std::min(torch_np, e.seconds);
    hfx_kib = std::max(hfx_kib, a.peak_kib), torch_kib = std::max(torch_kib, b.peak_kib);
  }
  const double weights = static_cast<double>(fs::file_size(out / "onnx" / "model.onnx_data"));
  std::printf(
      "{\"bench\": \"load\", \"out\": \"%s\", \"threads\": %d, \"reps\": %d, \"weight_bytes\": %.0f, "
      "\"baseline_build_s\": %.2f, \"session_s\": {\"hfx\": %.3f, \"torch_layout\": %.3f, "
      "\"hfx_no_graph_opt\": %.3f, \"hfx_no_prepack\": %.3f, \"torch_layout_no_prepack\": %.3f}, "
      "\"session_ratio\": %.3f, \"session_ratio_no_prepack\": %.3f, "
      "\"session_peak_rss_mib\": {\"hfx\": %.1f, \"torch_layout\": %.1f}",
      out.c_str(), threads, reps, weights, build_s, hfx_s, torch_s, floor_s, hfx_np, torch_np,
      hfx_s / torch_s, hfx_np / torch_np, hfx_kib / 1024.0, torch_kib / 1024.0);
  if (!hfx.empty()) {
    Load g = generate(hfx, out, tokens);
    std::printf(
        ", \"generate\": {\"tokens\": %d, \"seconds\": %.2f, \"peak_rss_mib\": %.1f, "
        "\"peak_rss_over_weights\": %.3f}",
        tokens, g.seconds, g.peak_kib / 1024.0, g.peak_kib * 1024.0 / weights);
  }
  std::printf("}\n");
  fs::remove_all(fs::path(out.string() + ".torch_layout"));
  return 0;
}
