#include "datasets/futhark_data.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <system_error>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/text_reader.hpp"

namespace soac::datasets {

namespace fs = std::filesystem;

namespace {

// The binary format stores the rank in one byte; text nesting is held to the same bound (which
// also bounds the parser's recursion).
constexpr std::size_t max_rank = 255;

struct type_info {
  std::string_view name;
  std::size_t bytes;
  char kind;  // 'i' signed, 'u' unsigned, 'f' float, 'b' bool
};
constexpr type_info type_table[] = {{"i8", 1, 'i'},  {"i16", 2, 'i'}, {"i32", 4, 'i'}, {"i64", 8, 'i'},
                                    {"u8", 1, 'u'},  {"u16", 2, 'u'}, {"u32", 4, 'u'}, {"u64", 8, 'u'},
                                    {"f16", 2, 'f'}, {"f32", 4, 'f'}, {"f64", 8, 'f'}, {"bool", 1, 'b'}};

const type_info* find_type(std::string_view name) {
  for (const auto& t : type_table)
    if (t.name == name) return &t;
  return nullptr;
}

// The binary header's 4-character spelling: the name right-aligned ("  i8", " f32", "bool").
std::string binary_type_name(std::string_view name) { return std::string(4 - name.size(), ' ') + std::string(name); }

std::string shape_text(std::span<const std::int64_t> shape, std::string_view type) {
  std::string out;
  for (const auto d : shape) {
    out += '[';
    out += std::to_string(d);
    out += ']';
  }
  out += type;
  return out;
}

// Elements of a shape, or -1 when a dimension is negative or the product does not fit 63 bits.
// A dimension of 0 makes it 0 whatever the others are ([0][2^62][2^62] holds nothing).
std::int64_t product(std::span<const std::int64_t> shape) {
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; })) return -1;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  std::int64_t n = 1;
  for (const auto d : shape) {
    if (n > std::numeric_limits<std::int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

// IEEE half precision, which has no C++ type here: bits to float (exact) and double to bits
// (rounded to nearest, ties to even, like a float conversion).
float half_to_float(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  }
  return (h & 0x8000) != 0 ? -v : v;
}

// The smallest magnitude that rounds to infinity: halfway between 65504 (the largest half) and 2^16.
constexpr double half_overflow = 65520.0;

std::uint16_t half_from_double(double v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  const double a = std::fabs(v);
  if (a >= half_overflow) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal: a multiple of 2^-24. nearbyint rounds ties to even in the default mode; 1024 is
    // the smallest normal, whose bits are the same number.
    return sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e = 0;
  const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int exp = e - 1;
  double man = std::nearbyint((2 * f - 1) * 1024);  // exact before rounding
  if (man == 1024) {
    man = 0;
    ++exp;
  }
  return sign | static_cast<std::uint16_t>((exp + 15) << 10) | static_cast<std::uint16_t>(man);
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Grows `data` to hold `bytes` more, asking the host for the memory first when the step is big
// (a text file of one-character numbers holds up to four times its size as i64 elements).
void reserve_more(std::vector<std::byte>& data, std::size_t bytes, const fs::path& path) {
  if (data.size() + bytes <= data.capacity()) return;
  const std::size_t want = std::max(data.size() + bytes, data.capacity() * 2);
  require_host_memory(want - data.capacity(), "the values of " + path.string());
  data.reserve(want);
}

// Spaces, newlines and `--` comments; true when a value follows.
bool skip_separators(text_reader& in) {
  for (;;) {
    in.skip_space();
    const auto rest = in.rest();
    if (!rest.starts_with("--")) return !rest.empty();
    const auto nl = rest.find('\n');
    in.advance(nl == std::string_view::npos ? rest.size() : nl + 1);
  }
}

bool is_digit_in(int base, char c) {
  if (base == 2) return c == '0' || c == '1';
  if (base == 16) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  return c >= '0' && c <= '9';
}
int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}
bool is_word_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}

// What a text token looks like in a message: the characters up to the next space or bracket.
std::string_view token_at(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && n < 60 && !std::strchr(" \t\r\n\v\f,[]()", s[n])) ++n;
  return s.substr(0, std::max<std::size_t>(n, std::min<std::size_t>(1, s.size())));
}

