// ParseSize: byte counts as people type them on the probe's command line.
//
// The probe cannot use fgpu_core's ParseByteSize (fgpu-probe must build alone on a
// GPU machine, with no fgpu library), and it accepts the short suffixes of
// coreutils (`1G`) as well.
//
// Contract
// - A non-negative decimal number, optionally with a fraction, then an optional
//   unit, case-insensitive, optionally after spaces:
//     (none) or B          bytes
//     K KiB, M MiB, G GiB, T TiB     powers of 1024 (as `head -c 1G`)
//     KB, MB, GB, TB                 powers of 1000 (SI)
// - A fraction needs a unit other than B ("1.5GiB"); the result is rounded to the
//   nearest byte. "1.5" alone is rejected: half a byte means a typo.
// - Rejects empty text, signs, exponents, junk after the unit and values above
//   UINT64_MAX. Returns false and leaves *bytes untouched on rejection.
#ifndef FGPU_PROBE_BYTE_SIZE_H_
#define FGPU_PROBE_BYTE_SIZE_H_

#include <cstdint>
#include <string_view>

namespace fgpu::probe {

bool ParseSize(std::string_view text, uint64_t* bytes);

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_BYTE_SIZE_H_
