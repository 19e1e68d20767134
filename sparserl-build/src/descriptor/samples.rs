//! Where a pattern's samples come from: Matrix Market files, or the
//! instances of a synthetic family (the vocabulary shared with the
//! benchmarks, [`sparserl_rt::synth::Family`]).

use super::*;

impl Pattern {
    /// The `kind` name of this pattern.
    pub const fn kind(&self) -> &'static str {
        match self {
            Pattern::MatrixMarket { .. } => "matrix-market",
            Pattern::Samples { .. } => "samples",
            Pattern::Stencil { .. } => "stencil",
            Pattern::Banded { .. } => "banded",
            Pattern::PowerLaw { .. } => "power-law",
            Pattern::Uniform { .. } => "uniform",
            Pattern::Block { .. } => "block",
        }
    }

    /// Sample files of a file pattern (resolved against `manifest_dir`, sorted);
    /// empty for synthetic patterns. A directory entry that cannot be read
    /// is an error (naming `manifest_dir/Cargo.toml`, `pattern.dir` and the
    /// entry), so a fingerprint over these files never misses one that
    /// loading the samples would then report.
    pub fn files(&self, manifest_dir: &Path) -> Result<Vec<PathBuf>, DescriptorError> {
        match self {
            Pattern::MatrixMarket { path } => Ok(vec![manifest_dir.join(path)]),
            Pattern::Samples { dir } => match list_mtx_files(&manifest_dir.join(dir)) {
                (files, None) => Ok(files),
                (_, Some(e)) => Err(DescriptorError::new(
                    &manifest_dir.join("Cargo.toml"),
                    "pattern.dir",
                    format!(
                        "found {}, expected a readable directory of sample files; {e}",
                        quote(&dir.to_string_lossy())
                    ),
                )),
            },
            _ => Ok(Vec::new()),
        }
    }

    /// Whether the samples are generated (not read from files).
    pub const fn is_synthetic(&self) -> bool {
        !matches!(self, Pattern::MatrixMarket { .. } | Pattern::Samples { .. })
    }

    /// Generates (synthetic kinds: one matrix per seed) or reads (file kinds)
    /// the tuning samples. Errors name `manifest_dir/Cargo.toml` and a key path
    /// relative to the kernel (`pattern.path`); prefer
    /// [`Descriptor::load_samples`], which gives the full key path.
    pub fn load_samples(&self, manifest_dir: &Path) -> Result<Vec<Sample>, DescriptorError> {
        self.load_samples_in(&manifest_dir.join("Cargo.toml"), manifest_dir, "pattern")
    }

    pub(super) fn load_samples_in(
        &self,
        manifest: &Path,
        manifest_dir: &Path,
        key: &str,
    ) -> Result<Vec<Sample>, DescriptorError> {
        let synth = |label: String, r: Result<Csr, sparserl_rt::synth::SynthError>| {
            r.map(|matrix| Sample {
                label: label.clone(),
                matrix,
                source_file: None,
            })
            .map_err(|e| {
                DescriptorError::new(
                    manifest,
                    key,
                    format!("cannot generate the sample \"{label}\": {e}"),
                )
            })
        };
        let seeds =
            |seed: u64, samples: u32| (0..u64::from(samples)).map(move |k| seed.wrapping_add(k));
        match self {
            Pattern::MatrixMarket { path } => {
                let file = manifest_dir.join(path);
                let label = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.display().to_string());
                Ok(vec![read_mtx(
                    manifest,
                    &format!("{key}.path"),
                    &file,
                    label,
                )?])
            }
            Pattern::Samples { dir } => {
                let root = manifest_dir.join(dir);
                let dir_key = format!("{key}.dir");
                let files = checked_mtx_files(manifest, &dir_key, dir, &root)?;
                files
                    .into_iter()
                    .map(|file| {
                        let label = file
                            .strip_prefix(&root)
                            .map(|p| {
                                p.components()
                                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                                    .collect::<Vec<_>>()
                                    .join("/")
                            })
                            .unwrap_or_else(|_| file.display().to_string());
                        read_mtx(manifest, &dir_key, &file, label)
                    })
                    .collect()
            }
            synthetic => {
                // Every other kind is a synthetic family: one instance per seed.
                let Some((family, seed, samples)) = synthetic.family() else {
                    return Ok(Vec::new());
                };
                let seeds: Vec<u64> = if family.is_seeded() {
                    seeds(seed, samples).collect()
                } else {
                    vec![seed]
                };
                seeds
                    .into_iter()
                    .map(|s| synth(family.label(s), family.build(s)))
                    .collect()
            }
        }
    }

    /// The synthetic family of a synthetic kind, with its first seed and
    /// number of instances (`None` for file-based kinds). The generators
    /// and labels are [`sparserl_rt::synth::Family`]'s, shared with the
    /// benchmarks and the retune corpus.
    pub fn family(&self) -> Option<(sparserl_rt::synth::Family, u64, u32)> {
        use sparserl_rt::synth::Family;
        Some(match self {
            Pattern::MatrixMarket { .. } | Pattern::Samples { .. } => return None,
            Pattern::Stencil { grid, points } => (
                Family::Stencil {
                    grid: grid.clone(),
                    points: *points,
                },
                0,
                1,
            ),
            Pattern::Banded {
                rows,
                bandwidth,
                avg_degree,
                seed,
                samples,
            } => (
                Family::Banded {
                    rows: *rows,
                    bandwidth: *bandwidth,
                    avg_degree: *avg_degree,
                },
                *seed,
                *samples,
            ),
            Pattern::PowerLaw {
                rows,
                avg_degree,
                exponent,
                seed,
                samples,
            } => (
                Family::PowerLaw {
                    rows: *rows,
                    avg_degree: *avg_degree,
                    exponent: *exponent,
                },
                *seed,
                *samples,
            ),
            Pattern::Uniform {
                rows,
                cols,
                avg_degree,
                seed,
                samples,
            } => (
                Family::Uniform {
                    rows: *rows,
                    cols: *cols,
                    avg_degree: *avg_degree,
                },
                *seed,
                *samples,
            ),
            Pattern::Block {
                rows,
                block,
                blocks_per_row,
                seed,
                samples,
            } => (
                Family::Block {
                    rows: *rows,
                    block: *block,
                    blocks_per_row: *blocks_per_row,
                },
                *seed,
                *samples,
            ),
        })
    }
}

/// Fingerprint of the code that generates synthetic samples: sparserl-rt's
/// generators ([`sparserl_rt::sources::SYNTH`]) and this module (which maps
/// a pattern's parameters onto them). Part of the descriptor fingerprint of
/// a synthetic pattern, whose sample bytes are not hashed (they are only
/// generated when the kernel is built).
pub fn sample_generator_fingerprint() -> String {
    let mut key = crate::cache::KeyBuilder::new();
    key.text(
        "sparserl-build/src/descriptor/samples.rs",
        include_str!("samples.rs"),
    );
    for (name, text) in sparserl_rt::sources::SYNTH {
        key.text(name, text);
    }
    key.finish()
}