// The decimal exponent of a literal's leading digit (1.5e3: 3, 0.01: -2), or nullopt for zero:
// tells an overflow from an underflow when a conversion reports its value out of range.
std::optional<std::int64_t> decimal_magnitude(std::string_view whole, std::string_view frac, std::string_view exp) {
  std::int64_t e = 0;
  bool neg = false;
  for (const char c : exp) {
    if (c == '-') neg = true;
    else if (c >= '0' && c <= '9') e = std::min<std::int64_t>(e * 10 + (c - '0'), 1'000'000'000);
  }
  if (neg) e = -e;
  for (std::size_t i = 0; i < whole.size(); ++i)
    if (whole[i] != '0') return e + static_cast<std::int64_t>(whole.size() - 1 - i);
  for (std::size_t i = 0; i < frac.size(); ++i)
    if (frac[i] != '0') return e - static_cast<std::int64_t>(i + 1);
  return std::nullopt;
}

// `text` (validated: [-]digits[.digits][e[+-]digits]) as F; false when the value overflows F.
// A value below F's smallest subnormal becomes zero (or the nearest subnormal) as in C.
template <class F>
bool to_float(const std::string& text, bool huge, F& out) {
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, out);
  if (r.ec == std::errc{} && r.ptr == end) return !std::isinf(out);
  if (r.ec != std::errc::result_out_of_range || huge) return false;
  long double wide = 0;  // an underflow, which from_chars may report rather than round
  const auto w = std::from_chars(text.data(), end, wide);
  out = w.ec == std::errc{} ? static_cast<F>(wide) : (text.front() == '-' ? -F(0) : F(0));
  return true;
}

// Reads the text values of one file through a text_reader (the cursor, the line and column).
class text_parser {
 public:
  text_parser(text_reader& in, const fs::path& path) : in_(in), path_(path) {}

  // The value at the cursor, whose first character is not a binary value's 'b'.
  futhark_value value() {
    futhark_value v;
    const auto [type, shape] = element(v.data, 0);
    v.type = std::string(type->name);
    v.shape = shape;
    return v;
  }

 private:
  struct parsed {
    const type_info* type;
    std::vector<std::int64_t> shape;
  };

  [[noreturn]] void fail_at(text_reader::position p, const std::string& message) const { in_.fail_at(p, message); }

  // A value (scalar, array or empty(...)) whose elements are appended to `data`; depth is the
  // number of brackets around it.
  parsed element(std::vector<std::byte>& data, std::size_t depth) {
    const auto start = in_.here();
    const auto rest = in_.rest();
    if (rest.starts_with('[')) return array(data, depth);
    if (rest.starts_with("empty(")) return empty(depth);
    if (rest.starts_with('"')) fail_at(start, "string literals are not supported (Futhark reads them as u8 arrays)");
    std::array<std::byte, 8> bytes{};
    const type_info* type = primitive(bytes);
    reserve_more(data, type->bytes, path_);
    data.insert(data.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(type->bytes));
    return {type, {}};
  }

  parsed array(std::vector<std::byte>& data, std::size_t depth) {
    const auto open = in_.here();
    const auto at = [&] { return std::to_string(open.line) + ":" + std::to_string(open.column); };
    if (depth + 1 > max_rank) fail_at(open, "more than " + std::to_string(max_rank) + " nested arrays");
    in_.advance(1);
    parsed row{};
    std::int64_t n = 0;
    for (;;) {
      if (!skip_separators(in_)) fail("the array opened at " + at() + " is not closed: the file ends");
      if (in_.rest().starts_with(']')) {
        if (n == 0) fail_at(open, "an empty array [] has no type; write it as empty([0]TYPE), e.g. empty([0]i32)");
        break;
      }
      const auto here = in_.here();
      parsed e = element(data, depth + 1);
      if (n == 0) {
        row = std::move(e);
      } else if (e.type != row.type) {
        fail_at(here, "element " + std::to_string(n + 1) + " of the array opened at " + at() + " is " + std::string(e.type->name) +
                          ", element 1 is " + std::string(row.type->name) + " (an array's elements have one type)");
      } else if (e.shape != row.shape) {
        fail_at(here, "row " + std::to_string(n + 1) + " of the array opened at " + at() + " has shape " +
                          shape_text(e.shape, e.type->name) + ", row 1 has " + shape_text(row.shape, row.type->name) +
                          " (a ragged array)");
      }
      ++n;
      if (!skip_separators(in_)) fail("the array opened at " + at() + " is not closed: the file ends");
      const auto rest = in_.rest();
      if (rest.starts_with(',')) {
        in_.advance(1);
      } else if (!rest.starts_with(']')) {
        fail("expected ',' or ']' after element " + std::to_string(n) + " of the array opened at " + at() + ", found " +
             quoted(token_at(rest)));
      }
    }
    in_.advance(1);  // ']'
    parsed out{row.type, {n}};
    out.shape.insert(out.shape.end(), row.shape.begin(), row.shape.end());
    return out;
  }

