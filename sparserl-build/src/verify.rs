//! The build's check of what it ships: every entry point of every image an
//! [`Entry`] embeds that the build GPU can run (PTX of an architecture not
//! above the device's, the cubin of exactly the device's), loaded from the
//! very bytes that go into the binary, is run on every tuning sample and
//! compared with the float64 reference ([`Bench::check`]: per-row relative
//! errors, poisoned or seeded `y`; fused axpby entries with
//! [`CHECK_COEFS`](sparserl_rt::measure::CHECK_COEFS), so `beta y`, `gamma`
//! and `gamma_dot dot` all count; fused dots against the float64 dot). That
//! covers the plain entry, every fused entry of the tuned variant, and the
//! fallback module's plain and fused entries, which the search never ran.
//!
//! A failure is a build error: the build stops rather than embed a kernel
//! that computes a wrong result on the machine it was built on (a kernel the
//! search measured correct and whose shipped image is wrong is a generator
//! or compiler bug, reported with the image, entry and sample).

use crate::entry::{ArchImages, Entry};
use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;
use sparserl_rt::{Bench, Csr, Epilogue, Gpu, RtError, Scalar, ValueType, Variant, tolerance};
use std::sync::Arc;

/// Why a shipped image failed its check (or could not be checked).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// An image did not load, or lacks an entry it should have.
    #[error("the {image} image does not load entry `{entry}`: {source}")]
    Load {
        /// Which image (`sm_90 PTX`, `sm_90 cubin`, ...).
        image: String,
        /// The entry point.
        entry: String,
        /// The driver's error.
        #[source]
        source: RtError,
    },
    /// An entry ran and its result is wrong (or the run failed).
    #[error("entry `{entry}` of the {image} image is wrong on sample {sample}: {why}")]
    Wrong {
        /// Which image.
        image: String,
        /// The entry point, with its epilogue.
        entry: String,
        /// Index of the sample.
        sample: usize,
        /// The error, or the failed run.
        why: String,
    },
}

/// What the check covered.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// The device, as `name (sm_XY)`.
    pub device: String,
    /// Images checked, e.g. `sm_90 PTX`.
    pub images: Vec<String>,
    /// (image, entry, sample) runs that passed.
    pub runs: usize,
    /// Largest per-row relative error seen.
    pub max_err: f64,
    /// Images of architectures this device cannot run (not checked).
    pub not_runnable: Vec<String>,
}

impl VerifyReport {
    /// One line for the build output.
    pub fn summary(&self, kernel: &str) -> String {
        let skipped = if self.not_runnable.is_empty() {
            String::new()
        } else {
            format!(
                "; not runnable here, unchecked: {}",
                self.not_runnable.join(", ")
            )
        };
        format!(
            "kernel `{kernel}`: shipped images checked on {}: {} ({} entry runs against float64, largest per-row error {:.1e}){skipped}",
            self.device,
            self.images.join(", "),
            self.runs,
            self.max_err
        )
    }
}

/// `name (sm_XY)` of `gpu`: what [`Entry::checked_on`] records.
pub fn device_label(gpu: &Gpu) -> String {
    format!("{} ({})", gpu.name(), gpu.arch())
}

/// Whether `entry` still needs checking on the device labelled `device`
/// ([`device_label`]): it carries images and was not checked there yet.
pub fn needs_check(entry: &Entry, device: &str) -> bool {
    !entry.images.is_empty() && entry.checked_on.as_deref() != Some(device)
}

/// Checks every image of `entry` that `gpu` can run on `samples` (see the
/// module documentation).
pub fn check_entry(
    gpu: &Gpu,
    entry: &Entry,
    samples: &[&Csr],
) -> Result<VerifyReport, VerifyError> {
    match entry.value {
        ValueType::F32 => check_typed::<f32>(gpu, entry, samples),
        ValueType::F64 => check_typed::<f64>(gpu, entry, samples),
    }
}

/// The loadable modules of `img` on a device of architecture number `dev`:
/// (label, chosen image, fallback image).
fn runnable(img: &ArchImages, dev: u32) -> Vec<(String, Ptx, Ptx)> {
    let Some(n) = sparserl_rt::arch_number(&img.arch) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if n <= dev {
        out.push((
            format!("{} PTX", img.arch),
            Ptx::from_src(img.ptx.clone()),
            Ptx::from_src(img.fallback_ptx.clone()),
        ));
    }
    if let Some((c, f)) = img.cubins.as_ref().filter(|_| n == dev) {
        out.push((
            format!("{} cubin", img.arch),
            Ptx::from_binary(c.clone()),
            Ptx::from_binary(f.clone()),
        ));
    }
    out
}

