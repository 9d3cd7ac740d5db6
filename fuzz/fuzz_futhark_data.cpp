// Futhark's data files on any bytes (text, binary, or both mixed): what the reader accepts must
// write and read back the same, exactly in binary and in text up to NaN payloads (text has one
// NaN per type); and the accessors on every accepted value must answer or refuse cleanly.
#include <cstdint>
#include <cstring>
#include <vector>

#include "datasets/futhark_data.hpp"
#include "fuzz/common.hpp"

using namespace soac;
using datasets::futhark_value;

namespace {

bool is_nan(const futhark_value& v, std::size_t i) {
  const std::byte* p = v.data.data() + i * datasets::futhark_element_bytes(v.type);
  if (v.type == "f16") {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
  }
  if (v.type == "f32") {
    float f;
    std::memcpy(&f, p, 4);
    return f != f;
  }
  if (v.type == "f64") {
    double d;
    std::memcpy(&d, p, 8);
    return d != d;
  }
  return false;
}

bool same(const std::vector<futhark_value>& a, const std::vector<futhark_value>& b, bool exact) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].type != b[k].type || a[k].shape != b[k].shape || a[k].data.size() != b[k].data.size()) return false;
    if (b[k].position != k + 1) return false;
    if (exact || a[k].data == b[k].data) {
      if (a[k].data != b[k].data) return false;
      continue;
    }
    const std::size_t w = datasets::futhark_element_bytes(a[k].type);
    for (std::size_t i = 0; i < a[k].data.size() / w; ++i) {
      const bool nan = is_nan(a[k], i);
      if (nan != is_nan(b[k], i)) return false;
      if (!nan && std::memcmp(a[k].data.data() + i * w, b[k].data.data() + i * w, w) != 0) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = fuzz::fresh_dir("futhark");
  fuzz::write_bytes_or_abort(dir / "values", fuzz::as_text(data, size));
  std::vector<futhark_value> values;
  if (!fuzz::accepted([&] { values = datasets::read_futhark_values(dir / "values"); })) return 0;
  for (const auto& v : values)
    if (v.data.size() != static_cast<std::size_t>(v.element_count()) * datasets::futhark_element_bytes(v.type)) std::abort();
  for (const bool binary : {true, false}) {
    fuzz::accepted([&] {
      datasets::write_futhark_values(dir / "again", values, binary);
      if (!same(values, datasets::read_futhark_values(dir / "again"), binary)) std::abort();
    });
  }
  for (const auto& v : values) {
    fuzz::accepted([&] { (void)v.f32_elements(v.rank()); });
    fuzz::accepted([&] { (void)v.i32_elements(v.rank()); });
    fuzz::accepted([&] { (void)v.f64_scalar(); });
    fuzz::accepted([&] { (void)v.i64_scalar(); });
  }
  return 0;
}
