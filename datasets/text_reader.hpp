// Reading the whitespace-separated number files of the original suites (Rodinia's graphs and
// k-means points, Parboil's tpacf points). The whole file is read into memory; every error is an
// input_error that starts with "FILE:LINE:COLUMN:", so a user can find the offending token.
//
//   datasets::text_reader in(path);
//   const auto n = in.read_int("the node count", 0, max_nodes);   // skips blank lines
//   while (in.next_on_line()) x = in.read_float("a feature");      // stays on the line
//   in.end_line("a point");                                         // nothing else may follow
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace soac::datasets {

// A whole text file; input_error when it is missing, a directory, not a regular file or unreadable.
std::string read_text_file(const std::filesystem::path& path);

// A part of a text file for ranks in separate processes, none of which reads the whole file: the
// lines that start in bytes [begin, end) (a line starting at `end` belongs to the next part; the
// last one runs on to its newline), so the parts of [0, size) over the processes hold each line
// once. `offset` is where the text starts in the file.
struct text_part {
  std::string text;
  std::uint64_t offset = 0;
};
text_part read_text_lines(const std::filesystem::path& path, std::uint64_t begin, std::uint64_t end);
// The number of newlines in the file's first `offset` bytes: a part's line numbers, for errors.
std::int64_t count_lines_before(const std::filesystem::path& path, std::uint64_t offset);
// The file's lines up to and including the first one for which `wanted(line)` holds, read from the
// start a chunk at a time (the whole file when none does).
std::string read_text_until_line(const std::filesystem::path& path, bool (*wanted)(std::string_view line));

// A token as it appears in an error: quoted, at most 40 characters, control characters escaped.
std::string quoted(std::string_view token);

// Calls body(line_number, line) for each line of `text`, numbered from 1, without its newline
// (and, with strip_cr, without a carriage return before it).
template <class Body>
void for_each_line(std::string_view text, bool strip_cr, Body&& body) {
  std::int64_t line_number = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (strip_cr && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    body(++line_number, line);
  }
}

class text_reader {
 public:
  // Reads the file; input_error when it is missing, a directory, or unreadable.
  explicit text_reader(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  // 1-based position of the next unread character.
  std::int64_t line() const { return line_; }
  std::int64_t column() const { return static_cast<std::int64_t>(pos_ - line_start_) + 1; }
  // Where the next unread character is, to name in a later error (fail_at).
  struct position {
    std::int64_t line = 1, column = 1;
  };
  position here() const { return {line(), column()}; }
  // Where the last token read (or scanned) began.
  position token_position() const { return {token_line_, static_cast<std::int64_t>(token_pos_ - token_line_start_) + 1}; }
  // Whitespace-separated tokens from the current position to the end (one pass, no allocation):
  // lets a reader check the counts a header announces against what the file holds before it
  // allocates anything sized by them.
  std::int64_t count_tokens_left() const;

  // Character-level access, for formats whose values are not blank-separated tokens (Futhark's
  // data files: punctuation, comments, binary blocks): the unread part of the file, its offset
  // from the start, and a move past `n` of its bytes that keeps the line and column right.
  std::string_view rest() const { return std::string_view(text_).substr(pos_); }
  std::size_t offset() const { return pos_; }
  void advance(std::size_t n);

  // Skips all whitespace, newlines included; true when a token follows.
  bool skip_space();
  // Skips spaces and tabs only; true when a token follows on the current line.
  bool next_on_line();
  // After the last token of a line: only spaces may remain before the newline (or the end of the
  // file), which is consumed. `after` names what the line held, for the error message.
  void end_line(std::string_view after);
  bool at_end() { return !skip_space(); }

  // The next token (after any whitespace, newlines included) as a number; `what` names it in
  // errors ("expected the node count (an integer), found 'x'", "... but the file ends").
  std::int64_t read_int(std::string_view what, std::int64_t lo, std::int64_t hi);
  double read_double(std::string_view what);
  float read_float(std::string_view what);
  // The next token as text.
  std::string_view read_token(std::string_view what);

  // As fscanf's %d and %f read (datasets/c_numbers.hpp): after any whitespace, the longest prefix
  // of the next token that is a number, leaving the rest of the token to the next read. An input
  // the original reads with fscanf reads the same numbers here, and where its fscanf would stop
  // (no number at the next token, or the end), these fail naming the place.
  std::int64_t scan_int(std::string_view what, std::int64_t lo, std::int64_t hi);
  float scan_float(std::string_view what);
  // scan_float that returns false where fscanf would stop (the position is then the start of the
  // token it stops at, after the whitespace; at_end() tells the end of the file).
  bool try_scan_float(float& value);
  // How many scan_int calls would succeed from here, without reading, and where fscanf would stop:
  // counts that a header announces are checked before anything sized by them is allocated.
  struct scan_count {
    std::int64_t numbers = 0;
    std::string stop;  // "LINE:COLUMN, where fscanf stops at 'x'", or "" at the end of the file
  };
  scan_count count_scannable_ints() const;

  // input_error "FILE:LINE:COLUMN: message" at the current position (or at the last token read).
  [[noreturn]] void fail(std::string_view message) const;
  [[noreturn]] void fail_at_token(std::string_view message) const;
  [[noreturn]] void fail_at(position where, std::string_view message) const;

 private:
  std::string_view token(std::string_view what);
  std::filesystem::path path_;
  std::string text_;
  std::size_t pos_ = 0, line_start_ = 0;
  std::int64_t line_ = 1;
  // Where the last token began, for errors about its value.
  std::size_t token_pos_ = 0, token_line_start_ = 0;
  std::int64_t token_line_ = 1;
};

}  // namespace soac::datasets