/// The entry points of a module with the variant each runs and its
/// epilogue: the chosen module's (`fallback = false`) or the fallback's.
fn entries_of(entry: &Entry, fallback: bool) -> Vec<(String, Variant, Option<Epilogue>)> {
    let mut out = Vec::new();
    if fallback {
        out.push((entry.fallback_entry.clone(), Variant::FALLBACK, None));
        for f in &entry.fused {
            out.push((
                f.fallback_entry.clone(),
                Variant::FUSED_FALLBACK,
                Some(f.epilogue),
            ));
        }
    } else {
        out.push((entry.entry.clone(), entry.variant, None));
        for f in &entry.fused {
            if let Some(name) = &f.entry {
                out.push((name.clone(), entry.variant, Some(f.epilogue)));
            }
        }
    }
    out
}

fn check_typed<T: Scalar>(
    gpu: &Gpu,
    entry: &Entry,
    samples: &[&Csr],
) -> Result<VerifyReport, VerifyError> {
    let (major, minor) = gpu.compute_capability();
    let dev = (major * 10 + minor) as u32;
    let mut report = VerifyReport {
        device: device_label(gpu),
        ..VerifyReport::default()
    };
    let mut benches = Benches::<T>::new(gpu, samples);
    for img in &entry.images {
        let modules = runnable(img, dev);
        if modules.is_empty() {
            report.not_runnable.push(img.arch.clone());
        }
        for (label, chosen, fallback) in modules {
            for (image, fallback_side) in [(chosen, false), (fallback, true)] {
                let module = load(gpu, image, &label)?;
                for (name, variant, ep) in entries_of(entry, fallback_side) {
                    let func = module.load_function(&name).map_err(|e| VerifyError::Load {
                        image: label.clone(),
                        entry: name.clone(),
                        source: e.into(),
                    })?;
                    let err = benches.check_all(&func, &variant, ep, &label, &name)?;
                    report.runs += samples.len();
                    report.max_err = report.max_err.max(err);
                }
            }
            report.images.push(label);
        }
    }
    Ok(report)
}

fn load(gpu: &Gpu, image: Ptx, label: &str) -> Result<Arc<CudaModule>, VerifyError> {
    // SAFETY: the context only loads the module image the build embeds; the
    // module is not registered under any name, and its functions are
    // launched through `Bench::check`, on this Gpu's stream, in its order.
    unsafe { gpu.context() }
        .load_module(image)
        .map_err(|e| VerifyError::Load {
            image: label.to_string(),
            entry: "(module)".into(),
            source: e.into(),
        })
}

/// One [`Bench`] per sample and epilogue (`None`: plain), made at first use.
struct Benches<'a, T: Scalar> {
    gpu: &'a Gpu,
    samples: &'a [&'a Csr],
    made: Vec<(Option<Epilogue>, Vec<Bench<T>>)>,
}

