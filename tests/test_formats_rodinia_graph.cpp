// Rodinia's BFS graph files (datasets/rodinia_graph): what a good file reads as (as Rodinia's
// fscanf reads it), what is read leniently, and a clear "FILE:LINE:COLUMN: ..." input_error for
// every file Rodinia would misread.
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "datasets/rodinia_graph.hpp"

namespace {

namespace fs = std::filesystem;
using namespace soac;
using namespace soac::datasets;

class RodiniaGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("soac_rodinia_graph_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& bytes) {
    const auto p = dir_ / "graph.txt";
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  // The input_error a file gives, which must name the file.
  std::string error_of(const std::string& bytes) {
    const auto p = write(bytes);
    try {
      read_rodinia_graph(p);
    } catch (const input_error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(p.string() + ":", 0), 0u) << m;
      return m.substr(p.string().size());
    }
    ADD_FAILURE() << "no input_error for:\n" << bytes;
    return {};
  }
  fs::path dir_;
};

// Three nodes in Rodinia's layout: 0 -> 1, 2; 1 -> 0; 2 -> (none).
const std::string good = "3\n0 2\n2 1\n3 0\n\n0\n\n3\n1 1\n2 5\n0 7\n";

TEST_F(RodiniaGraph, ReadsRodiniasLayout) {
  const auto g = read_rodinia_graph(write(good));
  EXPECT_EQ(g.start, (std::vector<std::int32_t>{0, 2, 3}));
  EXPECT_EQ(g.degree, (std::vector<std::int32_t>{2, 1, 0}));
  EXPECT_EQ(g.edges, (std::vector<std::int32_t>{1, 2, 0}));
  EXPECT_EQ(g.source, 0);
}

TEST_F(RodiniaGraph, NumbersMaySitOnAnyLinesAndRangesMayOverlap) {
  // Any whitespace between numbers; node 1 shares node 0's edges; the source is node 2.
  const auto g = read_rodinia_graph(write("  2 0\t2\r\n\n0\n2 1 2\n1 9 0 0"));
  EXPECT_EQ(g.start, (std::vector<std::int32_t>{0, 0}));
  EXPECT_EQ(g.degree, (std::vector<std::int32_t>{2, 2}));
  EXPECT_EQ(g.source, 1);
  EXPECT_EQ(g.edges, (std::vector<std::int32_t>{1, 0}));
}

TEST_F(RodiniaGraph, WriterRoundTripsInGraphgensLayout) {
  rodinia_graph g;
  g.start = {0, 2, 3};
  g.degree = {2, 1, 0};
  g.edges = {1, 2, 0};
  write_rodinia_graph(dir_ / "out.txt", g, std::vector<std::int32_t>{1, 5, 7});
  std::ifstream in(dir_ / "out.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), good);
  const auto back = read_rodinia_graph(dir_ / "out.txt");
  EXPECT_EQ(back.start, g.start);
  EXPECT_EQ(back.degree, g.degree);
  EXPECT_EQ(back.edges, g.edges);
  EXPECT_THROW(write_rodinia_graph(dir_ / "bad.txt", g, std::vector<std::int32_t>{1}), usage_error);
}

TEST_F(RodiniaGraph, CostsTextIsRodiniasResultFile) {
  EXPECT_EQ(rodinia_costs_text(std::vector<std::int32_t>{0, 2, -1}), "0) cost:0\n1) cost:2\n2) cost:-1\n");
}

TEST_F(RodiniaGraph, NodeCountBeyondTheLinesThatFollow) {
  // Node 3's pair is taken from the source and the edge count, and so on: the counts disagree.
  const auto m = error_of("4\n0 2\n2 1\n3 0\n\n0\n\n3\n1 1\n2 5\n0 7\n");
  EXPECT_NE(m.find(":3:1: node 1's edges (start 2, degree 1) reach edge 3, beyond the edge count 1 (4 numbers follow"), std::string::npos)
      << m;
  EXPECT_NE(m.find("the node count (4, line 1) or the edge count disagrees with the lines that follow"), std::string::npos)
      << m;
}

TEST_F(RodiniaGraph, NodeCountShortOfTheLinesThatFollow) {
  const auto m = error_of("2\n0 2\n2 1\n3 0\n\n0\n\n3\n1 1\n2 5\n0 7\n");
  // The third pair is taken for the source and the edge count, which then disagrees.
  EXPECT_NE(m.find(":4:1: the source node is 3, outside [0, 1] (8 numbers follow the edge count, not 2 x 0"), std::string::npos) << m;
  EXPECT_NE(m.find("the node count (2, line 1) or the edge count disagrees"), std::string::npos) << m;
}

TEST_F(RodiniaGraph, EdgeCountBeyondTheEdgesThatFollow) {
  const auto m = error_of("3\n0 2\n2 1\n3 0\n\n0\n\n4\n1 1\n2 5\n0 7\n");
  EXPECT_NE(m.find(":8:1: the edge count is 4, so 8 numbers"), std::string::npos) << m;
  EXPECT_NE(m.find("but only 6 do"), std::string::npos) << m;
}

// Rodinia reads N, the nodes, the source, E and E edges, and stops: what follows is not read.
TEST_F(RodiniaGraph, WhatFollowsTheLastEdgeIsReadLeniently) {
  const auto p = write(good + "2 2\n# a comment Rodinia never reads\n");
  leniency lenient;
  const auto g = read_rodinia_graph(p, lenient);
  EXPECT_EQ(g.edges, (std::vector<std::int32_t>{1, 2, 0}));
  EXPECT_EQ(lenient.count(), 1);
  EXPECT_NE(lenient.first().find(p.string() + ":12:1: what follows the 3 edges is not read"), std::string::npos) << lenient.first();
  leniency strict(true, "Rodinia's bfs");
  try {
    read_rodinia_graph(p, strict);
    ADD_FAILURE() << "strict reading took the surplus";
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("strict=1"), std::string::npos) << e.what();
  }
}

