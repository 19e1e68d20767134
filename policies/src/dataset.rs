//! Measurement datasets: every variant of a design space measured on every
//! matrix of a corpus. Written by `cargo xtask collect` (and `bench`), read
//! by training and evaluation. Stored as gzip-compressed JSON.

use serde::{Deserialize, Serialize};
use sparserl_rt::{ValueType, Variant};
use std::io::{Read, Write};
use std::path::Path;

/// A relative error as stored: JSON has no infinity or NaN, so a non-finite
/// error (a variant that produced NaN or was never checked) is stored as
/// `f64::MAX`, which fails every tolerance just the same.
pub fn finite_err(e: f64) -> f64 {
    if e.is_finite() { e } else { f64::MAX }
}

/// One matrix (and value type) with the measurements of every variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixRecord {
    /// Matrix name.
    pub name: String,
    /// Structure class (`stencil`, `power-law`, `road-network`, ...).
    pub class: String,
    /// Value type measured.
    pub value: ValueType,
    /// Feature vector in [`sparserl_rt::Features::NAMES`] order.
    pub features: Vec<f64>,
    /// `(variant index, GB/s, relative error, correct)`; GB/s is 0 when incorrect.
    pub results: Vec<(usize, f64, f64, bool)>,
}

impl MatrixRecord {
    /// Best correct GB/s (the oracle), 0 if none.
    pub fn best_gbs(&self) -> f64 {
        self.results
            .iter()
            .filter(|r| r.3)
            .map(|r| r.1)
            .fold(0.0, f64::max)
    }
    /// GB/s of variant index `i` (0 if missing or incorrect).
    pub fn gbs_of(&self, i: usize) -> f64 {
        self.results
            .iter()
            .find(|r| r.0 == i)
            .filter(|r| r.3)
            .map(|r| r.1)
            .unwrap_or(0.0)
    }
}

/// A whole dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// GPU it was measured on.
    pub gpu: String,
    /// Measured copy bandwidth of that GPU, GB/s.
    pub copy_gbs: f64,
    /// Date of the run.
    pub date: String,
    /// Exact command that produced it.
    pub command: String,
    /// Feature names, in order.
    pub feature_names: Vec<String>,
    /// The variants measured (indices refer to this list).
    pub variants: Vec<Variant>,
    /// Per matrix and value type.
    pub matrices: Vec<MatrixRecord>,
}

/// Dataset I/O errors.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// File access.
    #[error("cannot access {path}: {source}")]
    Io {
        /// file
        path: String,
        /// cause
        source: std::io::Error,
    },
    /// Not a dataset.
    #[error("{path} is not a valid dataset: {message}")]
    Format {
        /// file
        path: String,
        /// cause
        message: String,
    },
}

impl Dataset {
    /// Reads a `.json.gz` (or plain `.json`) dataset.
    pub fn read(path: &Path) -> Result<Dataset, DatasetError> {
        let p = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
            path: p.clone(),
            source,
        })?;
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut s = String::new();
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_string(&mut s)
                .map_err(|source| DatasetError::Io {
                    path: p.clone(),
                    source,
                })?;
            s
        } else {
            String::from_utf8(bytes).map_err(|e| DatasetError::Format {
                path: p.clone(),
                message: e.to_string(),
            })?
        };
        serde_json::from_str(&text).map_err(|e| DatasetError::Format {
            path: p,
            message: e.to_string(),
        })
    }

    /// Writes gzip-compressed JSON.
    pub fn write(&self, path: &Path) -> Result<(), DatasetError> {
        let p = path.display().to_string();
        let io = |source| DatasetError::Io {
            path: p.clone(),
            source,
        };
        let json = serde_json::to_vec(self).map_err(|e| DatasetError::Format {
            path: p.clone(),
            message: e.to_string(),
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let f = std::fs::File::create(path).map_err(io)?;
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
        gz.write_all(&json).map_err(io)?;
        gz.finish().map_err(io)?;
        Ok(())
    }

    /// Index of `v` in [`Dataset::variants`].
    pub fn variant_index(&self, v: &Variant) -> Option<usize> {
        self.variants.iter().position(|x| x == v)
    }

    /// Appends records, merging results for the same (name, value).
    pub fn merge(&mut self, other: Dataset) {
        for mut rec in other.matrices {
            // Re-map variant indices into this dataset's list.
            for r in rec.results.iter_mut() {
                let v = other.variants[r.0];
                r.0 = match self.variant_index(&v) {
                    Some(i) => i,
                    None => {
                        self.variants.push(v);
                        self.variants.len() - 1
                    }
                };
            }
            match self
                .matrices
                .iter_mut()
                .find(|m| m.name == rec.name && m.value == rec.value)
            {
                Some(m) => {
                    for r in rec.results {
                        m.results.retain(|x| x.0 != r.0);
                        m.results.push(r);
                    }
                }
                None => self.matrices.push(rec),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparserl_rt::Strategy;

    fn ds() -> Dataset {
        Dataset {
            gpu: "test".into(),
            copy_gbs: 4000.0,
            date: "2026-01-01".into(),
            command: "collect".into(),
            feature_names: vec!["a".into()],
            variants: vec![Variant::of(Strategy::ThreadPerRow), Variant::FALLBACK],
            matrices: vec![MatrixRecord {
                name: "m".into(),
                class: "c".into(),
                value: ValueType::F32,
                features: vec![1.0],
                results: vec![(0, 100.0, 1e-7, true), (1, 200.0, 0.5, false)],
            }],
        }
    }

    #[test]
    fn roundtrip_gz_and_oracle_ignores_wrong_variants() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.json.gz");
        ds().write(&p).unwrap();
        let back = Dataset::read(&p).unwrap();
        assert_eq!(back, ds());
        assert_eq!(back.matrices[0].best_gbs(), 100.0);
        assert_eq!(back.matrices[0].gbs_of(1), 0.0);
    }

    #[test]
    fn merge_remaps_variants() {
        let mut a = ds();
        let mut b = ds();
        b.variants = vec![Variant::of(Strategy::GroupPerRow)];
        b.matrices[0].results = vec![(0, 300.0, 0.0, true)];
        a.merge(b);
        assert_eq!(a.variants.len(), 3);
        assert_eq!(a.matrices[0].best_gbs(), 300.0);
    }

    #[test]
    fn garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{").unwrap();
        assert!(Dataset::read(&p).is_err());
    }
}
