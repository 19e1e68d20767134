//! The `objective` key, for the crate (`[package.metadata.sparserl]`) and
//! per kernel: `"time"` (the default), `"energy"` or a table of weights
//! `{ time = w1, energy = w2 }`. A kernel's own key overrides the crate's;
//! SpMM kernels are measured for time only, so a non-time objective on an
//! `op = "spmm"` kernel is an error, and the crate's objective applies to
//! its SpMV kernels only.

use super::*;
use crate::objective::Objective;

/// What every objective message says is allowed.
const EXPECTED: &str = "expected \"time\", \"energy\" or a table of weights like \
                        { time = 0.5, energy = 0.5 } (non-negative numbers, not both zero)";

/// Validates an `objective` value at key path `path`.
pub(super) fn validate_objective(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
) -> Result<Objective, DescriptorError> {
    match v {
        Value::String(s) if s == "time" => Ok(Objective::Time),
        Value::String(s) if s == "energy" => Ok(Objective::Energy),
        Value::String(s) => Err(cx.err(path, format!("found {}, {EXPECTED}", quote(s)))),
        Value::Table(t) => weights(cx, path, t),
        other => Err(cx.err(path, format!("found {}, {EXPECTED}", found_typed(other)))),
    }
}

/// `{ time = w1, energy = w2 }`: either key may be left out (weight 0).
fn weights(cx: &Cx<'_>, path: &str, t: &Table) -> Result<Objective, DescriptorError> {
    if let Some(k) = t.keys().find(|k| *k != "time" && *k != "energy") {
        return Err(cx.err(
            &join_key(path, k),
            format!(
                "found unknown key \"{k}\", expected only \"time\" and \"energy\" in an \
                 objective table"
            ),
        ));
    }
    let mut w = [0.0f64; 2];
    for (slot, key) in w.iter_mut().zip(["time", "energy"]) {
        let Some(v) = t.get(key) else { continue };
        let x = match v {
            Value::Integer(i) => *i as f64,
            Value::Float(f) => *f,
            other => {
                return Err(cx.err(
                    &join_key(path, key),
                    format!(
                        "found {}, expected a non-negative number",
                        found_typed(other)
                    ),
                ));
            }
        };
        if !(x.is_finite() && x >= 0.0) {
            return Err(cx.err(
                &join_key(path, key),
                format!("found {}, expected a non-negative finite number", found(v)),
            ));
        }
        *slot = x;
    }
    if w == [0.0, 0.0] {
        return Err(cx.err(path, format!("found weights that are all zero, {EXPECTED}")));
    }
    Ok(Objective::Weighted {
        time: w[0],
        energy: w[1],
    })
}

/// A kernel's objective: its own key, else the crate's (`inherited`), for
/// operation `op`.
pub(super) fn kernel_objective(
    cx: &Cx<'_>,
    path: &str,
    op: Op,
    own: Option<&Value>,
    inherited: Objective,
) -> Result<Objective, DescriptorError> {
    let key_path = join_key(path, "objective");
    let objective = match own {
        None => {
            return Ok(if op == Op::Spmm {
                Objective::Time
            } else {
                inherited
            });
        }
        Some(v) => validate_objective(cx, &key_path, v)?,
    };
    if op == Op::Spmm && !objective.is_time() {
        return Err(cx.err(
            &key_path,
            format!(
                "found {}, expected \"time\" on an op = \"spmm\" kernel (SpMM kernels are \
                 measured for time only; energy objectives apply to op = \"spmv\" kernels)",
                own.map_or_else(String::new, found)
            ),
        ));
    }
    Ok(objective)
}