  // empty([d1]...[dn]TYPE), written without spaces, with a dimension of 0.
  parsed empty(std::size_t depth) {
    const auto start = in_.here();
    in_.advance(6);
    std::vector<std::int64_t> shape;
    while (in_.rest().starts_with('[')) {
      in_.advance(1);
      const auto rest = in_.rest();
      std::size_t i = 0;
      std::int64_t d = 0;
      while (i < rest.size() && (is_digit_in(10, rest[i]) || (i > 0 && rest[i] == '_'))) {
        if (rest[i] != '_') {
          if (d > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("a dimension of empty(...) is too large");
          d = d * 10 + (rest[i] - '0');
        }
        ++i;
      }
      if (i == 0 || i >= rest.size() || rest[i] != ']')
        fail("expected a dimension (a non-negative integer, then ']') in empty(...), found " + quoted(token_at(rest)));
      in_.advance(i + 1);
      shape.push_back(d);
      if (depth + shape.size() > max_rank) fail_at(start, "more than " + std::to_string(max_rank) + " dimensions");
    }
    const auto rest = in_.rest();
    std::size_t n = 0;
    while (n < rest.size() && rest[n] >= 'a' && rest[n] <= 'z') ++n;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
    const type_info* type = find_type(rest.substr(0, n));
    if (type == nullptr)
      fail("expected a type (i8 ... u64, f16, f32, f64 or bool) in empty(...), found " + quoted(token_at(rest)));
    if (n >= rest.size() || rest[n] != ')') fail("expected ')' to close empty(...), found " + quoted(token_at(rest.substr(n))));
    in_.advance(n + 1);
    if (product(shape) != 0)
      fail_at(start, "empty(" + shape_text(shape, type->name) + ") needs a dimension of 0 (write a non-empty array with [...])");
    return {type, shape};
  }

  [[noreturn]] void fail(const std::string& message) const { in_.fail(message); }

  // A number, true, false, or a special float (f32.nan, f64.inf, -f16.inf), stored little-endian
  // in `out`; the cursor moves past it.
  const type_info* primitive(std::array<std::byte, 8>& out) {
    const auto start = in_.here();
    const auto s = in_.rest();
    const auto word = [&](std::string_view w) { return s.starts_with(w) && (s.size() == w.size() || !is_word_char(s[w.size()])); };
    for (const bool truth : {true, false}) {
      if (word(truth ? "true" : "false")) {
        in_.advance(truth ? 4 : 5);
        out[0] = std::byte{static_cast<unsigned char>(truth)};
        return find_type("bool");
      }
    }
    for (const std::string_view t : {"f16", "f32", "f64"}) {
      for (const std::string_view special : {".nan", ".inf", "-.inf"}) {
        const bool minus = special.front() == '-';
        const std::string text = (minus ? "-" : "") + std::string(t) + std::string(special.substr(minus ? 1 : 0));
        if (!word(text)) continue;
        const double v = special.ends_with("nan") ? std::numeric_limits<double>::quiet_NaN()
                                                   : (minus ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
        in_.advance(text.size());
        return store_float(find_type(t), v, out);
      }
    }

    std::size_t i = 0;
    const bool negative = !s.empty() && s[0] == '-';
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) ++i;
    int base = 10;
    if (s.substr(i).starts_with("0x")) base = 16;
    if (s.substr(i).starts_with("0b")) base = 2;
    if (base != 10) i += 2;
    if (i >= s.size() || !is_digit_in(base, s[i])) {
      if (base != 10) fail_at(start, "expected a digit after " + quoted(s.substr(0, i)));
      fail_at(start, "expected a value (a number, true, false, '[' or empty(...)), found " + quoted(token_at(s)));
    }
    // Digits with underscores after the first, kept without them.
    const auto digits = [&](std::string& into) {
      for (; i < s.size() && (is_digit_in(base, s[i]) || s[i] == '_'); ++i)
        if (s[i] != '_') into += s[i];
    };
    std::string whole, frac, exp;
    digits(whole);
    bool is_float = false;
    if (base == 10 && i < s.size() && s[i] == '.') {
      is_float = true;
      ++i;
      if (i >= s.size() || !is_digit_in(10, s[i])) fail_at(start, "expected a digit after the '.' in " + quoted(token_at(s)));
      digits(frac);
    }
    if (base == 10 && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      is_float = true;
      ++i;
      if (i < s.size() && (s[i] == '-' || s[i] == '+')) exp += s[i++];
      if (i >= s.size() || !is_digit_in(10, s[i])) fail_at(start, "expected the exponent's digits in " + quoted(token_at(s)));
      digits(exp);
    }
    std::size_t suffix_end = i;
    while (suffix_end < s.size() && ((s[suffix_end] >= 'a' && s[suffix_end] <= 'z') || (s[suffix_end] >= '0' && s[suffix_end] <= '9')))
      ++suffix_end;
    const std::string_view suffix = s.substr(i, suffix_end - i);
    const std::string_view literal = s.substr(0, suffix_end);
    if (suffix_end < s.size() && is_word_char(s[suffix_end]))
      fail_at(start, "unexpected " + quoted(s.substr(suffix_end, 1)) + " after the number " + quoted(literal));
    const type_info* type = suffix.empty() ? find_type(is_float ? "f64" : "i32") : find_type(suffix);
    if (type == nullptr || type->kind == 'b')
      fail_at(start, "unknown type suffix " + quoted(suffix) + " in " + quoted(literal) +
                         " (a number ends in i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64 or nothing)");
    if (is_float && type->kind != 'f')
      fail_at(start, quoted(literal) + " has a fraction or an exponent, so it cannot be " + std::string(type->name));
    if (base != 10 && type->kind == 'f')
      fail_at(start, quoted(literal) + ": a hexadecimal or binary number is an integer, it cannot be " + std::string(type->name));
    in_.advance(suffix_end);

    if (type->kind == 'f') {
      std::string text = (negative ? "-" : "") + whole;
      if (!frac.empty()) text += "." + frac;
      if (!exp.empty()) text += "e" + exp;
      const auto magnitude = decimal_magnitude(whole, frac, exp);
      const bool huge = magnitude && *magnitude > 0;
      const auto overflow = [&] { fail_at(start, quoted(literal) + " is out of range for " + std::string(type->name)); };
      if (type->name == "f32") {
        float v = 0;
        if (!to_float(text, huge, v)) overflow();
        store(out.data(), v);
        return type;
      }
      // f16 goes through the double: rounding twice differs from rounding once only for a
      // decimal within 2^-42 (relative) of a tie between two halves.
      double v = 0;
      if (!to_float(text, huge, v) || (type->name == "f16" && std::fabs(v) >= half_overflow)) overflow();
      return store_float(type, v, out);
    }

    // An integer: its magnitude, then the type's range.
    std::uint64_t magnitude = 0;
    for (const char c : whole) {
      const auto d = static_cast<std::uint64_t>(digit_value(c));
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - d) / static_cast<std::uint64_t>(base))
        fail_at(start, quoted(literal) + " is out of range for " + std::string(type->name));
      magnitude = magnitude * static_cast<std::uint64_t>(base) + d;
    }
    const unsigned bits = static_cast<unsigned>(type->bytes * 8);
    const std::uint64_t top = bits == 64 ? std::numeric_limits<std::uint64_t>::max() : (std::uint64_t{1} << bits) - 1;
    const bool fits = type->kind == 'u' ? (!negative || magnitude == 0) && magnitude <= top
                                        : magnitude <= (negative ? top / 2 + 1 : top / 2);
    if (!fits) {
      const std::string range = type->kind == 'u' ? "[0, " + std::to_string(top) + "]"
                                                  : "[-" + std::to_string(top / 2 + 1) + ", " + std::to_string(top / 2) + "]";
      fail_at(start, quoted(literal) + " is out of range for " + std::string(type->name) + " " + range);
    }
    const std::uint64_t value = negative ? ~magnitude + 1 : magnitude;  // two's complement
    std::memcpy(out.data(), &value, type->bytes);                        // little-endian: the low bytes
    return type;
  }

  static const type_info* store_float(const type_info* type, double v, std::array<std::byte, 8>& out) {
    if (type->name == "f64") store(out.data(), v);
    else if (type->name == "f32") store(out.data(), static_cast<float>(v));
    else store(out.data(), half_from_double(v));
    return type;
  }

  text_reader& in_;
  const fs::path& path_;
};

