#include "datasets/npy.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>

namespace soac::datasets {

namespace fs = std::filesystem;

namespace {

constexpr char magic[] = "\x93NUMPY";
constexpr std::size_t magic_len = 6;
constexpr std::size_t alignment = 64;  // numpy aligns the data start to 64 bytes
// numpy >= 1.24 leaves room after the dict so the growth axis can be rewritten in place.
constexpr std::size_t growth_axis_max_digits = 21;
// Large I/O is split so no single fread/fwrite call is huge and errors are found early.
constexpr std::size_t io_chunk = std::size_t{64} << 20;

struct dtype_info {
  dtype type;
  std::string_view name;
  std::string_view descr;
  std::size_t size;
  char kind;  // numpy kind letter: b, i, u, f
};

constexpr std::array<dtype_info, 11> dtypes = {{
    {dtype::b1, "bool", "|b1", 1, 'b'},
    {dtype::i8, "int8", "|i1", 1, 'i'},
    {dtype::u8, "uint8", "|u1", 1, 'u'},
    {dtype::i16, "int16", "<i2", 2, 'i'},
    {dtype::u16, "uint16", "<u2", 2, 'u'},
    {dtype::i32, "int32", "<i4", 4, 'i'},
    {dtype::u32, "uint32", "<u4", 4, 'u'},
    {dtype::i64, "int64", "<i8", 8, 'i'},
    {dtype::u64, "uint64", "<u8", 8, 'u'},
    {dtype::f32, "float32", "<f4", 4, 'f'},
    {dtype::f64, "float64", "<f8", 8, 'f'},
}};

const dtype_info& info_of(dtype t) {
  for (const auto& d : dtypes)
    if (d.type == t) return d;
  throw usage_error("invalid dtype value " + std::to_string(static_cast<int>(t)));
}

std::string supported_names() {
  std::string s;
  for (const auto& d : dtypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw input_error(path.string() + ": " + what);
}

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

file_ptr open_for_reading(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(path, "is a directory, not a .npy file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int err = errno;
    if (err == ENOENT) fail(path, "no such file");
    fail(path, std::string("cannot open for reading: ") + std::strerror(err));
  }
  return file_ptr(f);
}

std::uint64_t file_size_of(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot determine file size: " + ec.message());
  return size;
}

// Header text made safe to quote in a one-line error message.
std::string quoted_header(std::string_view text) {
  constexpr std::size_t max_shown = 200;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (text.size() > max_shown) out += "...";
  return out;
}

// --- A parser for the Python literal subset numpy writes in headers ----------------------------

struct py_value {
  enum class kind { string, boolean, integer, none, tuple } k = kind::none;
  std::string str;
  bool boolean = false;
  std::int64_t integer = 0;
  std::vector<py_value> items;
};

class literal_parser {
 public:
  explicit literal_parser(std::string_view text) : s_(text) {}

  // Parses the whole text as one dict; returns its (key, value) pairs in order.
  std::vector<std::pair<std::string, py_value>> parse_dict() {
    std::vector<std::pair<std::string, py_value>> out;
    expect('{');
    skip_ws();
    while (peek() != '}') {
      if (peek() != '\'' && peek() != '"') error("expected a quoted key");
      std::string key = parse_string();
      expect(':');
      out.emplace_back(std::move(key), parse_value());
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        error("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the closing '}'");
    return out;
  }

  std::string problem;  // set when parsing failed

 struct parse_failure {};

 private:

  [[noreturn]] void error(const std::string& what) {
    problem = what + " at offset " + std::to_string(pos_);
    throw parse_failure{};
  }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    skip_ws();
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  bool take_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    const std::size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
      return false;
    pos_ = end;
    return true;
  }

  std::string parse_string() {
    const char q = s_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) error("unterminated string");
      const char c = s_[pos_++];
      if (c == q) return out;
      if (c == '\\') {
        if (pos_ >= s_.size()) error("unterminated string");
        out += s_[pos_++];
      } else {
        out += c;
      }
    }
  }

  std::int64_t parse_integer() {
    bool negative = false;
    if (peek() == '-' || peek() == '+') negative = s_[pos_++] == '-';
    if (!std::isdigit(static_cast<unsigned char>(peek()))) error("expected a number");
    std::uint64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const unsigned d = static_cast<unsigned>(s_[pos_++] - '0');
      if (v > (static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - d) / 10)
        error("number too large");
      v = v * 10 + d;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long suffix in old files
    const auto sv = static_cast<std::int64_t>(v);
    return negative ? -sv : sv;
  }

