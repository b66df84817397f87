// Exit codes of pandora-memd. Scripts and tests rely on them; never renumber.
#pragma once

namespace pandora::memd {

inline constexpr int kExitOk = 0;              // clean shutdown (SIGTERM/SIGINT)
inline constexpr int kExitUsage = 2;           // bad flag, config file or value
inline constexpr int kExitWrongCluster = 3;    // region formatted for another cluster id
inline constexpr int kExitLayoutVersion = 4;   // region written by another layout version
inline constexpr int kExitCorruptHeader = 5;   // header checksum or fields invalid
inline constexpr int kExitSizeMismatch = 6;    // --size differs from the region's size
inline constexpr int kExitNotARegion = 7;      // existing file is not a Pandora region
inline constexpr int kExitIo = 8;              // cannot open/map/listen, disk full, ...
inline constexpr int kExitWrongNode = 9;       // region formatted for another node id
inline constexpr int kExitUnsafePermissions = 10;  // region file/directory open to other users

}  // namespace pandora::memd
