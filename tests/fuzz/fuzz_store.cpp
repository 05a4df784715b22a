// The results store's opener and readers, as `report`, `runs` and the GUI use them, on any file: opened
// read-only (a viewer: no migration, another version refused) and then for writing (migrated from its
// version), with every table read back. Documented outcome: the rows, or a StoreError naming the file.
#include <filesystem>
#include <string>

#include "ddplab/core/step_totals.hpp"
#include "ddplab/core/store.hpp"
#include "fuzz_check.hpp"

namespace {

void read_everything(const ddplab::Store& store) {
  for (const auto& run : store.runs()) {
    (void)store.steps(run.id);
    (void)store.evaluations(run.id);
    (void)store.resources(run.id);
    (void)store.totals(run.id);
    (void)store.summary(run.id, 1);
    (void)store.checkpoints(run.id);
    (void)store.flight(run.id);
  }
  (void)store.summaries();
  for (const auto run : store.traced_runs()) (void)store.trace_events(run);
  for (const auto& bench : store.benches()) (void)store.bench_rows(bench.id);
  for (const auto& cal : store.calibrations()) (void)store.pingpong_rows(cal.id);
  (void)store.validations();
  (void)store.predictions();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = (ddplab::fuzz::scratch_dir() / "store.db").string();
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix);
  ddplab::fuzz::write_scratch("store.db", data, size);
  ddplab::fuzz::expect_clear_error<ddplab::StoreError>(path, [&] {
    const ddplab::Store store(path, ddplab::Store::Access::ReadOnly);
    read_everything(store);
  });
  ddplab::fuzz::expect_clear_error<ddplab::StoreError>(path, [&] {
    const ddplab::Store store(path);
    read_everything(store);
  });
  return 0;
}
