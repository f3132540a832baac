// PTX of the probe's only kernel, fgpu_spin(.param .u64 ns): it spins reading the
// GPU's %globaltimer (nanoseconds) until `ns` have passed since it started.
//
// Why a time-based spin: the kernel's device time is then the same on every GPU
// generation and clock, and equal to what fgpu's simulated driver charges for a
// kernel named `fgpu_spin` (its first parameter is the device time of one wave), so
// `spin` measures the same thing on both. Launched as one block of one thread: one
// wave on any device. PTX ISA 7.0 / sm_70 is JIT-compiled by any driver since
// CUDA 11.0 for Volta and every later architecture.
#ifndef FGPU_PROBE_SPIN_PTX_H_
#define FGPU_PROBE_SPIN_PTX_H_

namespace fgpu::probe {

inline constexpr const char* kSpinKernelName = "fgpu_spin";

inline constexpr const char kSpinPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry fgpu_spin(
    .param .u64 ns
)
{
    .reg .pred  %done;
    .reg .b64   %budget;
    .reg .b64   %start;
    .reg .b64   %now;
    .reg .b64   %elapsed;

    ld.param.u64    %budget, [ns];
    mov.u64         %start, %globaltimer;
SPIN:
    mov.u64         %now, %globaltimer;
    sub.u64         %elapsed, %now, %start;
    setp.ge.u64     %done, %elapsed, %budget;
    @!%done bra     SPIN;
    ret;
}
)";

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_SPIN_PTX_H_
