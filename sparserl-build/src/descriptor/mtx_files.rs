//! Sample files of `matrix-market` and `samples` patterns.

use super::*;

pub(super) fn is_mtx_name(path: &Path) -> bool {
    path.file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|n| n.ends_with(".mtx") || n.ends_with(".mtx.gz"))
}

/// Matrix Market files below `root`, sorted by path, plus the first walk error.
pub(super) fn list_mtx_files(root: &Path) -> (Vec<PathBuf>, Option<walkdir::Error>) {
    let mut files = Vec::new();
    let mut first_err = None;
    for entry in walkdir::WalkDir::new(root).follow_links(true) {
        match entry {
            Ok(e) => {
                if e.file_type().is_file() && is_mtx_name(e.path()) {
                    files.push(e.into_path());
                }
            }
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
    }
    files.sort();
    (files, first_err)
}

/// The sample files of a `samples` directory, or an error at `key` when the
/// directory is missing, unreadable or holds no Matrix Market file.
pub(super) fn checked_mtx_files(
    manifest: &Path,
    key: &str,
    written: &Path,
    root: &Path,
) -> Result<Vec<PathBuf>, DescriptorError> {
    let shown = quote(&written.to_string_lossy());
    if !root.is_dir() {
        let why = if root.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(DescriptorError::new(
            manifest,
            key,
            format!(
                "found {shown}, expected an existing directory of Matrix Market files; {} {why}",
                root.display()
            ),
        ));
    }
    let (files, err) = list_mtx_files(root);
    if let Some(e) = err {
        return Err(DescriptorError::new(
            manifest,
            key,
            format!("found {shown}, expected a readable directory; {e}"),
        ));
    }
    if files.is_empty() {
        return Err(DescriptorError::new(
            manifest,
            key,
            format!(
                "found {shown}, expected a directory holding at least one *.mtx or *.mtx.gz \
                 file; {} has none",
                root.display()
            ),
        ));
    }
    Ok(files)
}

pub(super) fn read_mtx(
    manifest: &Path,
    key: &str,
    file: &Path,
    label: String,
) -> Result<Sample, DescriptorError> {
    match sparserl_rt::mtx::read_matrix_market(file) {
        Ok(matrix) => Ok(Sample {
            label,
            matrix,
            source_file: Some(file.to_path_buf()),
        }),
        Err(e) => {
            let mut msg = String::from("found an unreadable Matrix Market file");
            if let Some(line) = mtx_line(&e) {
                let _ = write!(msg, " (line {line})");
            }
            let _ = write!(msg, ", expected a valid coordinate file: {e}");
            Err(DescriptorError::new(manifest, key, msg))
        }
    }
}

/// The 1-based line a reader error points at, if any.
pub(super) fn mtx_line(e: &sparserl_rt::mtx::MtxError) -> Option<usize> {
    use sparserl_rt::mtx::MtxError as E;
    match e {
        E::Io { line, .. } => *line,
        E::BadHeader { line, .. }
        | E::Unsupported { line, .. }
        | E::BadSizeLine { line, .. }
        | E::BadEntry { line, .. }
        | E::Truncated { line, .. }
        | E::TooManyEntries { line, .. } => Some(*line),
        _ => None,
    }
}