impl<'a, T: Scalar> Benches<'a, T> {
    fn new(gpu: &'a Gpu, samples: &'a [&'a Csr]) -> Self {
        Benches {
            gpu,
            samples,
            made: Vec::new(),
        }
    }

    fn for_epilogue(&mut self, ep: Option<Epilogue>) -> Result<&[Bench<T>], RtError> {
        if let Some(i) = self.made.iter().position(|(e, _)| *e == ep) {
            return Ok(&self.made[i].1);
        }
        let mut benches = Vec::with_capacity(self.samples.len());
        for m in self.samples {
            let b = Bench::<T>::new(self.gpu, m)?;
            benches.push(match ep {
                Some(e) => b.with_epilogue(e)?,
                None => b,
            });
        }
        self.made.push((ep, benches));
        Ok(&self.made.last().expect("just pushed").1)
    }

    /// Checks `func` on every sample; the largest error, or the first failure.
    fn check_all(
        &mut self,
        func: &CudaFunction,
        variant: &Variant,
        ep: Option<Epilogue>,
        image: &str,
        name: &str,
    ) -> Result<f64, VerifyError> {
        let wrong = |sample: usize, why: String| VerifyError::Wrong {
            image: image.to_string(),
            entry: ep.map_or_else(|| name.to_string(), |e| format!("{name} ({e})")),
            sample,
            why,
        };
        let benches = self.for_epilogue(ep).map_err(|e| wrong(0, e.to_string()))?;
        let mut max = 0.0f64;
        for (i, b) in benches.iter().enumerate() {
            // SAFETY: `func` is entry `name` of a module generated for
            // `variant` and `T` (the chosen variant's or the fallback's, as
            // `entries_of` pairs them), the fused entry of `ep` when given,
            // which is the epilogue the bench was set up with.
            let err = unsafe { b.check(func, variant) }.map_err(|e| wrong(i, e.to_string()))?;
            let tol = tolerance(T::TYPE);
            if err.is_nan() || err > tol {
                return Err(wrong(
                    i,
                    format!("per-row relative error {err:.3e} above tolerance {tol:.0e}"),
                ));
            }
            max = max.max(err);
        }
        Ok(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::FusedImage;
    use sparserl_rt::{Provenance, Strategy, TunedFor};

    fn image(arch: &str, cubins: bool) -> ArchImages {
        ArchImages {
            arch: arch.into(),
            ptx: format!("ptx {arch}"),
            fallback_ptx: format!("fallback ptx {arch}"),
            cubins: cubins.then(|| (vec![1], vec![2])),
        }
    }

    fn entry() -> Entry {
        Entry {
            name: "k".into(),
            value: ValueType::F32,
            variant: Variant::of(Strategy::NnzSplit),
            provenance: Provenance::Measured,
            note: String::new(),
            predicted: None,
            measured_gbs: None,
            arch: vec!["sm_80".into(), "sm_90".into()],
            entry: "plain".into(),
            source: String::new(),
            ptx: None,
            fallback_entry: "fb".into(),
            fallback_source: String::new(),
            fallback_ptx: None,
            images: vec![image("sm_80", true), image("sm_90", true)],
            tuned_on: None,
            fused: vec![
                FusedImage {
                    epilogue: Epilogue::Dot,
                    entry: None,
                    fallback_entry: "fb_dot".into(),
                },
                FusedImage {
                    epilogue: Epilogue::Axpby,
                    entry: Some("plain_axpby".into()),
                    fallback_entry: "fb_axpby".into(),
                },
            ],
            tuned_for: TunedFor {
                mean_row: 1.0,
                cv_row: 0.0,
                max_over_mean: 1.0,
            },
            sample_features: Vec::new(),
            trials: Vec::new(),
            checked_on: None,
            objective: None,
        }
    }

    fn labels(img: &ArchImages, dev: u32) -> Vec<String> {
        runnable(img, dev).into_iter().map(|(l, _, _)| l).collect()
    }

    #[test]
    fn every_image_the_device_can_run_is_checked() {
        let e = entry();
        // An sm_90 device runs both PTX images and the sm_90 cubin.
        assert_eq!(labels(&e.images[0], 90), ["sm_80 PTX"]);
        assert_eq!(labels(&e.images[1], 90), ["sm_90 PTX", "sm_90 cubin"]);
        // An sm_86 device: the sm_80 PTX only (a cubin runs on its own arch).
        assert_eq!(labels(&e.images[0], 86), ["sm_80 PTX"]);
        assert!(labels(&e.images[1], 86).is_empty());
        assert_eq!(labels(&e.images[0], 80), ["sm_80 PTX", "sm_80 cubin"]);
        assert!(labels(&image("sm_90", false), 90) == ["sm_90 PTX"]);
    }

    #[test]
    fn plain_fused_and_fallback_entries_are_all_checked() {
        let e = entry();
        let chosen: Vec<(String, Option<Epilogue>)> = entries_of(&e, false)
            .into_iter()
            .map(|(n, v, ep)| {
                assert_eq!(v, e.variant);
                (n, ep)
            })
            .collect();
        assert_eq!(
            chosen,
            [
                ("plain".to_string(), None),
                ("plain_axpby".to_string(), Some(Epilogue::Axpby))
            ]
        );
        let fallback = entries_of(&e, true);
        let names: Vec<&str> = fallback.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["fb", "fb_dot", "fb_axpby"]);
        assert_eq!(fallback[0].1, Variant::FALLBACK);
        assert!(
            fallback[1..]
                .iter()
                .all(|(_, v, _)| *v == Variant::FUSED_FALLBACK)
        );
    }

    #[test]
    fn an_entry_is_checked_once_per_device() {
        let mut e = entry();
        assert!(needs_check(&e, "H200 (sm_90)"));
        e.checked_on = Some("H200 (sm_90)".into());
        assert!(!needs_check(&e, "H200 (sm_90)"));
        assert!(needs_check(&e, "A100 (sm_80)"));
        e.images.clear();
        assert!(
            !needs_check(&e, "A100 (sm_80)"),
            "nothing to check without images"
        );
    }
}
