//! The build's call into the energy phase of the search: a measured SpMV
//! kernel whose objective needs energy gets its finalists' joules per call
//! measured after the time search ([`crate::gpu_energy::apply_objective`]),
//! the pick replacing the time search's winner.

use super::{BuildError, Builder};
use crate::descriptor::KernelDecl;
use crate::gpu::{GpuTuner, measured_epilogue};
use crate::objective::ObjectiveRecord;
use crate::search::TuneOutcome;

impl Builder {
    /// Applies `decl`'s objective to the time search's outcome `out` on
    /// `tuner`'s GPU: `out.winner` and `out.gbs` become the objective's
    /// pick; returns the record of the energy phase (`None` for the time
    /// objective). No NVML is a message (once per process) and the time
    /// pick; only a device fault is an error.
    pub(super) fn apply_objective(
        &self,
        tuner: &GpuTuner,
        decl: &KernelDecl,
        samples: &[&sparserl_rt::Csr],
        out: &mut TuneOutcome,
    ) -> Result<Option<ObjectiveRecord>, BuildError> {
        if !decl.objective.needs_energy() {
            return Ok(None);
        }
        let choice = crate::gpu_energy::apply_objective(
            tuner,
            samples,
            decl.value,
            measured_epilogue(&decl.epilogues),
            &decl.objective,
            out,
            &mut |msg| self.warn(msg),
        )
        .map_err(|source| BuildError::Search {
            kernel: decl.name.clone(),
            source,
        })?;
        out.winner = choice.winner;
        out.gbs = choice.gbs;
        if let Some(r) = &choice.record {
            self.info(&format!("kernel `{}`: {}", decl.name, r.summary()));
        }
        Ok(choice.record)
    }
}
