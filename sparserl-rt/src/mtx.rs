//! Matrix Market reader (`matrix coordinate` files, plain or gzipped).
//!
//! Supported: fields `real`, `integer` and `pattern` (pattern entries get the
//! value 1.0) and symmetries `general`, `symmetric` and `skew-symmetric` (the
//! other triangle is expanded; skew-symmetric mirrors are negated; diagonal
//! entries are never duplicated). Duplicate entries are summed. Lines starting
//! with `%` and blank lines are skipped. Every error names the file and, where
//! it concerns the content, the 1-based line number. Malformed input of any kind
//! (including a corrupt gzip stream) is an error, never a panic.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use thiserror::Error;

use crate::csr::{Csr, CsrError};

/// Why a Matrix Market file could not be read.
#[derive(Debug, Error)]
pub enum MtxError {
    /// The file could not be opened or read (also: a corrupt gzip stream).
    #[error("{path}{}: I/O error: {source}", at_line(.line))]
    Io {
        /// file name
        path: String,
        /// 1-based line being read when the error happened, if any
        line: Option<usize>,
        /// underlying error
        source: std::io::Error,
    },
    /// The first line is not a valid `%%MatrixMarket` banner.
    #[error("{name}:{line}: bad Matrix Market header: {found:?}")]
    BadHeader {
        /// file name
        name: String,
        /// 1-based line number
        line: usize,
        /// what was found (or why it is wrong)
        found: String,
    },
    /// A valid header asking for something this reader does not support.
    #[error("{name}:{line}: unsupported Matrix Market format: {what}")]
    Unsupported {
        /// file name
        name: String,
        /// 1-based line number
        line: usize,
        /// the unsupported feature
        what: String,
    },
    /// The size line (`rows cols nnz`) is missing or malformed.
    #[error("{name}:{line}: bad size line {text:?}: {reason}")]
    BadSizeLine {
        /// file name
        name: String,
        /// 1-based line number
        line: usize,
        /// the line's text
        text: String,
        /// what is wrong
        reason: String,
    },
    /// An entry line is malformed.
    #[error("{name}:{line}: bad entry {text:?}: {reason}")]
    BadEntry {
        /// file name
        name: String,
        /// 1-based line number
        line: usize,
        /// the line's text
        text: String,
        /// what is wrong
        reason: String,
    },
    /// The file ended before the declared number of entries.
    #[error("{name}:{line}: file ends after {found} of {expected} declared entries")]
    Truncated {
        /// file name
        name: String,
        /// 1-based number of the last line of the file
        line: usize,
        /// declared entries
        expected: usize,
        /// entries found
        found: usize,
    },
    /// There are more entry lines than declared.
    #[error("{name}:{line}: more entries than the {expected} declared")]
    TooManyEntries {
        /// file name
        name: String,
        /// 1-based line number of the first extra entry
        line: usize,
        /// declared entries
        expected: usize,
    },
    /// The entries do not form a valid CSR matrix (e.g. a symmetric matrix
    /// whose expansion exceeds 32-bit indices).
    #[error("invalid matrix: {0}")]
    Csr(#[from] CsrError),
}

fn at_line(line: &Option<usize>) -> String {
    match line {
        Some(l) => format!(":{l}"),
        None => String::new(),
    }
}

/// Value field of a coordinate file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

/// Symmetry of a coordinate file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Symmetry {
    General,
    Symmetric,
    SkewSymmetric,
}

/// Largest number of entries reserved up front from the (untrusted) size line.
const MAX_RESERVE: usize = 1 << 24;

/// Reads a Matrix Market file; `.gz` files (by extension or gzip magic bytes)
/// are decompressed on the fly.
pub fn read_matrix_market(path: &Path) -> Result<Csr, MtxError> {
    let name = path.display().to_string();
    let io = |source| MtxError::Io {
        path: name.clone(),
        line: None,
        source,
    };
    let file = File::open(path).map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let magic = reader.fill_buf().map_err(io)?;
    let is_gz = magic.starts_with(&[0x1f, 0x8b])
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if is_gz {
        let dec = BufReader::with_capacity(1 << 16, MultiGzDecoder::new(reader));
        read_matrix_market_from(dec, &name)
    } else {
        read_matrix_market_from(reader, &name)
    }
}

