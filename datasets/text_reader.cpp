#include "datasets/text_reader.hpp"

#include "datasets/c_numbers.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

namespace soac::datasets {

namespace fs = std::filesystem;

namespace {
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::string quoted(std::string_view token) {
  std::string out = "'";
  for (std::size_t i = 0; i < token.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c >= 32 && c < 127) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (token.size() > 40) out += "...";
  return out + "'";
}

namespace {

template <class T>
bool parse_number(std::string_view text, T& value) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);  // from_chars takes no '+'
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return r.ec == std::errc{} && r.ptr == text.data() + text.size();
}
}  // namespace

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) throw input_error(path.string() + ": no such file");
  if (fs::is_directory(st)) throw input_error(path.string() + ": is a directory, not a text file");
  // A device or pipe would be read without end (/dev/zero) or wait for a writer forever.
  if (!fs::is_regular_file(st)) throw input_error(path.string() + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path.string() + ": cannot open for reading");
  std::ostringstream all;
  all << in.rdbuf();
  if (in.bad()) throw input_error(path.string() + ": read error");
  return std::move(all).str();
}

namespace {
std::ifstream open_regular(const fs::path& path, std::uint64_t* size) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) throw input_error(path.string() + ": no such file");
  if (!fs::is_regular_file(st)) throw input_error(path.string() + ": not a regular file");
  *size = fs::file_size(path, ec);
  if (ec) throw input_error(path.string() + ": cannot read its size (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path.string() + ": cannot open for reading");
  return in;
}

// Appends up to `bytes` from `in` to `out`; the number appended.
std::size_t read_some(std::ifstream& in, const fs::path& path, std::string& out, std::size_t bytes) {
  const std::size_t had = out.size();
  out.resize(had + bytes);
  in.read(out.data() + had, static_cast<std::streamsize>(bytes));
  if (in.bad()) throw input_error(path.string() + ": read error");
  const auto got = static_cast<std::size_t>(in.gcount());
  out.resize(had + got);
  return got;
}

constexpr std::size_t text_chunk = std::size_t{1} << 20;
}  // namespace

text_part read_text_lines(const fs::path& path, std::uint64_t begin, std::uint64_t end) {
  std::uint64_t size = 0;
  std::ifstream in = open_regular(path, &size);
  end = std::min(end, size);
  text_part part;
  if (begin >= end) {
    part.offset = end;
    return part;
  }
  // A part starts at `begin` only when a line does: at the file's start or after a newline.
  const std::uint64_t from = begin == 0 ? 0 : begin - 1;
  in.seekg(static_cast<std::streamoff>(from));
  std::string text;
  read_some(in, path, text, static_cast<std::size_t>(end - from));
  std::size_t start = 0;
  if (begin > 0) {
    const std::size_t nl = text.find('\n');
    if (nl == std::string::npos) {  // no line starts in the part
      part.offset = end;
      return part;
    }
    start = nl + 1;
  }
  // The last line runs on past `end` to its newline.
  for (std::size_t scanned = text.size(); text.empty() || text.back() != '\n';) {
    if (read_some(in, path, text, text_chunk) == 0) break;
    if (const std::size_t nl = text.find('\n', scanned); nl != std::string::npos) {
      text.resize(nl + 1);
      break;
    }
    scanned = text.size();
  }
  part.offset = from + start;
  part.text = text.substr(start);
  return part;
}

std::int64_t count_lines_before(const fs::path& path, std::uint64_t offset) {
  std::uint64_t size = 0;
  std::ifstream in = open_regular(path, &size);
  std::int64_t lines = 0;
  std::string chunk;
  for (std::uint64_t left = std::min(offset, size); left > 0;) {
    chunk.clear();
    const std::size_t got = read_some(in, path, chunk, static_cast<std::size_t>(std::min<std::uint64_t>(left, text_chunk)));
    if (got == 0) break;
    lines += std::count(chunk.begin(), chunk.end(), '\n');
    left -= got;
  }
  return lines;
}

std::string read_text_until_line(const fs::path& path, bool (*wanted)(std::string_view line)) {
  std::uint64_t size = 0;
  std::ifstream in = open_regular(path, &size);
  std::string text;
  std::size_t line_start = 0;
  for (;;) {
    const bool more = read_some(in, path, text, text_chunk) > 0;
    for (std::size_t nl; (nl = text.find('\n', line_start)) != std::string::npos; line_start = nl + 1)
      if (wanted(std::string_view(text).substr(line_start, nl - line_start))) {
        text.resize(nl + 1);
        return text;
      }
    if (!more) return text;
  }
}

text_reader::text_reader(fs::path path) : path_(std::move(path)), text_(read_text_file(path_)) {}

bool text_reader::skip_space() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (is_blank(c)) {
      ++pos_;
    } else {
      return true;
    }
  }
  return false;
}

void text_reader::advance(std::size_t n) {
  // Searches [pos_, end) only: a search to the end of the file would make stepping through a
  // long line quadratic.
  const auto stop = text_.begin() + static_cast<std::ptrdiff_t>(std::min(text_.size(), pos_ + n));
  for (auto it = text_.begin() + static_cast<std::ptrdiff_t>(pos_); (it = std::find(it, stop, '\n')) != stop;) {
    ++it;
    ++line_;
    line_start_ = static_cast<std::size_t>(it - text_.begin());
  }
  pos_ = static_cast<std::size_t>(stop - text_.begin());
}

