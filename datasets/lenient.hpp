// What a reader of an original program's format read the way that program reads it although a
// strict reader would refuse it: a word that C's atof reads as 0, tokens after the last number the
// program reads, bytes after the data. soac reads such files as the original does (so that the
// files the original ships run) and says so in one line; in strict mode it refuses them instead.
//
//   datasets::leniency lenient(strict, "Rodinia's kmeans");
//   lenient.note(line, "FILE:12:7: 'tcp' is not a number: read as 0 (atof)");  // throws when strict
//   if (auto line = lenient.summary()) std::cerr << *line << "\n";
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace soac::datasets {

class leniency {
 public:
  // `original` names the program whose reading soac follows, for the messages.
  explicit leniency(bool strict = false, std::string original = "the original program")
      : strict_(strict), original_(std::move(original)) {}

  bool strict() const { return strict_; }

  // A place read leniently; `unit` is its line (or record) so that several places on one line
  // count as one. `where_what` is "FILE:LINE:COLUMN: what was read and how". Strict: an input_error
  // saying so.
  void note(std::int64_t unit, const std::string& where_what) {
    if (strict_) throw input_error(where_what + " (refused by strict=1; without it soac reads the file as " + original_ + " does)");
    if (count_ > 0 && unit == last_unit_) return;
    if (count_ == 0) first_ = where_what;
    last_unit_ = unit;
    ++count_;
  }

  // Several readers' notes as one (ranks in separate processes, each reading a part): `count`
  // places in all, the first of them `first`.
  void set_summary(std::int64_t count, std::string first) {
    count_ = count;
    first_ = std::move(first);
  }

  std::int64_t count() const { return count_; }
  const std::string& first() const { return first_; }

  // One line for stderr, or nothing when every byte was read strictly.
  std::optional<std::string> summary() const {
    if (count_ == 0) return std::nullopt;
    return "soac: note: " + first_ + " (" + (count_ > 1 ? std::to_string(count_) + " places read leniently; " : std::string()) +
           "--set strict=1 refuses such input)";
  }

 private:
  bool strict_;
  std::string original_;
  std::string first_;
  std::int64_t count_ = 0, last_unit_ = 0;
};

}  // namespace soac::datasets
