//! The runtime's error type.

use crate::csr::CsrError;
use crate::variant::ValueType;
use cudarc::driver::{DriverError, sys};
use thiserror::Error;

/// Everything that can go wrong on the device side of SparseRL.
#[derive(Debug, Error)]
pub enum RtError {
    /// The CUDA driver library (`libcuda`) could not be loaded.
    #[error(
        "no CUDA driver found; SparseRL kernels need an NVIDIA GPU and driver \
         (the driver library libcuda could not be loaded)"
    )]
    NoDriver,
    /// The driver is present but the requested device does not exist.
    #[error(
        "no CUDA device with ordinal {ordinal}: the driver reports {count} device(s); \
         check CUDA_VISIBLE_DEVICES and `nvidia-smi`"
    )]
    NoDevice {
        /// Requested device ordinal.
        ordinal: usize,
        /// Devices the driver reports.
        count: usize,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    /// The host-side CSR arrays are invalid.
    #[error("invalid sparse matrix: {0}")]
    Csr(#[from] CsrError),
    /// A vector or matrix has the wrong size for the operation.
    #[error("{what} has {found} entries, expected {expected}")]
    DimensionMismatch {
        /// Which operand (for example `"x (must have cols entries)"`).
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        found: usize,
    },
    /// The matrix has no rows or no columns.
    #[error("matrix is {rows} x {cols}; SparseRL kernels need at least one row and one column")]
    EmptyMatrix {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// The kernel was built without PTX and NVRTC could not compile it at run time.
    #[error(
        "kernel `{kernel}` has no PTX (NVRTC was unavailable at build time) and compiling \
         it at run time failed: {reason}; install the CUDA toolkit's NVRTC library or \
         rebuild on a machine that has it"
    )]
    NotCompiled {
        /// Declared kernel name.
        kernel: String,
        /// NVRTC's message.
        reason: String,
    },
    /// PTX could not be loaded or compiled.
    #[error("kernel compilation or module load failed: {0}")]
    Compile(String),
    /// NVRTC could not compile a kernel's source (or was not found).
    #[cfg(feature = "jit")]
    #[error("kernel compilation failed: {0}")]
    Nvrtc(#[source] crate::nvrtc::NvrtcError),
    /// A kernel was used with the wrong value type.
    #[error("kernel `{kernel}` was generated for {expected} values but was called with {found}")]
    WrongValueType {
        /// Declared kernel name.
        kernel: String,
        /// The kernel's value type.
        expected: ValueType,
        /// The value type it was called with.
        found: ValueType,
    },
    /// A variant's parameters are out of range.
    #[error("invalid kernel variant {variant}: {reason}")]
    InvalidVariant {
        /// Variant id.
        variant: String,
        /// First violated rule.
        reason: String,
    },
    /// The variant reads a layout that the uploaded matrix does not have.
    #[error("kernel variant {variant} cannot run on this matrix: {reason}")]
    LayoutUnavailable {
        /// Variant id.
        variant: String,
        /// Why the layout is missing.
        reason: String,
    },
    /// An operand belongs to another [`Gpu`](crate::Gpu) (another context or
    /// stream) than the one the call runs on.
    #[error(
        "{what} belongs to another Gpu (context/stream) than the one this call runs on; \
         device data may only be used with the Gpu that created it"
    )]
    ForeignOperand {
        /// Which operand.
        what: &'static str,
    },
    /// A host-synchronising call (download, scalar read, synchronize, upload
    /// from host memory) was made while the Gpu's stream is being captured
    /// into a CUDA graph.
    #[error(
        "{call} waits for or copies host memory and cannot run while the stream is being \
         captured into a CUDA graph (call it before or after `Gpu::capture`)"
    )]
    Capturing {
        /// The refused call.
        call: &'static str,
    },
    /// A fused SpMV epilogue was requested that the kernel was not generated with.
    #[error(
        "kernel `{kernel}` was generated without the `{epilogue}` epilogue: add \
         `epilogues = [\"{epilogue}\"]` to its declaration under \
         [[package.metadata.sparserl.kernel]]"
    )]
    EpilogueNotGenerated {
        /// Kernel name.
        kernel: String,
        /// The epilogue's descriptor name.
        epilogue: &'static str,
    },
    /// Every image embedded for a kernel targets a newer GPU than this one.
    #[error(
        "kernel `{kernel}` has images for {lowest} and newer only; this device is {device}: add \
         \"{device}\" to `arch` under [package.metadata.sparserl] and rebuild"
    )]
    UnsupportedDevice {
        /// Kernel name.
        kernel: String,
        /// The device's architecture.
        device: String,
        /// The lowest embedded architecture.
        lowest: String,
    },
    /// A fused epilogue's scalar disagrees with the float64 reference.
    #[error(
        "the fused dot product is off by {rel_err:.2e} (relative): got {got:e}, float64 \
         reference {want:e}"
    )]
    FusedScalar {
        /// Error relative to the sum of the terms' magnitudes.
        rel_err: f64,
        /// What the kernel computed.
        got: f64,
        /// The float64 dot of the vector it wrote.
        want: f64,
    },
    /// A solver or vector operation got an argument outside its domain.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A measurement bench has no renumbered copy of its matrix (shared:
    /// the bench keeps the first failure for every later request).
    #[error("{0}")]
    Renumbered(#[source] std::sync::Arc<RenumberedError>),
}

