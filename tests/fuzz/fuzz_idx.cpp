// The IDX loader (Fashion-MNIST's files, gzip-compressed or not). The input holds both files: its first two
// bytes (big-endian) say how many of the rest are the image file; the labels file is what follows.
// Documented outcomes: a dataset whose sizes agree with its files, or a DataError naming one of the files.
#include <string>

#include "ddplab/runtime/data.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t split = std::min<std::size_t>((std::size_t{data[0]} << 8) | data[1], size - 2);
  const std::string images = ddplab::fuzz::write_scratch("images-idx3-ubyte.gz", data + 2, split);
  const std::string labels = ddplab::fuzz::write_scratch("labels-idx1-ubyte.gz", data + 2 + split, size - 2 - split);
  // Either file may be the one named, so the prefix checked is their common folder.
  ddplab::fuzz::expect_clear_error<ddplab::DataError>(ddplab::fuzz::scratch_dir().string(), [&] {
    const ddplab::Dataset d = ddplab::load_idx(images, labels);
    if (d.features < 1) ddplab::fuzz::report("images of no pixels accepted");
    if (d.images.size() != d.size() * static_cast<std::size_t>(d.features))
      ddplab::fuzz::report("images do not match labels x features");
    for (const auto y : d.labels)
      if (y < 0 || y >= d.classes) ddplab::fuzz::report("a label outside the classes");
  });
  return 0;
}
