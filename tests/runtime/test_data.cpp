// The Fashion-MNIST loader against known facts of the data set, malformed files, and the sampler.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/partition.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

const char* kDir = "/usr/share/datasets/fashion-mnist";

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string error_of(const std::string& images, const std::string& labels) {
  try {
    load_idx(images, labels);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(FashionMnist, TrainAndTestSetsHaveTheKnownShapeAndFirstLabels) {
  if (!fs::exists(kDir)) GTEST_SKIP() << kDir << " missing: apt-get install dataset-fashion-mnist";
  const Dataset train = load_fashion_mnist(kDir, true);
  const Dataset test = load_fashion_mnist(kDir, false);
  EXPECT_EQ(train.size(), 60000u);
  EXPECT_EQ(test.size(), 10000u);
  EXPECT_EQ(train.features, 784);
  const std::vector<std::int32_t> first_train{9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const std::vector<std::int32_t> first_test{9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  EXPECT_EQ(std::vector<std::int32_t>(train.labels.begin(), train.labels.begin() + 10), first_train);
  EXPECT_EQ(std::vector<std::int32_t>(test.labels.begin(), test.labels.begin() + 10), first_test);
  // Normalised with the training set's own mean and std: the mean is ~0 and the std ~1.
  double sum = 0, sq = 0;
  for (float v : train.images) sum += v, sq += double(v) * v;
  const double mean = sum / train.images.size();
  EXPECT_NEAR(mean, 0.0, 1e-3);
  EXPECT_NEAR(std::sqrt(sq / train.images.size() - mean * mean), 1.0, 2e-3);
  // 6000 images of each class.
  std::vector<int> per_class(10);
  for (auto y : train.labels) per_class[static_cast<std::size_t>(y)]++;
  for (int c : per_class) EXPECT_EQ(c, 6000);
}

TEST(FashionMnist, TruncatedImageFileGivesAClearError) {
  if (!fs::exists(kDir)) GTEST_SKIP() << kDir << " missing";
  TempDir t;
  const std::string header = be32(2051) + be32(100) + be32(28) + be32(28);
  write_gz(t.file("img.gz"), header + std::string(784 * 50, '\1'));
  write_gz(t.file("lab.gz"), be32(2049) + be32(100) + std::string(100, '\1'));
  const std::string msg = error_of(t.file("img.gz"), t.file("lab.gz"));
  EXPECT_NE(msg.find(t.file("img.gz")), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

// Found by fuzzing (tests/fuzz/regressions/idx): images of 0 pixels were accepted as a dataset of no
// features, and sizes whose product passes 2^64 wrapped around the truncation check.
TEST(FashionMnist, ImagesOfNoPixelsOrOfMoreThanTheFileHoldsAreRefused) {
  TempDir t;
  write_gz(t.file("lab.gz"), be32(2049) + be32(3) + std::string(3, '\1'));
  write_gz(t.file("empty.gz"), be32(2051) + be32(3) + be32(0) + be32(28));
  std::string msg = error_of(t.file("empty.gz"), t.file("lab.gz"));
  EXPECT_NE(msg.find(t.file("empty.gz") + ": images of 0 x 28 pixels"), std::string::npos) << msg;
  // 2^8 images of 2^28 x 2^28 pixels: 2^64 bytes, 0 when wrapped.
  write_gz(t.file("huge.gz"), be32(2051) + be32(256) + be32(1u << 28) + be32(1u << 28));
  msg = error_of(t.file("huge.gz"), t.file("lab.gz"));
  EXPECT_NE(msg.find(t.file("huge.gz") + ": images of 268435456 x 268435456 pixels"), std::string::npos) << msg;
  // Just under 2^31 pixels each is allowed, but 3 such images are not in 10 bytes of pixels.
  write_gz(t.file("short.gz"), be32(2051) + be32(3) + be32(46341) + be32(46340) + std::string(10, '\1'));
  msg = error_of(t.file("short.gz"), t.file("lab.gz"));
  EXPECT_NE(msg.find(t.file("short.gz") + ": truncated: 3 images of 46341 x 46340 pixels need 6442325820 bytes"),
            std::string::npos)
      << msg;
}

TEST(FashionMnist, CorruptGzipStreamGivesAClearError) {
  TempDir t;
  // Take a real gzip stream, cut it in half, and flip bytes in the deflate data.
  write_gz(t.file("full.gz"), be32(2051) + be32(10) + be32(28) + be32(28) + std::string(7840, '\7'));
  std::ifstream in(t.file("full.gz"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() / 2);
  for (std::size_t i = 12; i < bytes.size(); i += 3) bytes[i] = static_cast<char>(~bytes[i]);
  std::ofstream(t.file("bad.gz"), std::ios::binary) << bytes;
  write_gz(t.file("lab.gz"), be32(2049) + be32(10) + std::string(10, '\1'));
  const std::string msg = error_of(t.file("bad.gz"), t.file("lab.gz"));
  EXPECT_NE(msg.find(t.file("bad.gz")), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("corrupt") != std::string::npos || msg.find("truncated") != std::string::npos) << msg;
}

TEST(FashionMnist, WrongMagicCountMismatchAndBadLabelsAreNamed) {
  TempDir t;
  const std::string img = be32(2051) + be32(2) + be32(2) + be32(2) + std::string(8, '\0');
  write_gz(t.file("img.gz"), img);
  write_gz(t.file("lab_magic.gz"), be32(2051) + be32(2) + std::string(2, '\0'));
  write_gz(t.file("lab_count.gz"), be32(2049) + be32(3) + std::string(3, '\0'));
  write_gz(t.file("lab_range.gz"), be32(2049) + be32(2) + std::string("\0\x0c", 2));
  EXPECT_NE(error_of(t.file("img.gz"), t.file("lab_magic.gz")).find("magic 2051, expected 2049"), std::string::npos);
  EXPECT_NE(error_of(t.file("img.gz"), t.file("lab_count.gz")).find("3 labels for 2 images"), std::string::npos);
  EXPECT_NE(error_of(t.file("img.gz"), t.file("lab_range.gz")).find("label 12 at index 1"), std::string::npos);
  EXPECT_NE(error_of(t.file("missing.gz"), t.file("lab_range.gz")).find("cannot open"), std::string::npos);
  // Uncompressed IDX files load too.
  std::ofstream(t.file("img.raw"), std::ios::binary) << img;
  std::ofstream(t.file("lab.raw"), std::ios::binary) << be32(2049) + be32(2) + std::string("\3\4", 2);
  const Dataset d = load_idx(t.file("img.raw"), t.file("lab.raw"));
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{3, 4}));
}

TEST(DistributedSampler, RanksAreDisjointCoverEverythingAndPadByWrapping) {
  const std::size_t n = 10;
  const int world = 4;  // 10 is not divisible by 4: 12 slots, 2 samples seen twice
  std::multiset<std::size_t> all;
  for (int r = 0; r < world; ++r) {
    DistributedSampler s(n, r, world, 5);
    const auto idx = s.indices(0);
    EXPECT_EQ(idx.size(), 3u);
    all.insert(idx.begin(), idx.end());
  }
  EXPECT_EQ(all.size(), 12u);
  for (std::size_t i = 0; i < n; ++i) EXPECT_GE(all.count(i), 1u) << i;
  // Same seed and epoch: same order on every call; another epoch reshuffles.
  DistributedSampler s(1000, 1, 2, 5);
  EXPECT_EQ(s.indices(3), s.indices(3));
  EXPECT_NE(s.indices(3), s.indices(4));
  // Without shuffling, rank r takes r, r+world, ...
  DistributedSampler plain(7, 1, 3, 0, false);
  EXPECT_EQ(plain.indices(0), (std::vector<std::size_t>{1, 4, 0}));
}

TEST(Synthetic, IsDeterministicAndLearnable) {
  const Dataset a = make_synthetic(200, 8, 3, 1), b = make_synthetic(200, 8, 3, 1);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  std::set<int> classes(a.labels.begin(), a.labels.end());
  EXPECT_EQ(classes.size(), 3u);
}

// Ten fortunes over two files: the tenth is held out; index files (.dat) and links are not read.
TEST(Fortunes, EveryTenthFortuneIsHeldOutAndLabelsAreTheNextBytes) {
  TempDir dir("ddplab-fortunes");
  std::string a, b;
  for (int i = 0; i < 6; ++i) a += "fortune " + std::to_string(i) + "\n%\n";
  for (int i = 6; i < 10; ++i) b += "fortune " + std::to_string(i) + "\nsecond line\n%\n";
  dir.write("a", a);
  dir.write("b", b);
  dir.write("a.dat", std::string(64, '\x01'));
  fs::create_symlink(dir.file("a"), dir.file("a.u8"));
  const Dataset val = load_fortunes(dir.path().string(), 4, false);
  // The held-out set is fortune 9 followed by "%\n": 29 bytes, so 7 sequences of 4 with their next bytes.
  const std::string held = "fortune 9\nsecond line\n%\n";
  ASSERT_EQ(val.size(), (held.size() - 1) / 4);
  EXPECT_EQ(val.features, 4);
  EXPECT_EQ(val.labels_per_sample, 4);
  EXPECT_EQ(val.classes, 256);
  for (std::size_t i = 0; i < val.images.size(); ++i) {
    EXPECT_EQ(val.images[i], static_cast<float>(held[i])) << i;
    EXPECT_EQ(val.labels[i], held[i + 1]) << i;
  }
  const Dataset train = load_fortunes(dir.path().string(), 4, true);
  std::string rest;
  for (int i = 0; i < 9; ++i) rest += "fortune " + std::to_string(i) + (i >= 6 ? "\nsecond line\n%\n" : "\n%\n");
  EXPECT_EQ(train.size(), (rest.size() - 1) / 4);
  // A rank's histogram counts every token of its sequences: 2 ranks of ceil(n / 2) (padded by wrapping).
  DataConfig iid;
  std::size_t tokens = 0;
  for (const auto& h : class_histograms(train, iid, 2, 1))
    tokens += std::accumulate(h.begin(), h.end(), std::size_t{0});
  EXPECT_EQ(tokens, 2 * ((train.size() + 1) / 2) * 4);
}

TEST(Fortunes, AFolderWithoutFortunesIsNamed) {
  TempDir dir("ddplab-fortunes");
  try {
    load_fortunes(dir.path().string(), 8, true);
    FAIL() << "an empty folder gave a data set";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.path().string() + ": no fortune files", 0), 0u) << e.what();
  }
  dir.write("short", "ab\n");
  try {
    load_fortunes(dir.path().string(), 8, true);
    FAIL() << "3 bytes gave a sequence of 8";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("less than one sequence of 8 tokens"), std::string::npos) << e.what();
  }
}

TEST(Fortunes, DebiansPackageGivesTheDocumentedSplit) {
  if (!fs::exists(kFortunesPath)) GTEST_SKIP() << kFortunesPath << " missing: apt-get install fortunes";
  EXPECT_EQ(load_fortunes(kFortunesPath, 128, true).size(), 18078u);
  EXPECT_EQ(load_fortunes(kFortunesPath, 128, false).size(), 2052u);
}

}  // namespace
}  // namespace ddplab
