// tests/io/safetensors_test.cpp — safetensors reading/writing, sharded stores, atomic writes, and a
// corpus of malformed files (generated here into a temp dir) that must each be rejected with a
// specific message. Suites: Safetensors, SafetensorsMalformed (picked up by the sanitizer run).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace fs = std::filesystem;
using hfx::DType;
using hfx::Tensor;
using namespace hfx::io;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hfx_st_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void put(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

/// A safetensors byte string: length prefix (the real one unless given), header, data.
std::string st_bytes(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

std::string zeros(size_t n) { return std::string(n, '\0'); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const hfx::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT hfx::Error: ") + e.what();
  }
  return "NO ERROR";
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.raw());
  return std::vector<uint8_t>(p, p + c.nbytes());
}

const DType kAllDtypes[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                            DType::I32, DType::I8,  DType::U8,   DType::Bool};

Tensor sample(const hfx::Shape& shape, DType dt, int seed = 0) {
  int64_t n = hfx::shape_numel(shape);
  if (n == 0) return Tensor::zeros(shape, dt);  // from_floats({}) would memcpy from nullptr (UB)
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    float x = static_cast<float>((i * 7 + seed * 3) % 11) - 5.0f;
    if (dt == DType::Bool) x = static_cast<float>((i + seed) % 2);
    if (dt == DType::U8) x = static_cast<float>((i * 13 + seed) % 251);
    if (hfx::dtype_is_float(dt)) x *= 0.5f;
    v[static_cast<size_t>(i)] = x;
  }
  return Tensor::from_floats(shape, v, dt);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Round trips

TEST(Safetensors, RoundTripEveryDtypeIncludingScalarAndEmpty) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> ts;
  for (DType dt : kAllDtypes) {
    std::string tag = hfx::dtype_safetensors_tag(dt);
    ts.push_back({tag + ".mat", sample({2, 3}, dt, 1)});
    ts.push_back({tag + ".scalar", sample({}, dt, 2)});
    ts.push_back({tag + ".empty", sample({0, 4}, dt)});
    ts.push_back({tag + ".vec", sample({5}, dt, 3)});
  }
  const std::string p = dir / "all.safetensors";
  write_safetensors(p, ts, {{"format", "pt"}, {"note", "héllo"}});
  auto f = SafetensorsFile::open(p);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("note"), "héllo");
  ASSERT_EQ(f->tensors().size(), ts.size());
  // tensors() is in file order, which is the order given to the writer.
  for (size_t i = 0; i < ts.size(); i++) EXPECT_EQ(f->tensors()[i].name, ts[i].first);
  for (const auto& [name, t] : ts) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(f->has(name));
    Tensor r = f->get(name);
    EXPECT_EQ(r.dtype(), t.dtype());
    EXPECT_EQ(r.shape(), t.shape());
    EXPECT_TRUE(r.is_contiguous());
    EXPECT_EQ(bytes_of(r), bytes_of(t));
    EXPECT_EQ(f->info(name).file, p);
    EXPECT_EQ(f->info(name).end - f->info(name).begin, t.nbytes());
  }
  EXPECT_EQ(f->get("F32.scalar").dim(), 0);
  EXPECT_EQ(f->get("I64.empty").numel(), 0);
}

TEST(Safetensors, WriterMatchesReferenceByteLayout) {
  // Same bytes as the reference (Rust) serializer: compact JSON, spaces to a multiple of 8, data.
  TempDir dir;
  std::vector<float> v = {0, 1, 2, 3, 4, 5};
  const std::string p = dir / "ref.safetensors";
  write_safetensors(p, {{"attn.0", Tensor::from_floats({1, 1, 2, 3}, v)}}, {});
  std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string data(reinterpret_cast<const char*>(v.data()), 24);
  EXPECT_EQ(slurp(p), st_bytes(header, data));
}

TEST(Safetensors, HeaderKeepsGivenOrderMetadataFirstAndPadding) {
  TempDir dir;
  const std::string p = dir / "order.safetensors";
  write_safetensors(p, {{"zeta", sample({3}, DType::U8)}, {"alpha", sample({2}, DType::F32)}});
  std::string all = slurp(p);
  uint64_t hlen = 0;
  std::memcpy(&hlen, all.data(), 8);
  EXPECT_EQ(hlen % 8, 0u);
  std::string h = all.substr(8, hlen);
  EXPECT_EQ(h.rfind(R"({"__metadata__":{"format":"pt"},"zeta":)", 0), 0u) << h;
  EXPECT_LT(h.find("\"zeta\""), h.find("\"alpha\""));
  EXPECT_NE(h.find(R"("data_offsets":[3,11])"), std::string::npos) << h;
  EXPECT_EQ(all.size(), 8 + hlen + 11);
}