  py_value parse_value() {
    skip_ws();
    py_value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.k = py_value::kind::string;
      v.str = parse_string();
    } else if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      ++pos_;
      v.k = py_value::kind::tuple;
      skip_ws();
      while (peek() != close) {
        v.items.push_back(parse_value());
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          skip_ws();
        } else if (peek() != close) {
          error(std::string("expected ',' or '") + close + "'");
        }
      }
      ++pos_;
    } else if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) {
      v.k = py_value::kind::integer;
      v.integer = parse_integer();
    } else if (take_word("True")) {
      v.k = py_value::kind::boolean;
      v.boolean = true;
    } else if (take_word("False")) {
      v.k = py_value::kind::boolean;
    } else if (take_word("None")) {
      v.k = py_value::kind::none;
    } else {
      error("unexpected character");
    }
    return v;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

std::optional<std::vector<std::pair<std::string, py_value>>> try_parse_dict(std::string_view text,
                                                                           std::string& problem) {
  literal_parser p(text);
  try {
    return p.parse_dict();
  } catch (const literal_parser::parse_failure&) {
    problem = p.problem;
    return std::nullopt;
  }
}

dtype parse_descr(const fs::path& path, const std::string& descr) {
  const auto bad = [&](const std::string& why) -> dtype {
    fail(path, "unsupported dtype '" + descr + "'" + why + " (supported: " + supported_names() + ")");
  };
  if (descr.size() < 3) bad("");
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') bad("");
  const char kind = descr[1];
  const std::string size_text = descr.substr(2);
  if (size_text.find_first_not_of("0123456789") != std::string::npos || size_text.size() > 2) bad("");
  const std::size_t size = std::stoul(size_text);
  for (const auto& d : dtypes) {
    if (d.kind != kind || d.size != size) continue;
    // Byte order only matters for multi-byte types; those must be little-endian.
    if (size > 1) {
      if (order == '>')
        fail(path, "big-endian dtype '" + descr +
                       "' is not supported (soac reads little-endian data only; save with "
                       "arr.astype('<" + std::string(1, kind) + size_text + "'))");
      if (order == '|') bad(" (byte order '|' is invalid for a multi-byte type)");
    }
    return d.type;
  }
  return bad("");
}

std::string bytes_of(const npy_header& h, std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes of " + std::string(dtype_name(h.type)) +
         " data (shape " + shape_string(h.shape) + ")";
}

}  // namespace

// --- dtype helpers --------------------------------------------------------------------------------

std::size_t dtype_size(dtype t) { return info_of(t).size; }
std::string_view dtype_name(dtype t) { return info_of(t).name; }
std::string_view dtype_descr(dtype t) { return info_of(t).descr; }

dtype parse_dtype_name(std::string_view name) {
  for (const auto& d : dtypes)
    if (d.name == name) return d.type;
  throw usage_error("unknown dtype '" + std::string(name) + "' (known: " + supported_names() + ")");
}

