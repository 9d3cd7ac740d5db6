// A bundle is how soac stores a dataset (`soac gen`) or a result (`soac run`): a directory with
// one .npy file per named array plus a manifest.json describing them, e.g.
//   {"format": "soac-bundle", "version": 1, "kind": "dataset", "app": "scatter",
//    "params": {...}, "info": {...},
//    "arrays": {"dest": {"file": "dest.npy", "dtype": "int32", "shape": [10000000]}}}
// The manifest is written last, so a directory without one is never mistaken for a bundle.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "datasets/npy.hpp"

namespace soac::datasets {

inline constexpr int bundle_format_version = 1;

class bundle_writer {
 public:
  // Creates `dir` (and parents). If it already holds a bundle, removes only the files that
  // bundle's manifest listed plus manifest.json; other files are left alone.
  bundle_writer(std::filesystem::path dir, std::string kind, std::string app);

  nlohmann::json& params() { return params_; }  // free-form, stored in the manifest
  nlohmann::json& info() { return info_; }

  // Writes <dir>/<name>.npy. Names are restricted to [A-Za-z0-9_.-] (no leading '.').
  void add(const std::string& name, dtype type, std::span<const std::int64_t> shape,
           const void* data);
  template <class T>
  void add(const std::string& name, std::span<const T> data) {
    const std::int64_t shape[1] = {static_cast<std::int64_t>(data.size())};
    add(name, dtype_of<T>(), shape, data.data());
  }

  // Writes <dir>/<file_name> as is (an original program's output format beside the arrays, e.g.
  // Parboil's BMP or Rodinia's text result) and lists it in the manifest under "files".
  void add_file(const std::string& file_name, std::string_view bytes);

  // For writers that stream an array or file into the bundle themselves (soac::stream, with an
  // npy_header_bytes prefix for arrays): where array `name` goes (<dir>/<name>.npy), then
  // add_written to list it (its header must say `type` and `shape`), or add_written_file to list
  // a file written to dir() / file_name.
  std::filesystem::path array_path(const std::string& name) const;
  void add_written(const std::string& name, dtype type, std::span<const std::int64_t> shape);
  void add_written_file(const std::string& file_name);

  // An array stored in parts, one file per process (ranks in separate processes, where a result
  // grows with the input, so that no process gathers it whole): part p holds the next
  // part_rows[p] rows in bundle_part_path(dir(), name, p), which its process writes (write_npy)
  // into the folder this writer created. add_parts then lists them, each checked against `type`
  // and its share of `shape`. Readers see one array (read, read_into, read_rows_into).
  void add_parts(const std::string& name, dtype type, std::span<const std::int64_t> shape, std::span<const std::int64_t> part_rows);

  // Writes manifest.json (via a temporary file and rename). No add() after this.
  void finish();

  const std::filesystem::path& dir() const { return dir_; }

 private:
  void check_new_array(const std::string& name) const;
  void check_new_file(const std::string& file_name) const;
  void list_array(const std::string& name, dtype type, std::span<const std::int64_t> shape);
  std::filesystem::path dir_;
  std::string kind_, app_;
  nlohmann::json params_ = nlohmann::json::object();
  nlohmann::json info_ = nlohmann::json::object();
  nlohmann::json arrays_ = nlohmann::json::object();
  nlohmann::json files_ = nlohmann::json::object();
  bool finished_ = false;
};

class bundle {
 public:
  // Opens and checks a bundle directory. Empty expected_kind / expected_app accept any.
  static bundle open(const std::filesystem::path& dir, std::string_view expected_kind = {},
                     std::string_view expected_app = {});

  const std::filesystem::path& dir() const { return dir_; }
  const std::string& kind() const { return kind_; }
  const std::string& app() const { return app_; }
  const nlohmann::json& params() const { return params_; }
  const nlohmann::json& info() const { return info_; }

  bool has(const std::string& name) const { return arrays_.count(name) != 0; }
  std::vector<std::string> array_names() const;  // sorted

  // The array's .npy header, checked against what the manifest says (dtype and shape).
  npy_header header(const std::string& name) const;
  // Reads a whole array; its dtype must be T.
  template <class T>
  std::vector<T> read(const std::string& name) const {
    const npy_header h = header(name);
    if (h.type != dtype_of<T>()) detail::throw_dtype_mismatch(path_of(name), h.type, dtype_of<T>());
    if constexpr (std::is_same_v<T, bool>) {
      if (parts(name) > 1) throw input_error(path_of(name).string() + ": a bool array in parts is not supported");
      return detail::read_bool_data(path_of(name), h);
    } else {
      require_host_memory(h.data_bytes(), path_of(name).string());
      std::vector<T> out(static_cast<std::size_t>(h.element_count()));
      read_into(name, out.data());
      return out;
    }
  }
  // Reads into caller memory of exactly header(name).data_bytes() bytes.
  void read_into(const std::string& name, void* dst) const;
  // Reads rows [first, first + count) of an array of one or more dimensions (a row: one index
  // of its first dimension) into caller memory of count rows: a process's part of a big array.
  void read_rows_into(const std::string& name, std::int64_t first, std::int64_t count, void* dst) const;
  // The array's file; for an array in parts, <dir>/<name> (no such file: a name for messages).
  std::filesystem::path path_of(const std::string& name) const;
  // How many files hold the array: 1, or its parts (bundle_writer::add_parts).
  std::size_t parts(const std::string& name) const;

  // Files added with bundle_writer::add_file.
  bool has_file(const std::string& file_name) const { return files_.count(file_name) != 0; }
  std::filesystem::path file_path(const std::string& file_name) const;

 private:
  struct part {
    std::string file;
    std::int64_t rows = 0;
  };
  struct entry {
    std::string file;  // empty for an array in parts
    dtype type{};
    std::vector<std::int64_t> shape;
    std::vector<part> parts;
  };
  npy_header part_header(const entry& e, const part& p, const std::string& name) const;
  bundle() = default;
  const entry& find(const std::string& name) const;

  std::filesystem::path dir_;
  std::string kind_, app_;
  nlohmann::json params_, info_;
  std::map<std::string, entry> arrays_;
  std::map<std::string, std::uint64_t> files_;  // name -> bytes
};

// Part p of array `name` of a bundle in `dir` (bundle_writer::add_parts): <dir>/<name>.part-<p>.npy.
std::filesystem::path bundle_part_path(const std::filesystem::path& dir, const std::string& name, int part);

// Throws input_error unless array `name` has `length` elements along its first dimension, as
// the manifest's parameter `param` (e.g. "n") says it must.
void require_length(const bundle& b, const std::string& name, std::int64_t length, std::string_view param);

// The length (first dimension) of array `name`; input_error for a scalar. Where the manifest gives
// the parameter `param` (e.g. "n"), it must be an integer equal to that length: a dataset need not
// state its sizes, but one that does must state them truly.
std::int64_t length_of(const bundle& b, const std::string& name, std::string_view param = {});

// Throws input_error unless the named arrays all have the same length (first dimension).
void require_same_length(const bundle& b, std::initializer_list<std::string> names);

}  // namespace soac::datasets