TEST(Safetensors, NonContiguousInputIsWrittenContiguously) {
  TempDir dir;
  Tensor base = sample({3, 4}, DType::F32, 5);
  Tensor tr = base.transpose(0, 1);                        // [4, 3]
  Tensor sl = base.slice(1, 0, 4, 2);                      // [3, 2], stride 2
  Tensor ex = sample({1, 3}, DType::BF16).expand({4, 3});  // stride 0
  Tensor perm = sample({2, 3, 4}, DType::I64).permute({2, 0, 1});
  ASSERT_FALSE(tr.is_contiguous());
  const std::string p = dir / "nc.safetensors";
  write_safetensors(p, {{"tr", tr}, {"sl", sl}, {"ex", ex}, {"perm", perm}});
  auto f = SafetensorsFile::open(p);
  for (auto [name, t] :
       std::vector<std::pair<std::string, Tensor>>{{"tr", tr}, {"sl", sl}, {"ex", ex}, {"perm", perm}}) {
    SCOPED_TRACE(name);
    Tensor r = f->get(name);
    EXPECT_EQ(r.shape(), t.shape());
    EXPECT_EQ(r.to_floats(), t.to_floats());
  }
}

TEST(Safetensors, LargeNonContiguousIsStreamedInChunks) {
  // [2, N] transposed view of [N, 2]: rows bigger than the 16 MiB staging chunk.
  TempDir dir;
  const int64_t n = 4'500'000;
  Tensor base = Tensor::zeros({n, 2}, DType::F32);
  float* d = base.data<float>();
  for (int64_t i = 0; i < 2 * n; i++) d[i] = static_cast<float>(i % 1009);
  Tensor t = base.transpose(0, 1);
  const std::string p = dir / "big.safetensors";
  write_safetensors(p, {{"t", t}});
  auto f = SafetensorsFile::open(p);
  Tensor r = f->get("t");
  ASSERT_EQ(r.shape(), (hfx::Shape{2, n}));
  const float* rp = r.data<float>();
  for (int64_t j = 0; j < 2; j++)
    for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(rp[j * n + i], d[i * 2 + j]) << j << "," << i;
  // release() drops the pages; reading again faults them back in from the file.
  f->release("t");
  EXPECT_EQ(rp[n + 12345], d[12345 * 2 + 1]);
}

TEST(Safetensors, ViewsAreZeroCopyIntoTheMapping) {
  TempDir dir;
  const std::string p = dir / "zc.safetensors";
  write_safetensors(p, {{"a", sample({16, 16}, DType::F32)}, {"b", sample({8}, DType::I64)}});
  auto f = SafetensorsFile::open(p);
  const char* lo = static_cast<const char*>(f->mapping_data());
  const char* hi = lo + f->mapping_size();
  EXPECT_EQ(f->mapping_size(), fs::file_size(p));
  for (const char* name : {"a", "b"}) {
    Tensor t = f->get(name);
    const char* q = static_cast<const char*>(t.raw());
    EXPECT_GE(q, lo);
    EXPECT_LE(q + t.nbytes(), hi);
    EXPECT_EQ(t.raw(), f->get(name).raw());  // same bytes every time, no copy
  }
  // The mapping outlives the file object while a view holds it.
  Tensor keep = f->get("a");
  std::vector<float> expect = sample({16, 16}, DType::F32).to_floats();
  f.reset();
  EXPECT_EQ(keep.to_floats(), expect);
}

TEST(Safetensors, MisalignedTensorIsCopiedToAlignedMemory) {
  TempDir dir;
  const std::string p = dir / "mis.safetensors";
  Tensor w = sample({5}, DType::F32, 4);
  write_safetensors(p, {{"u", sample({3}, DType::U8)}, {"w", w}});  // w starts at data byte 3
  auto f = SafetensorsFile::open(p);
  Tensor r = f->get("w");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.raw()) % 4, 0u);
  const char* lo = static_cast<const char*>(f->mapping_data());
  const char* q = static_cast<const char*>(r.raw());
  EXPECT_TRUE(q < lo || q >= lo + f->mapping_size());
  EXPECT_EQ(r.to_floats(), w.to_floats());
  f->release("w");  // harmless for copied tensors
}