std::string shape_string(std::span<const std::int64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::int64_t npy_header::element_count() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

std::size_t npy_header::data_bytes() const {
  return static_cast<std::size_t>(element_count()) * dtype_size(type);
}

// --- reading --------------------------------------------------------------------------------------

npy_header read_npy_header(const fs::path& path) {
  file_ptr f = open_for_reading(path);
  const std::uint64_t size = file_size_of(path);

  unsigned char pre[12] = {};
  const std::size_t pre_len = std::fread(pre, 1, static_cast<std::size_t>(std::min<std::uint64_t>(size, 12)), f.get());
  if (pre_len != std::min<std::uint64_t>(size, 12)) fail(path, "read error in the header");

  const std::size_t cmp = std::min(pre_len, magic_len);
  if (std::memcmp(pre, magic, cmp) != 0 || size == 0) {
    if (size == 0) fail(path, "empty file (0 bytes), not a .npy file (bad magic)");
    fail(path, "not a .npy file (bad magic)");
  }
  if (pre_len < magic_len + 2)
    fail(path, "truncated: file is only " + std::to_string(size) +
                   " bytes, too short for the .npy magic and version");

  npy_header h;
  h.major_version = pre[6];
  const int minor = pre[7];
  if ((h.major_version < 1 || h.major_version > 3) || minor != 0)
    fail(path, "unsupported .npy format version " + std::to_string(h.major_version) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");

  // Version 1.0 stores the header length as u16, 2.0 and 3.0 as u32 (all little-endian).
  const std::size_t prelude = h.major_version == 1 ? 10 : 12;
  if (pre_len < prelude)
    fail(path, "truncated header: file is only " + std::to_string(size) +
                   " bytes, too short for the header length field");
  std::uint64_t header_len = std::uint64_t{pre[8]} | std::uint64_t{pre[9]} << 8;
  if (prelude == 12) header_len |= std::uint64_t{pre[10]} << 16 | std::uint64_t{pre[11]} << 24;
  if (prelude + header_len > size)
    fail(path, "truncated header: header length " + std::to_string(header_len) +
                   " runs past the end of the file (" + std::to_string(size) + " bytes)");

  std::string text(static_cast<std::size_t>(header_len), '\0');
  if (std::fseek(f.get(), static_cast<long>(prelude), SEEK_SET) != 0 ||
      std::fread(text.data(), 1, text.size(), f.get()) != text.size())
    fail(path, "read error in the header");
  h.data_offset = prelude + static_cast<std::size_t>(header_len);

  std::string problem;
  const auto dict = try_parse_dict(text, problem);
  const auto bad_header = [&](const std::string& why) {
    fail(path, "invalid .npy header: " + why + " (header: " + quoted_header(text) + ")");
  };
  if (!dict) bad_header("not a valid dict literal: " + problem);

  const py_value* descr = nullptr;
  const py_value* fortran = nullptr;
  const py_value* shape = nullptr;
  for (const auto& [key, value] : *dict) {
    if (key == "descr") descr = &value;
    if (key == "fortran_order") fortran = &value;
    if (key == "shape") shape = &value;
  }
  if (!descr) bad_header("missing key 'descr'");
  if (!fortran) bad_header("missing key 'fortran_order'");
  if (!shape) bad_header("missing key 'shape'");
  if (descr->k != py_value::kind::string)
    bad_header("'descr' is not a simple dtype string (structured dtypes are not supported)");
  if (fortran->k != py_value::kind::boolean) bad_header("'fortran_order' is not True or False");
  if (shape->k != py_value::kind::tuple) bad_header("'shape' is not a tuple");

  h.type = parse_descr(path, descr->str);

  for (const auto& d : shape->items) {
    if (d.k != py_value::kind::integer) bad_header("'shape' holds something other than integers");
    if (d.integer < 0)
      fail(path, "negative dimension " + std::to_string(d.integer) + " in shape");
    h.shape.push_back(d.integer);
  }
  // Fortran order of 0-d or 1-d data is the same layout as C order; anything else is not.
  if (fortran->boolean && h.shape.size() > 1)
    fail(path, "fortran_order is True for a " + std::to_string(h.shape.size()) +
                   "-d array (shape " + shape_string(h.shape) +
                   "); only C order is supported (save np.ascontiguousarray(arr))");

  // Guard the byte count against overflow before trusting it.
  std::uint64_t bytes = dtype_size(h.type);
  for (const auto d : h.shape) {
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
      fail(path, "shape " + shape_string(h.shape) + " is too large");
    bytes *= static_cast<std::uint64_t>(d);
  }
  const std::uint64_t follow = size - h.data_offset;
  if (follow < bytes)
    fail(path, "truncated: header promises " + bytes_of(h, bytes) + " but only " + std::to_string(follow) +
                   " bytes follow");
  if (follow > bytes)
    fail(path, std::to_string(follow - bytes) + " unexpected trailing bytes after the " + bytes_of(h, bytes));
  return h;
}

void read_npy_range(const fs::path& path, const npy_header& header, std::size_t offset, std::size_t bytes, void* dst) {
  const std::size_t total = header.data_bytes();
  if (offset > total || bytes > total - offset)
    fail(path, "bytes " + std::to_string(offset) + " to " + std::to_string(offset + bytes) + " asked of its " + std::to_string(total) +
                   " bytes of data");
  file_ptr f = open_for_reading(path);
  if (::fseeko(f.get(), static_cast<off_t>(header.data_offset + offset), SEEK_SET) != 0)
    fail(path, std::string("cannot seek to the data: ") + std::strerror(errno));
  auto* out = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < bytes) {
    const std::size_t want = std::min(io_chunk, bytes - done);
    const std::size_t got = std::fread(out + done, 1, want, f.get());
    done += got;
    if (got != want) {
      if (std::ferror(f.get())) fail(path, std::string("read error: ") + std::strerror(errno));
      fail(path, "truncated: header promises " + bytes_of(header, total) + " but only " +
                     std::to_string(offset + done) + " bytes follow");
    }
  }
}

void read_npy_data(const fs::path& path, const npy_header& header, void* dst) {
  read_npy_range(path, header, 0, header.data_bytes(), dst);
}

namespace detail {

void throw_dtype_mismatch(const fs::path& path, dtype found, dtype expected) {
  fail(path, "has dtype " + std::string(dtype_name(found)) + ", expected " +
                 std::string(dtype_name(expected)));
}

std::vector<bool> read_bool_data(const fs::path& path, const npy_header& header) {
  std::vector<unsigned char> raw(header.data_bytes());
  read_npy_data(path, header, raw.data());
  return std::vector<bool>(raw.begin(), raw.end());
}

}  // namespace detail

// --- writing --------------------------------------------------------------------------------------

std::string npy_header_bytes(dtype type, std::span<const std::int64_t> shape) {
  // The dict exactly as numpy formats it: sorted keys, a trailing ", ", growth-axis room.
  std::string dict = "{'descr': '" + std::string(dtype_descr(type)) +
                     "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  if (!shape.empty()) {
    const std::size_t digits = std::to_string(shape[0]).size();
    if (digits < growth_axis_max_digits) dict.append(growth_axis_max_digits - digits, ' ');
  }
  // numpy always pads with at least one space, then '\n', so the data starts 64-aligned.
  const auto padded = [&](std::size_t prelude) {
    const std::size_t hlen = dict.size() + 1;
    return hlen + alignment - (prelude + hlen) % alignment;
  };
  std::size_t prelude = 10;
  std::size_t header_len = padded(prelude);
  if (header_len > 0xffff) {
    prelude = 12;
    header_len = padded(prelude);
  }
  std::string head(magic, magic_len);
  head += static_cast<char>(prelude == 10 ? 1 : 2);
  head += '\0';
  for (std::size_t i = 0; i < prelude - 8; ++i) head += static_cast<char>((header_len >> (8 * i)) & 0xff);
  head += dict;
  head.append(header_len - dict.size() - 1, ' ');
  head += '\n';
  return head;
}

