// The closed sets (choices.hpp): every value has one name, text becomes a value only through the table, and
// JSON, fmt and streams write the name.
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/choices.hpp"

namespace ddplab {
namespace {

// Each enum's values are 0..N-1 with N table rows: a value left out of the table would print as "?".
template <class E>
void expect_table_complete(std::size_t values) {
  const auto& names = ChoiceNames<E>::names;
  ASSERT_EQ(names.size(), values) << ChoiceNames<E>::what;
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < values; ++i) {
    const E v = static_cast<E>(i);
    const std::string_view name = name_of(v);
    EXPECT_NE(name, "?") << ChoiceNames<E>::what << " value " << i << " has no name";
    EXPECT_TRUE(seen.insert(name).second) << ChoiceNames<E>::what << " name \"" << name << "\" twice";
    EXPECT_EQ(choice_from<E>(name), v) << name;
  }
}

TEST(Choices, EveryValueHasOneNameThatReadsBack) {
  expect_table_complete<ModelType>(4);
  expect_table_complete<GptNorm>(2);
  expect_table_complete<GptActivation>(2);
  expect_table_complete<GptPosition>(2);
  expect_table_complete<Backend>(3);
  expect_table_complete<Transport>(2);
  expect_table_complete<Collective>(6);
  expect_table_complete<RunStatus>(5);
  expect_table_complete<RunSource>(2);
}

TEST(Choices, NamesAreTheOnesScenariosAndStoresUse) {
  EXPECT_EQ(to_string(ModelType::Cnn), "cnn");
  EXPECT_EQ(to_string(Backend::CudaMpi), "cuda+mpi");
  EXPECT_EQ(to_string(Collective::AllGatherShards), "all_gather_shards");
  EXPECT_EQ(to_string(RunStatus::Interrupted), "interrupted");
  EXPECT_EQ(choice_names<Transport>(), "mpi, nccl");
  EXPECT_EQ(transport_of(Backend::Cuda), Transport::Nccl);
  EXPECT_EQ(transport_of(Backend::CudaMpi), Transport::Mpi);
  EXPECT_EQ(transport_of(Backend::Cpu), Transport::Mpi);
  EXPECT_TRUE(resumable(RunStatus::Abandoned));
  EXPECT_FALSE(resumable(RunStatus::Completed));
  EXPECT_FALSE(resumable(RunStatus::Running));
}

TEST(Choices, UnknownTextIsAnInputErrorNamingTheFieldAndTheChoices) {
  EXPECT_FALSE(choice_from<Backend>("CPU").has_value());  // case matters, as in TOML
  try {
    parse_choice<Backend>("gpu", {.field = "--backend"});
    FAIL() << "\"gpu\" was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--backend: backend \"gpu\" is not one of cpu, cuda, cuda+mpi");
    EXPECT_EQ(e.field(), "--backend");
    EXPECT_EQ(e.exit_code(), 2);
  }
  try {
    parse_choice<ModelType>("rnn", InputLocation{"s.toml", 3, 8, "model.type"});
    FAIL() << "\"rnn\" was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "s.toml");
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "model.type");
    EXPECT_NE(std::string(e.what()).find("model type \"rnn\" is not one of mlp, cnn, gpt, table"), std::string::npos)
        << e.what();
  }
}

TEST(Choices, JsonFmtAndStreamsWriteTheName) {
  const nlohmann::json j = {{"status", RunStatus::Failed}, {"collective", Collective::ReduceScatter}};
  EXPECT_EQ(j.dump(), R"({"collective":"reduce_scatter","status":"failed"})");
  EXPECT_EQ(j.at("status").get<RunStatus>(), RunStatus::Failed);
  EXPECT_EQ(j.at("collective").get<Collective>(), Collective::ReduceScatter);
  // A name this version does not know is refused, not read as some other value.
  EXPECT_THROW(nlohmann::json("paused").get<RunStatus>(), InputError);
  EXPECT_EQ(fmt::format("{} on {}", ModelType::Mlp, Backend::Cuda), "mlp on cuda");
  std::ostringstream os;
  os << Transport::Nccl;
  EXPECT_EQ(os.str(), "nccl");
}

}  // namespace
}  // namespace ddplab
