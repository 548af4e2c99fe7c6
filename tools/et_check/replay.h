// tools/et_check/replay.h — et_run --replay: recorded method calls (hfx verify --save-calls, the layout of
// hfx's src/verify/call_fixture.h, read here on its own) fed to ExecuTorch's runtime. For each file: the
// inputs by position into the named method, execute, and every output against eager's (max abs over the
// elements); a probe file (expect_error) must fail to execute. Included by et_run.cpp after its JSON and
// error helpers (jstr, jnum, Out, fail); kept apart so et_run.cpp stays one screen per mode.
#pragma once
#include <dirent.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace replay {

struct Tens {
  std::string name;
  uint8_t code = 0;  // 1 f32, 2 i64, 3 i32, 4 bool, 5 u8
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
};
struct Call {
  std::string file, method;
  bool expect_error = false;
  std::vector<Tens> inputs, outputs;
};

// Reads one call fixture; an empty method name means the file is not one (the reason in `why`).
inline Call read(const std::string& path, std::string& why) {
  Call c;
  c.file = path;
  std::ifstream f(path, std::ios::binary);
  std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t at = 0;
  auto take = [&](size_t n) -> const char* {
    if (n > b.size() - at) throw std::runtime_error("truncated at byte " + std::to_string(at));
    at += n;
    return b.data() + at - n;
  };
  auto u32 = [&] {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  };
  auto str = [&] {
    uint32_t n = u32();
    return std::string(take(n), n);
  };
  auto tensor = [&] {
    Tens t;
    t.name = str();
    std::memcpy(&t.code, take(1), 1);
    uint32_t rank = u32();
    if (rank > 8) throw std::runtime_error("rank " + std::to_string(rank));
    for (uint32_t i = 0; i < rank; i++) {
      int64_t d;
      std::memcpy(&d, take(8), 8);
      t.sizes.push_back(d);
    }
    uint64_t n;
    std::memcpy(&n, take(8), 8);
    const char* p = take(static_cast<size_t>(n));
    t.bytes.assign(p, p + n);
    return t;
  };
  try {
    if (std::string(take(8), 8) != "HFXCALL1") throw std::runtime_error("no HFXCALL1 magic");
    c.method = str();
    c.expect_error = *take(1) != 0;
    uint32_t ni = u32(), no = u32();
    for (uint32_t i = 0; i < ni; i++) c.inputs.push_back(tensor());
    for (uint32_t i = 0; i < no; i++) c.outputs.push_back(tensor());
  } catch (const std::exception& e) {
    why = e.what();
    c.method.clear();
  }
  return c;
}

inline ScalarType scalar_type(uint8_t code) {
  switch (code) {
    case 1:
      return ScalarType::Float;
    case 2:
      return ScalarType::Long;
    case 3:
      return ScalarType::Int;
    case 4:
      return ScalarType::Bool;
    default:
      return ScalarType::Byte;
  }
}

inline std::vector<float> floats(const Tens& t) {
  std::vector<float> v;
  if (t.code == 1) {
    v.resize(t.bytes.size() / 4);
    std::memcpy(v.data(), t.bytes.data(), v.size() * 4);
  } else if (t.code == 2) {
    for (size_t i = 0; i + 8 <= t.bytes.size(); i += 8) {
      int64_t x;
      std::memcpy(&x, t.bytes.data() + i, 8);
      v.push_back(static_cast<float>(x));
    }
  }
  return v;
}

// The files of `dir` ending in .call, sorted (calls in recording order: NNN, then the probes).
inline std::vector<std::string> files(const std::string& dir) {
  std::vector<std::string> v;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".call") == 0) v.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// One call: {"file", "method", "probe", "ok", "max_abs", "worst", "ms"} (a probe: "refused" and the error).
inline std::string run_one(Module& mod, const Call& c) {
  std::vector<TensorPtr> keep;
  std::vector<EValue> in;
  for (const Tens& t : c.inputs) {
    std::vector<int32_t> sizes(t.sizes.begin(), t.sizes.end());
    keep.push_back(make_tensor_ptr(std::move(sizes), std::vector<uint8_t>(t.bytes), scalar_type(t.code)));
    in.emplace_back(*keep.back());
  }
  std::string o = "{\"file\": " + jstr(c.file) + ", \"method\": " + jstr(c.method) +
                  ", \"probe\": " + (c.expect_error ? "true" : "false");
  auto t0 = std::chrono::steady_clock::now();
  auto r = mod.execute(c.method, in);
  const double ms = ms_since(t0);
  if (c.expect_error)
    return o + ", \"refused\": " + (r.ok() ? "false" : "true") +
           (r.ok() ? "" : ", \"error\": " + jstr(executorch::runtime::to_string(r.error()))) + "}";
  if (!r.ok())
    return o + ", \"ok\": false, \"error\": " + jstr(executorch::runtime::to_string(r.error())) + "}";
  double worst = 0;
  std::string where, problem;
  if (r->size() != c.outputs.size())
    problem = std::to_string(r->size()) + " outputs, eager has " + std::to_string(c.outputs.size());
  for (size_t i = 0; i < r->size() && i < c.outputs.size() && problem.empty(); i++) {
    if (!(*r)[i].isTensor()) {
      problem = "output " + std::to_string(i) + " is not a tensor";
      break;
    }
    const std::vector<float> got = to_floats((*r)[i].toTensor()), want = floats(c.outputs[i]);
    if (got.size() != want.size()) {
      problem = c.outputs[i].name + ": " + std::to_string(got.size()) + " elements, eager has " +
                std::to_string(want.size());
      break;
    }
    for (size_t j = 0; j < got.size(); j++) {
      double d = std::fabs(static_cast<double>(got[j]) - want[j]);
      if (!(d <= worst)) {  // NaN counts as the worst
        worst = std::isnan(d) ? INFINITY : d;
        where = c.outputs[i].name;
      }
    }
  }
  if (!problem.empty()) return o + ", \"ok\": false, \"error\": " + jstr(problem) + "}";
  return o + ", \"ok\": true, \"max_abs\": " + jnum(worst) + ", \"worst\": " + jstr(where) +
         ", \"ms\": " + jnum(ms) + "}";
}

// --replay DIR: every call fixture of DIR, in order; prints {"replay": [...]} and exits 0 (the caller
// judges the errors against its tolerance), 1 if a file cannot be read.
inline int run(Module& mod, const std::string& dir, Out& out) {
  const std::vector<std::string> fs = files(dir);
  if (fs.empty()) fail(out, "replay", Error::InvalidArgument, "no .call files in " + dir);
  std::string o = "[";
  for (const std::string& p : fs) {
    std::string why;
    Call c = read(p, why);
    if (c.method.empty()) fail(out, "replay", Error::InvalidArgument, p + ": " + why);
    o += (o.size() > 1 ? ",\n    " : "\n    ") + run_one(mod, c);
  }
  out.add("ok", "true");
  out.add("replay", o + "]");
  out.emit();
  return 0;
}

}  // namespace replay
