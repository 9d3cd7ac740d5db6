#include "core/error.hpp"

namespace soac {

cuda_error::cuda_error(int code, std::string call, std::string where, std::string cuda_message)
    : error("CUDA error in " + call + " at " + where + ": " + cuda_message),
      code_(code),
      call_(std::move(call)),
      where_(std::move(where)),
      cuda_message_(std::move(cuda_message)) {}

}  // namespace soac
