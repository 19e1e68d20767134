//! What a build tells its user, and where.
//!
//! Cargo shows a build script's output only through `cargo:warning` lines
//! and replays them on every later build, a no-op rebuild included. So a
//! build script run prints, when all is well, one summary line (what was
//! chosen and from where, and the path of the report), plus a warning for
//! each thing that needs the user's action (NVRTC missing, a stale lock
//! entry, a fallback kernel, ...) and the result of each measured search
//! (work that took a while). Every line, the per-kernel details included
//! (policy, candidates, timings, choices), goes to the report file
//! [`REPORT_FILE`] under `OUT_DIR`; with [`ENV_VERBOSE`]` = 1` the details
//! are printed as well. [`Output::Terminal`] prints everything on stderr.

use super::Output;
use crate::cache::write_atomic;
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// Env var: `1` prints the per-kernel details of a build script run too.
pub const ENV_VERBOSE: &str = "SPARSERL_VERBOSE";

/// The build's full report, in `OUT_DIR`.
pub const REPORT_FILE: &str = "sparserl-report.txt";

/// How a line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Details: the report only (printed when verbose).
    Detail,
    /// Progress of work that took a while (a measured search): printed.
    Progress,
    /// Needs the user's action: printed as a warning.
    Warning,
}

/// The lines of one build: printed as they come where their level asks,
/// all kept for the report file.
#[derive(Debug)]
pub(crate) struct Log {
    output: Output,
    verbose: bool,
    lines: RefCell<Vec<String>>,
}

impl Log {
    /// A log printing through `output`; `verbose`: print the details too.
    pub(crate) fn new(output: Output, verbose: bool) -> Log {
        Log {
            output,
            verbose,
            lines: RefCell::new(Vec::new()),
        }
    }

    /// A per-kernel detail (policy, candidates, timings, choice).
    pub(crate) fn detail(&self, msg: &str) {
        self.say(Level::Detail, msg);
    }

    /// Progress of long work (a measured search, waiting for the GPU).
    pub(crate) fn progress(&self, msg: &str) {
        self.say(Level::Progress, msg);
    }

    /// Something that needs the user's action.
    pub(crate) fn warn(&self, msg: &str) {
        self.say(Level::Warning, msg);
    }

    fn say(&self, level: Level, msg: &str) {
        let tag = if level == Level::Warning {
            "warning: "
        } else {
            ""
        };
        self.lines
            .borrow_mut()
            .extend(msg.lines().map(|l| format!("{tag}{l}")));
        let shown = level != Level::Detail || self.verbose;
        match self.output {
            Output::BuildScript if shown => {
                for line in msg.lines() {
                    if level == Level::Warning {
                        build_print::warn!("sparserl: {line}");
                    } else {
                        build_print::info!("sparserl: {line}");
                    }
                }
            }
            Output::Terminal => match level {
                Level::Warning => eprintln!("sparserl: warning: {msg}"),
                _ => eprintln!("sparserl: {msg}"),
            },
            _ => {}
        }
    }

    /// Writes the report to `out_dir/`[`REPORT_FILE`] (`summary` first, then
    /// every line) and prints `summary` with the report's path; the path,
    /// `None` when it could not be written (then the summary says so).
    pub(crate) fn finish(&self, out_dir: &Path, summary: &str) -> Option<PathBuf> {
        let path = out_dir.join(REPORT_FILE);
        let mut text = format!("{summary}\n\n");
        for line in self.lines.borrow().iter() {
            text.push_str(line);
            text.push('\n');
        }
        let written = write_atomic(&path, text.as_bytes()).is_ok();
        let line = if written {
            format!("{summary}; report: {}", path.display())
        } else {
            format!("{summary}; (cannot write the report {})", path.display())
        };
        match self.output {
            Output::BuildScript => build_print::info!("sparserl: {line}"),
            Output::Terminal => eprintln!("sparserl: {line}"),
            Output::Quiet => {}
        }
        written.then_some(path)
    }

    /// Writes what was said so far to the report (the build failed: the
    /// error itself is printed by the caller).
    pub(crate) fn finish_failed(&self, out_dir: &Path, error: &str) {
        let mut text = String::from("the build failed\n\n");
        for line in self
            .lines
            .borrow()
            .iter()
            .map(String::as_str)
            .chain([error])
        {
            text.push_str(line);
            text.push('\n');
        }
        let _ = write_atomic(&out_dir.join(REPORT_FILE), text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reaches_the_report_and_the_summary_leads_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::new(Output::Quiet, false);
        log.detail("kernel `a` (f32): policy pick\nsecond line");
        log.progress("kernel `b`: 12 candidates in 3.0s");
        log.warn("lock entry for `c` is stale");
        let path = log.finish(dir.path(), "3 kernels").unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "3 kernels",
                "",
                "kernel `a` (f32): policy pick",
                "second line",
                "kernel `b`: 12 candidates in 3.0s",
                "warning: lock entry for `c` is stale",
            ]
        );
    }

    #[test]
    fn a_failed_build_still_leaves_what_it_said() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::new(Output::Quiet, false);
        log.detail("policy: learned");
        log.finish_failed(dir.path(), "error: bad lock file");
        let text = std::fs::read_to_string(dir.path().join(REPORT_FILE)).unwrap();
        assert!(
            text.contains("policy: learned\nerror: bad lock file"),
            "{text}"
        );
    }
}