// fscanf's %d reads a number's digits and leaves the rest to the next read: "7x" at the very end
// is 7 (the x is never read); "5-3" is two numbers.
TEST_F(RodiniaGraph, NumbersAreReadAsFscanfReadsThem) {
  leniency lenient;
  const auto g = read_rodinia_graph(write("3\n0 2\n2 1\n3 0\n\n+0\n\n3\n1 1\n2-5\n0 7x\n"), lenient);
  EXPECT_EQ(g.edges, (std::vector<std::int32_t>{1, 2, 0}));
  EXPECT_EQ(lenient.count(), 1);  // the x
}

TEST_F(RodiniaGraph, TooFewNumbersForTheNodeCountFailsBeforeAllocating) {
  // A count far beyond what the file can hold is an error at the count, not an allocation.
  const auto m = error_of("2000000000\n0 1\n");
  EXPECT_NE(m.find(":1:1: the node count is 2000000000"), std::string::npos) << m;
  EXPECT_NE(m.find("holds only 2"), std::string::npos) << m;
}

TEST_F(RodiniaGraph, EdgeToANodeThatDoesNotExist) {
  const auto m = error_of("3\n0 2\n2 1\n3 0\n\n0\n\n3\n1 1\n3 5\n0 7\n");
  EXPECT_NE(m.find(":10:1: an edge's destination node is 3, outside [0, 2]"), std::string::npos) << m;
}

TEST_F(RodiniaGraph, StartPlusDegreeBeyondTheEdgeCount) {
  const auto m = error_of("3\n0 2\n2 2\n3 0\n\n0\n\n3\n1 1\n2 5\n0 7\n");
  EXPECT_NE(m.find(":3:1: node 1's edges (start 2, degree 2) reach edge 4, beyond the edge count 3"), std::string::npos)
      << m;
}

TEST_F(RodiniaGraph, SourceOutOfRange) {
  const auto m = error_of("3\n0 2\n2 1\n3 0\n\n3\n\n3\n1 1\n2 5\n0 7\n");
  EXPECT_NE(m.find(":6:1: the source node is 3, outside [0, 2]"), std::string::npos) << m;
}

TEST_F(RodiniaGraph, NegativeNumbers) {
  auto m = error_of("3\n0 2\n2 -1\n3 0\n\n0\n\n3\n1 1\n2 5\n0 7\n");
  EXPECT_NE(m.find(":3:3: a node's edge count (degree) is -1, outside [0, "), std::string::npos) << m;
  // The weight is read and ignored: any integer.
  EXPECT_EQ(read_rodinia_graph(write("3\n0 2\n2 1\n3 0\n\n0\n\n3\n1 1\n2 -5\n0 7\n")).edges, (std::vector<std::int32_t>{1, 2, 0}));
  m = error_of("-3\n0 2\n");
  EXPECT_NE(m.find(":1:1: the node count is -3, outside [1, "), std::string::npos) << m;
}

// A word where a number is needed: Rodinia's fscanf would fail there and at every later read,
// leaving the rest of the graph unset.
TEST_F(RodiniaGraph, NonNumericToken) {
  auto m = error_of("3\n0 2\n2 1\n3 0\n\n0\n\n3\n1 1\n2 five\n0 7\n");
  EXPECT_NE(m.find("but only 3 do before 10:3, where fscanf stops at 'five'"), std::string::npos) << m;
  m = error_of("3\n0 2\n2 1x\n3 0\n\n0\n\n3\n1 1\n2 5\n0 7\n");
  EXPECT_NE(m.find("holds only 4 before 3:4, where fscanf stops at 'x'"), std::string::npos) << m;
}

TEST_F(RodiniaGraph, CostsFileReadsBack) {
  const auto p = dir_ / "result.txt";
  std::ofstream(p, std::ios::binary) << "0) cost:0\r\n1) cost:2\n2) cost:-1\n\n";
  EXPECT_EQ(read_rodinia_costs(p), (std::vector<std::int32_t>{0, 2, -1}));
  std::ofstream(p, std::ios::binary) << "0) cost:0\n2) cost:2\n";
  EXPECT_THROW(read_rodinia_costs(p), input_error);
  std::ofstream(p, std::ios::binary) << "0) cost:0\n1) cost 2\n";
  try {
    read_rodinia_costs(p);
    ADD_FAILURE();
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string() + ":2:2: expected \") cost:\""), std::string::npos) << e.what();
  }
}

TEST_F(RodiniaGraph, EmptyOrMissingFile) {
  EXPECT_NE(error_of("").find(":1:1: expected the node count, but the file ends"), std::string::npos);
  EXPECT_NE(error_of("0\n0\n0\n").find(":1:1: the node count is 0, outside [1, "), std::string::npos);
  EXPECT_THROW(read_rodinia_graph(dir_ / "missing.txt"), input_error);
}

}  // namespace
