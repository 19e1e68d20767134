//! The SpMM section's sanitizer runs cut into slices of the design space
//! (`gpu-check --spmm-only --sanitizer-jobs N`): every slice runs under
//! every tool as its own compute-sanitizer process, N at a time.
//!
//! One process over the whole space runs its launches one after another
//! under the tool's instrumentation, which is mostly host work; slices in
//! parallel use the host's cores. racecheck checks shared-memory accesses
//! only, so it is left out of slices whose generated kernels declare no
//! shared memory (and said so in the summary).

use super::*;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmEpilogue, spmm_space};
use std::collections::BTreeMap;

/// Dot-separated parts of a variant id that name its slice at first:
/// family, block, group and the next knob. A slice larger than its share of
/// the processes is cut by further parts ([`spmm_slices`]).
const SLICE_PARTS: usize = 4;

/// Why racecheck does not run on a slice.
const NO_SHARED: &str = "no shared memory in these kernels (racecheck checks shared memory only)";

/// The variants whose id starts with `prefix`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Slice {
    /// Leading parts of the id, ending in `.`.
    pub(super) prefix: String,
    /// (variant, layout, width) points of the sanitizer subset in it.
    pub(super) points: usize,
    /// Whether any of its generated modules (either value type, every
    /// epilogue) declares shared memory, or could not be generated.
    pub(super) shared: bool,
}

/// The slice prefix of a variant id: its first `depth` parts (one fewer
/// when the id has no more), with the trailing `.`.
pub(super) fn slice_prefix(id: &str, depth: usize) -> String {
    let parts: Vec<&str> = id.split('.').collect();
    let keep = depth.min(parts.len().saturating_sub(1)).max(1);
    format!("{}.", parts[..keep].join("."))
}

/// One variant id of the sanitizer subset: its points and whether any of
/// its modules declares shared memory.
type Member = (String, usize, bool);

/// The slices of the sanitizer subset ([`spmm::SANITIZER_WIDTHS`], both
/// layouts) among the variants whose id matches `only`
/// ([`spmm::id_matches`]), largest first: prefixes of [`SLICE_PARTS`]
/// parts, and a slice of more than its share of the points (all of them
/// over `jobs`, the processes at a time) cut by its next part while its ids
/// have one, so that one large slice does not run on long after the rest
/// (racecheck takes minutes per handful of points).
pub(super) fn spmm_slices(only: Option<&str>, jobs: usize) -> Vec<Slice> {
    let all = members(only);
    let max_points = all.iter().map(|m| m.1).sum::<usize>().div_ceil(jobs.max(1));
    let mut work = vec![(SLICE_PARTS, all)];
    let mut slices = Vec::new();
    while let Some((depth, group)) = work.pop() {
        for (prefix, part) in by_prefix(group, depth) {
            let points: usize = part.iter().map(|m| m.1).sum();
            let deeper = part.iter().all(|m| m.0.split('.').count() > depth + 1);
            if points > max_points && deeper {
                work.push((depth + 1, part));
            } else {
                let shared = part.iter().any(|m| m.2);
                slices.push(Slice {
                    prefix,
                    points,
                    shared,
                });
            }
        }
    }
    slices.sort_by(|a, b| b.points.cmp(&a.points).then(a.prefix.cmp(&b.prefix)));
    slices
}

/// The members grouped by their prefix of `depth` parts.
fn by_prefix(members: Vec<Member>, depth: usize) -> BTreeMap<String, Vec<Member>> {
    let mut map: BTreeMap<String, Vec<Member>> = BTreeMap::new();
    for m in members {
        map.entry(slice_prefix(&m.0, depth)).or_default().push(m);
    }
    map
}

/// Every variant id of the sanitizer subset that matches `only`.
fn members(only: Option<&str>) -> Vec<Member> {
    let mut map: BTreeMap<String, (usize, bool)> = BTreeMap::new();
    for layout in DenseLayout::ALL {
        for &n in &spmm::SANITIZER_WIDTHS {
            for v in spmm_space(n, layout) {
                let id = v.id();
                if only.is_some_and(|t| !spmm::id_matches(&id, t)) {
                    continue;
                }
                let e = map.entry(id).or_insert((0, false));
                e.0 += 1;
                // Generated only until one module of the id declares it.
                e.1 = e.1
                    || ValueType::ALL.iter().any(|&value| {
                        spmm::generate(&v, value, layout, Some(n), &SpmmEpilogue::ALL)
                            .map_or(true, |src| src.contains("__shared__"))
                    });
            }
        }
    }
    map.into_iter().map(|(id, (p, sh))| (id, p, sh)).collect()
}

