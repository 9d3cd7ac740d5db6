// The gromacs app (loop inl1100): every variant against the sequential reference on both
// backends, the generator's shape, and the malformed inputs the issue lists.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "apps/gromacs/gromacs.hpp"
#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "tests/app_fixture.hpp"
#include "validate/gromacs.hpp"

namespace soac {
namespace {

using apps::gromacs::inl1100_data;
using testing::error_of;

class GromacsApp : public testing::app_test {
 protected:
  // A tiny dataset, changed by `edit`, written as a bundle at path(name).
  std::filesystem::path edited(const std::function<void(inl1100_data&)>& edit, const std::string& name = "edited") {
    const auto original = gen("gromacs", "tiny", "original");
    inl1100_data d = apps::gromacs::read_inl1100(datasets::bundle::open(original));
    edit(d);
    datasets::bundle_writer out(path(name), "dataset", "gromacs");
    apps::gromacs::write_inl1100(out, d);
    out.params() = datasets::bundle::open(original).params();  // the generated dataset's, edited
    out.finish();
    return path(name);
  }
  std::string run_error(const std::filesystem::path& data) {
    return error_of<input_error>([&] { run("gromacs", {data}, "hdw"); });
  }
};

TEST_P(GromacsApp, VariantsMatchTheReference) {
  for (const char* v : {"hdw", "cas", "hdw,strategy=auto", "cas,strategy=auto", "cas,M=1", "hdw,strategy=shared,S=3"}) {
    SCOPED_TRACE(v);
    round_trip("gromacs", "tiny", v);
  }
}

TEST_P(GromacsApp, SmallPresetMatchesTheReference) { round_trip("gromacs", "small", "cas"); }

TEST_P(GromacsApp, BaselinesMatchTheReferenceOnCuda) {
  for (const char* v : {"baseline-hdw", "baseline-cas"}) {
    SCOPED_TRACE(v);
    if (ctx().is_cuda()) {
      round_trip("gromacs", "tiny", v);
    } else {
      const auto data = gen("gromacs", "tiny", "data");
      EXPECT_NE(error_of<usage_error>([&] { run("gromacs", {data}, v); }).find("--backend cuda"), std::string::npos);
    }
  }
}

TEST_P(GromacsApp, ValidatorRejectsAWrongForce) {
  const auto data = gen("gromacs", "tiny", "data");
  const auto result = path("result");
  run("gromacs", {data}, "hdw", {}, "", result);
  ASSERT_TRUE(validate("gromacs", {data}, result).ok);
  // One coordinate of one force off by a thousandth of its own size (far above the rounding bound).
  auto res = datasets::bundle::open(result);
  auto faction = res.read<float>("faction");
  std::size_t largest = 0;
  for (std::size_t k = 0; k < faction.size(); ++k)
    if (std::fabs(faction[k]) > std::fabs(faction[largest])) largest = k;
  faction[largest] *= 1.001f;
  datasets::bundle_writer out(path("wrong"), "result", "gromacs");
  out.add<float>("faction", faction);
  for (const char* name : {"fshift", "Vc", "Vnb"}) out.add<float>(name, res.read<float>(name));
  out.finish();
  const auto report = validate("gromacs", {data}, path("wrong"));
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("faction[" + std::to_string(largest / 3) + "]"), std::string::npos) << report.summary;
}

TEST_P(GromacsApp, RejectsIndexesBeyondTheirTables) {
  EXPECT_NE(run_error(edited([](auto& d) { d.jjnr[5] = std::int32_t(d.particles()); })).find("jjnr[5] = 300 is outside [0, 300)"),
            std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.jjnr[7] = -1; })).find("jjnr[7] = -1"), std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.iinr[3] = 1000; })).find("iinr[3] = 1000"), std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.type[11] = d.ntype; })).find("type[11] = 3 is outside [0, 3)"), std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.shift[2] = 27; })).find("shift[2] = 27"), std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.gid[4] = d.energy_groups; })).find("gid[4] = 2"), std::string::npos);
}

TEST_P(GromacsApp, RejectsBadJindex) {
  const std::string descending = run_error(edited([](auto& d) { std::swap(d.jindex[10], d.jindex[11]); }));
  EXPECT_NE(descending.find("jindex.npy: jindex[11]"), std::string::npos) << descending;
  EXPECT_NE(descending.find("must not decrease"), std::string::npos) << descending;
  const std::string short_end = run_error(edited([](auto& d) { d.jjnr.push_back(0); }));
  EXPECT_NE(short_end.find("but jjnr holds"), std::string::npos) << short_end;
  EXPECT_NE(run_error(edited([](auto& d) { d.jindex[0] = 1; })).find("jindex[0] = 1, expected 0"), std::string::npos);
}

