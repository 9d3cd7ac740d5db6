// Reading the whitespace-separated number files of the original suites (Rodinia's graphs and
// k-means points, Parboil's tpacf points). The whole file is read into memory; every error is an
// input_error that starts with "FILE:LINE:COLUMN:", so a user can find the offending token.
//
//   datasets::text_reader in(path);
//   const auto n = in.read_int("the node count", 0, max_nodes);   // skips blank lines
//   while (in.next_on_line()) x = in.read_float("a feature");      // stays on the line
//   in.end_line("a point");                                         // nothing else may follow
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace soac::datasets {

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
  // Whitespace-separated tokens from the current position to the end (one pass, no allocation):
  // lets a reader check the counts a header announces against what the file holds before it
  // allocates anything sized by them.
  std::int64_t count_tokens_left() const;

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
