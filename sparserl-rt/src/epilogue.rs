//! Fused SpMV epilogues: what a generated kernel does with each finished
//! `y[r]` besides storing it.
//!
//! Declared per kernel in the descriptor (`epilogues = ["dot", "axpby"]`),
//! generated at build time next to the plain entry point, checked against
//! the float64 reference like every variant, and launched through
//! [`SpmvKernel::spmv_axpby`](crate::SpmvKernel::spmv_axpby),
//! [`SpmvKernel::spmv_dot`](crate::SpmvKernel::spmv_dot) and
//! [`SpmvKernel::spmv_fused`](crate::SpmvKernel::spmv_fused).

use std::fmt;

/// One fused epilogue (`A x` is the product, `coef = {alpha, beta, gamma}`
/// a [`DeviceCoefs`](crate::DeviceCoefs), `w` a weight vector):
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Epilogue {
    /// `y = alpha A x + beta y + gamma` (`beta == 0` never reads `y`).
    Axpby,
    /// `y = A x` and `dot = w . y` into a [`DeviceScalar`](crate::DeviceScalar)
    /// (CG's `p . A p` with `w = p`).
    Dot,
    /// Both: `y = alpha A x + beta y + gamma`, then `dot = w . y` (PageRank:
    /// the next dangling mass with `w` the dangling-page indicator).
    AxpbyDot,
}

impl Epilogue {
    /// Every epilogue, in a fixed order.
    pub const ALL: [Epilogue; 3] = [Epilogue::Axpby, Epilogue::Dot, Epilogue::AxpbyDot];

    /// The descriptor spelling: `axpby`, `dot`, `axpby-dot`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Epilogue::Axpby => "axpby",
            Epilogue::Dot => "dot",
            Epilogue::AxpbyDot => "axpby-dot",
        }
    }

    /// Parses the descriptor spelling.
    pub fn parse(s: &str) -> Option<Epilogue> {
        Epilogue::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// The `SPARSERL_EPILOGUE` code of the CUDA fragment (1..=3; 0 is plain).
    pub const fn code(self) -> u32 {
        match self {
            Epilogue::Axpby => 1,
            Epilogue::Dot => 2,
            Epilogue::AxpbyDot => 3,
        }
    }

    /// Suffix of the fused entry point's name: `axpby`, `dot`, `axpby_dot`.
    pub const fn suffix(self) -> &'static str {
        match self {
            Epilogue::Axpby => "axpby",
            Epilogue::Dot => "dot",
            Epilogue::AxpbyDot => "axpby_dot",
        }
    }

    /// Whether the epilogue reads `{alpha, beta, gamma}`.
    pub const fn has_axpby(self) -> bool {
        matches!(self, Epilogue::Axpby | Epilogue::AxpbyDot)
    }

    /// Whether the epilogue accumulates a dot product.
    pub const fn has_dot(self) -> bool {
        matches!(self, Epilogue::Dot | Epilogue::AxpbyDot)
    }
}

impl serde::Serialize for Epilogue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Epilogue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Epilogue::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown epilogue {s:?}, expected one of axpby, dot, axpby-dot"
            ))
        })
    }
}

impl fmt::Display for Epilogue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The entry points of one fused epilogue of a generated kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FusedEntry {
    /// The epilogue.
    pub epilogue: Epilogue,
    /// Entry point in the kernel's PTX, `None` when the tuned variant cannot
    /// fuse (nnz-split kernels add into `y` with atomics): the fallback
    /// PTX's fused entry runs instead.
    pub entry: Option<&'static str>,
    /// Entry point in the fallback PTX (a warp-per-row kernel, safe for
    /// every shape).
    pub fallback_entry: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for e in Epilogue::ALL {
            assert_eq!(Epilogue::parse(e.as_str()), Some(e));
            assert!(e.code() >= 1 && e.code() <= 3);
            assert_eq!(e.has_axpby(), e.code() & 1 == 1);
            assert_eq!(e.has_dot(), e.code() & 2 == 2);
        }
        assert_eq!(Epilogue::parse("axpy"), None);
        assert_eq!(Epilogue::AxpbyDot.suffix(), "axpby_dot");
    }
}
