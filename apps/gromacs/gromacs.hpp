// The gromacs app's data and entry points that tests call besides the app interface: loop inl1100
// of 435.gromacs (SC20 section V-C) on soac::hist, its inputs, their checks and the generator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/context.hpp"
#include "datasets/bundle.hpp"

namespace soac::apps::gromacs {

// The inputs of one run of loop inl1100: P particles (pos[3P], charge[P], type[P]), the
// Lennard-Jones table nbfp[2 * ntype * ntype] (c6, c12 per type pair), facel, the shift vectors
// shiftvec[3 * nshift], and nri neighbour lists: list n is particle iinr[n] shifted by
// shiftvec[3 * shift[n]..], energy group gid[n] (< energy_groups), neighbours
// jjnr[jindex[n] .. jindex[n + 1]). The loop adds the forces into faction[3P], which starts from
// the dataset's faction where it has one (the original loop's faction is an input too), else 0.
struct inl1100_data {
  int ntype = 0, energy_groups = 0;
  float facel = 0;
  std::vector<float> pos, charge, nbfp, shiftvec, faction;
  std::vector<std::int32_t> type, iinr, shift, gid, jindex, jjnr;

  std::int64_t particles() const { return std::int64_t(charge.size()); }
  std::int64_t lists() const { return std::int64_t(iinr.size()); }
  std::int64_t pairs() const { return std::int64_t(jjnr.size()); }
  int shifts() const { return int(shiftvec.size() / 3); }
};

// What the loop produces: faction[3P], fshift[3 * nshift], Vc and Vnb[energy_groups].
struct inl1100_output {
  std::vector<float> faction, fshift, Vc, Vnb;
};

// Checks every length against P (the length of charge), ntype (from nbfp's length), nshift and
// energy_groups, and every index against its table: iinr and jjnr below P, type below ntype,
// shift below nshift, gid below energy_groups, jindex starting at 0, never decreasing and ending
// at the length of jjnr; floats finite, faction empty or 3P. input_error naming where the array
// came from (`source`), the position and the problem; nothing runs before this passed.
struct inl1100_source {
  std::filesystem::path path;  // a bundle's folder, or a Futhark data file
  bool futhark = false;
  std::string of(const char* array) const;  // "DIR/jjnr.npy", "FILE: jjnr (value 3)"
};
void check_inl1100(const inl1100_data& d, const inl1100_source& source);

// Reads a dataset bundle (arrays pos, charge, type, nbfp, facel[1], shiftvec, iinr, shift, gid,
// jindex, jjnr, energy_groups[1], and optionally faction) and checks it.
inl1100_data read_inl1100(const datasets::bundle& in);
void write_inl1100(datasets::bundle_writer& out, const inl1100_data& d);

// The SC20 artifact's inputs (benchmarks/435.gromacs/data/*.in): a Futhark data file of the 12
// arguments of `entry main` in gromacs-inl1100-hdw.fut, read as that program reads them: jindex
// [nri + 1], iinr [nri], jjnr (its first jindex[nri] entries; a capture holds more), shift [nri],
// types [P], ntype, facel, shiftvec (its whole triples; a capture pads it), pos [3P], faction [3P]
// (the forces are added to it), charge [P], nbfp (its first 2 ntype^2 values). One energy group.
// `unread` gets a line on what the capture holds beyond what the program reads ("" if nothing).
inl1100_data read_inl1100_futhark(const std::filesystem::path& path, std::string* unread = nullptr);
// The same file for a dataset (its energy groups dropped: the Futhark program has none).
void write_inl1100_futhark(const std::filesystem::path& path, const inl1100_data& d);

// The generator (see the app's presets for the parameters): a periodic box of particles at the
// given density (a jittered lattice, so no two are closer than 0.7 lattice spacings), a few atom
// types whose charges sum to zero, cut-off neighbour lists found with cell lists, one list per
// particle and shift, split to about the wanted number of lists.
inl1100_data generate_inl1100(const nlohmann::json& params, std::uint64_t seed);
// The generator's parameters checked as generate_inl1100 checks them (usage_error).
void check_generator_params(const nlohmann::json& params);

// Runs `variant` (hdw, cas, baseline-hdw or baseline-cas, each NAME[,hist settings]) on ctx.
inl1100_output run_inl1100(context& ctx, const inl1100_data& d, const std::string& variant);

}  // namespace soac::apps::gromacs