[[noreturn]] void fail_binary(const fs::path& path, std::uint64_t at, const std::string& message) {
  throw input_error(path.string() + ": at byte " + std::to_string(at) + ": " + message);
}

// The binary value at the cursor (its 'b'); the cursor moves past it.
futhark_value binary_value(text_reader& in, const fs::path& path) {
  const std::uint64_t at = in.offset();
  const auto s = in.rest();
  if (s.size() < 7)
    fail_binary(path, at, "a binary value's header (b, version, rank, 4-character type) needs 7 bytes, the file holds " +
                              std::to_string(s.size()));
  const auto version = static_cast<unsigned char>(s[1]);
  if (version != 2) fail_binary(path, at + 1, "binary format version " + std::to_string(version) + " (only version 2 is known)");
  const std::size_t rank = static_cast<unsigned char>(s[2]);
  const type_info* type = nullptr;
  for (const auto& t : type_table)
    if (binary_type_name(t.name) == s.substr(3, 4)) type = &t;
  if (type == nullptr)
    fail_binary(path, at + 3, "unknown element type " + quoted(s.substr(3, 4)) + " (\"  i8\", \" i32\", \" f32\", \"bool\", ...)");
  const std::size_t header = 7 + 8 * rank;
  if (s.size() < header)
    fail_binary(path, at + 7, "the file ends inside the shape (" + std::to_string(rank) + " dimensions of 8 bytes)");
  futhark_value v;
  v.type = std::string(type->name);
  for (std::size_t k = 0; k < rank; ++k) {
    const auto d = load<std::uint64_t>(reinterpret_cast<const std::byte*>(s.data() + 7 + 8 * k));
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail_binary(path, at + 7 + 8 * k, "dimension " + std::to_string(k + 1) + " is " + std::to_string(d) + ", more than 2^63-1");
    v.shape.push_back(static_cast<std::int64_t>(d));
  }
  const std::int64_t count = product(v.shape);
  const std::uint64_t left = s.size() - header;
  if (count < 0 || static_cast<std::uint64_t>(count) > left / type->bytes)
    fail_binary(path, at + header,
                "the file holds " + std::to_string(left) + " bytes after the header, too few for a " + shape_text(v.shape, type->name) +
                    " array" + (count < 0 ? "" : " (" + std::to_string(static_cast<std::uint64_t>(count) * type->bytes) + " bytes)"));
  const std::size_t bytes = static_cast<std::size_t>(count) * type->bytes;
  require_host_memory(bytes, "a " + shape_text(v.shape, type->name) + " array of " + path.string());
  const auto* first = reinterpret_cast<const std::byte*>(s.data() + header);
  v.data.assign(first, first + bytes);
  if (type->kind == 'b')
    for (std::size_t i = 0; i < bytes; ++i)
      if (std::to_integer<unsigned>(v.data[i]) > 1)
        fail_binary(path, at + header + i, "a bool byte is " + std::to_string(std::to_integer<unsigned>(v.data[i])) + " (only 0 and 1 are bools)");
  in.advance(header + bytes);
  return v;
}

