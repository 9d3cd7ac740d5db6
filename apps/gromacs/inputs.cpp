// The gromacs app's inputs: the generator, the checks every dataset passes before anything runs,
// and the two formats (a bundle of .npy arrays; the SC20 artifact's Futhark data file). Host code
// only, so it compiles apart from the app's kernels.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/app.hpp"
#include "apps/gromacs/gromacs.hpp"
#include "core/error.hpp"
#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "datasets/random.hpp"

namespace soac::apps::gromacs {
namespace {

// ---- Generator.

// Atom types: an SPC/E-like water oxygen and hydrogen (their charges cancel two to one) and
// uncharged Lennard-Jones atoms (OPLS-like carbon, nitrogen, sulphur; argon, neon, a large one).
struct atom_kind {
  double sigma, epsilon, charge;  // nm, kJ/mol, e
};
constexpr std::array<atom_kind, 8> atom_kinds = {{{0.3166, 0.650, -0.8476},
                                                  {0.0, 0.0, 0.4238},
                                                  {0.375, 0.439, 0.0},
                                                  {0.325, 0.711, 0.0},
                                                  {0.355, 1.046, 0.0},
                                                  {0.340, 0.996, 0.0},
                                                  {0.278, 0.290, 0.0},
                                                  {0.440, 0.493, 0.0}}};
constexpr double coulomb_constant = 138.935485;  // GROMACS' facel: 1 / (4 pi eps0) in kJ mol^-1 nm e^-2
constexpr double pi = 3.14159265358979323846;

std::int64_t mod_floor(std::int64_t a, std::int64_t n) { return ((a % n) + n) % n; }

}  // namespace

namespace {
// The generator's parameters, checked (gen and every dataset a run opens).
struct inl1100_spec {
  std::int64_t P, wanted_pairs, wanted_lists;
  double density;
  int types, groups;
  double box, rc;
};

inl1100_spec spec_of(const nlohmann::json& params) {
  inl1100_spec s;
  s.P = int_param(params, "particles", 1, std::int64_t{1} << 26);
  s.wanted_pairs = int_param(params, "pairs", 0, std::int64_t{1} << 30);
  s.wanted_lists = int_param(params, "lists", 0, std::int64_t{1} << 30);
  s.density = real_param(params, "density", 1, 1000);
  s.types = int(int_param(params, "types", 3, std::int64_t(atom_kinds.size())));
  s.groups = int(int_param(params, "energy_groups", 1, 1024));
  s.box = std::cbrt(double(s.P) / s.density);
  // Each particle sees 2 pairs / P neighbours on average, inside a sphere of radius rc.
  s.rc = std::cbrt(3.0 * (2.0 * double(s.wanted_pairs) / double(s.P)) / (4.0 * pi * s.density));
  if (!(s.rc < s.box / 2))
    throw usage_error("gromacs gen: " + std::to_string(s.wanted_pairs) + " pairs among " + std::to_string(s.P) +
                      " particles need a cut-off of " + std::to_string(s.rc) + " nm, not below half the box (" +
                      std::to_string(s.box) + " nm): ask for fewer pairs or more particles");
  return s;
}
}  // namespace

inl1100_data generate_inl1100(const nlohmann::json& params, std::uint64_t seed) {
  // Named copies, not a structured binding: clang 14 (the fuzz build's) cannot capture those.
  const inl1100_spec spec = spec_of(params);
  const std::int64_t P = spec.P, wanted_lists = spec.wanted_lists;
  const double box = spec.box, rc = spec.rc;
  const int types = spec.types, groups = spec.groups;

  // A jittered lattice: P random sites of the smallest cube that holds them, each moved by up to
  // 0.15 spacings per axis, so no two particles are closer than 0.7 spacings.
  std::int64_t side = 1;
  while (side * side * side < P) ++side;
  const double spacing = box / double(side);
  const datasets::random_permutation sites(std::uint64_t(side * side * side), datasets::stream_key(seed, 1));
  std::vector<std::array<double, 3>> at(static_cast<std::size_t>(P));
  for (std::int64_t p = 0; p < P; ++p) {
    const std::int64_t site = std::int64_t(sites(std::uint64_t(p)));
    const std::int64_t cell[3] = {site % side, (site / side) % side, site / (side * side)};
    for (int c = 0; c < 3; ++c)
      at[std::size_t(p)][c] =
          (double(cell[c]) + 0.5 + 0.3 * (datasets::random_unit(seed, 2, std::uint64_t(3 * p + c)) - 0.5)) * spacing;
  }
  // Cells of at least rc: a particle's neighbours lie in its cell and the 26 around it (with
  // fewer than three cells per side, the 27 images of those cells). Particles are numbered in
  // cell order, as a neighbour search sorts them, so a list's neighbours are near in memory.
  const std::int64_t nc = std::max<std::int64_t>(1, std::int64_t(box / rc));
  const auto cell_of = [&](const std::array<double, 3>& x, int c) {
    return std::clamp<std::int64_t>(std::int64_t(x[c] / box * double(nc)), 0, nc - 1);
  };
  const auto cell_index = [&](const std::array<double, 3>& x) { return (cell_of(x, 2) * nc + cell_of(x, 1)) * nc + cell_of(x, 0); };
  std::stable_sort(at.begin(), at.end(), [&](const auto& a, const auto& b) { return cell_index(a) < cell_index(b); });
  std::vector<std::int64_t> cell_start(std::size_t(nc * nc * nc + 1), 0);
  for (const auto& x : at) ++cell_start[std::size_t(cell_index(x) + 1)];
  std::partial_sum(cell_start.begin(), cell_start.end(), cell_start.begin());

  inl1100_data d;
  d.ntype = types;
  d.energy_groups = groups;
  d.facel = float(coulomb_constant);
  d.pos.resize(std::size_t(3 * P));
  for (std::int64_t p = 0; p < P; ++p)
    for (int c = 0; c < 3; ++c) d.pos[std::size_t(3 * p + c)] = float(at[std::size_t(p)][c]);
  // Types: a quarter oxygen, twice as many hydrogen (so the charges cancel), the rest the
  // uncharged kinds in turn; placed by a random permutation.
  const std::int64_t oxygens = P / 4;
  std::vector<std::int32_t> composition(static_cast<std::size_t>(P));
  for (std::int64_t k = 0; k < P; ++k)
    composition[std::size_t(k)] =
        k < oxygens ? 0 : k < 3 * oxygens ? 1 : std::int32_t(2 + (k - 3 * oxygens) % std::max(1, types - 2));
  const datasets::random_permutation placement(std::uint64_t(P), datasets::stream_key(seed, 3));
  d.type.resize(std::size_t(P));
  d.charge.resize(std::size_t(P));
  for (std::int64_t k = 0; k < P; ++k) d.type[std::size_t(placement(std::uint64_t(k)))] = composition[std::size_t(k)];
  for (std::int64_t p = 0; p < P; ++p) d.charge[std::size_t(p)] = float(atom_kinds[std::size_t(d.type[std::size_t(p)])].charge);
  // Lorentz-Berthelot combination: c6 = 4 eps sigma^6, c12 = 4 eps sigma^12.
  d.nbfp.resize(std::size_t(2 * types * types));
  for (int a = 0; a < types; ++a)
    for (int b = 0; b < types; ++b) {
      const double sigma = (atom_kinds[std::size_t(a)].sigma + atom_kinds[std::size_t(b)].sigma) / 2;
      const double eps = std::sqrt(atom_kinds[std::size_t(a)].epsilon * atom_kinds[std::size_t(b)].epsilon);
      d.nbfp[std::size_t(2 * (a * types + b))] = float(4 * eps * std::pow(sigma, 6));
      d.nbfp[std::size_t(2 * (a * types + b) + 1)] = float(4 * eps * std::pow(sigma, 12));
    }
  // The 27 shift vectors, index 9 (z + 1) + 3 (y + 1) + (x + 1); 13 is no shift.
  for (int z = -1; z <= 1; ++z)
    for (int y = -1; y <= 1; ++y)
      for (int x = -1; x <= 1; ++x)
        for (int v : {x, y, z}) d.shiftvec.push_back(float(v * box));

  // Half neighbour lists (each pair once, from its lower-numbered particle), one per particle and
  // shift: j's image near i is pos_j + w L (w the cell wrap), so i is shifted by -w L.
  std::vector<std::vector<std::pair<int, std::int32_t>>> found(static_cast<std::size_t>(P));  // (shift, j)
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t i = 0; i < P; ++i) {
    const auto& xi = at[std::size_t(i)];
    auto& mine = found[std::size_t(i)];
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const std::int64_t cn[3] = {cell_of(xi, 0) + dx, cell_of(xi, 1) + dy, cell_of(xi, 2) + dz};
          std::int64_t cw[3], w[3];
          for (int c = 0; c < 3; ++c) cw[c] = mod_floor(cn[c], nc), w[c] = (cn[c] - cw[c]) / nc;
          const int s = int(9 * (1 - w[2]) + 3 * (1 - w[1]) + (1 - w[0]));
          const std::int64_t cell = (cw[2] * nc + cw[1]) * nc + cw[0];
          for (std::int64_t j = std::max(cell_start[std::size_t(cell)], i + 1); j < cell_start[std::size_t(cell + 1)]; ++j) {
            double rsq = 0;
            for (int c = 0; c < 3; ++c) {
              const double dd = xi[c] - double(w[c]) * box - at[std::size_t(j)][c];
              rsq += dd * dd;
            }
            if (rsq < rc * rc) mine.push_back({s, std::int32_t(j)});
          }
        }
    std::stable_sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  struct base_list {
    std::int32_t i, shift;
    std::int64_t begin, end;  // in `all`
  };
  std::vector<base_list> bases;
  std::vector<std::int32_t> all;
  for (std::int64_t i = 0; i < P; ++i) {
    const auto& mine = found[std::size_t(i)];
    for (std::size_t k = 0; k < mine.size(); ++k) {
      if (k == 0 || mine[k].first != mine[k - 1].first)
        bases.push_back({std::int32_t(i), mine[k].first, std::int64_t(all.size()), std::int64_t(all.size())});
      all.push_back(mine[k].second);
      bases.back().end = std::int64_t(all.size());
    }
  }
  // Split every list into chunks of at most `chunk` pairs, the chunk that brings the number of
  // lists nearest to the wanted one.
  std::int64_t longest = 1;
  for (const auto& b : bases) longest = std::max(longest, b.end - b.begin);
  const auto lists_with = [&](std::int64_t chunk) {
    std::int64_t n = 0;
    for (const auto& b : bases) n += (b.end - b.begin + chunk - 1) / chunk;
    return n;
  };
  std::int64_t lo = 1, hi = longest;  // smallest chunk with at most the wanted lists
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (lists_with(mid) <= wanted_lists) hi = mid;
    else lo = mid + 1;
  }
  const std::int64_t chunk =
      lo > 1 && std::abs(lists_with(lo - 1) - wanted_lists) < std::abs(lists_with(lo) - wanted_lists) ? lo - 1 : lo;
  d.jindex.push_back(0);
  for (const auto& b : bases) {
    const std::int64_t len = b.end - b.begin, parts = (len + chunk - 1) / chunk;
    for (std::int64_t p = 0; p < parts; ++p) {
      d.iinr.push_back(b.i);
      d.shift.push_back(b.shift);
      d.gid.push_back(std::int32_t(std::min<std::int64_t>(groups - 1, std::int64_t(at[std::size_t(b.i)][0] / box * groups))));
      const std::int64_t from = b.begin + len * p / parts, to = b.begin + len * (p + 1) / parts;
      d.jjnr.insert(d.jjnr.end(), all.begin() + from, all.begin() + to);
      d.jindex.push_back(std::int32_t(d.jjnr.size()));
    }
  }
  return d;
}

