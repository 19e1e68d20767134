//! A machine-wide lock around measuring on the GPU: Cargo runs build scripts
//! in parallel, and two crates tuning at once would time their kernels
//! against each other. The lock is an exclusive advisory lock on a file in
//! the temporary directory (`SPARSERL_GPU_LOCK` names another one), held
//! until the build script ends; the operating system releases it when a
//! process dies, so a killed build never leaves it taken.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;

/// Environment variable naming the lock file.
pub const ENV_GPU_LOCK: &str = "SPARSERL_GPU_LOCK";

/// The lock file's path.
pub fn lock_path() -> PathBuf {
    std::env::var_os(ENV_GPU_LOCK)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sparserl-gpu-tuning.lock"))
}

/// How taking the lock went.
#[derive(Debug)]
pub enum Taken {
    /// Held (dropping the file releases it); `waited` when another process
    /// held it first.
    Held {
        /// The open, locked file.
        file: File,
        /// Whether this process had to wait.
        waited: bool,
    },
    /// The lock file cannot be used (the reason); measuring goes on without.
    Unavailable(String),
}

/// Takes the lock at [`lock_path`], calling `on_wait` once before blocking
/// when another process holds it.
pub fn take(on_wait: impl FnOnce(&std::path::Path)) -> Taken {
    take_at(&lock_path(), on_wait)
}

/// [`take`] on the lock file `path`.
pub fn take_at(path: &std::path::Path, on_wait: impl FnOnce(&std::path::Path)) -> Taken {
    let file = match OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return Taken::Unavailable(format!("cannot open {}: {e}", path.display())),
    };
    match file.try_lock() {
        Ok(()) => Taken::Held {
            file,
            waited: false,
        },
        Err(TryLockError::WouldBlock) => {
            on_wait(path);
            match file.lock() {
                Ok(()) => Taken::Held { file, waited: true },
                Err(e) => Taken::Unavailable(format!("cannot lock {}: {e}", path.display())),
            }
        }
        Err(TryLockError::Error(e)) => {
            Taken::Unavailable(format!("cannot lock {}: {e}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Child side of the test below: reports on stdout whether the lock was
    /// free (`lock-probe: free`) or held by someone else (`lock-probe: held`). Ignored in a plain
    /// run (it is no test on its own); the test below runs it with
    /// `--ignored` in another process.
    #[test]
    #[ignore = "helper process of the_lock_excludes_another_process_until_released"]
    fn child_probe() {
        let path = std::env::var_os("SPARSERL_TEST_LOCK_CHILD").expect(
            "child_probe runs only as the child of the lock test (SPARSERL_TEST_LOCK_CHILD)",
        );
        let f = OpenOptions::new().write(true).open(path).unwrap();
        match f.try_lock() {
            Ok(()) => println!("lock-probe: free"),
            Err(TryLockError::WouldBlock) => println!("lock-probe: held"),
            Err(TryLockError::Error(e)) => panic!("try_lock failed: {e}"),
        }
    }

    /// What the child probe saw: `"free"` or `"held"` (a child that did not
    /// run the probe is a failure, not an answer).
    fn probe_from_another_process(path: &std::path::Path) -> String {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "gpu_lock::tests::child_probe",
                "--ignored",
                "--nocapture",
            ])
            .env("SPARSERL_TEST_LOCK_CHILD", path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "the probe failed: {stdout}");
        let answer = stdout
            .lines()
            .find_map(|l| l.strip_prefix("lock-probe: "))
            .unwrap_or_else(|| panic!("the probe did not run: {stdout}"));
        answer.to_string()
    }

    #[test]
    fn the_lock_excludes_another_process_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gpu.lock");
        let taken = take_at(&path, |_| panic!("nobody holds the lock yet"));
        let Taken::Held { file, waited } = taken else {
            panic!("lock not taken: {taken:?}")
        };
        assert!(!waited);
        assert_eq!(
            probe_from_another_process(&path),
            "held",
            "another process got the lock"
        );
        drop(file);
        assert_eq!(
            probe_from_another_process(&path),
            "free",
            "the lock was not released"
        );
    }
}
