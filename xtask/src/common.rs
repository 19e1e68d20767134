//! Helpers shared by xtask commands.

use anyhow::{Context, Result};
use sparserl_rt::Csr;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// The workspace root (parent of the xtask crate, or the current directory
/// when run as a copied binary).
pub fn workspace_root() -> PathBuf {
    let from_env = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|p| p.parent().map(Path::to_path_buf));
    match from_env {
        Some(p) if p.join("Cargo.toml").exists() => p,
        _ => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    }
}

/// A named real matrix with its structure class.
pub struct Named {
    /// File name without `.mtx[.gz]`.
    pub name: String,
    /// Class from MANIFEST.tsv, or `unknown`.
    pub class: String,
    /// The matrix.
    pub csr: Csr,
}

/// Matrix Market files directly in `dir`, sorted by name.
pub fn mtx_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".mtx") || n.ends_with(".mtx.gz")
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Stem of a Matrix Market file name.
pub fn matrix_name(p: &Path) -> String {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("?");
    n.trim_end_matches(".gz")
        .trim_end_matches(".mtx")
        .to_string()
}

/// Structure classes from `dir/MANIFEST.tsv` (file -> class), if present.
pub fn manifest_classes(dir: &Path) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Ok(text) = std::fs::read_to_string(dir.join("MANIFEST.tsv")) else {
        return out;
    };
    let mut header: Option<Vec<String>> = None;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        match &header {
            None => header = Some(cols.iter().map(|s| s.to_string()).collect()),
            Some(h) => {
                let file = h.iter().position(|c| c == "file");
                let class = h.iter().position(|c| c == "class");
                if let (Some(f), Some(c)) = (file, class)
                    && let (Some(f), Some(c)) = (cols.get(f), cols.get(c))
                {
                    out.insert(matrix_name(Path::new(f)), c.to_string());
                }
            }
        }
    }
    out
}

/// Reads every Matrix Market file of `dir`; unreadable or empty ones are
/// skipped with a message on stderr.
pub fn load_real_matrices(dir: &Path) -> Result<Vec<Named>> {
    let classes = manifest_classes(dir);
    let mut out = Vec::new();
    for p in mtx_files(dir)? {
        let name = matrix_name(&p);
        match sparserl_rt::mtx::read_matrix_market(&p) {
            Ok(csr) if csr.rows() > 0 && csr.cols() > 0 && csr.nnz() > 0 => out.push(Named {
                class: classes
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "unknown".into()),
                name,
                csr,
            }),
            Ok(_) => eprintln!("skipping {}: empty matrix", p.display()),
            Err(e) => eprintln!("skipping {}: {e}", p.display()),
        }
    }
    Ok(out)
}

/// Geometric mean (0 for an empty input).
pub fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    (xs.iter().map(|x| x.max(1e-300).ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let days = secs.div_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{:04}-{:02}-{:02}", if m <= 2 { y + 1 } else { y }, m, d)
}

/// Driver version string from the CUDA driver, if available.
pub fn driver_version() -> String {
    if !sparserl_rt::device::driver_present() {
        return "none".into();
    }
    let mut v: i32 = 0;
    // SAFETY: the driver library is present (checked above); cuDriverGetVersion
    // only writes one int through a valid pointer.
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        format!("CUDA driver API {}.{}", v / 1000, (v % 1000) / 10)
    } else {
        "unknown".into()
    }
}

/// A real matrix read in the background: name, class, matrix.
pub type Loaded = (String, String, Result<Csr>);

/// The Matrix Market files of `dir`, sorted by name, each with its name and
/// its class from `MANIFEST.tsv` (`unknown` when it names none).
pub fn named_files(dir: &Path) -> Result<Vec<(PathBuf, String, String)>> {
    let classes = manifest_classes(dir);
    Ok(mtx_files(dir)?
        .into_iter()
        .map(|p| {
            let name = matrix_name(&p);
            let class = classes
                .get(&name)
                .cloned()
                .unwrap_or_else(|| "unknown".into());
            (p, name, class)
        })
        .collect())
}

/// Reads `files` (path, name, class) in a background thread, one message
/// per file in their order; stops when the receiver is dropped.
pub fn spawn_loader(
    files: Vec<(PathBuf, String, String)>,
) -> (mpsc::Receiver<Loaded>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        for (p, name, class) in files {
            let csr = sparserl_rt::mtx::read_matrix_market(&p)
                .with_context(|| format!("reading {}", p.display()));
            if tx.send((name, class, csr)).is_err() {
                break;
            }
        }
    });
    (rx, h)
}

/// The text of `path`, gunzipped when its name ends in `.gz`.
pub fn read_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file).read_to_string(&mut text)
    } else {
        std::io::BufReader::new(file).read_to_string(&mut text)
    }
    .with_context(|| format!("reading {}", path.display()))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn date_is_plausible() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }
    #[test]
    fn geomean_works() {
        assert!((geomean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
    }
}
