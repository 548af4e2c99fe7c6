// Crafted .pt2 archives against `hfx verify` (the CLI binary, HFX_CLI): a folder holding a tiny llama
// checkpoint and one hostile archive must fail with a non-zero exit and a message naming the defect. The
// archives are built byte by byte here (zip layout: local header + data per record, central directory,
// end record), so each defect is exactly the one named. The same archives are committed as seeds of the
// pt2 fuzz target (tests/fuzz/pt2/crafted_*.pt2), which runs them under ASan+UBSan.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hfx/core/error.h"
#include "io/zip.h"

namespace fs = std::filesystem;

namespace {

void put16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

struct Rec {
  std::string name, data;  ///< data as stored (compressed when method is 8)
  uint16_t method = 0;
  uint32_t size = 0;  ///< declared uncompressed size
  uint32_t crc = 0;
  uint32_t stored = 0;  ///< declared compressed size (0: data.size())
};

Rec stored(const std::string& name, const std::string& data) {
  return {
      name, data, 0, static_cast<uint32_t>(data.size()), hfx::io::crc32_update(0, data.data(), data.size()),
      0};
}

// Raw deflate of `plain`, declared as `declared` bytes uncompressed.
Rec deflated(const std::string& name, const std::string& plain, uint32_t declared) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, plain.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return {name, out, 8, declared, hfx::io::crc32_update(0, plain.data(), plain.size()), 0};
}

std::string header(uint32_t sig, const Rec& r, bool central, uint32_t offset) {
  std::string h;
  put32(h, sig);
  if (central) put16(h, 20);  // made by
  put16(h, 20);               // needed
  put16(h, 0);                // flags
  put16(h, r.method);
  put16(h, 0);     // time
  put16(h, 0x21);  // date
  put32(h, r.crc);
  put32(h, r.stored ? r.stored : static_cast<uint32_t>(r.data.size()));
  put32(h, r.size);
  put16(h, static_cast<uint32_t>(r.name.size()));
  put16(h, 0);  // extra
  if (central) {
    put16(h, 0);  // comment
    put16(h, 0);  // disk
    put16(h, 0);  // internal attributes
    put32(h, 0);  // external attributes
    put32(h, offset);
  }
  return h + r.name;
}

// Records in order, then the central directory and the end record.
std::string zip(const std::vector<Rec>& recs) {
  std::string body, cd;
  for (const auto& r : recs) {
    cd += header(0x02014b50, r, true, static_cast<uint32_t>(body.size()));
    body += header(0x04034b50, r, false, 0) + r.data;
  }
  std::string end;
  put32(end, 0x06054b50);
  put32(end, 0);
  put16(end, static_cast<uint32_t>(recs.size()));
  put16(end, static_cast<uint32_t>(recs.size()));
  put32(end, static_cast<uint32_t>(cd.size()));
  put32(end, static_cast<uint32_t>(body.size()));
  put16(end, 0);
  return body + cd + end;
}

const std::string kProgram = R"({"graph_module": {"graph": {"nodes": []}}, "schema_version": {"major": 8}})";

std::vector<Rec> valid_records() {
  return {stored("model/archive_format", "pt2"), stored("model/models/model.json", kProgram),
          stored("model/data/weights/weight_0", std::string(64, '\1'))};
}

struct Proc {
  int rc = -1;
  std::string out;
};

