#include "datasets/bundle.hpp"

#include <fstream>
#include <system_error>

#include "datasets/binary_file.hpp"

namespace soac::datasets {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* manifest_name = "manifest.json";
constexpr const char* format_name = "soac-bundle";

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw input_error(path.string() + ": " + what);
}

// A manifest may only name files directly inside the bundle, so a bad manifest can never make
// the writer delete, or the reader open, anything elsewhere.
bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\\') == std::string::npos && s.find('\0') == std::string::npos;
}

bool is_valid_array_name(const std::string& s) {
  if (s.empty() || s[0] == '.' || s == "manifest") return false;
  for (const char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

json read_manifest(const fs::path& file) {
  // A folder opens as a stream and throws ios_base::failure on reading (found by fuzz_app).
  std::error_code ec;
  if (fs::is_directory(file, ec)) fail(file, "is a folder, not a manifest file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open for reading");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(file, std::string("invalid JSON: ") + e.what());
  } catch (const std::ios_base::failure& e) {
    fail(file, std::string("cannot read: ") + e.what());
  }
}

}  // namespace

// --- bundle_writer --------------------------------------------------------------------------------

bundle_writer::bundle_writer(fs::path dir, std::string kind, std::string app)
    : dir_(std::move(dir)), kind_(std::move(kind)), app_(std::move(app)) {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
    fail(dir_, "exists and is not a directory; cannot write a bundle there");
  fs::create_directories(dir_, ec);
  if (ec) fail(dir_, "cannot create directory: " + ec.message());

  // Clear out a previous bundle, touching only files its manifest claims.
  const fs::path manifest = dir_ / manifest_name;
  if (!fs::exists(manifest, ec)) return;
  json old;
  try {
    old = read_manifest(manifest);
  } catch (const input_error&) {
    old = nullptr;
  }
  if (!old.is_object() || old.value("format", json()) != format_name)
    fail(dir_, "holds a manifest.json that is not a soac bundle's; refusing to overwrite it");
  if (!fs::remove(manifest, ec) && ec) fail(manifest, "cannot remove: " + ec.message());
  for (const char* listing : {"arrays", "files"}) {
    const auto it = old.find(listing);
    if (it == old.end() || !it->is_object()) continue;
    for (const auto& [name, entry] : it->items()) {
      if (!entry.is_object()) continue;
      std::vector<json> files = {entry.value("file", json())};
      if (const auto parts = entry.find("parts"); parts != entry.end() && parts->is_array())
        for (const auto& part : *parts)
          if (part.is_object()) files.push_back(part.value("file", json()));
      for (const json& f : files) {
        if (!f.is_string()) continue;
        const std::string file = f.get<std::string>();
        if (!is_plain_file_name(file) || file == manifest_name) continue;
        if (!fs::remove(dir_ / file, ec) && ec) fail(dir_ / file, "cannot remove: " + ec.message());
      }
    }
  }
}

std::filesystem::path bundle_writer::array_path(const std::string& name) const {
  if (!is_valid_array_name(name))
    throw usage_error(dir_.string() + ": invalid array name '" + name +
                      "' (use letters, digits, '_', '-', '.'; no leading '.')");
  return dir_ / (name + ".npy");
}

void bundle_writer::list_array(const std::string& name, dtype type, std::span<const std::int64_t> shape) {
  arrays_[name] = {{"file", name + ".npy"},
                   {"dtype", std::string(dtype_name(type))},
                   {"shape", std::vector<std::int64_t>(shape.begin(), shape.end())}};
}

void bundle_writer::check_new_array(const std::string& name) const {
  if (finished_) throw usage_error(dir_.string() + ": add('" + name + "') after finish()");
  array_path(name);
  if (arrays_.contains(name)) throw usage_error(dir_.string() + ": array '" + name + "' added twice");
}

