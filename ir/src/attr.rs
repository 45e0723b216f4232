//! Attributes: the small subset of MLIR's attribute language that ck ops use.
//!
//! Dictionaries are `BTreeMap`s so printing order is canonical (sorted, as
//! MLIR prints dictionary attributes) and print(parse(x)) is stable.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// A unit attribute: present or absent (`{ck.mirror}`).
    Unit,
    Bool(bool),
    /// `N : i64`.
    Int(i64),
    /// `X : f32` (stored as f32: that is the precision ck computes in).
    F32(f32),
    /// `[a, b, ...]` of i64.
    IntArray(Vec<i64>),
    /// `"..."`.
    Str(String),
    /// `dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>`: f32 elements,
    /// row-major, of a static shape (MLIR's dense elements attribute). The
    /// value of `ck.constant`.
    Dense { shape: Vec<u64>, data: Vec<f32> },
}

pub type Attrs = BTreeMap<String, Attr>;

impl Attr {
    pub fn kind_name(&self) -> &'static str {
        match self {
            Attr::Unit => "unit",
            Attr::Bool(_) => "bool",
            Attr::Int(_) => "i64 integer",
            Attr::F32(_) => "f32 float",
            Attr::IntArray(_) => "array of integers",
            Attr::Str(_) => "string",
            Attr::Dense { .. } => "dense f32 elements",
        }
    }
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_f32(&self) -> Option<f32> {
        match self {
            Attr::F32(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attr::Bool(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_ints(&self) -> Option<&[i64]> {
        match self {
            Attr::IntArray(v) => Some(v),
            _ => None,
        }
    }
    /// The shape and row-major data of a dense elements attribute.
    pub fn as_dense(&self) -> Option<(&[u64], &[f32])> {
        match self {
            Attr::Dense { shape, data } => Some((shape, data)),
            _ => None,
        }
    }
    /// A string attribute's text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Writes `data` nested by `shape` (`[[a, b], [c, d]]`; a scalar for rank 0).
/// Stops early (never panics) when `data` is shorter than the shape says.
fn write_nested(f: &mut fmt::Formatter<'_>, shape: &[u64], data: &[f32], at: &mut usize) -> fmt::Result {
    let Some((&n, rest)) = shape.split_first() else {
        let v = data.get(*at).copied().unwrap_or(0.0);
        *at += 1;
        return f.write_str(&format_f32(v));
    };
    f.write_str("[")?;
    for i in 0..n {
        if *at > data.len() {
            break;
        }
        if i > 0 {
            f.write_str(", ")?;
        }
        write_nested(f, rest, data, at)?;
    }
    f.write_str("]")
}

/// Prints an f32 so that MLIR's lexer reads it back as a float literal
/// (it needs a `.` before any exponent) and so that it round-trips exactly.
/// Non-finite values use MLIR's hexadecimal bit-pattern form.
pub fn format_f32(v: f32) -> String {
    if !v.is_finite() {
        return format!("0x{:08X}", v.to_bits());
    }
    let s = format!("{v:?}");
    if s.contains('.') {
        return s;
    }
    match s.find('e') {
        Some(i) => format!("{}.0{}", &s[..i], &s[i..]),
        None => format!("{s}.0"),
    }
}

/// Whether a dictionary key can be printed bare (`bare-id` in MLIR's grammar).
pub fn is_bare_key(k: &str) -> bool {
    let mut cs = k.chars();
    match cs.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.')
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attr::Unit => f.write_str("unit"),
            Attr::Bool(b) => write!(f, "{b}"),
            Attr::Int(v) => write!(f, "{v} : i64"),
            Attr::F32(v) => write!(f, "{} : f32", format_f32(*v)),
            Attr::IntArray(vs) => {
                f.write_str("[")?;
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Attr::Str(s) => {
                f.write_str("\"")?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        c if (c as u32) < 0x20 => write!(f, "\\{:02X}", c as u32)?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("\"")
            }
            Attr::Dense { shape, data } => {
                f.write_str("dense<")?;
                write_nested(f, shape, data, &mut 0)?;
                write!(f, "> : {}", crate::types::TensorType::f32(shape.clone()))
            }
        }
    }
}

/// Prints a dictionary as ` {k = v, unit_key}` (leading space) or nothing when empty.
pub fn format_dict(attrs: &Attrs) -> String {
    if attrs.is_empty() {
        return String::new();
    }
    let mut s = String::from(" {");
    for (i, (k, v)) in attrs.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        if is_bare_key(k) {
            s.push_str(k);
        } else {
            s.push_str(&Attr::Str(k.clone()).to_string());
        }
        if !matches!(v, Attr::Unit) {
            s.push_str(" = ");
            s.push_str(&v.to_string());
        }
    }
    s.push('}');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn floats_always_have_a_dot() {
        assert_eq!(format_f32(1.0), "1.0");
        assert_eq!(format_f32(0.5), "0.5");
        assert_eq!(format_f32(1e-5), "1.0e-5");
        assert_eq!(format_f32(1e20), "1.0e20");
        assert_eq!(format_f32(f32::INFINITY), "0x7F800000");
    }
    #[test]
    fn dense_prints_nested_by_shape() {
        let a = Attr::Dense { shape: vec![2, 2], data: vec![1.0, -2.5, 0.0, 1e-5] };
        assert_eq!(a.to_string(), "dense<[[1.0, -2.5], [0.0, 1.0e-5]]> : tensor<2x2xf32>");
        let s = Attr::Dense { shape: vec![], data: vec![3.0] };
        assert_eq!(s.to_string(), "dense<3.0> : tensor<f32>");
        let e = Attr::Dense { shape: vec![0], data: vec![] };
        assert_eq!(e.to_string(), "dense<[]> : tensor<0xf32>");
    }
    #[test]
    fn dict_prints_sorted_with_units_bare() {
        let mut a = Attrs::new();
        a.insert("dims".into(), Attr::IntArray(vec![0, 1]));
        a.insert("ck.mirror".into(), Attr::Unit);
        assert_eq!(format_dict(&a), " {ck.mirror, dims = [0, 1]}");
    }
}