namespace {
// The arguments of gromacs-inl1100-hdw.fut's entry main, in order, and the arrays they fill.
constexpr std::array<std::pair<const char*, const char*>, 12> futhark_arguments = {{{"jindex", "jindex"},
                                                                                  {"iinr", "iinr"},
                                                                                  {"jjnr", "jjnr"},
                                                                                  {"shift", "shift"},
                                                                                  {"types", "type"},
                                                                                  {"ntype", "ntype"},
                                                                                  {"facel", "facel"},
                                                                                  {"shiftvec", "shiftvec"},
                                                                                  {"pos", "pos"},
                                                                                  {"faction1d", "faction"},
                                                                                  {"charge", "charge"},
                                                                                  {"nbfp", "nbfp"}}};
}  // namespace

std::string inl1100_source::of(const char* array) const {
  if (!futhark) return (path / (std::string(array) + ".npy")).string();
  for (std::size_t k = futhark_arguments.size(); k-- > 0;)
    if (std::string_view(futhark_arguments[k].second) == array)
      return path.string() + ": " + futhark_arguments[k].first + " (value " + std::to_string(k + 1) + ")";
  return path.string() + ": " + array;  // gid and energy_groups: none in the file
}

namespace {
std::string array_file(const inl1100_source& dir, const char* name) { return dir.of(name); }

template <class T>
void check_length(const inl1100_source& dir, const char* name, const std::vector<T>& a, std::int64_t expected,
                  const std::string& why) {
  if (std::int64_t(a.size()) != expected)
    throw input_error(array_file(dir, name) + ": holds " + std::to_string(a.size()) + " values, expected " +
                      std::to_string(expected) + " (" + why + ")");
}

void check_below(const inl1100_source& dir, const char* name, const std::vector<std::int32_t>& a, std::int64_t bound,
                 const std::string& table) {
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k] < 0 || a[k] >= bound)
      throw input_error(array_file(dir, name) + ": " + name + "[" + std::to_string(k) + "] = " + std::to_string(a[k]) +
                        " is outside [0, " + std::to_string(bound) + "), " + table);
}