// --- conversions for the accessors -------------------------------------------------------------

[[noreturn]] void wrong_value(const futhark_value& v, const std::string& expected) {
  const std::string where = v.file.empty() ? std::string("a value in memory") : v.file + ": value " + std::to_string(v.position);
  throw input_error(where + " is " + v.type_text() + ", expected " + expected);
}

std::string array_text(std::size_t rank, std::string_view type) {
  std::string out;
  for (std::size_t i = 0; i < rank; ++i) out += "[]";
  return out + std::string(type);
}

template <class Out>
Out element_as(const futhark_value& v, std::size_t i) {
  const std::byte* p = v.data.data() + i * futhark_element_bytes(v.type);
  const std::string_view t = v.type;
  if (t == "f16") return static_cast<Out>(half_to_float(load<std::uint16_t>(p)));
  if (t == "f32") return static_cast<Out>(load<float>(p));
  if (t == "f64") return static_cast<Out>(load<double>(p));
  if (t == "i8") return static_cast<Out>(load<std::int8_t>(p));
  if (t == "i16") return static_cast<Out>(load<std::int16_t>(p));
  if (t == "i32") return static_cast<Out>(load<std::int32_t>(p));
  if (t == "i64") return static_cast<Out>(load<std::int64_t>(p));
  if (t == "u8") return static_cast<Out>(load<std::uint8_t>(p));
  if (t == "u16") return static_cast<Out>(load<std::uint16_t>(p));
  if (t == "u32") return static_cast<Out>(load<std::uint32_t>(p));
  return static_cast<Out>(load<std::uint64_t>(p));
}