TEST(Safetensors, UnknownTensorNameSuggestsTheClosest) {
  TempDir dir;
  const std::string p = dir / "n.safetensors";
  write_safetensors(p, {{"model.embed_tokens.weight", sample({2}, DType::F32)}});
  auto f = SafetensorsFile::open(p);
  std::string msg = error_of([&] { f->get("model.embed_token.weight"); });
  EXPECT_NE(msg.find("did you mean 'model.embed_tokens.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

// ------------------------------------------------------------------------------------------------
// Atomic writes

TEST(Safetensors, FailedWriteLeavesOldFileIntactAndNoTempFile) {
  TempDir dir;
  const std::string p = dir / "model.safetensors";
  write_safetensors(p, {{"a", sample({4}, DType::F32)}});
  const std::string before = sha256_file(p);
  // A view that reaches past its storage: the writer must refuse before touching the disk.
  Tensor bad(hfx::Storage::allocate(8), DType::F32, {4}, {1});
  std::string msg = error_of([&] { write_safetensors(p, {{"ok", sample({2}, DType::F32)}, {"bad", bad}}); });
  EXPECT_NE(msg.find("tensor 'bad'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inside its storage of 8 bytes"), std::string::npos) << msg;
  EXPECT_EQ(sha256_file(p), before);
  std::string dup = error_of([&] {
    write_safetensors(p, {{"x", sample({2}, DType::F32)}, {"x", sample({2}, DType::F32)}});
  });
  EXPECT_NE(dup.find("got 'x' twice"), std::string::npos) << dup;
  EXPECT_EQ(sha256_file(p), before);
  // Failure after the temp file exists (rename onto a folder): the temp file is removed.
  fs::create_directory(dir.path / "adir");
  std::string ren = error_of([&] { write_safetensors(dir / "adir", {{"a", sample({4}, DType::F32)}}); });
  EXPECT_NE(ren.find("renaming"), std::string::npos) << ren;
  EXPECT_TRUE(fs::is_directory(dir.path / "adir"));
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  // Missing folder: clear error, nothing created.
  std::string nodir = error_of([&] {
    write_safetensors(dir / "no/such/dir/x.safetensors", {{"a", sample({1}, DType::F32)}});
  });
  EXPECT_NE(nodir.find("cannot create temp file"), std::string::npos) << nodir;
}

TEST(Safetensors, RewriteInPlaceWhileMapped) {
  // Re-saving over the file we read from: the old mapping stays valid (rename, not truncate).
  TempDir dir;
  const std::string p = dir / "model.safetensors";
  write_safetensors(p, {{"a", sample({64}, DType::F32, 1)}});
  auto f = SafetensorsFile::open(p);
  Tensor a = f->get("a");
  write_safetensors(p, {{"a", a}, {"b", sample({2}, DType::I32)}});
  EXPECT_EQ(a.to_floats(), sample({64}, DType::F32, 1).to_floats());
  auto g = SafetensorsFile::open(p);
  EXPECT_EQ(g->get("a").to_floats(), a.to_floats());
  EXPECT_TRUE(g->has("b"));
}

TEST(Safetensors, FileUtilAtomicWriteReadAndSha256) {
  TempDir dir;
  const std::string p = dir / "abc.txt";
  write_file_atomic(p, "abc");
  EXPECT_EQ(read_file(p), "abc");
  EXPECT_EQ(sha256_file(p), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  write_file_atomic(p, "");
  EXPECT_EQ(read_file(p), "");
  EXPECT_EQ(sha256_file(p), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // Bigger than one read chunk.
  std::string big(3 * (1 << 20) + 17, 'a');
  write_file_atomic(p, big);
  EXPECT_EQ(read_file(p), big);
  std::string missing = error_of([&] { read_file(dir / "missing.json"); });
  EXPECT_EQ(missing.rfind("[io]", 0), 0u) << missing;
  EXPECT_NE(missing.find("missing.json"), std::string::npos) << missing;
  EXPECT_NE(error_of([&] { sha256_file(dir / "missing.bin"); }).find("missing.bin"), std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// WeightStore

TEST(Safetensors, WeightStoreSingleFileFolder) {
  TempDir dir;
  write_safetensors(dir / "model.safetensors",
                    {{"w", sample({2, 2}, DType::BF16)}, {"b", sample({2}, DType::F32)}});
  auto ws = WeightStore::open_dir(dir.path.string());
  EXPECT_EQ(ws->names(), (std::vector<std::string>{"b", "w"}));
  EXPECT_EQ(ws->files(), (std::vector<std::string>{dir / "model.safetensors"}));
  EXPECT_EQ(ws->get("w").to_floats(), sample({2, 2}, DType::BF16).to_floats());
  EXPECT_EQ(ws->info("w").dtype, DType::BF16);
  ws->release("w");
  EXPECT_FALSE(ws->has("nope"));
  std::string msg = error_of([&] { ws->get("ww"); });
  EXPECT_NE(msg.find("did you mean 'w'"), std::string::npos) << msg;
  // A .safetensors file path works too.
  auto one = WeightStore::open_dir(dir / "model.safetensors");
  EXPECT_TRUE(one->has("b"));
}

TEST(Safetensors, WeightStoreShardedRoundTrip) {
  TempDir dir;
  Tensor a = sample({3, 4}, DType::F32, 1), b = sample({7}, DType::I64, 2), c = sample({2, 2}, DType::F16, 3);
  write_safetensors(dir / "model-00001-of-00002.safetensors", {{"a", a}, {"b", b}});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", c}});
  write_file_atomic(dir / "model.safetensors.index.json", R"({
    "metadata": {"total_size": 112},
    "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                   "c": "model-00002-of-00002.safetensors"}})");
  auto ws = WeightStore::open_dir(dir.path.string());
  EXPECT_EQ(ws->names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ws->files().size(), 2u);
  EXPECT_EQ(ws->get("a").to_floats(), a.to_floats());
  EXPECT_EQ(ws->get("b").to_ints(), b.to_ints());
  EXPECT_EQ(ws->get("c").to_floats(), c.to_floats());
  EXPECT_EQ(ws->info("c").file, dir / "model-00002-of-00002.safetensors");
  for (const auto& n : ws->names()) ws->release(n);
  EXPECT_EQ(ws->get("a").to_floats(), a.to_floats());
}

TEST(Safetensors, WeightStoreInMemory) {
  Tensor a = sample({2, 3}, DType::F32);
  auto ws = WeightStore::from_tensors({{"a", a}, {"b", sample({1}, DType::I32)}});
  EXPECT_TRUE(ws->has("a"));
  EXPECT_EQ(ws->get("a").raw(), a.raw());
  EXPECT_EQ(ws->info("a").shape, (hfx::Shape{2, 3}));
  EXPECT_EQ(ws->info("a").end, 24u);
  EXPECT_EQ(ws->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ws->files().empty());
  ws->release("a");
  EXPECT_NE(error_of([&] { ws->info("c"); }).find("'c'"), std::string::npos);
  EXPECT_NE(error_of([&] { WeightStore::from_tensors({{"u", Tensor()}}); }).find("'u'"), std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// Malformed corpus: every file must be rejected with its own specific message, never a crash.

namespace {

struct BadFile {
  const char* name;
  std::string bytes;
  std::vector<std::string> expect;  // substrings of the message
};
// gtest/ctest show the case name instead of the struct's raw bytes.
void PrintTo(const BadFile& b, std::ostream* os) { *os << b.name; }

const std::string kOk = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";

std::vector<BadFile> malformed_files() {
  std::vector<BadFile> v;
  auto add = [&](const char* n, std::string b, std::vector<std::string> e) {
    v.push_back({n, std::move(b), std::move(e)});
  };
  add("empty_file", "", {"the file is empty (0 bytes)"});
  add("seven_bytes", std::string("\x10\0\0\0\0\0\0", 7), {"got a 7-byte file", "truncated"});
  add("header_len_zero", le64(0) + zeros(16), {"header length is 0"});
  add("header_len_overflow", le64(~uint64_t(0)) + "{}",
      {"header length 18446744073709551615 exceeds the 100000000-byte limit"});
  add("header_len_absurd", le64(200'000'000) + "{}",
      {"header length 200000000 exceeds the 100000000-byte limit"});
  add("truncated_header", le64(100) + R"({"a":{"dtype":"F32")",
      {"header is truncated", "(81 bytes missing)"});
  add("bad_json", st_bytes(R"({"a": {"dtype": "F32",)"),
      {"header is not valid JSON", "unexpected end of input"});
  add("json_trailing_garbage", st_bytes(R"({} junk)"),
      {"header is not valid JSON", "last read: '{} j'; expected end of input"});
  add("non_utf8_header", st_bytes("{\"\xff\": 1}"),
      {"header is not valid UTF-8 (byte 0xff at header offset 2)"});
  add("overlong_utf8", st_bytes("{\"\xc0\xaf\": 1}"), {"not valid UTF-8 (byte 0xc0"});
  add("header_not_object", st_bytes("[1, 2]"), {"expected the header to be a JSON object, got a JSON array"});
  add("entry_not_object", st_bytes(R"({"w": 3})"),
      {"tensor 'w'", "expected an object with dtype, shape and data_offsets"});
  add("missing_dtype", st_bytes(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", zeros(8)),
      {"tensor 'w'", "missing 'dtype'"});
  add("missing_shape", st_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", zeros(8)),
      {"missing 'shape'"});
  add("missing_data_offsets", st_bytes(R"({"w":{"dtype":"F32","shape":[2]}})", zeros(8)),
      {"missing 'data_offsets'"});
  add("dtype_not_string", st_bytes(R"({"w":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", zeros(8)),
      {"expected 'dtype' to be a string like \"F32\", got 32"});
  add("unknown_dtype", st_bytes(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", zeros(8)),
      {"unknown dtype tag 'F33'", "F32, F16, BF16"});
  add("dtype_f64", st_bytes(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", zeros(8)),
      {"dtype 'F64' is not supported"});
  add("dtype_f8", st_bytes(R"({"w":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", zeros(8)),
      {"dtype 'F8_E4M3' is not supported"});
  add("shape_not_list", st_bytes(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", zeros(8)),
      {"expected 'shape' to be a list of non-negative integers, got 2"});
  add("negative_dim", st_bytes(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,8]}})", zeros(8)),
      {"dimension 1 of shape [2,-3] is negative (-3)"});
  add("fractional_dim", st_bytes(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})", zeros(8)),
      {"dimension 0 of shape [1.5] is not an integer"});
  add("string_dim", st_bytes(R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", zeros(8)),
      {"is not an integer (got string"});
  add("huge_dims_overflow",
      st_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", zeros(8)),
      {"shape [4294967296,4294967296] overflows"});
  add("dim_beyond_int64",
      st_bytes(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,8]}})", zeros(8)),
      {"shape [18446744073709551615] overflows"});
  add("offsets_not_pair", st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", zeros(8)),
      {"expected 'data_offsets' to be [begin, end] with two non-negative integers, got [0]"});
  add("offsets_negative", st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", zeros(8)),
      {"two non-negative integers, got [-8,0]"});
  add("offsets_reversed", st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", zeros(8)),
      {"data_offsets [8, 0] are reversed"});
  add("offsets_out_of_range",
      st_bytes(R"({"w":{"dtype":"F32","shape":[1000],"data_offsets":[0,4000]}})", zeros(16)),
      {"end beyond the data section, which holds only 16 bytes (3984 bytes missing)"});
  add("size_mismatch", st_bytes(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", zeros(20)),
      {"tensor 'w'", "expected 24 bytes for F32 [2,3]", "got 20 bytes"});
  add("overlap",
      st_bytes(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          zeros(12)),
      {"tensor 'b' (data bytes [4, 12)) overlaps tensor 'a'"});
  add("hole",
      st_bytes(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
          zeros(12)),
      {"hole of 4 data bytes before tensor 'b'"});
  add("trailing_bytes", st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", zeros(9)),
      {"5 trailing bytes after the last tensor"});
  add("duplicate_tensor_name", st_bytes("{\"a\":{" + kOk + "},\"a\":{" + kOk + "}}", zeros(8)),
      {"duplicate tensor name 'a'"});
  add("duplicate_field",
      st_bytes(R"({"a":{"dtype":"F16","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", zeros(8)),
      {"entry 'a': duplicate key 'dtype'"});
  add("metadata_value_not_string",
      st_bytes("{\"__metadata__\":{\"format\":1},\"a\":{" + kOk + "}}", zeros(8)),
      {"expected __metadata__ value for 'format' to be a string, got number"});
  add("metadata_not_object", st_bytes("{\"__metadata__\":\"pt\",\"a\":{" + kOk + "}}", zeros(8)),
      {"expected __metadata__ to be an object of strings, got a JSON string"});
  return v;
}

}  // namespace

class SafetensorsMalformed : public ::testing::TestWithParam<BadFile> {};

TEST_P(SafetensorsMalformed, RejectedWithSpecificMessage) {
  const BadFile& bf = GetParam();
  TempDir dir;
  const std::string p = dir / (std::string(bf.name) + ".safetensors");
  put(p, bf.bytes);
  std::string msg = error_of([&] { SafetensorsFile::open(p); });
  EXPECT_EQ(msg.rfind("[safetensors] ", 0), 0u) << msg;
  EXPECT_NE(msg.find(p), std::string::npos) << "message must name the file: " << msg;
  for (const auto& s : bf.expect)
    EXPECT_NE(msg.find(s), std::string::npos) << "expected '" << s << "' in: " << msg;
  // The same file inside a checkpoint folder fails the same way through WeightStore.
  fs::rename(p, dir / "model.safetensors");
  std::string msg2 = error_of([&] { WeightStore::open_dir(dir.path.string()); });
  for (const auto& s : bf.expect) EXPECT_NE(msg2.find(s), std::string::npos) << msg2;
}

INSTANTIATE_TEST_SUITE_P(Corpus, SafetensorsMalformed, ::testing::ValuesIn(malformed_files()),
                         [](const ::testing::TestParamInfo<BadFile>& i) {
                           return std::string(i.param.name);
                         });

TEST(SafetensorsMalformed, CorpusMessagesAreDistinct) {
  // Every case asserts on a substring no other case's message contains.
  auto files = malformed_files();
  ASSERT_GE(files.size(), 20u);
  TempDir dir;
  std::vector<std::string> msgs;
  for (const auto& bf : files) {
    const std::string p = dir / (std::string(bf.name) + ".safetensors");
    put(p, bf.bytes);
    msgs.push_back(error_of([&] { SafetensorsFile::open(p); }));
  }
  for (size_t i = 0; i < files.size(); i++) {
    // The first expected substring of case i must be absent from every other message after the
    // file name is removed (the names themselves differ).
    size_t hits = 0;
    for (size_t j = 0; j < files.size(); j++) {
      std::string m = msgs[j];
      std::string p = dir / (std::string(files[j].name) + ".safetensors");
      if (auto at = m.find(p); at != std::string::npos) m.erase(at, p.size());
      bool has_all = true;
      for (const auto& s : files[i].expect) has_all = has_all && m.find(s) != std::string::npos;
      hits += has_all;
    }
    EXPECT_EQ(hits, 1u) << files[i].name << ": its expected substrings match " << hits << " messages";
  }
}

TEST(SafetensorsMalformed, TruncatedDataSaysHowManyBytesAreMissing) {
  TempDir dir;
  const std::string p = dir / "model.safetensors";
  write_safetensors(p, {{"a", sample({4, 4}, DType::F32)}, {"b", sample({10}, DType::F32)}});
  fs::resize_file(p, fs::file_size(p) - 5);
  std::string msg = error_of([&] { SafetensorsFile::open(p); });
  EXPECT_NE(msg.find("tensor 'b'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(5 bytes missing)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("re-download or re-save the checkpoint"), std::string::npos) << msg;
}

TEST(SafetensorsMalformed, NotAFileAndMissingFile) {
  TempDir dir;
  EXPECT_NE(error_of([&] { SafetensorsFile::open(dir / "nope.safetensors"); }).find("cannot open"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              SafetensorsFile::open(dir.path.string());
            }).find("expected a regular .safetensors file"),
            std::string::npos);
}

namespace {
void write_two_shards(const TempDir& dir) {
  write_safetensors(dir / "s1.safetensors", {{"a", sample({2}, DType::F32)}});
  write_safetensors(dir / "s2.safetensors", {{"b", sample({2}, DType::F32)}});
}
std::string open_dir_error(const TempDir& dir) {
  return error_of([&] { WeightStore::open_dir(dir.path.string()); });
}
}  // namespace

TEST(SafetensorsMalformed, EmptyFolderAndMissingFolder) {
  TempDir dir;
  std::string msg = open_dir_error(dir);
  EXPECT_NE(
      msg.find("expected model.safetensors or model.safetensors.index.json in the folder, found neither"),
      std::string::npos)
      << msg;
  put(dir / "pytorch_model.bin", "x");
  EXPECT_NE(open_dir_error(dir).find("safe_serialization=True"), std::string::npos);
  std::string none = error_of([&] { WeightStore::open_dir(dir / "missing"); });
  EXPECT_NE(none.find("expected a checkpoint folder, got nothing at that path"), std::string::npos) << none;
}

TEST(SafetensorsMalformed, IndexPointsAtMissingShard) {
  TempDir dir;
  write_two_shards(dir);
  write_file_atomic(dir / "model.safetensors.index.json",
                    R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors"}})");
  std::string msg = open_dir_error(dir);
  EXPECT_NE(msg.find("shard 's3.safetensors' listed in the index does not exist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors.index.json"), std::string::npos) << msg;
}

TEST(SafetensorsMalformed, IndexNotJson) {
  TempDir dir;
  write_two_shards(dir);
  write_file_atomic(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors",)");
  std::string msg = open_dir_error(dir);
  EXPECT_NE(msg.find("model.safetensors.index.json': index is not valid JSON"), std::string::npos) << msg;
}

TEST(SafetensorsMalformed, IndexWithoutWeightMap) {
  TempDir dir;
  write_two_shards(dir);
  write_file_atomic(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_NE(open_dir_error(dir).find("with a 'weight_map' object"), std::string::npos);
  write_file_atomic(dir / "model.safetensors.index.json", R"({"weight_map": {}})");
  EXPECT_NE(open_dir_error(dir).find("expected a non-empty weight_map"), std::string::npos);
  write_file_atomic(dir / "model.safetensors.index.json", R"({"weight_map": {"a": 1}})");
  EXPECT_NE(open_dir_error(dir).find("weight_map entry 'a' must be a shard file name"), std::string::npos);
  write_file_atomic(dir / "model.safetensors.index.json",
                    R"({"weight_map": {"a": "s1.safetensors", "a": "s2.safetensors"}})");
  EXPECT_NE(open_dir_error(dir).find("tensor 'a' is listed twice in weight_map"), std::string::npos);
}

TEST(SafetensorsMalformed, IndexShardOutsideFolder) {
  TempDir dir;
  write_two_shards(dir);
  write_file_atomic(dir / "model.safetensors.index.json",
                    R"({"weight_map": {"a": "../s1.safetensors", "b": "s2.safetensors"}})");
  EXPECT_NE(open_dir_error(dir).find(
                "shard '../s1.safetensors' for tensor 'a' is not a file name inside the folder"),
            std::string::npos);
}

TEST(SafetensorsMalformed, IndexTensorAbsentFromItsShard) {
  TempDir dir;
  write_two_shards(dir);
  write_file_atomic(dir / "model.safetensors.index.json",
                    R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}})");
  // b is listed under s1, but lives in s2 (which the index never mentions).
  std::string msg = open_dir_error(dir);
  EXPECT_NE(msg.find("tensor 'b' is listed in the index under shard"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(no shard does)"), std::string::npos) << msg;
  write_file_atomic(
      dir / "model.safetensors.index.json",
      R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"}})");
  msg = open_dir_error(dir);
  EXPECT_NE(msg.find("(it is in '"), std::string::npos) << msg;
}

TEST(SafetensorsMalformed, TensorInTwoShards) {
  TempDir dir;
  write_safetensors(dir / "s1.safetensors", {{"a", sample({2}, DType::F32)}, {"b", sample({2}, DType::F32)}});
  write_safetensors(dir / "s2.safetensors", {{"b", sample({2}, DType::F32)}});
  write_file_atomic(dir / "model.safetensors.index.json",
                    R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  std::string msg = open_dir_error(dir);
  EXPECT_NE(msg.find("tensor 'b' is present in two shards"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.path.string()), std::string::npos) << msg;
}

TEST(SafetensorsMalformed, MalformedShardNamesTheShard) {
  TempDir dir;
  write_two_shards(dir);
  fs::resize_file(dir / "s2.safetensors", 7);
  write_file_atomic(dir / "model.safetensors.index.json",
                    R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  std::string msg = open_dir_error(dir);
  EXPECT_NE(msg.find("s2.safetensors': expected at least 8 bytes"), std::string::npos) << msg;
}
