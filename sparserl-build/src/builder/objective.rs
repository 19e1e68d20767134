//! The build's call into the energy phase of the search: a measured SpMV
//! kernel whose objective needs energy gets its finalists' joules per call
//! measured after the time search ([`crate::gpu_energy::apply_objective`]),
//! the pick replacing the time search's winner.

use super::BuildError;
use super::messages::Log;
use crate::descriptor::KernelDecl;
use crate::gpu::{GpuTuner, measured_epilogue};
use crate::objective::ObjectiveRecord;
use crate::search::TuneOutcome;

/// What a measured kernel's cache key adds for its objective: nothing for
/// time (keys as before objectives existed); for an objective that needs
/// energy, whether NVML can be loaded, so an entry that fell back to the
/// time pick for want of NVML is not reused once it is there.
pub(super) fn key_suffix(decl: &KernelDecl) -> &'static str {
    if !decl.objective.needs_energy() {
        ""
    } else if sparserl_rt::energy::library_present().is_ok() {
        ":energy-nvml"
    } else {
        ":energy-no-nvml"
    }
}

/// Applies `decl`'s objective to the time search's outcome `out` on
/// `tuner`'s GPU: `out.winner` and `out.gbs` become the objective's
/// pick; returns the record of the energy phase (`None` for the time
/// objective). No NVML is a message (once per process) and the time
/// pick; only a device fault is an error.
pub(super) fn apply_objective(
    log: &Log,
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
        &mut |msg| log.warn(msg),
    )
    .map_err(|source| BuildError::Search {
        kernel: decl.name.clone(),
        source,
    })?;
    out.winner = choice.winner;
    out.gbs = choice.gbs;
    if let Some(r) = &choice.record {
        log.progress(&format!("kernel `{}`: {}", decl.name, r.summary()));
    }
    Ok(choice.record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::parse_descriptor;

    fn decl(objective: &str) -> KernelDecl {
        let text = format!(
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n\n[[package.metadata.sparserl.kernel]]\n\
             name = \"k\"\nop = \"spmv\"\nvalue = \"f32\"\nobjective = {objective}\n\
             pattern = {{ kind = \"stencil\", grid = [8, 8], points = 5 }}\n"
        );
        parse_descriptor(std::path::Path::new("/p/Cargo.toml"), &text)
            .unwrap()
            .kernels[0]
            .clone()
    }

    #[test]
    fn only_energy_objectives_key_on_nvml() {
        assert_eq!(key_suffix(&decl("\"time\"")), "");
        assert_eq!(key_suffix(&decl("{ time = 1 }")), "");
        let here = if sparserl_rt::energy::library_present().is_ok() {
            ":energy-nvml"
        } else {
            ":energy-no-nvml"
        };
        assert_eq!(key_suffix(&decl("\"energy\"")), here);
        assert_eq!(key_suffix(&decl("{ time = 1, energy = 1 }")), here);
    }
}
