//! The GPU source of the SpMM search: every candidate is generated,
//! compiled with NVRTC, checked against the float64 reference (poisoned Y,
//! per-row relative error) and timed through sparserl-rt's SpMM
//! measurement harness.

use crate::descriptor::SpmmDecl;
use crate::gpu::GpuTuner;
use crate::search::spmm::{SpmmSearchConfig, SpmmSource, SpmmTuneOutcome, search_spmm};
use crate::search::{SampleResult, SearchError};
use sparserl_rt::spmm::SpmmVariant;
use sparserl_rt::{Csr, RtError, ValueType};

/// Runs the measured SpMM search for declaration `s` over `matrices` (the
/// pattern's samples) on `tuner`'s GPU; `candidates` per width in order.
pub fn tune_spmm(
    tuner: &GpuTuner,
    matrices: &[&Csr],
    value: ValueType,
    s: &SpmmDecl,
    candidates: &[(usize, Vec<SpmmVariant>)],
    cfg: &SpmmSearchConfig,
) -> Result<SpmmTuneOutcome, SearchError> {
    let _ = (tuner, matrices, value, s, candidates, cfg);
    let _ = search_spmm;
    Err(SearchError::Source(RtError::InvalidArgument(
        "SpMM measurement harness not wired yet".into(),
    )))
}

#[allow(dead_code)]
fn _unused(_: &dyn SpmmSource, _: SampleResult) {}
