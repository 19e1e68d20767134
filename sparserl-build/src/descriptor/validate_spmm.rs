//! The keys whose meaning depends on `op`: `columns` and `dense` (spmm
//! kernels only) and `epilogues` (each operation has its own), in
//! documented order.

use super::*;

/// Example given with every `columns` message.
const COLUMNS_EXAMPLE: &str = "e.g. columns = 64 or columns = [32, 64, 128]";

/// What the op-dependent keys of one kernel table declare.
pub(super) struct OpKeys {
    /// SpMV epilogues (empty for spmm kernels).
    pub(super) epilogues: Vec<sparserl_rt::Epilogue>,
    /// The SpMM declaration (`None` for spmv kernels).
    pub(super) spmm: Option<SpmmDecl>,
}

/// Validates `columns`, `dense` and `epilogues` of kernel table `path`,
/// declared with operation `op`.
pub(super) fn validate_op_keys(
    cx: &Cx<'_>,
    path: &str,
    op: Op,
    raw: &RawKernel,
) -> Result<OpKeys, DescriptorError> {
    let epilogues_path = join_key(path, "epilogues");
    match op {
        Op::Spmv => {
            for (key, v) in [("columns", &raw.columns), ("dense", &raw.dense)] {
                if let Some(v) = v {
                    return Err(cx.err(
                        &join_key(path, key),
                        format!(
                            "found {}, expected no \"{key}\" key on an op = \"spmv\" kernel \
                             (\"columns\" and \"dense\" describe the dense matrix of \
                             op = \"spmm\")",
                            found(v)
                        ),
                    ));
                }
            }
            let epilogues = match &raw.epilogues {
                None => Vec::new(),
                Some(v) => spmv_epilogues(cx, &epilogues_path, v)?,
            };
            Ok(OpKeys {
                epilogues,
                spmm: None,
            })
        }
        Op::Spmm => {
            let columns = validate_columns(
                cx,
                &join_key(path, "columns"),
                cx.required(
                    path,
                    "columns",
                    &raw.columns,
                    &format!(
                        "the dense widths N the kernel is tuned for ({COLUMNS_EXAMPLE}); \
                         op = \"spmm\" kernels need it"
                    ),
                )?,
            )?;
            let dense = match &raw.dense {
                None => DenseLayout::RowMajor,
                Some(v) => validate_dense(cx, &join_key(path, "dense"), v)?,
            };
            let epilogues = match &raw.epilogues {
                None => Vec::new(),
                Some(v) => spmm_epilogues(cx, &epilogues_path, v)?,
            };
            Ok(OpKeys {
                epilogues: Vec::new(),
                spmm: Some(SpmmDecl {
                    columns,
                    dense,
                    epilogues,
                }),
            })
        }
    }
}

/// `columns = 64` or `columns = [32, 64, 128]`: positive widths no larger
/// than [`MAX_SPMM_COLUMNS`], returned deduplicated and ascending.
fn validate_columns(cx: &Cx<'_>, path: &str, v: &Value) -> Result<Vec<usize>, DescriptorError> {
    let width = |item_path: &str, item: &Value| -> Result<usize, DescriptorError> {
        match item {
            Value::Integer(i) if *i > 0 && (*i as u64) <= MAX_SPMM_COLUMNS as u64 => {
                Ok(*i as usize)
            }
            Value::Integer(i) => Err(cx.err(
                item_path,
                format!("found {i}, expected a positive integer no larger than {MAX_SPMM_COLUMNS}"),
            )),
            other => Err(cx.err(
                item_path,
                format!(
                    "found {}, expected a positive integer no larger than {MAX_SPMM_COLUMNS}",
                    found_typed(other)
                ),
            )),
        }
    };
    let mut out = match v {
        Value::Integer(_) => vec![width(path, v)?],
        Value::Array(items) if items.is_empty() => {
            return Err(cx.err(
                path,
                format!(
                    "found an empty array, expected at least one dense width ({COLUMNS_EXAMPLE})"
                ),
            ));
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| width(&format!("{path}[{i}]"), item))
            .collect::<Result<Vec<usize>, _>>()?,
        other => {
            return Err(cx.err(
                path,
                format!(
                    "found {}, expected a positive integer no larger than {MAX_SPMM_COLUMNS} \
                     or an array of them ({COLUMNS_EXAMPLE})",
                    found_typed(other)
                ),
            ));
        }
    };
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `dense = "row-major" | "col-major"`.
fn validate_dense(cx: &Cx<'_>, path: &str, v: &Value) -> Result<DenseLayout, DescriptorError> {
    let names: Vec<&str> = DenseLayout::ALL.iter().map(|d| d.as_str()).collect();
    let hint = " (the storage order of X and Y: \"row-major\" as in PyTorch and GNN codes, \
                \"col-major\" as in BLAS)";
    match v {
        Value::String(s) => DenseLayout::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| {
                cx.err(
                    path,
                    format!("found {}, expected {}{hint}", quote(s), one_of(&names)),
                )
            }),
        other => Err(cx.err(
            path,
            format!(
                "found {}, expected {}{hint}",
                found_typed(other),
                one_of(&names)
            ),
        )),
    }
}

/// The epilogues of an spmv kernel; an spmm epilogue's name says so.
fn spmv_epilogues(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
) -> Result<Vec<sparserl_rt::Epilogue>, DescriptorError> {
    let names: Vec<&str> = sparserl_rt::Epilogue::ALL
        .iter()
        .map(|e| e.as_str())
        .collect();
    let other = |s: &str| {
        SpmmEpilogue::parse(s)
            .map(|_| format!(" ({} is an epilogue of op = \"spmm\" kernels)", quote(s)))
    };
    epilogue_list(cx, path, v, &names, sparserl_rt::Epilogue::parse, other)
}

/// The epilogues of an spmm kernel; an spmv epilogue's name says so.
fn spmm_epilogues(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
) -> Result<Vec<SpmmEpilogue>, DescriptorError> {
    let names: Vec<&str> = SpmmEpilogue::ALL.iter().map(|e| e.as_str()).collect();
    let other = |s: &str| {
        sparserl_rt::Epilogue::parse(s)
            .map(|_| format!(" ({} is an epilogue of op = \"spmv\" kernels)", quote(s)))
    };
    epilogue_list(cx, path, v, &names, SpmmEpilogue::parse, other)
}

/// An array of epilogue names from `names`, each at most once; `other_op`
/// explains a name that belongs to the other operation.
fn epilogue_list<E: Copy + PartialEq>(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
    names: &[&str],
    parse: impl Fn(&str) -> Option<E>,
    other_op: impl Fn(&str) -> Option<String>,
) -> Result<Vec<E>, DescriptorError> {
    let Value::Array(items) = v else {
        return Err(cx.err(
            path,
            format!(
                "found {}, expected an array of {}",
                found_typed(v),
                one_of(names)
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let e = match item {
            Value::String(s) => parse(s).ok_or_else(|| {
                cx.err(
                    &item_path,
                    format!(
                        "found {}, expected {}{}",
                        quote(s),
                        one_of(names),
                        other_op(s).unwrap_or_default()
                    ),
                )
            })?,
            other => {
                return Err(cx.err(
                    &item_path,
                    format!("found {}, expected {}", found_typed(other), one_of(names)),
                ));
            }
        };
        if out.contains(&e) {
            return Err(cx.err(
                &item_path,
                format!(
                    "found {} twice, expected each epilogue at most once",
                    found(item)
                ),
            ));
        }
        out.push(e);
    }
    Ok(out)
}