// The elements as Out, when the value has `rank` dimensions and one of the `accepted` types.
template <class Out>
std::vector<Out> elements_as(const futhark_value& v, std::size_t rank, std::initializer_list<std::string_view> accepted,
                             const std::string& expected) {
  if (v.rank() != rank || std::find(accepted.begin(), accepted.end(), v.type) == accepted.end()) wrong_value(v, expected);
  const auto n = static_cast<std::size_t>(v.element_count());
  if (v.data.size() != n * futhark_element_bytes(v.type)) wrong_value(v, expected + " (its data does not match its shape)");
  std::vector<Out> out(n);
  if (v.type == futhark_type_of<Out>()) {
    if (n != 0) std::memcpy(out.data(), v.data.data(), n * sizeof(Out));
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = element_as<Out>(v, i);
  }
  return out;
}

// --- writing ------------------------------------------------------------------------------------

// usage_error unless the parts make a value: a known type, no negative dimension, the data's
// size that of the shape, bools 0 or 1.
void validate(std::string_view type, std::span<const std::int64_t> shape, std::span<const std::byte> data) {
  const type_info* t = find_type(type);
  if (t == nullptr) throw usage_error("Futhark value: unknown type " + quoted(type));
  if (shape.size() > max_rank) throw usage_error("Futhark value: rank " + std::to_string(shape.size()) + " (at most 255)");
  const std::int64_t n = product(shape);
  if (n < 0) throw usage_error("Futhark value: shape " + shape_text(shape, t->name) + " has a negative or too large dimension");
  if (data.size() % t->bytes != 0 || data.size() / t->bytes != static_cast<std::uint64_t>(n))
    throw usage_error("Futhark value: a " + shape_text(shape, t->name) + " array has " + std::to_string(n) + " elements, its data " +
                      std::to_string(data.size()) + " bytes");
  if (t->kind == 'b' && std::any_of(data.begin(), data.end(), [](std::byte b) { return std::to_integer<unsigned>(b) > 1; }))
    throw usage_error("Futhark value: a bool byte is neither 0 nor 1");
}

void check_value(const futhark_value& v) { validate(v.type, v.shape, v.data); }

void append_float_text(std::string& out, double v, bool is_f64, float as_float, std::string_view type) {
  if (std::isnan(v)) {
    out += std::string(type) + ".nan";
  } else if (std::isinf(v)) {
    out += (v < 0 ? "-" : "") + std::string(type) + ".inf";
  } else {
    char buf[64];
    // Shortest text that reads back to the same value: of the double for f64, of the float for
    // f32 and f16 (an f16 is exactly a float, and the nearest f16 to that text is itself).
    const auto r = is_f64 ? std::to_chars(buf, buf + sizeof buf, v) : std::to_chars(buf, buf + sizeof buf, as_float);
    out.append(buf, r.ptr);
    out += type;
  }
}

void append_element_text(std::string& out, const futhark_value& v, std::size_t i) {
  const std::byte* p = v.data.data() + i * futhark_element_bytes(v.type);
  const std::string_view t = v.type;
  if (t == "bool") {
    out += std::to_integer<unsigned>(*p) != 0 ? "true" : "false";
  } else if (t == "f16") {
    const float f = half_to_float(load<std::uint16_t>(p));
    append_float_text(out, f, false, f, t);
  } else if (t == "f32") {
    const float f = load<float>(p);
    append_float_text(out, f, false, f, t);
  } else if (t == "f64") {
    append_float_text(out, load<double>(p), true, 0, t);
  } else {
    out += t.front() == 'u' ? std::to_string(element_as<std::uint64_t>(v, i)) : std::to_string(element_as<std::int64_t>(v, i));
    out += t;
  }
}

