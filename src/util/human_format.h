#pragma once
// Numbers for people: digit grouping and byte sizes.
#include <cstdint>
#include <string>

namespace dsv4 {

// 763205315794 -> "763,205,315,794"; negative numbers keep their sign.
std::string with_commas(std::int64_t v);
// 510286023000 -> "475.24 GiB" (binary units, two decimals; plain bytes below 1 KiB).
std::string human_bytes(std::uint64_t bytes);

}  // namespace dsv4