TEST_P(GromacsApp, RejectsTruncatedArrays) {
  EXPECT_NE(run_error(edited([](auto& d) { d.pos.pop_back(); })).find("pos.npy: holds 899 values, expected 900"),
            std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.gid.pop_back(); })).find("gid.npy: holds"), std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.nbfp.pop_back(); })).find("not 2 * ntype^2"), std::string::npos);
  EXPECT_NE(run_error(edited([](auto& d) { d.pos[4] = NAN; })).find("pos[4] is not a finite number"), std::string::npos);
  // A file cut short on disk: the bundle reader names it.
  const auto data = gen("gromacs", "tiny", "cut");
  const auto jjnr = datasets::bundle::open(data).path_of("jjnr");
  std::filesystem::resize_file(jjnr, std::filesystem::file_size(jjnr) - 6);
  EXPECT_NE(run_error(data).find("jjnr.npy"), std::string::npos);
}

// The SC20 artifact's capture, as its Futhark program reads it: jjnr longer than the lists, shiftvec
// padded past its last whole vector, nbfp beyond 2 ntype^2, forces added into the given faction.
// A capture-shaped file made from the tiny preset: run, validate and compare with the output the
// Futhark program would give (the reference, in float).
TEST_P(GromacsApp, FutharkCaptureOfTheArtifact) {
  using datasets::futhark_value;
  using datasets::make_futhark_scalar;
  using datasets::make_futhark_value;
  inl1100_data d = apps::gromacs::read_inl1100(datasets::bundle::open(gen("gromacs", "tiny", "original")));
  std::vector<float> faction(d.pos.size());
  for (std::size_t k = 0; k < faction.size(); ++k) faction[k] = 0.25f * float(k % 7) - 0.5f;
  auto i32 = [](std::vector<std::int32_t> a) { return make_futhark_value<std::int32_t>({std::int64_t(a.size())}, a); };
  auto f32 = [](std::vector<float> a) { return make_futhark_value<float>({std::int64_t(a.size())}, a); };
  auto jjnr = d.jjnr;
  auto shiftvec = d.shiftvec, nbfp = d.nbfp;
  jjnr.insert(jjnr.end(), {1, 2, 3, 4, 5});
  shiftvec.insert(shiftvec.end(), {9.f, 9.f});
  nbfp.insert(nbfp.end(), {7.f, 7.f, 7.f});
  const std::vector<futhark_value> values = {i32(d.jindex), i32(d.iinr), i32(jjnr), i32(d.shift), i32(d.type),
                                             make_futhark_scalar<std::int32_t>(d.ntype), make_futhark_scalar<float>(d.facel),
                                             f32(shiftvec), f32(d.pos), f32(faction), f32(d.charge), f32(nbfp)};
  // The artifact's file is text for the index arrays and binary for the rest.
  const std::vector<futhark_value> text(values.begin(), values.begin() + 7), binary(values.begin() + 7, values.end());
  const auto file = path("all-tiny.in");
  {
    std::ofstream out(file, std::ios::binary);
    out << datasets::futhark_values_text(text) << datasets::futhark_values_binary(binary);
  }
  const std::string summary = run("gromacs", {file}, "hdw", {}, "futhark", path("out"));
  EXPECT_NE(summary.find("not read, as the Futhark program reads none of them: 5 of jjnr's values past the last list, 3 of nbfp's "
                         "values past 2 ntype^2, 2 of shiftvec's values past its last whole vector"),
            std::string::npos)
      << summary;
  const auto report = validate("gromacs", {file}, path("out"), "futhark");
  EXPECT_TRUE(report.ok) << report.summary;
  // The forces were added to faction: the result less it is the bundle's run.
  run("gromacs", {path("original")}, "hdw", {}, "", path("plain"));
  const auto with = datasets::bundle::open(path("out")).read<float>("faction");
  const auto without = datasets::bundle::open(path("plain")).read<float>("faction");
  for (std::size_t k = 0; k < with.size(); k += 37) EXPECT_NEAR(with[k] - faction[k], without[k], 1e-3 * (1 + std::fabs(without[k]))) << k;

  // The program's output file: its faction, here the double reference rounded to float.
  d.faction = faction;
  const auto ref = validate::inl1100_reference({d.pos, d.charge, d.nbfp, d.shiftvec, d.faction, d.type, d.iinr, d.shift, d.gid,
                                                d.jindex, d.jjnr, d.ntype, d.energy_groups, d.facel});
  std::vector<float> expected(ref.faction.begin(), ref.faction.end());
  const auto out_file = path("all-tiny.out");
  datasets::write_futhark_values(out_file, std::vector<futhark_value>{f32(expected)});
  const auto same = compare("gromacs", path("out"), out_file);
  EXPECT_TRUE(same.ok) << same.summary;
  EXPECT_NE(same.summary.find("every one of the 300 particles' forces within twice the float bound"), std::string::npos) << same.summary;
  expected[3 * 17 + 1] += 1e-2f * (1 + std::fabs(expected[3 * 17 + 1]));
  datasets::write_futhark_values(out_file, std::vector<futhark_value>{f32(expected)});
  const auto off = compare("gromacs", path("out"), out_file);
  EXPECT_FALSE(off.ok);
  EXPECT_NE(off.summary.find("the largest, particle 17"), std::string::npos) << off.summary;

  // A file of another program: the count of values is named.
  datasets::write_futhark_values(path("eleven.in"), std::span(values).first(11));
  EXPECT_NE(error_of<input_error>([&] { run("gromacs", {path("eleven.in")}, "hdw", {}, "futhark"); })
                .find("holds 11 values, not the 12 arguments of gromacs-inl1100-hdw.fut's entry main"),
            std::string::npos);
  // gen writes the same form, which the run reads back to the bundle's forces.
  gen("gromacs", "tiny", "gen.in", {}, "futhark");
  run("gromacs", {path("gen.in")}, "hdw", {}, "futhark", path("gen-out"));
  EXPECT_EQ(datasets::bundle::open(path("gen-out")).read<float>("faction").size(), without.size());
}

