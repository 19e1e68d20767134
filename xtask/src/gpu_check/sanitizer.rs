//! The compute-sanitizer runs and the pass they execute.

use super::*;

/// Outcome of one compute-sanitizer tool run.
#[derive(Serialize, Clone)]
pub(super) struct SanitizerResult {
    pub(super) tool: String,
    /// `clean`, `errors`, `timed out`, `failed: ...` or `not run: ...`.
    pub(super) status: String,
    /// N of the tool's final `ERROR SUMMARY: N errors` line.
    pub(super) errors: Option<u64>,
    pub(super) exit_code: Option<i32>,
    /// Whether the sanitizer pass got through every launch.
    pub(super) completed: bool,
    pub(super) seconds: f64,
    pub(super) log: Option<String>,
}

impl SanitizerResult {
    pub(super) fn not_run(tool: &str, why: &str) -> SanitizerResult {
        SanitizerResult {
            tool: tool.to_string(),
            status: format!("not run: {why}"),
            errors: None,
            exit_code: None,
            completed: false,
            seconds: 0.0,
            log: None,
        }
    }
    /// Whether this result should fail the command.
    pub(super) fn is_problem(&self) -> bool {
        !(self.status == "clean" || self.status.starts_with("not run"))
    }
}

/// The error count of a compute-sanitizer output: N of the last
/// `ERROR SUMMARY: N error(s)` line, else (racecheck prints no such line) N of
/// the last `RACECHECK SUMMARY: ... (N errors, M warnings)` line.
pub(super) fn parse_error_summary(text: &str) -> Option<u64> {
    let error_summary = text.lines().rev().find_map(|l| {
        let (_, rest) = l.split_once("ERROR SUMMARY:")?;
        rest.split_whitespace().next()?.parse().ok()
    });
    error_summary.or_else(|| {
        text.lines().rev().find_map(|l| {
            let (_, rest) = l.split_once("RACECHECK SUMMARY:")?;
            let (_, inner) = rest.split_once('(')?;
            let n = inner.split_whitespace().next()?;
            inner
                .split_whitespace()
                .nth(1)?
                .starts_with("error")
                .then(|| n.parse().ok())
                .flatten()
        })
    })
}

/// The last `n` lines of `text`.
pub(super) fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = lines[start..].join("\n");
    out.push('\n');
    out
}

pub(super) fn find_on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