/// One tool's run over one slice.
pub(super) struct SliceRun {
    pub(super) tool: &'static str,
    pub(super) prefix: String,
    pub(super) result: SanitizerResult,
    /// Launches the pass reported (its `sanitizer pass: done` line).
    pub(super) launches: Option<u64>,
}

/// N of the pass's `sanitizer pass: done: N launches` line in `text`.
pub(super) fn launches_in(text: &str) -> Option<u64> {
    text.lines().rev().find_map(|l| {
        let (_, rest) = l.split_once(&format!("{PASS_DONE}:"))?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Every (tool, slice) run, `jobs` processes at a time, largest slices first.
pub(super) fn run_slices(san: &Path, args: &Args, slices: &[Slice], jobs: usize) -> Vec<SliceRun> {
    let mut work: Vec<(&'static str, &Slice)> = tools(args)
        .into_iter()
        .flat_map(|t| slices.iter().map(move |s| (t, s)))
        .collect();
    work.sort_by_key(|w| std::cmp::Reverse(w.1.points));
    let timeout = Duration::from_secs(args.sanitizer_timeout.max(1));
    let next = AtomicUsize::new(0);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                while let Some(&(tool, slice)) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let run = run_slice(san, args, tool, slice, timeout);
                    println!(
                        "  SpMM {tool} {}: {} ({} points, launches {}, {:.0} s)",
                        slice.prefix,
                        run.result.status,
                        slice.points,
                        run.launches.map_or("-".to_string(), |n| n.to_string()),
                        run.result.seconds
                    );
                    runs.lock().unwrap_or_else(|p| p.into_inner()).push(run);
                }
            });
        }
    });
    runs.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// One tool over one slice (racecheck only where the slice has shared memory).
fn run_slice(
    san: &Path,
    args: &Args,
    tool: &'static str,
    slice: &Slice,
    timeout: Duration,
) -> SliceRun {
    let prefix = slice.prefix.clone();
    if tool == "racecheck" && !slice.shared {
        let result = SanitizerResult::not_run(tool, NO_SHARED);
        return SliceRun {
            tool,
            prefix,
            result,
            launches: None,
        };
    }
    let mut child_args = section_pass_args(args, "--spmm-only");
    child_args.extend(["--spmm-slice".to_string(), prefix.clone()]);
    let tag = format!("-{}", prefix.trim_end_matches('.'));
    let result = run_sanitizer(san, tool, &tag, &child_args, &args.out, timeout);
    let launches = result
        .log
        .as_ref()
        .and_then(|l| std::fs::read_to_string(args.out.join(l)).ok())
        .and_then(|t| launches_in(&t));
    SliceRun {
        tool,
        prefix,
        result,
        launches,
    }
}

/// The tools of `--sanitizer-tools`, in its order (each a [`SANITIZER_TOOLS`]
/// entry: clap accepts no other).
pub(super) fn tools(args: &Args) -> Vec<&'static str> {
    args.sanitizer_tools
        .iter()
        .filter_map(|t| SANITIZER_TOOLS.iter().copied().find(|k| k == t))
        .collect()
}

/// Per tool: slices clean, not run, with problems, and launches; the
/// problems as lines for the command's error.
pub(super) fn summarise(args: &Args, runs: &[SliceRun]) -> Vec<String> {
    let mut problems = Vec::new();
    for tool in tools(args) {
        let mine: Vec<&SliceRun> = runs.iter().filter(|r| r.tool == tool).collect();
        let clean = mine.iter().filter(|r| r.result.status == "clean").count();
        let skipped = mine
            .iter()
            .filter(|r| !r.result.is_problem() && r.result.status != "clean");
        let launches: u64 = mine.iter().filter_map(|r| r.launches).sum();
        println!(
            "  SpMM {tool}: {clean} of {} slices clean, {} not run, {launches} launches",
            mine.len(),
            skipped.count()
        );
        for r in mine.iter().filter(|r| r.result.is_problem()) {
            problems.push(format!("{tool} {}: {}", r.prefix, r.result.status));
        }
    }
    problems
}