void bundle_writer::add(const std::string& name, dtype type, std::span<const std::int64_t> shape,
                        const void* data) {
  check_new_array(name);
  std::uint64_t count = 1;
  for (const auto d : shape) count = checked_bytes(count, std::uint64_t(d), array_path(name).string());
  require_file_space(array_path(name).string(), checked_bytes(count, dtype_size(type), array_path(name).string()), "an array");
  write_npy(array_path(name), type, shape, data);
  list_array(name, type, shape);
}

void bundle_writer::add_written(const std::string& name, dtype type, std::span<const std::int64_t> shape) {
  check_new_array(name);
  const npy_header h = read_npy_header(array_path(name));
  if (h.type != type || h.shape != std::vector<std::int64_t>(shape.begin(), shape.end()))
    fail(array_path(name), "holds " + std::string(dtype_name(h.type)) + " " + shape_string(h.shape) + ", expected " +
                               std::string(dtype_name(type)) + " " + shape_string(shape));
  list_array(name, type, shape);
}

fs::path bundle_part_path(const fs::path& dir, const std::string& name, int part) {
  return dir / (name + ".part-" + std::to_string(part) + ".npy");
}

void bundle_writer::add_parts(const std::string& name, dtype type, std::span<const std::int64_t> shape,
                              std::span<const std::int64_t> part_rows) {
  check_new_array(name);
  std::int64_t total = 0;
  for (const std::int64_t rows : part_rows) total += rows;
  if (shape.empty() || part_rows.empty() || total != shape[0])
    throw usage_error(dir_.string() + ": the parts of '" + name + "' hold " + std::to_string(total) + " rows of " + shape_string(shape));
  json parts = json::array();
  for (std::size_t p = 0; p < part_rows.size(); ++p) {
    const fs::path path = bundle_part_path(dir_, name, int(p));
    std::vector<std::int64_t> expected(shape.begin(), shape.end());
    expected[0] = part_rows[p];
    const npy_header h = read_npy_header(path);
    if (h.type != type || h.shape != expected)
      fail(path, "holds " + std::string(dtype_name(h.type)) + " " + shape_string(h.shape) + ", expected " + std::string(dtype_name(type)) +
                     " " + shape_string(expected));
    parts.push_back({{"file", path.filename().string()}, {"rows", part_rows[p]}});
  }
  arrays_[name] = {{"parts", parts}, {"dtype", std::string(dtype_name(type))}, {"shape", std::vector<std::int64_t>(shape.begin(), shape.end())}};
}

void bundle_writer::check_new_file(const std::string& file_name) const {
  if (finished_) throw usage_error(dir_.string() + ": add_file('" + file_name + "') after finish()");
  if (!is_valid_array_name(file_name) || file_name.ends_with(".npy") || file_name == manifest_name)
    throw usage_error(dir_.string() + ": invalid file name '" + file_name +
                      "' (use letters, digits, '_', '-', '.'; no leading '.', not .npy)");
  if (files_.contains(file_name)) throw usage_error(dir_.string() + ": file '" + file_name + "' added twice");
}

void bundle_writer::add_file(const std::string& file_name, std::string_view bytes) {
  check_new_file(file_name);
  write_file_atomically(dir_ / file_name, bytes);
  files_[file_name] = {{"file", file_name}, {"bytes", bytes.size()}};
}

void bundle_writer::add_written_file(const std::string& file_name) {
  check_new_file(file_name);
  std::error_code ec;
  const auto bytes = fs::file_size(dir_ / file_name, ec);
  if (ec) fail(dir_ / file_name, "cannot list it in the bundle: " + ec.message());
  files_[file_name] = {{"file", file_name}, {"bytes", bytes}};
}

