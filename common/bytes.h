// The bytes of a string, for the APIs that take byte spans (MACs,
// datagrams, frames): the one cast from char to uint8_t, in one place.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace pandora {

// A view of `s`'s bytes; valid as long as what `s` views is.
inline std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace pandora
