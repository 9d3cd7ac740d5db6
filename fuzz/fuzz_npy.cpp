// The .npy reader on any bytes: the header parser (a Python literal subset), the dtype, shape and
// size checks, then reading the data as the dtype the header names.
#include <cstdint>

#include "datasets/npy.hpp"
#include "fuzz/common.hpp"

using namespace soac;

namespace {

template <class T>
void read_as(const std::filesystem::path& path, const datasets::npy_header& h) {
  datasets::npy_header again;
  const auto v = datasets::read_npy<T>(path, &again);
  if (static_cast<std::int64_t>(v.size()) != h.element_count() || again.shape != h.shape) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz::fresh_dir("npy") / "a.npy";
  fuzz::write_bytes_or_abort(path, fuzz::as_text(data, size));
  fuzz::accepted([&] {
    const auto h = datasets::read_npy_header(path);
    using datasets::dtype;
    switch (h.type) {
      case dtype::b1: return read_as<bool>(path, h);
      case dtype::i8: return read_as<std::int8_t>(path, h);
      case dtype::u8: return read_as<std::uint8_t>(path, h);
      case dtype::i16: return read_as<std::int16_t>(path, h);
      case dtype::u16: return read_as<std::uint16_t>(path, h);
      case dtype::i32: return read_as<std::int32_t>(path, h);
      case dtype::u32: return read_as<std::uint32_t>(path, h);
      case dtype::i64: return read_as<std::int64_t>(path, h);
      case dtype::u64: return read_as<std::uint64_t>(path, h);
      case dtype::f32: return read_as<float>(path, h);
      case dtype::f64: return read_as<double>(path, h);
    }
  });
  return 0;
}