/// Reads a Matrix Market stream; `name` is used in error messages.
pub fn read_matrix_market_from<R: BufRead>(reader: R, name: &str) -> Result<Csr, MtxError> {
    let mut parser = Parser {
        reader,
        name,
        line_no: 0,
        buf: Vec::with_capacity(256),
    };
    parser.run()
}

struct Parser<'a, R> {
    reader: R,
    name: &'a str,
    line_no: usize,
    buf: Vec<u8>,
}

/// Splits a line into at most `N` whitespace-separated tokens; returns the
/// tokens and the total count (which may exceed `N`).
fn tokens<const N: usize>(line: &[u8]) -> ([&[u8]; N], usize) {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut n = 0;
    for t in line
        .split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
    {
        if n < N {
            out[n] = t;
        }
        n += 1;
    }
    (out, n)
}

/// Parses an unsigned decimal integer (optional leading `+`).
fn parse_u64(t: &[u8]) -> Option<u64> {
    let t = t.strip_prefix(b"+").unwrap_or(t);
    if t.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in t {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// Parses a finite real number; accepts Fortran `D` exponents.
fn parse_real(t: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(t).ok()?;
    let v = match s.parse::<f64>() {
        Ok(v) => v,
        Err(_) if s.contains(['d', 'D']) => s.replace(['d', 'D'], "e").parse::<f64>().ok()?,
        Err(_) => return None,
    };
    v.is_finite().then_some(v)
}

/// Parses a (signed) integer value.
fn parse_int(t: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(t).ok()?;
    s.parse::<i64>().ok().map(|v| v as f64)
}

fn text_of(line: &[u8]) -> String {
    const MAX: usize = 200;
    let s = String::from_utf8_lossy(&line[..line.len().min(MAX)]);
    let s = s.trim();
    if line.len() > MAX {
        format!("{s}...")
    } else {
        s.to_string()
    }
}

impl<R: BufRead> Parser<'_, R> {
    /// Reads the next line into `self.buf` (without the line terminator);
    /// returns false at end of input.
    fn next_line(&mut self) -> Result<bool, MtxError> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| MtxError::Io {
                path: self.name.to_string(),
                line: Some(self.line_no + 1),
                source,
            })?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(true)
    }

    /// Reads the next line that is neither blank nor a `%` comment.
    fn next_content_line(&mut self) -> Result<bool, MtxError> {
        while self.next_line()? {
            let first = self.buf.iter().find(|b| !b.is_ascii_whitespace());
            match first {
                None | Some(b'%') => continue,
                Some(_) => return Ok(true),
            }
        }
        Ok(false)
    }

    fn header(&mut self) -> Result<(Field, Symmetry), MtxError> {
        let bad = |s: &Self, found: String| MtxError::BadHeader {
            name: s.name.to_string(),
            line: s.line_no.max(1),
            found,
        };
        if !self.next_line()? {
            return Err(bad(self, "empty file".to_string()));
        }
        let (t, n) = tokens::<5>(&self.buf);
        if n != 5 || !t[0].eq_ignore_ascii_case(b"%%MatrixMarket") {
            return Err(bad(self, text_of(&self.buf)));
        }
        let unsupported = |s: &Self, what: &str| MtxError::Unsupported {
            name: s.name.to_string(),
            line: s.line_no,
            what: what.to_string(),
        };
        let lower: Vec<String> = t[1..]
            .iter()
            .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
            .collect();
        match lower[0].as_str() {
            "matrix" => {}
            "vector" => return Err(unsupported(self, "object 'vector'")),
            _ => return Err(bad(self, text_of(&self.buf))),
        }
        match lower[1].as_str() {
            "coordinate" => {}
            "array" => return Err(unsupported(self, "format 'array' (dense)")),
            _ => return Err(bad(self, text_of(&self.buf))),
        }
        let field = match lower[2].as_str() {
            "real" | "double" => Field::Real,
            "integer" => Field::Integer,
            "pattern" => Field::Pattern,
            "complex" => return Err(unsupported(self, "field 'complex'")),
            _ => return Err(bad(self, text_of(&self.buf))),
        };
        let sym = match lower[3].as_str() {
            "general" => Symmetry::General,
            "symmetric" => Symmetry::Symmetric,
            "skew-symmetric" => Symmetry::SkewSymmetric,
            "hermitian" => return Err(unsupported(self, "symmetry 'hermitian'")),
            _ => return Err(bad(self, text_of(&self.buf))),
        };
        Ok((field, sym))
    }

    fn size_line(&mut self, sym: Symmetry) -> Result<(usize, usize, usize), MtxError> {
        if !self.next_content_line()? {
            return Err(MtxError::BadSizeLine {
                name: self.name.to_string(),
                line: self.line_no + 1,
                text: String::new(),
                reason: "missing (file ends after the header)".to_string(),
            });
        }
        let bad = |s: &Self, reason: String| MtxError::BadSizeLine {
            name: s.name.to_string(),
            line: s.line_no,
            text: text_of(&s.buf),
            reason,
        };
        let (t, n) = tokens::<3>(&self.buf);
        if n != 3 {
            return Err(bad(self, format!("expected 3 numbers, found {n} tokens")));
        }
        let mut v = [0usize; 3];
        for (k, tok) in t.iter().enumerate() {
            v[k] = parse_u64(tok)
                .and_then(|x| usize::try_from(x).ok())
                .ok_or_else(|| {
                    bad(
                        self,
                        format!("{:?} is not a non-negative integer", text_of(tok)),
                    )
                })?;
        }
        let [rows, cols, nnz] = v;
        if sym != Symmetry::General && rows != cols {
            return Err(bad(
                self,
                format!("a symmetric matrix must be square, got {rows} x {cols}"),
            ));
        }
        if rows >= i32::MAX as usize || cols >= i32::MAX as usize || nnz >= i32::MAX as usize {
            return Err(bad(
                self,
                format!("{}", CsrError::TooLarge { rows, cols, nnz }),
            ));
        }
        Ok((rows, cols, nnz))
    }

    fn run(&mut self) -> Result<Csr, MtxError> {
        let (field, sym) = self.header()?;
        let (rows, cols, declared) = self.size_line(sym)?;
        let want = if sym == Symmetry::General {
            declared
        } else {
            declared.saturating_mul(2)
        };
        let mut trip: Vec<(u32, u32, f64)> = Vec::with_capacity(want.min(MAX_RESERVE));
        let ntok = if field == Field::Pattern { 2 } else { 3 };
        let mut found = 0usize;
        while self.next_content_line()? {
            if found == declared {
                return Err(MtxError::TooManyEntries {
                    name: self.name.to_string(),
                    line: self.line_no,
                    expected: declared,
                });
            }
            let bad = |s: &Self, reason: String| MtxError::BadEntry {
                name: s.name.to_string(),
                line: s.line_no,
                text: text_of(&s.buf),
                reason,
            };
            let (t, n) = tokens::<3>(&self.buf);
            if n != ntok {
                return Err(bad(self, format!("expected {ntok} tokens, found {n}")));
            }
            let mut idx = [0u32; 2];
            for (k, (tok, limit)) in [(t[0], rows), (t[1], cols)].into_iter().enumerate() {
                let what = if k == 0 { "row" } else { "column" };
                let i = parse_u64(tok).ok_or_else(|| {
                    bad(
                        self,
                        format!("{what} index {:?} is not an integer", text_of(tok)),
                    )
                })?;
                if i == 0 || i > limit as u64 {
                    return Err(bad(
                        self,
                        format!("{what} index {i} is out of range 1..={limit}"),
                    ));
                }
                // limit < i32::MAX, so this fits.
                idx[k] = (i - 1) as u32;
            }
            let value = match field {
                Field::Pattern => 1.0,
                Field::Real => parse_real(t[2]).ok_or_else(|| {
                    bad(
                        self,
                        format!("value {:?} is not a finite real number", text_of(t[2])),
                    )
                })?,
                Field::Integer => parse_int(t[2]).ok_or_else(|| {
                    bad(self, format!("value {:?} is not an integer", text_of(t[2])))
                })?,
            };
            let [r, c] = idx;
            trip.push((r, c, value));
            if r != c {
                match sym {
                    Symmetry::General => {}
                    Symmetry::Symmetric => trip.push((c, r, value)),
                    Symmetry::SkewSymmetric => trip.push((c, r, -value)),
                }
            }
            found += 1;
        }
        if found < declared {
            return Err(MtxError::Truncated {
                name: self.name.to_string(),
                line: self.line_no,
                expected: declared,
                found,
            });
        }
        Ok(Csr::from_triplets(rows, cols, &trip)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::Write;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/matrices");

    fn fixture(name: &str) -> Result<Csr, MtxError> {
        read_matrix_market(&Path::new(DIR).join(name))
    }

    fn from_str(text: &str) -> Result<Csr, MtxError> {
        read_matrix_market_from(text.as_bytes(), "mem.mtx")
    }

    /// (row, col, value) of every stored entry.
    fn entries(m: &Csr) -> Vec<(usize, u32, f64)> {
        let mut out = Vec::new();
        for r in 0..m.rows() {
            for k in m.indptr()[r] as usize..m.indptr()[r + 1] as usize {
                out.push((r, m.indices()[k], m.values()[k]));
            }
        }
        out
    }

    struct Expect {
        rows: usize,
        cols: usize,
        nnz: usize,
        row_max: usize,
        empty_rows: usize,
    }

    /// Parses a MANIFEST.tsv: file -> expected numbers.
    fn manifest(text: &str) -> HashMap<String, Expect> {
        let mut out = HashMap::new();
        for line in text.lines() {
            if line.starts_with('#') || line.starts_with("file\t") || line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            let num = |i: usize| f[i].parse::<usize>().expect("manifest number");
            out.insert(
                f[0].to_string(),
                Expect {
                    rows: num(1),
                    cols: num(2),
                    nnz: num(3),
                    row_max: num(6),
                    empty_rows: num(7),
                },
            );
        }
        out
    }

    fn check(name: &str, m: &Csr, e: &Expect) {
        assert_eq!(
            (m.rows(), m.cols(), m.nnz()),
            (e.rows, e.cols, e.nnz),
            "{name}"
        );
        let lens: Vec<usize> = (0..m.rows()).map(|r| m.row_len(r)).collect();
        assert_eq!(lens.iter().copied().max().unwrap_or(0), e.row_max, "{name}");
        assert_eq!(
            lens.iter().filter(|&&l| l == 0).count(),
            e.empty_rows,
            "{name}"
        );
    }

    #[test]
    fn real_fixtures_match_manifest() {
        // rows cols nnz field symmetry row_max empty_rows, from the shared MANIFEST.tsv.
        let man = manifest(
            "lp_e226.mtx\t223\t472\t2768\treal\tgeneral\t110\t0\n\
             1138_bus.mtx\t1138\t1138\t4054\treal\tsymmetric\t18\t0\n\
             polblogs.mtx.gz\t1490\t1490\t33430\tpattern\tsymmetric\t351\t266\n\
             lp_80bau3b.mtx.gz\t2262\t9799\t21002\treal\tgeneral\t112\t25\n\
             illc1850.mtx.gz\t1850\t712\t8636\treal\tgeneral\t5\t0\n",
        );
        assert_eq!(man.len(), 5);
        for (name, e) in &man {
            let m = fixture(name).unwrap_or_else(|err| panic!("{err}"));
            check(name, &m, e);
        }
    }

    #[test]
    fn symmetric_expansion_is_symmetric() {
        let m = fixture("1138_bus.mtx").unwrap();
        let t = Csr::from_sprs(&m.to_sprs().transpose_view().to_csr()).unwrap();
        assert_eq!(m, t);
        let p = fixture("polblogs.mtx.gz").unwrap();
        assert!(p.values().iter().all(|&v| v == 1.0));
    }

    #[test]
    fn skew_symmetric_negates_mirror() {
        let m = fixture("skew_small.mtx").unwrap();
        assert_eq!((m.rows(), m.cols(), m.nnz()), (3, 3, 4));
        assert_eq!(
            entries(&m),
            vec![(0, 1, -1.5), (1, 0, 1.5), (1, 2, 2.0), (2, 1, -2.0)]
        );
    }

    #[test]
    fn integer_with_duplicates_is_summed() {
        let m = fixture("integer_small.mtx").unwrap();
        assert_eq!((m.rows(), m.cols(), m.nnz()), (2, 3, 3));
        assert_eq!(entries(&m), vec![(0, 0, 10.0), (0, 2, 2.0), (1, 2, -4.0)]);
    }

    #[test]
    fn pattern_general_gets_ones() {
        let m = fixture("pattern_general.mtx").unwrap();
        assert_eq!((m.rows(), m.cols(), m.nnz()), (3, 4, 4));
        assert_eq!(
            entries(&m),
            vec![(0, 1, 1.0), (1, 1, 1.0), (2, 0, 1.0), (2, 3, 1.0)]
        );
    }

    #[test]
    fn tiny_shapes() {
        let m = fixture("one_by_one.mtx").unwrap();
        assert_eq!(entries(&m), vec![(0, 0, -32.5)]);
        let v = fixture("column_vector.mtx").unwrap();
        assert_eq!((v.rows(), v.cols()), (4, 1));
        assert_eq!(entries(&v), vec![(0, 0, 1.0), (1, 0, 2.0), (3, 0, 4.0)]);
        assert_eq!(v.indptr(), &[0, 1, 2, 2, 3]);
        let e = fixture("empty.mtx").unwrap();
        assert_eq!((e.rows(), e.cols(), e.nnz()), (5, 3, 0));
        assert_eq!(e.indptr(), &[0; 6]);
    }

    #[test]
    fn bad_fixtures_give_the_right_error() {
        let err = fixture("bad_truncated.mtx").unwrap_err();
        assert!(
            matches!(
                err,
                MtxError::Truncated {
                    expected: 4,
                    found: 3,
                    line: 5,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("bad_truncated.mtx:5"), "{err}");

        let err = fixture("bad_header.mtx").unwrap_err();
        assert!(
            matches!(err, MtxError::BadHeader { line: 1, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("bad_header.mtx:1"), "{err}");

        let err = fixture("bad_number.mtx").unwrap_err();
        assert!(matches!(err, MtxError::BadEntry { line: 6, .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("bad_number.mtx:6") && msg.contains("3.x5"),
            "{msg}"
        );

        let err = fixture("bad_index.mtx").unwrap_err();
        assert!(matches!(err, MtxError::BadEntry { line: 4, .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("bad_index.mtx:4") && msg.contains("out of range"),
            "{msg}"
        );

        let err = fixture("bad_array.mtx").unwrap_err();
        assert!(
            matches!(err, MtxError::Unsupported { line: 1, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("bad_array.mtx:1"), "{err}");

        let err = fixture("does_not_exist.mtx").unwrap_err();
        assert!(matches!(err, MtxError::Io { line: None, .. }), "{err:?}");
        assert!(err.to_string().contains("does_not_exist.mtx"), "{err}");
    }

    #[test]
    fn in_memory_errors() {
        let h = "%%MatrixMarket matrix coordinate real general\n";
        let cases: Vec<(String, &str, usize)> = vec![
            (String::new(), "BadHeader", 1),
            (format!("{h}% only comments\n"), "BadSizeLine", 3),
            (format!("{h}2 2\n"), "BadSizeLine", 2),
            (format!("{h}2 -2 1\n"), "BadSizeLine", 2),
            (format!("{h}3000000000 2 1\n"), "BadSizeLine", 2),
            (format!("{h}2 2 1\n1 1 1.0\n2 2 2.0\n"), "TooManyEntries", 4),
            (format!("{h}2 2 1\n0 1 1.0\n"), "BadEntry", 3),
            (format!("{h}2 2 1\n1 1\n"), "BadEntry", 3),
            (format!("{h}2 2 1\n1 1 1.0 4\n"), "BadEntry", 3),
            (format!("{h}2 2 1\n1 1 nan\n"), "BadEntry", 3),
            (format!("{h}2 2 1\n1 x 1.0\n"), "BadEntry", 3),
            (format!("{h}2 2 1\n1 1 1.0\n\n% c\n"), "ok", 0),
            (
                "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n".into(),
                "BadEntry",
                3,
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1 1\n".into(),
                "BadEntry",
                3,
            ),
            (
                "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n".into(),
                "BadSizeLine",
                2,
            ),
            (
                "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n".into(),
                "Unsupported",
                1,
            ),
            (
                "%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n".into(),
                "Unsupported",
                1,
            ),
            (
                "%%MatrixMarket matrix coordinate real weird\n1 1 1\n1 1 1\n".into(),
                "BadHeader",
                1,
            ),
            ("%%MatrixMarket matrix\n".into(), "BadHeader", 1),
        ];
        for (text, want, line) in cases {
            let got = from_str(&text);
            let (kind, l) = match &got {
                Ok(_) => ("ok", 0),
                Err(MtxError::BadHeader { line, .. }) => ("BadHeader", *line),
                Err(MtxError::BadSizeLine { line, .. }) => ("BadSizeLine", *line),
                Err(MtxError::TooManyEntries { line, .. }) => ("TooManyEntries", *line),
                Err(MtxError::BadEntry { line, .. }) => ("BadEntry", *line),
                Err(MtxError::Unsupported { line, .. }) => ("Unsupported", *line),
                Err(e) => panic!("unexpected {e:?} for {text:?}"),
            };
            assert_eq!((kind, l), (want, line), "{text:?}: {got:?}");
            if let Err(e) = got {
                assert!(e.to_string().contains(&format!("mem.mtx:{line}")), "{e}");
            }
        }
    }

    #[test]
    fn corrupt_gzip_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let good = std::fs::read(Path::new(DIR).join("polblogs.mtx.gz")).unwrap();
        // Flip bytes in the middle of the deflate stream, and cut it short.
        let mut flipped = good.clone();
        for b in &mut flipped[good.len() / 2..good.len() / 2 + 64] {
            *b ^= 0x5a;
        }
        let cut = good[..good.len() / 2].to_vec();
        let no_ext = good.clone();
        for (name, bytes, ok) in [
            ("flipped.mtx.gz", flipped, false),
            ("cut.mtx.gz", cut, false),
            ("sniffed.mtx", no_ext, true),
            ("garbage.mtx.gz", vec![0x1f, 0x8b, 1, 2, 3], false),
        ] {
            let path = dir.path().join(name);
            std::fs::File::create(&path)
                .unwrap()
                .write_all(&bytes)
                .unwrap();
            let got = read_matrix_market(&path);
            assert_eq!(got.is_ok(), ok, "{name}: {got:?}");
            if let Err(e) = got {
                assert!(e.to_string().contains(name), "{e}");
            }
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let base = std::fs::read(Path::new(DIR).join("lp_e226.mtx")).unwrap();
        for _ in 0..200 {
            let mut b = base[..rng.random_range(0..2000)].to_vec();
            for _ in 0..rng.random_range(0..8) {
                if b.is_empty() {
                    break;
                }
                let i = rng.random_range(0..b.len());
                b[i] = rng.random();
            }
            let _ = read_matrix_market_from(&b[..], "fuzz");
        }
    }

    /// Reads every matrix of the directory named by `SPARSERL_MATRICES` and
    /// checks it against that directory's MANIFEST.tsv.
    #[test]
    #[ignore = "needs SPARSERL_MATRICES; run with --release"]
    fn reads_every_shared_matrix() {
        let Some(dir) = std::env::var_os("SPARSERL_MATRICES") else {
            println!("SPARSERL_MATRICES is not set; skipping");
            return;
        };
        let dir = Path::new(&dir);
        let man = manifest(&std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap());
        let mut seen = 0;
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".mtx") || n.ends_with(".mtx.gz"))
            .collect();
        names.sort();
        for name in names {
            let e = man
                .get(&name)
                .unwrap_or_else(|| panic!("{name} missing from MANIFEST.tsv"));
            let t = std::time::Instant::now();
            let m = read_matrix_market(&dir.join(&name)).unwrap_or_else(|err| panic!("{err}"));
            println!(
                "{name}: {} x {} nnz {} in {:?}",
                m.rows(),
                m.cols(),
                m.nnz(),
                t.elapsed()
            );
            check(&name, &m, e);
            seen += 1;
        }
        assert_eq!(seen, man.len(), "every MANIFEST entry has a file");
    }
}
