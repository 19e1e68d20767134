//! Measurement datasets: every variant of a design space measured on every
//! matrix of a corpus. Written by `cargo xtask collect` (and `bench`), read
//! by training and evaluation. Stored as gzip-compressed JSON.

use crate::provenance::Provenance;
use serde::{Deserialize, Serialize};
use sparserl_rt::{Strategy, ValueType, Variant};
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
    /// Strategies of [`LAYOUT_LIMITED`] this matrix has no layout for, where
    /// known (see [`Dataset::mark_cannot_run`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cannot_run: Vec<Strategy>,
    /// Where the matrix came from (generator and parameters, or file and
    /// sha256); `None` in datasets written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Energy per call of some of the variants (`collect --energy-top`):
    /// the fastest correct ones, measured through the driver's energy
    /// counter; empty when energy was not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub energy: Vec<EnergyResult>,
}

/// One variant's measured energy per call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyResult {
    /// Variant index (as in [`MatrixRecord::results`]).
    pub variant: usize,
    /// Joules per call (median of the windows; the whole card, idle
    /// included).
    pub joules_per_call: f64,
    /// Seconds per call in the same windows.
    pub seconds_per_call: f64,
    /// Relative spread of the windows ((max - min) / median).
    pub spread: f64,
}

impl EnergyResult {
    /// Average power of the card while the variant ran, watts.
    pub fn power_w(&self) -> f64 {
        self.joules_per_call / self.seconds_per_call
    }
}

/// Strategies of the policy's vocabulary that need a layout some matrices
/// lack: SELL-C-sigma, built only where its slices pad little.
pub const LAYOUT_LIMITED: [Strategy; 1] = [Strategy::Sell];