void write_npy(const fs::path& path, dtype type, std::span<const std::int64_t> shape,
               const void* data) {
  npy_header h;
  h.type = type;
  h.shape.assign(shape.begin(), shape.end());
  for (const auto d : shape)
    if (d < 0) throw usage_error(path.string() + ": cannot write negative dimension " + std::to_string(d));
  if (!data && h.data_bytes() != 0) throw usage_error(path.string() + ": no data to write");
  const std::string head = npy_header_bytes(type, shape);

  std::FILE* raw = std::fopen(path.c_str(), "wb");
  if (!raw) fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  file_ptr f(raw);
  // On failure remove the partial file so nothing later mistakes it for a complete array.
  const auto write_failed = [&](const std::string& what) {
    const int err = errno;
    f.reset();
    std::error_code ec;
    fs::remove(path, ec);
    fail(path, what + ": " + std::strerror(err));
  };
  if (std::fwrite(head.data(), 1, head.size(), f.get()) != head.size())
    write_failed("write failed in the header");
  const std::size_t total = h.data_bytes();
  const auto* in = static_cast<const char*>(data);
  for (std::size_t done = 0; done < total;) {
    const std::size_t n = std::min(io_chunk, total - done);
    if (std::fwrite(in + done, 1, n, f.get()) != n)
      write_failed("write failed after " + std::to_string(done) + " of " + std::to_string(total) +
                   " data bytes");
    done += n;
  }
  if (std::fflush(f.get()) != 0) write_failed("write failed");
  if (std::fclose(f.release()) != 0) {
    const int err = errno;
    std::error_code ec;
    fs::remove(path, ec);
    fail(path, std::string("write failed on close: ") + std::strerror(err));
  }
}

}  // namespace soac::datasets