/// Kills the process group led by `child` (the sanitizer and its target).
pub(super) fn kill_group(child: &mut std::process::Child) {
    let pgid = format!("-{}", child.id());
    let _ = Command::new("kill")
        .args(["-KILL", "--", &pgid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs this executable's sanitizer pass under `compute-sanitizer --tool
/// <tool>`; its log is `sanitizer-<tool><tag>.log` in `out`.
pub(super) fn run_sanitizer(
    sanitizer: &Path,
    tool: &str,
    tag: &str,
    child_args: &[String],
    out: &Path,
    timeout: Duration,
) -> SanitizerResult {
    use std::os::unix::process::CommandExt;
    let t0 = Instant::now();
    let failed = |why: String| SanitizerResult {
        tool: tool.to_string(),
        status: format!("failed: {why}"),
        errors: None,
        exit_code: None,
        completed: false,
        seconds: t0.elapsed().as_secs_f64(),
        log: None,
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return failed(format!("cannot find the current executable: {e}")),
    };
    let full_log = out.join(format!("sanitizer-{tool}{tag}.full.log"));
    let log_name = format!("sanitizer-{tool}{tag}.log");
    let file = match File::create(&full_log) {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot create {}: {e}", full_log.display())),
    };
    let file2 = match file.try_clone() {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot duplicate a file handle: {e}")),
    };
    let mut cmd = Command::new(sanitizer);
    cmd.args([
        "--tool",
        tool,
        "--error-exitcode",
        "1",
        "--print-limit",
        "100",
    ])
    .arg(&exe)
    .args(child_args)
    .stdin(Stdio::null())
    .stdout(file)
    .stderr(file2)
    .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start {}: {e}", sanitizer.display())),
    };
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t0.elapsed() > timeout => {
                kill_group(&mut child);
                timed_out = true;
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(_) => {
                kill_group(&mut child);
                break None;
            }
        }
    };
    let bytes = std::fs::read(&full_log).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let _ = std::fs::remove_file(&full_log);
    let mut log = tail_lines(&text, LOG_TAIL_LINES);
    if timed_out {
        log += &format!("[gpu-check: killed after {} s]\n", timeout.as_secs());
    }
    let log_written = std::fs::write(out.join(&log_name), log).is_ok();
    let errors = parse_error_summary(&text);
    let completed = text.contains(PASS_DONE);
    let exit_code = status.and_then(|s| s.code());
    let status = if timed_out {
        "timed out".to_string()
    } else if errors.is_some_and(|n| n > 0) {
        "errors".to_string()
    } else if errors == Some(0) && exit_code == Some(0) && completed {
        "clean".to_string()
    } else if errors.is_none() {
        "failed: no error summary line in the output".to_string()
    } else if !completed {
        "failed: the sanitizer pass did not finish".to_string()
    } else {
        format!("failed: exit status {exit_code:?}")
    };
    SanitizerResult {
        tool: tool.to_string(),
        status,
        errors,
        exit_code,
        completed,
        seconds: t0.elapsed().as_secs_f64(),
        log: log_written.then_some(log_name),
    }
}

/// Launches every variant once per sanitizer matrix and value type.
pub(super) fn sanitize_value<T: Scalar>(
    gpu: &Gpu,
    mats: &[TestMatrix],
    loaded: &Loaded,
    counts: &mut (usize, usize, usize),
) -> Result<()> {
    let tol = tolerance(T::TYPE);
    for m in mats {
        let bench = Bench::<T>::new(gpu, &m.csr)
            .with_context(|| format!("uploading {} ({})", m.name, T::TYPE))?;
        for (v, f) in loaded {
            let Ok(func) = f else { continue };
            if !bench.device_csr().has_layout(v.strategy) {
                continue; // not applicable to this matrix
            }
            // SAFETY: `loaded` holds the entries of codegen::generate(v, T)
            // compiled for this GPU.
            match unsafe { bench.check(func, v) } {
                Ok(e) => {
                    counts.0 += 1;
                    if e.is_nan() || e > tol {
                        counts.1 += 1;
                        println!("wrong result: {} {} {}: {}", T::TYPE, m.name, v, fmt_err(e));
                    }
                }
                Err(e) if e.is_context_fatal() => {
                    bail!(
                        "context-fatal error on {} {} variant {}: {e}",
                        T::TYPE,
                        m.name,
                        v
                    )
                }
                Err(e) => {
                    counts.2 += 1;
                    println!("launch error: {} {} {}: {e}", T::TYPE, m.name, v);
                }
            }
        }
    }
    Ok(())
}

/// The hidden `--sanitizer-pass` mode (runs under compute-sanitizer).
pub(super) fn sanitizer_pass(args: &Args) -> Result<()> {
    let gpu = Gpu::new(0).map_err(|e| anyhow!("no GPU: {e}"))?;
    sparserl_rt::nvrtc::locate().map_err(|e| anyhow!("no NVRTC: {e}"))?;
    if args.large_only {
        let s = super::large::run(&gpu, None)?;
        println!(
            "{PASS_DONE}: {} launches, {} wrong results, 0 launch errors, 0 kernels not compiled",
            s.passed + s.failed,
            s.failed
        );
        return Ok(());
    }
    if args.spmm_only {
        let (passed, failed) = super::spmm::sanitizer_subset(
            &gpu,
            args.spmm_variants.as_deref(),
            args.spmm_slice.as_deref(),
        )?;
        println!("sanitizer pass: spmm {passed} checks passed, {failed} failed");
        println!(
            "{PASS_DONE}: {} launches, {failed} wrong results, 0 launch errors, 0 kernels not compiled",
            passed + failed
        );
        return Ok(());
    }
    let variants = variant_list(args.variants);
    let mats = sanitizer_matrices()?;
    let jobs: Vec<(ValueType, Variant)> = ValueType::ALL
        .iter()
        .flat_map(|&t| variants.iter().map(move |&v| (t, v)))
        .collect();
    let compiled = precompile(&gpu.arch(), &jobs, args.ptx_dir.as_deref(), None);
    let not_compiled = compiled.iter().filter(|c| c.result.is_err()).count();
    let loaded = load_all(&gpu, compiled).map_err(|f| anyhow!("{f}"))?;
    let mut counts = (0usize, 0usize, 0usize);
    for value in ValueType::ALL {
        let l = loaded
            .get(&value)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .to_vec();
        match value {
            ValueType::F32 => sanitize_value::<f32>(&gpu, &mats, &l, &mut counts)?,
            ValueType::F64 => sanitize_value::<f64>(&gpu, &mats, &l, &mut counts)?,
        }
    }
    let (spmm_passed, spmm_failed) = if args.no_spmm {
        (0, 0)
    } else {
        super::spmm::sanitizer_subset(
            &gpu,
            args.spmm_variants.as_deref(),
            args.spmm_slice.as_deref(),
        )?
    };
    println!("sanitizer pass: spmm {spmm_passed} checks passed, {spmm_failed} failed");
    println!(
        "{PASS_DONE}: {} launches, {} wrong results, {} launch errors, {not_compiled} kernels not compiled",
        counts.0 + spmm_passed + spmm_failed,
        counts.1 + spmm_failed,
        counts.2
    );
    Ok(())
}