Proc sh(const std::string& cmd) {
  Proc r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class CraftedPt2 : public testing::Test {
 protected:
  static fs::path root() {
    return fs::path(testing::TempDir()) / ("hfx_pt2_crafted_" + std::to_string(::getpid()));
  }
  static void SetUpTestSuite() {
    fs::remove_all(root());
    fs::create_directories(root());
    std::string cmd = HFX_CLI;  // appended: see verify() below
    cmd.append(" create-tiny llama --layers 1 -o ").append((root() / "tiny").string());
    Proc p = sh(cmd);
    ASSERT_EQ(p.rc, 0) << p.out;
  }
  static void TearDownTestSuite() { fs::remove_all(root()); }

  // `hfx verify` on a copy of the tiny checkpoint holding `archive` as model.pt2.
  static Proc verify(const std::string& name, const std::string& archive) {
    const fs::path dir = root() / name;
    fs::remove_all(dir);
    fs::copy(root() / "tiny", dir);
    std::ofstream(dir / "model.pt2", std::ios::binary) << archive;
    if (const char* keep = std::getenv("HFX_CRAFTED_PT2_DIR"))  // writes the fuzz seeds
      std::ofstream(fs::path(keep) / ("crafted_" + name + ".pt2"), std::ios::binary) << archive;
    // Appended, not `std::string(HFX_CLI) + " verify " + ...`: GCC 12's -Warray-bounds misreads that
    // concatenation of a literal at -O1 (GCC bug 105329).
    std::string cmd = HFX_CLI;
    cmd.append(" verify ").append(dir.string());
    return sh(cmd);
  }
  static void expect_refused(const std::string& name, const std::string& archive,
                             const std::string& message) {
    Proc p = verify(name, archive);
    EXPECT_NE(p.rc, 0) << p.out;
    EXPECT_NE(p.out.find("model.pt2"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find(message), std::string::npos) << "expected '" << message << "' in:\n" << p.out;
  }
};

TEST_F(CraftedPt2, WellFormedArchivePassesStructure) {
  // The control: the same builder's valid archive is read (its structure check passes).
  Proc p = verify("valid", zip(valid_records()));
  EXPECT_NE(p.out.find("3 records, each read and CRC-checked (program, weights, version)"), std::string::npos)
      << p.out;
}

TEST_F(CraftedPt2, TruncatedCentralDirectoryIsRefused) {
  std::string a = zip(valid_records());
  const size_t cd = a.find("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  a.erase(cd + 10, 30);  // the end record still claims the whole directory
  expect_refused("truncated_cd", a, "expected a zip archive");
}

TEST_F(CraftedPt2, DeclaredZipBombIsRefused) {
  auto recs = valid_records();
  recs.push_back(deflated("model/data/bomb", std::string(1 << 20, '\0'), 4000000000u));
  expect_refused("bomb_declared", zip(recs), "a zip bomb?");
}

TEST_F(CraftedPt2, ActualZipBombIsRefused) {
  // Declares 4 KiB (a plausible ratio for its compressed size) but inflates to 16 MiB.
  auto recs = valid_records();
  recs[1] = deflated("model/models/model.json", std::string(16 << 20, ' '), 4096);
  expect_refused("bomb_actual", zip(recs), "to inflate to its declared 4096 bytes, got more (a zip bomb?)");
}

TEST_F(CraftedPt2, OverlappingRecordsAreRefused) {
  // The first record's declared size runs over the second record's header and data.
  auto recs = valid_records();
  const std::string second_header = header(0x04034b50, recs[1], false, 0);
  recs[0].stored = recs[0].size =
      static_cast<uint32_t>(recs[0].data.size() + second_header.size() + recs[1].data.size());
  expect_refused("overlap", zip(recs), "expected records that do not overlap");
}

TEST_F(CraftedPt2, DotDotNameIsRefused) {
  auto recs = valid_records();
  recs.push_back(stored("model/../../escape.txt", "x"));
  expect_refused("dotdot", zip(recs), "a '..' component climbs out of it");
}

TEST_F(CraftedPt2, AbsoluteNameIsRefused) {
  auto recs = valid_records();
  recs.push_back(stored("/etc/cron.d/escape", "x"));
  expect_refused("absolute", zip(recs),
                 "expected record names relative to the archive, got the absolute path");
}

TEST(ZipReader, RefusalsAreHfxErrors) {
  // The library call behind verify: the same defects surface as hfx::Error("pt2", ...).
  auto recs = valid_records();
  recs.push_back(stored("a/../../b", "x"));
  EXPECT_THROW(hfx::io::ZipReader(zip(recs)), hfx::Error);
  EXPECT_THROW(hfx::io::ZipReader(std::string("PK\x05\x06", 4)), hfx::Error);
  std::string ok = zip(valid_records());
  hfx::io::ZipReader r(ok);
  ASSERT_EQ(r.records().size(), 3u);
  EXPECT_EQ(r.read(1), kProgram);
  EXPECT_EQ(ok.substr(r.records()[1].data_offset, r.records()[1].size), kProgram);
}

}  // namespace
