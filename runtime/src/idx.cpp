// The IDX reader (Fashion-MNIST's format), alone in its file so that the fuzz build (tests/fuzz) compiles it
// without the rest of the runtime.
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "ddplab/runtime/data.hpp"

namespace ddplab {
namespace {

// Whole-file reader over zlib's gz API, which also reads uncompressed files transparently.
std::vector<unsigned char> read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      throw DataError(fmt::format("{}: corrupt or truncated gzip data ({})", path, msg));
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  gzclose(f);
  return out;
}

std::uint32_t be32(const std::vector<unsigned char>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

void need(const std::string& path, const std::vector<unsigned char>& b, std::size_t bytes, const char* what) {
  if (b.size() < bytes)
    throw DataError(fmt::format("{}: truncated: {} needs {} bytes, file has {}", path, what, bytes, b.size()));
}

}  // namespace

Dataset load_idx(const std::string& images_path, const std::string& labels_path) {
  const auto img = read_all(images_path);
  need(images_path, img, 16, "the IDX image header");
  if (be32(img, 0) != 2051)
    throw DataError(fmt::format("{}: not an IDX image file (magic {}, expected 2051)", images_path, be32(img, 0)));
  const std::size_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  // Each size is 32 bits: rows x cols fits 64, and n x pixels is checked by division, never wrapped.
  const std::size_t pixels = rows * cols;
  if (pixels == 0 || pixels > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw DataError(fmt::format("{}: images of {} x {} pixels: expected 1 to {} pixels", images_path, rows, cols,
                                std::numeric_limits<int>::max()));
  if (n > (img.size() - 16) / pixels)
    throw DataError(
        fmt::format("{}: truncated: {} images of {} x {} pixels need {:.0f} bytes of pixel data, file has {}",
                    images_path, n, rows, cols, static_cast<double>(n) * static_cast<double>(pixels), img.size() - 16));

  const auto lab = read_all(labels_path);
  need(labels_path, lab, 8, "the IDX label header");
  if (be32(lab, 0) != 2049)
    throw DataError(fmt::format("{}: not an IDX label file (magic {}, expected 2049)", labels_path, be32(lab, 0)));
  const std::size_t nl = be32(lab, 4);
  if (nl != n) throw DataError(fmt::format("{}: {} labels for {} images in {}", labels_path, nl, n, images_path));
  need(labels_path, lab, 8 + n, "the labels");

  Dataset d;
  d.features = static_cast<int>(pixels);
  d.classes = 10;
  d.images.resize(n * pixels);
  d.labels.resize(n);
  for (std::size_t i = 0; i < n * pixels; ++i) d.images[i] = img[16 + i] / 255.0f;
  for (std::size_t i = 0; i < n; ++i) {
    d.labels[i] = lab[8 + i];
    if (d.labels[i] >= d.classes)
      throw DataError(fmt::format("{}: label {} at index {} is outside 0..9", labels_path, d.labels[i], i));
  }
  return d;
}

}  // namespace ddplab