bool text_reader::next_on_line() {
  while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
  return pos_ < text_.size() && text_[pos_] != '\n';
}

void text_reader::end_line(std::string_view after) {
  if (next_on_line()) {
    const std::size_t start = pos_;
    std::size_t end = start;
    while (end < text_.size() && !is_blank(text_[end]) && text_[end] != '\n') ++end;
    fail("unexpected " + quoted(std::string_view(text_).substr(start, end - start)) + " after " + std::string(after) +
         " (expected the end of the line)");
  }
  if (pos_ < text_.size()) {  // the newline
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }
}

std::string_view text_reader::token(std::string_view what) {
  if (!skip_space()) fail("expected " + std::string(what) + ", but the file ends");
  token_pos_ = pos_;
  token_line_ = line_;
  token_line_start_ = line_start_;
  while (pos_ < text_.size() && !is_blank(text_[pos_]) && text_[pos_] != '\n') ++pos_;
  return std::string_view(text_).substr(token_pos_, pos_ - token_pos_);
}

std::int64_t text_reader::count_tokens_left() const {
  std::int64_t tokens = 0;
  bool in_token = false;
  for (std::size_t i = pos_; i < text_.size(); ++i) {
    const bool space = is_blank(text_[i]) || text_[i] == '\n';
    tokens += !space && !in_token;
    in_token = !space;
  }
  return tokens;
}

std::string_view text_reader::read_token(std::string_view what) { return token(what); }

std::int64_t text_reader::read_int(std::string_view what, std::int64_t lo, std::int64_t hi) {
  const auto t = token(what);
  std::int64_t v = 0;
  if (!parse_number(t, v)) fail_at_token("expected " + std::string(what) + " (an integer), found " + quoted(t));
  if (v < lo || v > hi)
    fail_at_token(std::string(what) + " is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
  return v;
}

double text_reader::read_double(std::string_view what) {
  const auto t = token(what);
  double v = 0;
  if (!parse_number(t, v)) fail_at_token("expected " + std::string(what) + " (a number), found " + quoted(t));
  return v;
}

float text_reader::read_float(std::string_view what) {
  const auto t = token(what);
  float v = 0;
  if (!parse_number(t, v)) fail_at_token("expected " + std::string(what) + " (a number), found " + quoted(t));
  return v;
}

namespace {
// The characters fscanf skips before a number.
bool is_c_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::int64_t text_reader::scan_int(std::string_view what, std::int64_t lo, std::int64_t hi) {
  const auto t = token(what);
  const auto number = decimal_prefix(t);
  if (number.length == 0) fail_at_token("expected " + std::string(what) + " (an integer), found " + quoted(t));
  pos_ = token_pos_ + number.length;  // the rest of the token is the next read's
  if (number.value < lo || number.value > hi)
    fail_at_token(std::string(what) + " is " + std::string(t.substr(0, number.length)) + ", outside [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
  return number.value;
}

float text_reader::scan_float(std::string_view what) {
  const auto t = token(what);
  const auto number = strtof_prefix(t);
  if (number.length == 0) fail_at_token("expected " + std::string(what) + " (a number), found " + quoted(t));
  pos_ = token_pos_ + number.length;
  return number.value;
}

bool text_reader::try_scan_float(float& value) {
  if (!skip_space()) return false;
  std::size_t end = pos_;
  while (end < text_.size() && !is_blank(text_[end]) && text_[end] != '\n') ++end;
  const auto number = strtof_prefix(std::string_view(text_).substr(pos_, end - pos_));
  if (number.length == 0) return false;
  token_pos_ = pos_;
  token_line_ = line_;
  token_line_start_ = line_start_;
  pos_ += number.length;
  value = number.value;
  return true;
}

text_reader::scan_count text_reader::count_scannable_ints() const {
  scan_count out;
  std::size_t pos = pos_;
  for (;;) {
    while (pos < text_.size() && is_c_space(text_[pos])) ++pos;
    std::size_t end = pos;
    while (end < text_.size() && !is_c_space(text_[end])) ++end;
    const std::size_t used = decimal_prefix(std::string_view(text_).substr(pos, end - pos)).length;
    if (used > 0) {
      ++out.numbers;
      pos += used;
      continue;
    }
    if (pos < text_.size()) {
      std::size_t line_begin = pos;
      while (line_begin > 0 && text_[line_begin - 1] != '\n') --line_begin;
      const std::size_t column = pos - line_begin + 1;
      const auto line = 1 + std::count(text_.begin(), text_.begin() + std::ptrdiff_t(pos), '\n');
      out.stop = std::to_string(line) + ":" + std::to_string(column) + ", where fscanf stops at " +
                 quoted(std::string_view(text_).substr(pos, end - pos));
    }
    return out;
  }
}

void text_reader::fail(std::string_view message) const { fail_at(here(), message); }

void text_reader::fail_at(position where, std::string_view message) const {
  throw input_error(path_.string() + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " +
                    std::string(message));
}

void text_reader::fail_at_token(std::string_view message) const {
  fail_at({token_line_, static_cast<std::int64_t>(token_pos_ - token_line_start_) + 1}, message);
}

}  // namespace soac::datasets
