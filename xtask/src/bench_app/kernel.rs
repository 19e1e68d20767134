//! Kernels built at run time for the application benchmark and the fused
//! check: the same generator, NVRTC options and fused epilogues that
//! `sparserl-build` emits into a user crate, turned into a [`KernelSpec`].

use anyhow::{Context, Result};
use sparserl_build::codegen;
use sparserl_rt::{
    Epilogue, FusedEntry, KernelSpec, Provenance, Scalar, SpmvKernel, TunedFor, Variant,
};
use std::marker::PhantomData;

/// A kernel whose spec was generated and compiled in this process.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeKernel<T> {
    spec: &'static KernelSpec,
    _value: PhantomData<T>,
}

// SAFETY: `build` is the only constructor; it compiles the generator's own
// sources for the variant, value type `T` and epilogues into the spec.
unsafe impl<T: Scalar> SpmvKernel for RuntimeKernel<T> {
    type Value = T;
    fn spec(&self) -> &'static KernelSpec {
        self.spec
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The CUDA sources of `variant` with `epilogues` (chosen, fallback).
pub fn sources<T: Scalar>(
    variant: &Variant,
    epilogues: &[Epilogue],
) -> Result<(codegen::KernelSource, codegen::KernelSource)> {
    Ok((
        codegen::generate_with(variant, T::TYPE, epilogues)?,
        codegen::generate_fallback(T::TYPE, epilogues)?,
    ))
}

/// Compiles `variant` with `epilogues` for `arch` into a launchable kernel
/// (the process leaks the few kilobytes of its spec, as generated code
/// holds them in statics).
pub fn build<T: Scalar>(
    name: &str,
    variant: &Variant,
    epilogues: &[Epilogue],
    arch: &str,
) -> Result<RuntimeKernel<T>> {
    let (chosen, fallback) = sources::<T>(variant, epilogues)?;
    let opts: Vec<String> = sparserl_build::builder::COMPILE_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let ptx = sparserl_rt::nvrtc::compile_ptx(&chosen.source, arch, &opts)
        .with_context(|| format!("compiling {}", variant.id()))?;
    let fptx = sparserl_rt::nvrtc::compile_ptx(&fallback.source, arch, &opts)
        .context("compiling the fallback")?;
    let fused: Vec<FusedEntry> = epilogues
        .iter()
        .map(|e| FusedEntry {
            epilogue: *e,
            entry: chosen
                .fused
                .iter()
                .find(|(f, _)| f == e)
                .map(|(_, n)| leak(n.clone())),
            fallback_entry: leak(
                fallback
                    .fused
                    .iter()
                    .find(|(f, _)| f == e)
                    .map(|(_, n)| n.clone())
                    .unwrap_or_default(),
            ),
        })
        .collect();
    let spec = KernelSpec {
        name: leak(name.to_string()),
        value: T::TYPE,
        variant: *variant,
        provenance: Provenance::Measured,
        entry: leak(chosen.entry),
        source: leak(chosen.source),
        ptx: Some(leak(ptx)),
        fallback_entry: leak(fallback.entry),
        fallback_source: leak(fallback.source),
        fallback_ptx: Some(leak(fptx)),
        // Unknown statistics: dispatch keeps the tuned variant.
        tuned_for: TunedFor {
            mean_row: f64::NAN,
            cv_row: f64::NAN,
            max_over_mean: f64::NAN,
        },
        ptx_by_arch: &[],
        fused: Box::leak(fused.into_boxed_slice()),
        tuned_on: None,
    };
    Ok(RuntimeKernel {
        spec: Box::leak(Box::new(spec)),
        _value: PhantomData,
    })
}
