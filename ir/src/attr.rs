//! Attributes: the small subset of MLIR's attribute language that ck ops use.
//!
//! Dictionaries ([`Attrs`]) iterate in key order, as a `BTreeMap` does, so
//! printing order is canonical (sorted, as MLIR prints dictionary
//! attributes) and print(parse(x)) is stable.

use std::fmt;
use std::sync::Arc;

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

/// An attribute dictionary: a map from name to attribute, iterated in key
/// order (the interface of `BTreeMap<String, Attr>`, which it replaced).
///
/// Stored as a sorted vector behind an `Arc`, copied on write: cloning an op
/// (remat copies whole functions per candidate plan) shares its attributes
/// instead of allocating a tree node (about 900 bytes) and a key per entry,
/// and an empty dictionary allocates nothing. Dictionaries hold a handful of
/// entries, so lookups scan.
#[derive(Clone, Default)]
pub struct Attrs(Option<Arc<Vec<(String, Attr)>>>);

impl Attrs {
    /// An empty dictionary (allocates nothing).
    pub const fn new() -> Attrs {
        Attrs(None)
    }
    fn entries(&self) -> &[(String, Attr)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
    /// The entries, for writing (copied first when shared).
    fn entries_mut(&mut self) -> &mut Vec<(String, Attr)> {
        Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }
    /// Index of `k`, or where it would be inserted.
    fn find(&self, k: &str) -> Result<usize, usize> {
        self.entries().binary_search_by(|(e, _)| e.as_str().cmp(k))
    }
    pub fn len(&self) -> usize {
        self.entries().len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
    pub fn get(&self, k: &str) -> Option<&Attr> {
        self.find(k).ok().map(|i| &self.entries()[i].1)
    }
    pub fn get_mut(&mut self, k: &str) -> Option<&mut Attr> {
        let i = self.find(k).ok()?;
        Some(&mut self.entries_mut()[i].1)
    }
    pub fn contains_key(&self, k: &str) -> bool {
        self.find(k).is_ok()
    }
    /// Sets `k` to `v`; returns the value it had.
    pub fn insert(&mut self, k: String, v: Attr) -> Option<Attr> {
        match self.find(&k) {
            Ok(i) => Some(std::mem::replace(&mut self.entries_mut()[i].1, v)),
            Err(i) => {
                self.entries_mut().insert(i, (k, v));
                None
            }
        }
    }
    /// Removes `k`; returns the value it had.
    pub fn remove(&mut self, k: &str) -> Option<Attr> {
        let i = self.find(k).ok()?;
        let v = self.entries_mut().remove(i).1;
        if self.is_empty() {
            self.0 = None;
        }
        Some(v)
    }
    pub fn clear(&mut self) {
        self.0 = None;
    }
    /// Keeps the entries for which `f` is true.
    pub fn retain(&mut self, mut f: impl FnMut(&String, &mut Attr) -> bool) {
        if self.is_empty() {
            return;
        }
        self.entries_mut().retain_mut(|(k, v)| f(k, v));
        if self.is_empty() {
            self.0 = None;
        }
    }
    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries().iter())
    }
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.entries().iter().map(|(k, _)| k)
    }
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Attr> + ExactSizeIterator {
        self.entries().iter().map(|(_, v)| v)
    }
}

/// Iterator over the entries of [`Attrs`] in key order.
#[derive(Clone, Debug)]
pub struct Iter<'a>(std::slice::Iter<'a, (String, Attr)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a String, &'a Attr);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}
impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Attrs {
    type Item = (&'a String, &'a Attr);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Attrs {
    type Item = (String, Attr);
    type IntoIter = std::vec::IntoIter<(String, Attr)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.map(Arc::unwrap_or_clone).unwrap_or_default().into_iter()
    }
}

impl Extend<(String, Attr)> for Attrs {
    fn extend<I: IntoIterator<Item = (String, Attr)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

/// As a `BTreeMap` collects: a later entry of the same key replaces the earlier one.
impl FromIterator<(String, Attr)> for Attrs {
    fn from_iter<I: IntoIterator<Item = (String, Attr)>>(iter: I) -> Attrs {
        let mut a = Attrs::new();
        a.extend(iter);
        a
    }
}

impl<const N: usize> From<[(String, Attr); N]> for Attrs {
    fn from(pairs: [(String, Attr); N]) -> Attrs {
        pairs.into_iter().collect()
    }
}

impl PartialEq for Attrs {
    fn eq(&self, o: &Attrs) -> bool {
        self.entries() == o.entries()
    }
}

impl fmt::Debug for Attrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

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
    let mut s = String::new();
    write_dict(&mut s, attrs);
    s
}

/// Appends [`format_dict`]'s text to `out` (no intermediate strings).
pub fn write_dict(out: &mut String, attrs: &Attrs) {
    use fmt::Write as _;
    if attrs.is_empty() {
        return;
    }
    out.push_str(" {");
    for (i, (k, v)) in attrs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if is_bare_key(k) {
            out.push_str(k);
        } else {
            let _ = write!(out, "{}", Attr::Str(k.clone()));
        }
        if !matches!(v, Attr::Unit) {
            out.push_str(" = ");
            let _ = write!(out, "{v}");
        }
    }
    out.push('}');
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
    /// `Attrs` behaves as the `BTreeMap<String, Attr>` it replaced: key
    /// order, insert replaces, collect keeps the last duplicate, and a clone
    /// is unaffected by writes to the original.
    #[test]
    fn attrs_is_a_sorted_map_copied_on_write() {
        let mut a: Attrs = [("z".to_string(), Attr::Int(1)), ("a".to_string(), Attr::Unit), ("z".to_string(), Attr::Int(2))].into();
        assert_eq!(a.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "z"]);
        assert_eq!(a.get("z"), Some(&Attr::Int(2)));
        let b = a.clone();
        assert_eq!(a.insert("m".into(), Attr::Bool(true)), None);
        assert_eq!(a.insert("z".into(), Attr::Int(3)), Some(Attr::Int(2)));
        assert_eq!(a.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["a", "m", "z"]);
        assert_eq!(b.len(), 2);
        assert_eq!(b.get("z"), Some(&Attr::Int(2)));
        assert!(!b.contains_key("m"));
        assert_eq!(a.remove("a"), Some(Attr::Unit));
        assert_eq!(a.remove("a"), None);
        a.retain(|k, _| k != "m");
        assert_eq!(a, [("z".to_string(), Attr::Int(3))].into());
        assert_eq!(a.remove("z"), Some(Attr::Int(3)));
        assert!(a.is_empty());
        assert_eq!(a, Attrs::new());
        assert_eq!(format!("{b:?}"), r#"{"a": Unit, "z": Int(2)}"#);
    }
    #[test]
    fn dict_prints_sorted_with_units_bare() {
        let mut a = Attrs::new();
        a.insert("dims".into(), Attr::IntArray(vec![0, 1]));
        a.insert("ck.mirror".into(), Attr::Unit);
        assert_eq!(format_dict(&a), " {ck.mirror, dims = [0, 1]}");
    }
}