void bundle_writer::finish() {
  if (finished_) throw usage_error(dir_.string() + ": finish() called twice");
  const json manifest = {{"format", format_name}, {"version", bundle_format_version},
                         {"kind", kind_},         {"app", app_},
                         {"params", params_},     {"info", info_},
                         {"arrays", arrays_},     {"files", files_}};
  // Write then rename, so a crash never leaves a half-written manifest behind.
  const fs::path final_path = dir_ / manifest_name;
  const fs::path tmp = dir_ / "manifest.json.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(tmp, "cannot open for writing");
    out << manifest.dump(2) << '\n';
    out.flush();
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      fail(tmp, "write failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) fail(final_path, "cannot rename " + tmp.filename().string() + " into place: " + ec.message());
  finished_ = true;
}

// --- bundle ---------------------------------------------------------------------------------------

bundle bundle::open(const fs::path& dir, std::string_view expected_kind, std::string_view expected_app) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (!fs::exists(st)) fail(dir, "no such directory (expected a soac bundle)");
  if (!fs::is_directory(st)) {
    std::string hint;
    if (dir.extension() == ".npy") hint = "; pass the bundle directory that holds it";
    fail(dir, "is a file, not a bundle directory" + hint);
  }
  const fs::path manifest_path = dir / manifest_name;
  if (!fs::exists(manifest_path, ec))
    throw input_error(dir.string() + " is not a soac bundle (no manifest.json); " +
                      (expected_kind == "result" ? "`soac run` writes results" : "create one with `soac gen`"));

  const json m = read_manifest(manifest_path);
  const auto bad = [&](const std::string& why) { fail(manifest_path, why); };
  if (!m.is_object()) bad("not a JSON object");
  const auto string_field = [&](const char* key) -> std::string {
    const auto it = m.find(key);
    if (it == m.end() || !it->is_string()) bad(std::string("missing or non-string \"") + key + "\"");
    return it->get<std::string>();
  };
  if (string_field("format") != format_name)
    bad("\"format\" is not \"" + std::string(format_name) + "\"; not a soac bundle manifest");
  const auto vit = m.find("version");
  if (vit == m.end() || !vit->is_number_integer()) bad("missing or non-integer \"version\"");
  const auto version = vit->get<std::int64_t>();
  if (version > bundle_format_version)
    bad("bundle format version " + std::to_string(version) + " is newer than this soac supports (" +
        std::to_string(bundle_format_version) + "); upgrade soac or regenerate the bundle");
  if (version < 1) bad("invalid bundle format version " + std::to_string(version));

  bundle b;
  b.dir_ = dir;
  b.kind_ = string_field("kind");
  if (b.kind_ != "dataset" && b.kind_ != "result") bad("\"kind\" must be \"dataset\" or \"result\", not \"" + b.kind_ + "\"");
  b.app_ = string_field("app");
  b.params_ = m.value("params", json::object());
  b.info_ = m.value("info", json::object());

  if (!expected_kind.empty() && b.kind_ != expected_kind)
    throw input_error(dir.string() + " is a " + b.kind_ + " for app '" + b.app_ + "', not a " +
                      std::string(expected_kind));
  if (!expected_app.empty() && b.app_ != expected_app)
    throw input_error(dir.string() + " is a " + b.kind_ + " for app '" + b.app_ + "', not '" +
                      std::string(expected_app) + "'");

  const auto ait = m.find("arrays");
  if (ait == m.end() || !ait->is_object()) bad("missing or non-object \"arrays\"");
  for (const auto& [name, e] : ait->items()) {
    const std::string where = "array '" + name + "': ";
    if (!e.is_object()) bad(where + "entry is not an object");
    entry ent;
    if (const auto parts = e.find("parts"); parts != e.end()) {
      if (!parts->is_array() || parts->empty()) bad(where + "\"parts\" must be a non-empty list");
      for (const auto& part : *parts) {
        if (!part.is_object() || !part.contains("file") || !part["file"].is_string() || !is_plain_file_name(part["file"].get<std::string>()) ||
            !part.contains("rows") || !part["rows"].is_number_integer() || part["rows"].get<std::int64_t>() < 0)
          bad(where + "each part must be {\"file\": a file name inside the bundle directory, \"rows\": N >= 0}");
        ent.parts.push_back({part["file"].get<std::string>(), part["rows"].get<std::int64_t>()});
      }
    } else {
      const auto f = e.find("file");
      if (f == e.end() || !f->is_string() || !is_plain_file_name(f->get<std::string>()))
        bad(where + "\"file\" must be a file name inside the bundle directory");
      ent.file = f->get<std::string>();
    }
    const auto d = e.find("dtype");
    if (d == e.end() || !d->is_string()) bad(where + "missing or non-string \"dtype\"");
    try {
      ent.type = parse_dtype_name(d->get<std::string>());
    } catch (const usage_error& err) {
      bad(where + err.what());
    }
    const auto s = e.find("shape");
    if (s == e.end() || !s->is_array()) bad(where + "missing or non-list \"shape\"");
    for (const auto& dim : *s) {
      if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0)
        bad(where + "\"shape\" must hold non-negative integers");
      ent.shape.push_back(dim.get<std::int64_t>());
    }
    if (!ent.parts.empty()) {
      std::int64_t rows = 0;
      for (const auto& part : ent.parts) rows += part.rows;
      if (ent.shape.empty() || rows != ent.shape[0])
        bad(where + "its parts hold " + std::to_string(rows) + " rows, its shape is " + shape_string(ent.shape));
    }
    b.arrays_.emplace(name, std::move(ent));
  }
  if (const auto fit = m.find("files"); fit != m.end()) {
    if (!fit->is_object()) bad("\"files\" must be an object");
    for (const auto& [name, e] : fit->items()) {
      if (!is_valid_array_name(name) || !e.is_object() || e.value("file", json()) != name ||
          !e.contains("bytes") || !e["bytes"].is_number_unsigned())
        bad("file '" + name + "': entry must be {\"file\": \"" + name + "\", \"bytes\": N}");
      b.files_.emplace(name, e["bytes"].get<std::uint64_t>());
    }
  }
  return b;
}