void check_finite(const inl1100_source& dir, const char* name, const std::vector<float>& a) {
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!std::isfinite(a[k]))
      throw input_error(array_file(dir, name) + ": " + name + "[" + std::to_string(k) + "] is not a finite number");
}
}  // namespace

void check_inl1100(const inl1100_data& d, const inl1100_source& dir) {
  const std::int64_t P = d.particles(), nri = d.lists();
  if (3 * P > INT32_MAX) throw input_error(array_file(dir, "charge") + ": " + std::to_string(P) + " particles are beyond 32-bit force indexes");
  check_length(dir, "pos", d.pos, 3 * P, "3 per particle; P = " + std::to_string(P) + " from charge");
  check_length(dir, "type", d.type, P, "one per particle; P = " + std::to_string(P) + " from charge");
  if (d.ntype < 1 || std::int64_t(d.nbfp.size()) != 2 * std::int64_t(d.ntype) * d.ntype)
    throw input_error(array_file(dir, "nbfp") + ": holds " + std::to_string(d.nbfp.size()) +
                      " values, not 2 * ntype^2 for any number of atom types ntype >= 1");
  if (d.shiftvec.empty() || d.shiftvec.size() % 3 != 0)
    throw input_error(array_file(dir, "shiftvec") + ": holds " + std::to_string(d.shiftvec.size()) +
                      " values, not 3 per shift vector");
  // The energies are energy_groups wide per output: a corrupt count would allocate gigabytes.
  constexpr std::int32_t max_energy_groups = 1 << 20;
  if (d.energy_groups < 1 || d.energy_groups > max_energy_groups)
    throw input_error(array_file(dir, "energy_groups") + ": " + std::to_string(d.energy_groups) + " energy groups (1 to " +
                      std::to_string(max_energy_groups) + ")");
  if (!std::isfinite(d.facel)) throw input_error(array_file(dir, "facel") + ": facel is not a finite number");
  check_finite(dir, "pos", d.pos);
  check_finite(dir, "charge", d.charge);
  check_finite(dir, "nbfp", d.nbfp);
  check_finite(dir, "shiftvec", d.shiftvec);
  if (!d.faction.empty()) check_length(dir, "faction", d.faction, 3 * P, "3 per particle, the forces the loop adds to; P = " + std::to_string(P) + " from charge");
  check_finite(dir, "faction", d.faction);
  check_below(dir, "type", d.type, d.ntype, "the atom types of nbfp");
  check_length(dir, "shift", d.shift, nri, "one per list; nri = " + std::to_string(nri) + " from iinr");
  check_length(dir, "gid", d.gid, nri, "one per list; nri = " + std::to_string(nri) + " from iinr");
  check_length(dir, "jindex", d.jindex, nri + 1, "nri + 1; nri = " + std::to_string(nri) + " from iinr");
  check_below(dir, "iinr", d.iinr, P, "the particles");
  check_below(dir, "shift", d.shift, d.shifts(), "the shift vectors");
  check_below(dir, "gid", d.gid, d.energy_groups, "the energy groups");
  if (d.jindex[0] != 0)
    throw input_error(array_file(dir, "jindex") + ": jindex[0] = " + std::to_string(d.jindex[0]) + ", expected 0");
  for (std::int64_t n = 0; n < nri; ++n)
    if (d.jindex[std::size_t(n + 1)] < d.jindex[std::size_t(n)])
      throw input_error(array_file(dir, "jindex") + ": jindex[" + std::to_string(n + 1) + "] = " +
                        std::to_string(d.jindex[std::size_t(n + 1)]) + " is below jindex[" + std::to_string(n) + "] = " +
                        std::to_string(d.jindex[std::size_t(n)]) + " (jindex must not decrease)");
  if (d.jindex.back() != d.pairs())
    throw input_error(array_file(dir, "jindex") + ": ends at " + std::to_string(d.jindex.back()) + ", but jjnr holds " +
                      std::to_string(d.pairs()) + " neighbours");
  check_below(dir, "jjnr", d.jjnr, P, "the particles");
}

