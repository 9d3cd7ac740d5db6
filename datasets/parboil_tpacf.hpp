// Parboil tpacf's files: points on the sky as text lines "ra dec" (degrees; Parboil reads them with
// fscanf("%f %f"), so single precision), one data file and R random files, and the result file.
//
// A Parboil dataset folder holds Datapnts.1 and Randompnts.1 .. Randompnts.R; the original program
// reads the first `points` lines of each (-p) from R random files (-n). Its result file holds, for
// bins 1 .. 20, three lines each: the DD, DR and RR counts as integers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <span>
#include <string>
#include <vector>

#include "datasets/lenient.hpp"

namespace soac::datasets {

struct sky_points {
  std::vector<float> ra, dec;  // degrees
  std::size_t size() const { return ra.size(); }
};

// Reads `count` points (0: every point fscanf reads) as Parboil's readdatafile does: fscanf("%f
// %f") pairs, any whitespace between the numbers (a point need not be a line), each number the
// longest prefix that reads as a float; reading stops at the first pair fscanf cannot read, and
// what follows the `count` points is not read. input_error "FILE:LINE:COLUMN: ..." for fewer than
// `count` points (Parboil refuses the file then), none, or a coordinate that is not finite;
// `whose_count` says where the count came from in that error ("of the data file X"). With count
// 0, a stop before the end is counted in `lenient` (refused when it is strict).
sky_points read_parboil_points(const std::filesystem::path& path, std::int64_t count, std::string_view whose_count,
                               leniency& lenient);
sky_points read_parboil_points(const std::filesystem::path& path, std::int64_t count = 0, std::string_view whose_count = "requested");

// One "ra dec" line per point, each number written so that reading it as a float gives it back.
void write_parboil_points(const std::filesystem::path& path, std::span<const float> ra, std::span<const float> dec);

// A point as Parboil's readdatafile converts it: float ra, dec in radians (D2R * degrees, in
// double, rounded to float), then x = cos(ra) cos(dec), y = sin(ra) cos(dec), z = sin(dec) with
// cos(dec) rounded to float first, each computed in double (libm) and rounded to float.
struct unit_vector {
  float x, y, z;
};
unit_vector parboil_unit_vector(float ra, float dec);

struct parboil_tpacf_files {
  std::filesystem::path data;
  std::vector<std::filesystem::path> randoms;
};

// The files of a Parboil dataset folder: DIR/Datapnts.1 and DIR/Randompnts.1 .. DIR/Randompnts.R;
// randoms = 0 takes every Randompnts.k that exists from 1 on. input_error naming a missing file.
parboil_tpacf_files parboil_tpacf_folder(const std::filesystem::path& dir, std::int64_t randoms = 0);

// Parboil's result file for 22 counters of each kind (bins 0 and 21, outside 1 .. 10,000
// arcminutes, are not written).
std::string parboil_tpacf_output(std::span<const std::uint64_t> dd, std::span<const std::uint64_t> dr,
                                 std::span<const std::uint64_t> rr);

}  // namespace soac::datasets