fs::path bundle::file_path(const std::string& file_name) const {
  const auto it = files_.find(file_name);
  if (it == files_.end()) throw input_error(dir_.string() + ": bundle has no file '" + file_name + "'");
  const fs::path path = dir_ / file_name;
  const auto size = regular_file_size(path);
  if (size != it->second)
    fail(path, "the manifest says " + std::to_string(it->second) + " bytes, the file has " + std::to_string(size));
  return path;
}

std::vector<std::string> bundle::array_names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : arrays_) out.push_back(name);
  return out;
}

const bundle::entry& bundle::find(const std::string& name) const {
  const auto it = arrays_.find(name);
  if (it != arrays_.end()) return it->second;
  std::string have;
  for (const auto& [n, e] : arrays_) have += (have.empty() ? "" : ", ") + n;
  throw input_error(dir_.string() + ": bundle has no array '" + name + "' (it has: " +
                    (have.empty() ? "none" : have) + ")");
}

fs::path bundle::path_of(const std::string& name) const {
  const entry& e = find(name);
  return dir_ / (e.parts.empty() ? e.file : name);
}

std::size_t bundle::parts(const std::string& name) const {
  const entry& e = find(name);
  return e.parts.empty() ? 1 : e.parts.size();
}

npy_header bundle::part_header(const entry& e, const part& p, const std::string& name) const {
  const fs::path path = dir_ / p.file;
  npy_header h = read_npy_header(path);
  std::vector<std::int64_t> expected = e.shape;
  expected[0] = p.rows;
  if (h.type != e.type || h.shape != expected)
    fail(path, "a part of array '" + name + "' holds " + std::string(dtype_name(h.type)) + " " + shape_string(h.shape) +
                   ", the manifest says " + std::string(dtype_name(e.type)) + " " + shape_string(expected));
  return h;
}