SOAC_INSTANTIATE_APP_BACKENDS(GromacsApp);

// The generator (backend-independent): sizes near the preset's, every listed pair within the
// cut-off once, charges summing to zero, deterministic.
TEST(GromacsGenerator, ListsHaveThePresetShape) {
  const auto& app = apps::find_app("gromacs");
  const auto params = app.resolve_params("small", {});
  const inl1100_data d = apps::gromacs::generate_inl1100(params, 7);
  apps::gromacs::check_inl1100(d, {"generated"});
  EXPECT_EQ(d.particles(), 4000);
  EXPECT_NEAR(double(d.pairs()), 238000.0, 238000.0 * 0.05);
  EXPECT_NEAR(double(d.lists()), 9000.0, 9000.0 * 0.05);  // lists split to reach it
  double charge = 0;
  for (float q : d.charge) charge += q;
  EXPECT_NEAR(charge, 0.0, 1e-3);
  const double box = d.shiftvec[3 * 14];  // shift (+1, 0, 0)
  const double rc = std::cbrt(3.0 * (2.0 * 238000 / 4000) / (4.0 * 3.14159265358979 * 100.0));
  std::set<std::pair<int, int>> seen;
  double closest = 1e9;
  for (std::size_t n = 0; n < d.iinr.size(); ++n)
    for (int k = d.jindex[n]; k < d.jindex[n + 1]; ++k) {
      const int i = d.iinr[n], j = d.jjnr[std::size_t(k)];
      ASSERT_LT(i, j);
      ASSERT_TRUE(seen.insert({i, j}).second) << "pair " << i << "," << j << " listed twice";
      double rsq = 0;
      for (int c = 0; c < 3; ++c) {
        const double dd = double(d.shiftvec[3 * d.shift[n] + c]) + d.pos[3 * i + c] - d.pos[3 * j + c];
        rsq += dd * dd;
      }
      ASSERT_LT(std::sqrt(rsq), rc * 1.0001);
      closest = std::min(closest, std::sqrt(rsq));
    }
  EXPECT_GT(closest, 0.69 * box / 16);  // 16 lattice sites per side for 4000 particles
  const inl1100_data again = apps::gromacs::generate_inl1100(params, 7);
  EXPECT_EQ(again.jjnr, d.jjnr);
  EXPECT_EQ(again.pos, d.pos);
}

TEST(GromacsGenerator, RejectsACutoffBeyondHalfTheBox) {
  const auto& app = apps::find_app("gromacs");
  const auto params = app.resolve_params("tiny", {{"pairs", "40000"}});
  EXPECT_NE(error_of<usage_error>([&] { apps::gromacs::generate_inl1100(params, 1); }).find("half the box"), std::string::npos);
}

}  // namespace
}  // namespace soac