namespace {
template <class T>
T read_scalar(const datasets::bundle& in, const char* name) {
  const auto v = in.read<T>(name);
  if (v.size() != 1)
    throw input_error(in.path_of(name).string() + ": holds " + std::to_string(v.size()) + " values, expected one");
  return v[0];
}
}  // namespace

inl1100_data read_inl1100(const datasets::bundle& in) {
  inl1100_data d;
  d.pos = in.read<float>("pos");
  d.charge = in.read<float>("charge");
  d.type = in.read<std::int32_t>("type");
  d.nbfp = in.read<float>("nbfp");
  d.facel = read_scalar<float>(in, "facel");
  d.shiftvec = in.read<float>("shiftvec");
  d.iinr = in.read<std::int32_t>("iinr");
  d.shift = in.read<std::int32_t>("shift");
  d.gid = in.read<std::int32_t>("gid");
  d.jindex = in.read<std::int32_t>("jindex");
  d.jjnr = in.read<std::int32_t>("jjnr");
  d.energy_groups = read_scalar<std::int32_t>(in, "energy_groups");
  std::int64_t ntype = 0;
  while (2 * (ntype + 1) * (ntype + 1) <= std::int64_t(d.nbfp.size())) ++ntype;
  d.ntype = int(ntype);
  if (in.has("faction")) d.faction = in.read<float>("faction");
  check_inl1100(d, {in.dir()});
  return d;
}