npy_header bundle::header(const std::string& name) const {
  const entry& e = find(name);
  if (!e.parts.empty()) {  // the parts checked; the whole's type and shape
    for (const part& p : e.parts) part_header(e, p, name);
    npy_header whole;
    whole.type = e.type;
    whole.shape = e.shape;
    return whole;
  }
  const fs::path path = dir_ / e.file;
  npy_header h = read_npy_header(path);
  if (h.type != e.type)
    fail(path, "manifest and file disagree on dtype: manifest says " + std::string(dtype_name(e.type)) +
                   ", the file has " + std::string(dtype_name(h.type)));
  if (h.shape != e.shape) {
    const bool lengths = h.shape.size() == e.shape.size() && !h.shape.empty();
    fail(path, std::string("manifest and file disagree on ") + (lengths ? "length" : "shape") +
                   ": manifest says " + shape_string(e.shape) + ", the file has " +
                   shape_string(h.shape));
  }
  return h;
}

void bundle::read_into(const std::string& name, void* dst) const {
  const npy_header h = header(name);
  if (!find(name).parts.empty()) return read_rows_into(name, 0, h.shape[0], dst);
  read_npy_data(path_of(name), h, dst);
}

void bundle::read_rows_into(const std::string& name, std::int64_t first, std::int64_t count, void* dst) const {
  const npy_header h = header(name);
  if (h.shape.empty()) throw usage_error(path_of(name).string() + ": a scalar has no rows to read");
  const std::int64_t rows = h.shape[0];
  if (first < 0 || count < 0 || first > rows || count > rows - first)
    throw usage_error(path_of(name).string() + ": rows " + std::to_string(first) + " to " + std::to_string(first + count) + " asked of " +
                      std::to_string(rows));
  if (count == 0) return;
  const std::size_t row_bytes = h.data_bytes() / std::size_t(rows);
  const entry& e = find(name);
  if (e.parts.empty()) return read_npy_range(path_of(name), h, std::size_t(first) * row_bytes, std::size_t(count) * row_bytes, dst);
  // The rows' share of each part, in order.
  auto* out = static_cast<std::byte*>(dst);
  std::int64_t part_begin = 0;
  for (const part& p : e.parts) {
    const std::int64_t lo = std::max(first, part_begin), hi = std::min(first + count, part_begin + p.rows);
    if (lo < hi) {
      const npy_header ph = part_header(e, p, name);
      read_npy_range(dir_ / p.file, ph, std::size_t(lo - part_begin) * row_bytes, std::size_t(hi - lo) * row_bytes, out);
      out += std::size_t(hi - lo) * row_bytes;
    }
    part_begin += p.rows;
  }
}

void require_length(const bundle& b, const std::string& name, std::int64_t length, std::string_view param) {
  const npy_header h = b.header(name);
  const std::int64_t has = h.shape.empty() ? -1 : h.shape[0];
  if (has != length)
    fail(b.path_of(name), "array '" + name + "' has " + (h.shape.empty() ? std::string("no length (a scalar)") : std::to_string(has) + " elements") +
                              ", but the manifest's " + std::string(param) + " says " + std::to_string(length));
}

std::int64_t length_of(const bundle& b, const std::string& name, std::string_view param) {
  const npy_header h = b.header(name);
  if (h.shape.empty()) fail(b.path_of(name), "array '" + name + "' is a scalar (0-d) and has no length");
  const std::string key(param);
  if (!key.empty() && b.params().contains(key)) {
    const auto& v = b.params()[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() != h.shape[0])
      fail(b.path_of(name), "array '" + name + "' has " + std::to_string(h.shape[0]) + " elements, but the manifest's " + key +
                                " says " + v.dump());
  }
  return h.shape[0];
}

void require_same_length(const bundle& b, std::initializer_list<std::string> names) {
  std::vector<std::pair<std::string, std::int64_t>> lengths;
  for (const auto& name : names) {
    const npy_header h = b.header(name);
    if (h.shape.empty())
      fail(b.path_of(name), "array '" + name + "' is a scalar (0-d) and has no length");
    lengths.emplace_back(name, h.shape[0]);
  }
  for (const auto& [name, len] : lengths) {
    if (len == lengths.front().second) continue;
    std::string list;
    for (const auto& [n, l] : lengths) list += (list.empty() ? "" : ", ") + n + " has " + std::to_string(l);
    fail(b.dir(), "arrays must have the same length, but " + list);
  }
}

}  // namespace soac::datasets