// Row-major elements [first, first + product(shape[dim:])) as nested brackets.
void append_array_text(std::string& out, const futhark_value& v, std::size_t dim, std::size_t first) {
  if (dim == v.shape.size()) return append_element_text(out, v, first);
  const auto n = static_cast<std::size_t>(v.shape[dim]);
  std::size_t stride = 1;
  for (std::size_t k = dim + 1; k < v.shape.size(); ++k) stride *= static_cast<std::size_t>(v.shape[k]);
  out += '[';
  for (std::size_t i = 0; i < n; ++i) {
    if (i != 0) out += ", ";
    append_array_text(out, v, dim + 1, first + i * stride);
  }
  out += ']';
}

}  // namespace

std::size_t futhark_element_bytes(std::string_view type) {
  const type_info* t = find_type(type);
  return t == nullptr ? 0 : t->bytes;
}

std::int64_t futhark_value::element_count() const { return product(shape); }

std::string futhark_value::type_text() const { return shape_text(shape, type); }

std::vector<float> futhark_value::f32_elements(std::size_t rank) const {
  return elements_as<float>(*this, rank, {"f32", "f16"}, array_text(rank, "f32") + " (f32 or f16, rank " + std::to_string(rank) + ")");
}

std::vector<std::int32_t> futhark_value::i32_elements(std::size_t rank) const {
  return elements_as<std::int32_t>(*this, rank, {"i32", "i16", "i8", "u16", "u8"},
                                   array_text(rank, "i32") + " (i32, i16, i8, u16 or u8, rank " + std::to_string(rank) + ")");
}

double futhark_value::f64_scalar() const {
  return elements_as<double>(*this, 0, {"f64", "f32", "f16"}, "a scalar f64 (f64, f32 or f16)").front();
}

std::int64_t futhark_value::i64_scalar() const {
  return elements_as<std::int64_t>(*this, 0, {"i64", "i32", "i16", "i8", "u32", "u16", "u8"},
                                   "a scalar i64 (i64, i32, i16, i8, u32, u16 or u8)")
      .front();
}

futhark_value make_futhark_value(std::string type, std::vector<std::int64_t> shape, std::vector<std::byte> data) {
  validate(type, shape, data);
  futhark_value v;
  v.type = std::move(type);
  v.shape = std::move(shape);
  v.data = std::move(data);
  return v;
}

std::vector<futhark_value> read_futhark_values(const fs::path& path) {
  // The whole file is read into memory (text and binary values are told apart byte by byte);
  // the copy that reading makes can double that for a moment.
  const std::uint64_t size = regular_file_size(path);
  require_host_memory(checked_bytes(size, 2, "reading " + path.string()), "reading " + path.string());
  text_reader in(path);
  text_parser text(in, path);
  std::vector<futhark_value> values;
  while (skip_separators(in)) {
    futhark_value v = in.rest().front() == 'b' ? binary_value(in, path) : text.value();
    v.file = path.string();
    v.position = values.size() + 1;
    values.push_back(std::move(v));
  }
  return values;
}

std::string futhark_values_text(std::span<const futhark_value> values) {
  std::string out;
  for (const auto& v : values) {
    check_value(v);
    if (v.element_count() == 0) {
      out += "empty(" + v.type_text() + ")";
    } else {
      append_array_text(out, v, 0, 0);
    }
    out += '\n';
  }
  return out;
}

std::string futhark_values_binary(std::span<const futhark_value> values) {
  std::string out;
  for (const auto& v : values) {
    check_value(v);
    out += 'b';
    out += char{2};
    out += static_cast<char>(v.shape.size());
    out += binary_type_name(v.type);
    for (const auto d : v.shape) append_bytes(out, static_cast<std::uint64_t>(d));
    out.append(reinterpret_cast<const char*>(v.data.data()), v.data.size());
  }
  return out;
}

void write_futhark_values(const fs::path& path, std::span<const futhark_value> values, bool binary) {
  write_file_atomically(path, binary ? futhark_values_binary(values) : futhark_values_text(values));
}

}  // namespace soac::datasets