/// Whether `m` has a measurement of a variant of strategy `s` (`variants`:
/// its dataset's variant list).
fn measures(variants: &[Variant], m: &MatrixRecord, s: Strategy) -> bool {
    m.results
        .iter()
        .any(|r| variants.get(r.0).is_some_and(|v| v.strategy == s))
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

/// Geometric mean of the positive finite entries of `xs` (`None` if none).
fn geomean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

impl MatrixRecord {
    /// The record with every energy-measured variant's GB/s moved by its
    /// power: `gbs * (P_mean / P)^energy_weight`, `P_mean` the geometric
    /// mean power of the record's energy-measured variants. In logs the
    /// score is `ln GB/s - w ln(P / P_mean)`: with J = P t, weight 1 ranks
    /// the measured variants by bytes per joule and weight 0 by time.
    /// Variants without an energy measurement keep their GB/s (power
    /// `P_mean` assumed); a record without energy is unchanged.
    pub fn energy_weighted(&self, energy_weight: f64) -> MatrixRecord {
        let mut out = self.clone();
        let Some(mean) = geomean(self.energy.iter().map(EnergyResult::power_w)) else {
            return out;
        };
        for r in &mut out.results {
            if let Some(e) = self.energy.iter().find(|e| e.variant == r.0)
                && e.power_w().is_finite()
                && e.power_w() > 0.0
            {
                r.1 *= (mean / e.power_w()).powf(energy_weight);
            }
        }
        out
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
    /// Reads `paths` and merges them as training does: the first marked for
    /// the layouts its matrices lack ([`Dataset::mark_cannot_run`]), the
    /// others merged in ([`Dataset::merge`]); with each file's sha256 (hex).
    /// `None` for no path.
    pub fn read_merged(paths: &[&Path]) -> Result<Option<(Dataset, Vec<String>)>, DatasetError> {
        let mut merged: Option<Dataset> = None;
        let mut hashes = Vec::new();
        for path in paths {
            let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
                path: path.display().to_string(),
                source,
            })?;
            hashes.push(crate::provenance::sha256_hex(&bytes));
            let d = Dataset::read(path)?;
            match &mut merged {
                None => {
                    let mut d = d;
                    d.mark_cannot_run();
                    merged = Some(d);
                }
                Some(base) => base.merge(d),
            }
        }
        Ok(merged.map(|d| (d, hashes)))
    }

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

    /// The strategies of [`LAYOUT_LIMITED`] that `rec`'s matrix cannot run,
    /// inferred from this dataset alone: a sweep measures every variant that
    /// can run, so a strategy measured on some record of the dataset but not
    /// on `rec` has no layout there. Only valid for a dataset from one sweep;
    /// [`Dataset::mark_cannot_run`] keeps the answer across merges.
    pub fn infer_cannot_run(&self, rec: &MatrixRecord) -> Vec<Strategy> {
        self.cannot_run_given(rec, &self.limited_measured())
    }

    /// Records [`Dataset::infer_cannot_run`] in every record's `cannot_run`.
    /// [`Dataset::merge`] does it on both sides first, so a dataset that
    /// never measured a strategy does not make it look missing on the
    /// records of one that did.
    pub fn mark_cannot_run(&mut self) {
        let measured = self.limited_measured();
        let marks: Vec<Vec<Strategy>> = self
            .matrices
            .iter()
            .map(|r| self.cannot_run_given(r, &measured))
            .collect();
        for (r, m) in self.matrices.iter_mut().zip(marks) {
            r.cannot_run = m;
        }
    }

    /// The strategies of [`LAYOUT_LIMITED`] measured on some record.
    fn limited_measured(&self) -> Vec<Strategy> {
        LAYOUT_LIMITED
            .into_iter()
            .filter(|&s| self.matrices.iter().any(|m| measures(&self.variants, m, s)))
            .collect()
    }

    /// [`Dataset::infer_cannot_run`] given [`Dataset::limited_measured`].
    fn cannot_run_given(&self, rec: &MatrixRecord, measured: &[Strategy]) -> Vec<Strategy> {
        LAYOUT_LIMITED
            .into_iter()
            .filter(|&s| {
                rec.cannot_run.contains(&s)
                    || (measured.contains(&s) && !measures(&self.variants, rec, s))
            })
            .collect()
    }

    /// The dataset with every record [`MatrixRecord::energy_weighted`].
    pub fn energy_weighted(&self, energy_weight: f64) -> Dataset {
        Dataset {
            matrices: self
                .matrices
                .iter()
                .map(|m| m.energy_weighted(energy_weight))
                .collect(),
            ..self.clone()
        }
    }

    /// The index of `v` in the variant list, appended when missing.
    fn index_or_push(&mut self, v: Variant) -> usize {
        self.variant_index(&v).unwrap_or_else(|| {
            self.variants.push(v);
            self.variants.len() - 1
        })
    }

    /// Merges `other` into this dataset: its records are added, or, for a
    /// matrix and value type present in both, its measurements replace the
    /// same variants'. Both sides are marked first
    /// ([`Dataset::mark_cannot_run`]); a strategy measured after the merge
    /// no longer counts as unable to run.
    pub fn merge(&mut self, mut other: Dataset) {
        self.mark_cannot_run();
        other.mark_cannot_run();
        for mut rec in other.matrices {
            // Re-map variant indices into this dataset's list.
            for r in rec.results.iter_mut() {
                r.0 = self.index_or_push(other.variants[r.0]);
            }
            for e in rec.energy.iter_mut() {
                e.variant = self.index_or_push(other.variants[e.variant]);
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
                    for e in rec.energy {
                        m.energy.retain(|x| x.variant != e.variant);
                        m.energy.push(e);
                    }
                    for s in rec.cannot_run {
                        if !m.cannot_run.contains(&s) {
                            m.cannot_run.push(s);
                        }
                    }
                    let now_measured: Vec<Strategy> = m
                        .cannot_run
                        .iter()
                        .copied()
                        .filter(|&s| measures(&self.variants, m, s))
                        .collect();
                    m.cannot_run.retain(|s| !now_measured.contains(s));
                    if m.provenance.is_none() {
                        m.provenance = rec.provenance;
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
                energy: Vec::new(),
                name: "m".into(),
                class: "c".into(),
                value: ValueType::F32,
                features: vec![1.0],
                results: vec![(0, 100.0, 1e-7, true), (1, 200.0, 0.5, false)],
                cannot_run: Vec::new(),
                provenance: None,
            }],
        }
    }

    fn energy(variant: usize, watts: f64, seconds: f64) -> EnergyResult {
        EnergyResult {
            variant,
            joules_per_call: watts * seconds,
            seconds_per_call: seconds,
            spread: 0.01,
        }
    }

    #[test]
    fn the_energy_weight_moves_measured_variants_by_their_power() {
        let mut d = ds();
        d.variants.push(Variant::of(Strategy::Sell));
        let m = &mut d.matrices[0];
        // Variant 0: 100 GB/s at 400 W; variant 2: 90 GB/s at 300 W.
        m.results.push((2, 90.0, 1e-7, true));
        m.energy = vec![energy(0, 400.0, 1e-3), energy(2, 300.0, 1.1e-3)];
        let mean = (400.0f64 * 300.0).sqrt();
        let w0 = d.energy_weighted(0.0);
        assert_eq!(w0.matrices[0].results, d.matrices[0].results);
        let w1 = d.energy_weighted(1.0).matrices[0].clone();
        assert!((w1.gbs_of(0) - 100.0 * mean / 400.0).abs() < 1e-9);
        assert!((w1.gbs_of(2) - 90.0 * mean / 300.0).abs() < 1e-9);
        // By energy the slower, cooler variant wins; by time it loses.
        assert!(w1.gbs_of(2) > w1.gbs_of(0));
        assert!(d.matrices[0].gbs_of(2) < d.matrices[0].gbs_of(0));
        // Unmeasured and incorrect results keep their figures.
        assert_eq!(w1.results[1], d.matrices[0].results[1]);
        // A record without energy is unchanged at any weight.
        let plain = ds();
        assert_eq!(plain.energy_weighted(0.7), plain);
    }

    #[test]
    fn a_merge_maps_energy_to_the_merged_variant_list() {
        let mut a = ds();
        let mut b = ds();
        b.variants = vec![
            Variant::of(Strategy::Sell),
            Variant::of(Strategy::ThreadPerRow),
        ];
        b.matrices[0].results = vec![(0, 300.0, 1e-7, true)];
        b.matrices[0].energy = vec![energy(0, 350.0, 1e-3)];
        a.merge(b);
        let sell = a.variant_index(&Variant::of(Strategy::Sell)).unwrap();
        assert_eq!(a.matrices[0].energy.len(), 1);
        assert_eq!(a.matrices[0].energy[0].variant, sell);
        assert_eq!(a.matrices[0].gbs_of(sell), 300.0);
    }

    #[test]
    fn a_strategy_missing_from_one_sweep_stays_unknown_after_a_merge() {
        let sell = Variant::of(Strategy::Sell);
        // Sweep A measured SELL on m1 only: m2 has no SELL layout.
        let mut a = ds();
        a.variants.push(sell);
        a.matrices[0].results.push((2, 300.0, 1e-7, true));
        let mut m2 = a.matrices[0].clone();
        m2.name = "m2".into();
        m2.results.truncate(2);
        a.matrices.push(m2);
        assert_eq!(a.infer_cannot_run(&a.matrices[0]), vec![]);
        assert_eq!(a.infer_cannot_run(&a.matrices[1]), vec![Strategy::Sell]);
        // Sweep B never measured SELL: its record m3 is not marked.
        let mut b = ds();
        b.matrices[0].name = "m3".into();
        let mut merged = a.clone();
        merged.merge(b);
        let find = |n: &str| merged.matrices.iter().find(|m| m.name == n).unwrap();
        assert_eq!(find("m2").cannot_run, vec![Strategy::Sell]);
        assert!(find("m3").cannot_run.is_empty());
        assert!(find("m").cannot_run.is_empty());
        // A later sweep that measures SELL on m2 clears the mark.
        let mut c = a.clone();
        c.matrices[1].results.push((2, 50.0, 1e-7, true));
        c.matrices.remove(0);
        merged.merge(c);
        let m2 = merged.matrices.iter().find(|m| m.name == "m2").unwrap();
        assert!(m2.cannot_run.is_empty());
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
    fn read_merged_merges_files_in_order_with_their_hashes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut b = ds();
        b.variants = vec![Variant::of(Strategy::GroupPerRow)];
        b.matrices[0].results = vec![(0, 300.0, 0.0, true)];
        let paths: Vec<std::path::PathBuf> = [ds(), b]
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let p = dir.path().join(format!("d{i}.json"));
                std::fs::write(&p, serde_json::to_string(d).expect("json")).expect("write");
                p
            })
            .collect();
        let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
        let (merged, hashes) = Dataset::read_merged(&refs).expect("reads").expect("some");
        let mut expected = ds();
        expected.mark_cannot_run();
        let mut second = ds();
        second.variants = vec![Variant::of(Strategy::GroupPerRow)];
        second.matrices[0].results = vec![(0, 300.0, 0.0, true)];
        expected.merge(second);
        assert_eq!(merged, expected);
        assert_eq!(hashes.len(), 2);
        assert!(hashes.iter().all(|h| h.len() == 64));
        assert!(
            Dataset::read_merged(&[])
                .expect("nothing to read")
                .is_none()
        );
        let missing = dir.path().join("missing.json");
        let err = Dataset::read_merged(&[missing.as_path()]).expect_err("no file");
        assert!(err.to_string().contains("missing.json"), "{err}");
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
    fn datasets_without_provenance_still_load_and_new_records_keep_theirs() {
        // The committed datasets before the families corpus (the rounds,
        // the benchmark sweeps and the large corpus) predate the field and
        // load without it; every record a later collection wrote carries
        // its origin.
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
        let mut files = 0;
        for e in std::fs::read_dir(&data).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".json.gz") {
                let d = Dataset::read(&p).unwrap_or_else(|e| panic!("{e}"));
                assert!(!d.matrices.is_empty());
                let legacy = ["h200-round", "h200-bench-sweep", "h200-large"]
                    .iter()
                    .any(|prefix| name.starts_with(prefix));
                assert!(
                    d.matrices.iter().all(|m| m.provenance.is_some() != legacy),
                    "{name}"
                );
                files += 1;
            }
        }
        assert!(files >= 5, "{files} committed datasets");
        // A record with provenance round-trips and survives a merge into
        // an old record of the same matrix.
        let prov = Provenance::Generated {
            generator: "sbm".into(),
            params: serde_json::json!({"communities": 12}),
            seed: 3,
        };
        let mut new = ds();
        new.matrices[0].provenance = Some(prov.clone());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.json.gz");
        new.write(&p).unwrap();
        assert_eq!(Dataset::read(&p).unwrap(), new);
        let mut old = ds();
        old.merge(new);
        assert_eq!(old.matrices[0].provenance, Some(prov));
    }

    #[test]
    fn garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{").unwrap();
        assert!(Dataset::read(&p).is_err());
    }
}