void write_inl1100(datasets::bundle_writer& out, const inl1100_data& d) {
  out.add<float>("pos", d.pos);
  out.add<float>("charge", d.charge);
  out.add<std::int32_t>("type", d.type);
  out.add<float>("nbfp", d.nbfp);
  out.add<float>("facel", std::vector<float>{d.facel});
  out.add<float>("shiftvec", d.shiftvec);
  out.add<std::int32_t>("iinr", d.iinr);
  out.add<std::int32_t>("shift", d.shift);
  out.add<std::int32_t>("gid", d.gid);
  out.add<std::int32_t>("jindex", d.jindex);
  out.add<std::int32_t>("jjnr", d.jjnr);
  out.add<std::int32_t>("energy_groups", std::vector<std::int32_t>{d.energy_groups});
  if (!d.faction.empty()) out.add<float>("faction", d.faction);
}

inl1100_data read_inl1100_futhark(const std::filesystem::path& path, std::string* unread) {
  const auto values = datasets::read_futhark_values(path);
  if (values.size() != futhark_arguments.size()) {
    std::string names;
    for (const auto& [futhark, ours] : futhark_arguments) names += std::string(names.empty() ? "" : " ") + futhark;
    throw input_error(path.string() + ": holds " + std::to_string(values.size()) + " values, not the 12 arguments of "
                      "gromacs-inl1100-hdw.fut's entry main (" + names + ")");
  }
  const inl1100_source source{path, true};
  inl1100_data d;
  d.jindex = values[0].i32_elements(1);
  d.iinr = values[1].i32_elements(1);
  d.jjnr = values[2].i32_elements(1);
  d.shift = values[3].i32_elements(1);
  d.type = values[4].i32_elements(1);
  const std::int64_t ntype = values[5].i64_scalar();
  d.facel = float(values[6].f64_scalar());
  d.shiftvec = values[7].f32_elements(1);
  d.pos = values[8].f32_elements(1);
  d.faction = values[9].f32_elements(1);
  d.charge = values[10].f32_elements(1);
  d.nbfp = values[11].f32_elements(1);
  // What the Futhark program reads of each: jjnr up to jindex[nri], shiftvec's whole triples,
  // nbfp's 2 ntype^2 Lennard-Jones pairs.
  if (d.jindex.empty()) throw input_error(source.of("jindex") + ": empty (it holds nri + 1 list starts)");
  const std::int64_t pairs = d.jindex.back();
  if (pairs < 0 || pairs > std::int64_t(d.jjnr.size()))
    throw input_error(source.of("jindex") + ": the last list ends at " + std::to_string(pairs) + ", but jjnr holds " +
                      std::to_string(d.jjnr.size()) + " neighbours");
  if (ntype < 1 || 2 * ntype * ntype > std::int64_t(d.nbfp.size()))
    throw input_error(source.of("nbfp") + ": ntype = " + std::to_string(ntype) + " atom types need 2 ntype^2 = " +
                      std::to_string(2 * ntype * ntype) + " Lennard-Jones values, nbfp holds " + std::to_string(d.nbfp.size()));
  std::ostringstream beyond;
  const auto trim = [&](auto& a, std::int64_t keep, const char* what) {
    if (std::int64_t(a.size()) == keep) return;
    beyond << (beyond.tellp() ? ", " : "") << a.size() - std::size_t(keep) << " of " << what;
    a.resize(std::size_t(keep));
  };
  trim(d.jjnr, pairs, "jjnr's values past the last list");
  trim(d.nbfp, 2 * ntype * ntype, "nbfp's values past 2 ntype^2");
  trim(d.shiftvec, std::int64_t(d.shiftvec.size() / 3 * 3), "shiftvec's values past its last whole vector");
  if (unread) *unread = beyond.str().empty() ? std::string() : "not read, as the Futhark program reads none of them: " + beyond.str();
  d.ntype = int(ntype);
  d.energy_groups = 1;
  d.gid.assign(d.iinr.size(), 0);
  check_inl1100(d, source);
  return d;
}

void write_inl1100_futhark(const std::filesystem::path& path, const inl1100_data& d) {
  using datasets::make_futhark_value;
  const auto i32 = [](const std::vector<std::int32_t>& a) { return make_futhark_value<std::int32_t>({std::int64_t(a.size())}, a); };
  const auto f32 = [](const std::vector<float>& a) { return make_futhark_value<float>({std::int64_t(a.size())}, a); };
  const std::vector<float> faction = d.faction.empty() ? std::vector<float>(d.pos.size(), 0.f) : d.faction;
  const std::vector<datasets::futhark_value> values = {
      i32(d.jindex),  i32(d.iinr), i32(d.jjnr), i32(d.shift), i32(d.type), datasets::make_futhark_scalar<std::int32_t>(d.ntype),
      datasets::make_futhark_scalar<float>(d.facel), f32(d.shiftvec), f32(d.pos), f32(faction), f32(d.charge), f32(d.nbfp)};
  datasets::write_futhark_values(path, values, true);
}

void check_generator_params(const nlohmann::json& params) { spec_of(params); }

}  // namespace soac::apps::gromacs