/// Why a measurement bench has no renumbered copy of its matrix.
#[derive(Debug, Error)]
pub enum RenumberedError {
    /// Renumbering needs a square matrix.
    #[error("a {rows} x {cols} matrix keeps its numbering (renumbering needs a square matrix)")]
    NotSquare {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// Uploading the renumbered matrix failed.
    #[error("renumbered upload failed: {0}")]
    Upload(#[source] RtError),
}

impl RtError {
    /// Whether this is a "sticky" device fault (illegal address, trap, ...)
    /// after which the CUDA context is unusable and must be recreated.
    ///
    /// Such errors must abort a measurement campaign instead of being recorded
    /// as one failed variant.
    pub fn is_context_fatal(&self) -> bool {
        match self {
            RtError::Driver(e) => is_sticky(e),
            _ => false,
        }
    }
}

/// Whether a driver error leaves the context in an unrecoverable state.
pub(crate) fn is_sticky(e: &DriverError) -> bool {
    use sys::CUresult as R;
    matches!(
        e.0,
        R::CUDA_ERROR_ILLEGAL_ADDRESS
            | R::CUDA_ERROR_LAUNCH_FAILED
            | R::CUDA_ERROR_MISALIGNED_ADDRESS
            | R::CUDA_ERROR_HARDWARE_STACK_ERROR
            | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | R::CUDA_ERROR_INVALID_PC
            | R::CUDA_ERROR_ASSERT
            | R::CUDA_ERROR_ECC_UNCORRECTABLE
            | R::CUDA_ERROR_LAUNCH_TIMEOUT
            | R::CUDA_ERROR_CONTEXT_IS_DESTROYED
            | R::CUDA_ERROR_DEINITIALIZED
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_faults_are_fatal() {
        // Only `matches!`: formatting a DriverError calls into the driver.
        let fatal = RtError::Driver(DriverError(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(fatal.is_context_fatal());
        let benign = RtError::Driver(DriverError(
            sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        ));
        assert!(!benign.is_context_fatal());
        assert!(!RtError::NoDriver.is_context_fatal());
    }

    #[test]
    fn messages_are_actionable() {
        assert!(
            RtError::NoDriver
                .to_string()
                .contains("NVIDIA GPU and driver")
        );
        let e = RtError::DimensionMismatch {
            what: "x",
            expected: 3,
            found: 2,
        };
        assert_eq!(e.to_string(), "x has 2 entries, expected 3");
        let e = RtError::NotCompiled {
            kernel: "k".into(),
            reason: "libnvrtc not found".into(),
        };
        assert!(e.to_string().contains("libnvrtc not found"));
    }
}
