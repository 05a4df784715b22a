// Ops::release on the host backends: the whole pages inside the range go back to the system (mincore sees
// them gone) and read as zero; the partial pages at its ends, which other data may share, keep their values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <vector>

#include "ddplab/runtime/ops.hpp"
#include "resident_pages.hpp"

namespace ddplab {
namespace {

TEST(Release, HostBackendsGiveBackTheWholePagesInside) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / sizeof(float);  // floats per page
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    auto ops = make_ops(backend);
    ASSERT_TRUE(ops->can_release());
    const std::size_t n = 64 * page;
    float* p = ops->alloc(n);
    std::vector<float> ones(n, 1.0f);
    ops->to_device(p, ones.data(), n);
    // From the middle of p's second page to the middle of its twelfth (p need not start a page).
    const std::size_t from = page + page / 2, to = 11 * page + page / 2;
    const std::uintptr_t pg = page * sizeof(float);
    const auto first = (reinterpret_cast<std::uintptr_t>(p + from) + pg - 1) / pg * pg;
    const auto last = reinterpret_cast<std::uintptr_t>(p + to) / pg * pg;
    EXPECT_EQ(ops->release(p + from, to - from), last - first);
    EXPECT_GE(last - first, 9 * pg);

    // Before anything reads them: a read maps the zero page, which mincore counts as resident.
    const std::vector<bool> in = test::resident_pages(p, n * sizeof(float));
    const auto base = reinterpret_cast<std::uintptr_t>(p) / pg * pg;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const std::uintptr_t at = base + k * pg;
      EXPECT_EQ(in[k], !(at >= first && at < last)) << "page " << k;
    }
    std::vector<float> back(n);
    ops->to_host(back.data(), p, n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto at = reinterpret_cast<std::uintptr_t>(p + i);
      ASSERT_EQ(back[i], at >= first && at < last ? 0.0f : 1.0f) << "element " << i;
    }
    // Written again, the pages are taken back.
    ops->to_device(p, ones.data(), n);
    for (bool r : test::resident_pages(p, n * sizeof(float))) EXPECT_TRUE(r);
    // A range inside one page gives nothing back.
    EXPECT_EQ(ops->release(p + 3 * page + 1, page / 2), 0u);
    ops->free(p);
  }
}

}  // namespace
}  // namespace ddplab
