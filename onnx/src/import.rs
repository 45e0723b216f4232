//! The import driver: ModelProto -> one ck function, node by node.
//!
//! Values are tracked by ONNX name as `Val`: a folded constant, a float
//! initializer not yet used as data (promoted to a `{ck.param}` argument on
//! first use as data), or a ck value. Nodes whose inputs are all constants
//! and whose op `fold` knows are evaluated here; every other node goes to
//! `ops::convert`. Shapes are static throughout: every ck value has its type.
//! Errors are `Diag`s located at the model file; node errors name the node,
//! its op type and the opset. Complexity: O(nodes + ops emitted + constant
//! elements folded).

use crate::fold;
use crate::ops;
use crate::proto::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
use crate::tensor::{CTensor, DataDir, dtype, from_proto};
use crate::{ImportOptions, Loss, NamedTensor, Params, TypedTensor};
use ckopt_ir::ops::ATTR_NAME;
use ckopt_ir::{Attr, Attrs, DType, Diag, Func, Loc, Module, OpKind, TensorType, ValueId, attrs, verify_module};
use prost::Message;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Oldest default-domain opset the converters are written for.
pub const MIN_OPSET: i64 = 7;

/// An ONNX value during import.
#[derive(Clone, Debug)]
pub enum Val {
    /// Known at import time.
    Const(CTensor),
    /// A float initializer (by name) not yet used as data.
    Init(String),
    /// A ck value of the function being built.
    Dyn(ValueId),
}

/// Reads and imports the model at `path` (external data next to it).
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<(Module, Params), Diag> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Diag::error(file_loc(&file), format!("cannot read '{file}': {e}")))?;
    import_bytes(&bytes, &file, path.parent(), opts)
}

fn file_loc(file: &str) -> Loc {
    Loc::new(Arc::from(file), 0, 0)
}

/// Imports a serialized `ModelProto`; `file` names it in diagnostics and
/// `dir` is where external tensor data is looked for.
pub fn import_bytes(bytes: &[u8], file: &str, dir: Option<&Path>, opts: &ImportOptions) -> Result<(Module, Params), Diag> {
    let err = |m: String| Diag::error(file_loc(file), m);
    let model = ModelProto::decode(bytes)
        .map_err(|e| err(format!("not a valid ONNX model (protobuf decoding failed: {e}); is this a truncated or non-ONNX file?")))?;
    let graph = model.graph.as_ref().ok_or_else(|| err("not an ONNX model: it has no graph (a truncated or non-ONNX file?)".into()))?;
    if model.ir_version.unwrap_or(0) <= 0 {
        return Err(err("not an ONNX model: ir_version is missing (a truncated or non-ONNX file?)".into()));
    }
    let opset = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")))
        .and_then(|o| o.version)
        .ok_or_else(|| err("the model imports no default-domain (ai.onnx) opset".into()))?;
    if opset < MIN_OPSET {
        return Err(err(format!("opset {opset} is older than {MIN_OPSET}, the oldest ckopt imports")));
    }
    let mut imp = Importer::new(file, dir, opset, opts);
    imp.run(graph, opts)?;
    let Importer { f, params, .. } = imp;
    let module = Module { funcs: vec![f] };
    verify_module(&module).map_err(|ds| {
        let first = ds.0.into_iter().next().map(|d| d.to_string()).unwrap_or_default();
        err(format!("internal error: the imported function does not verify: {first}"))
    })?;
    Ok((module, params))
}

/// Reads one serialized `TensorProto` (ONNX's test-data `.pb` files) as an f32 tensor.
pub fn read_tensor_file(path: &Path) -> Result<NamedTensor, Diag> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Diag::error(file_loc(&file), format!("cannot read '{file}': {e}")))?;
    let t = TensorProto::decode(bytes.as_slice())
        .map_err(|e| Diag::error(file_loc(&file), format!("not a serialized ONNX TensorProto: {e}")))?;
    let c = from_proto(&t, &DataDir(path.parent()), "tensor").map_err(|m| Diag::error(file_loc(&file), m.to_string()))?;
    Ok(NamedTensor { name: t.name.clone().unwrap_or_default(), shape: c.shape.clone(), data: c.as_f32() })
}

/// Reads one serialized `TensorProto` with its element type: float,
/// float16 and bfloat16 data as f32 values (`floats`), int64, int32 and
/// bool as `ints`; another element type is an error naming the file.
pub fn read_typed_tensor_file(path: &Path) -> Result<TypedTensor, Diag> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Diag::error(file_loc(&file), format!("cannot read '{file}': {e}")))?;
    let t = TensorProto::decode(bytes.as_slice())
        .map_err(|e| Diag::error(file_loc(&file), format!("not a serialized ONNX TensorProto: {e}")))?;
    let et = t.data_type.unwrap_or(0);
    let dt = ck_dtype(et).filter(|_| et != dtype::DOUBLE).ok_or_else(|| {
        Diag::error(file_loc(&file), format!("tensor of element type {} (ck has float, float16, bfloat16, int64, int32, bool)", dtype::name(et)))
    })?;
    let c = from_proto(&t, &DataDir(path.parent()), "tensor").map_err(|m| Diag::error(file_loc(&file), m.to_string()))?;
    let (floats, ints) = if dt.is_float() { (c.as_f32(), Vec::new()) } else { (Vec::new(), c.as_i64()) };
    Ok(TypedTensor { name: t.name.clone().unwrap_or_default(), shape: c.shape.clone(), dtype: dt, floats, ints })
}

/// Makes `s` a valid bare MLIR symbol: `[A-Za-z_][A-Za-z0-9_$.]*`.
pub fn sanitize_symbol(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() {
        out = "model".into();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

pub struct Importer<'a> {
    pub file: Arc<str>,
    dir: Option<&'a Path>,
    pub opset: i64,
    pub f: Func,
    vals: HashMap<String, Val>,
    /// Float initializers by name (their data; promoted on first data use).
    inits: HashMap<String, CTensor>,
    /// The element type of each float16/bfloat16 initializer (the others are f32).
    init_dt: HashMap<String, DType>,
    /// Initializer order, for the parameter argument order.
    init_order: Vec<String>,
    promoted: HashMap<String, ValueId>,
    params: Params,
    /// The node being converted: its description for errors and its location for ops.
    pub node: String,
    pub loc: Loc,
    batch: Option<u64>,
}

impl<'a> Importer<'a> {
    fn new(file: &str, dir: Option<&'a Path>, opset: i64, opts: &ImportOptions) -> Self {
        Importer {
            file: Arc::from(file),
            dir,
            opset,
            f: Func::new("model", file_loc(file)),
            vals: HashMap::new(),
            inits: HashMap::new(),
            init_dt: HashMap::new(),
            init_order: Vec::new(),
            promoted: HashMap::new(),
            params: Vec::new(),
            node: String::new(),
            loc: file_loc(file),
            batch: opts.batch,
        }
    }

    /// An error about the current node (or the model when none).
    pub fn err(&self, m: impl std::fmt::Display) -> Diag {
        if self.node.is_empty() {
            Diag::error(file_loc(&self.file), m.to_string())
        } else {
            Diag::error(file_loc(&self.file), format!("{}: {m}", self.node))
        }
    }

    fn run(&mut self, g: &GraphProto, opts: &ImportOptions) -> Result<(), Diag> {
        let name = opts.name.clone().unwrap_or_else(|| sanitize_symbol(g.name.as_deref().unwrap_or("")));
        self.f.name = name;
        // Initializers (sparse ones are not supported).
        if let Some(s) = g.sparse_initializer.first() {
            let n = s.values.as_ref().and_then(|v| v.name.clone()).unwrap_or_default();
            return Err(self.err(format!("sparse initializer '{n}' is not supported")));
        }
        for t in &g.initializer {
            let name = t.name.clone().unwrap_or_default();
            let c = from_proto(t, &DataDir(self.dir), &format!("initializer '{name}'")).map_err(|m| self.err(m))?;
            if c.is_float() && t.data_type != Some(dtype::DOUBLE) {
                if let Some(dt) = t.data_type.and_then(ck_dtype).filter(|&d| d != DType::F32) {
                    self.init_dt.insert(name.clone(), dt);
                }
                self.inits.insert(name.clone(), c);
                self.init_order.push(name.clone());
                self.vals.insert(name, Val::Init(t.name.clone().unwrap_or_default()));
            } else {
                self.vals.insert(name, Val::Const(c));
            }
        }
        // Graph inputs (those that are also initializers are initializers: IR < 4).
        for vi in &g.input {
            let name = vi.name.clone().unwrap_or_default();
            if self.vals.contains_key(&name) {
                continue;
            }
            let ty = self.input_type(vi)?;
            let v = self.f.add_param(name.clone(), ty, false);
            if let Some(p) = self.f.params.last_mut() {
                p.attrs.insert(ATTR_NAME.into(), Attr::Str(name.clone()));
            }
            self.vals.insert(name, Val::Dyn(v));
        }
        for (i, node) in g.node.iter().enumerate() {
            self.node(i, node)?;
        }
        self.node.clear();
        // Outputs.
        let mut outs = Vec::with_capacity(g.output.len());
        for vi in &g.output {
            let name = vi.name.clone().unwrap_or_default();
            let v = self.vals.get(&name).cloned().ok_or_else(|| self.err(format!("graph output '{name}' is not computed by any node")))?;
            let declared = vi.r#type.as_ref().and_then(|t| t.value.as_ref()).and_then(|v| match v {
                crate::proto::type_proto::Value::TensorType(t) => t.elem_type.and_then(ck_dtype),
                _ => None,
            });
            outs.push(match declared {
                Some(d) => self.dynv_as(&v, d)?,
                None => self.dynv(&v)?,
            });
        }
        if outs.is_empty() {
            return Err(self.err("the graph has no outputs"));
        }
        let ret = self.loss(opts.loss, &outs)?;
        // Argument order: graph inputs, loss inputs, then the parameters in initializer order.
        let order: HashMap<&str, usize> = self.init_order.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        let param_values: Vec<ValueId> = self.params.iter().map(|p| self.promoted[&p.name]).collect();
        let (mut ps, mut rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.f.params).into_iter().partition(|p| param_values.contains(&p.value));
        let key = |p: &ckopt_ir::Param| {
            let n = p.attrs.get(ATTR_NAME).and_then(Attr::as_str).unwrap_or("");
            order.get(n).copied().unwrap_or(usize::MAX)
        };
        ps.sort_by_key(key);
        self.params.sort_by_key(|p| order.get(p.name.as_str()).copied().unwrap_or(usize::MAX));
        rest.extend(ps);
        self.f.params = rest;
        let loc = self.loc.clone();
        self.f.push_return(&ret, loc);
        Ok(())
    }

    fn input_type(&self, vi: &ValueInfoProto) -> Result<TensorType, Diag> {
        let name = vi.name.as_deref().unwrap_or("");
        let tt = vi
            .r#type
            .as_ref()
            .and_then(|t| t.value.as_ref())
            .and_then(|v| match v {
                crate::proto::type_proto::Value::TensorType(t) => Some(t),
                _ => None,
            })
            .ok_or_else(|| self.err(format!("graph input '{name}' is not a tensor")))?;
        let et = tt.elem_type.unwrap_or(0);
        let dt = match ck_dtype(et) {
            Some(d) if et != dtype::DOUBLE => d,
            _ => {
                return Err(self.err(format!(
                    "graph input '{name}' has element type {}; ckopt imports float, float16, bfloat16, int64, int32 and bool inputs",
                    dtype::name(et)
                )));
            }
        };
        let shape = tt.shape.as_ref().ok_or_else(|| self.err(format!("graph input '{name}' has no shape (ck shapes are static)")))?;
        let mut dims = Vec::with_capacity(shape.dim.len());
        for (k, d) in shape.dim.iter().enumerate() {
            use crate::proto::tensor_shape_proto::dimension::Value as D;
            match &d.value {
                Some(D::DimValue(v)) if *v > 0 => dims.push(*v as u64),
                Some(D::DimValue(v)) => {
                    return Err(self.err(format!("graph input '{name}' has dimension {k} of size {v} (zero-size tensors are not supported)")));
                }
                other => {
                    let sym = match other {
                        Some(D::DimParam(p)) => format!("'{p}'"),
                        _ => "of unknown size".into(),
                    };
                    match self.batch {
                        Some(b) if k == 0 && b > 0 => dims.push(b),
                        Some(_) if k == 0 => return Err(self.err("--batch must be at least 1")),
                        Some(_) => {
                            return Err(self.err(format!(
                                "graph input '{name}' has a dynamic dimension {sym} at position {k}; only the leading (batch) dimension may be dynamic (it takes --batch)"
                            )));
                        }
                        None => {
                            return Err(self.err(format!(
                                "graph input '{name}' has a dynamic dimension {sym} at position {k}; ck shapes are static: pass --batch=N"
                            )));
                        }
                    }
                }
            }
        }
        let ty = TensorType::new(dims, dt);
        if ty.byte_size().is_none() {
            return Err(self.err(format!("graph input '{name}': {ty} is too large")));
        }
        Ok(ty)
    }

    fn node(&mut self, i: usize, node: &NodeProto) -> Result<(), Diag> {
        let op = node.op_type.clone().unwrap_or_default();
        let name = match node.name.as_deref() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("#{i}"),
        };
        let domain = node.domain.as_deref().unwrap_or("");
        self.node = format!("node '{name}' ({op}, opset {})", self.opset);
        self.loc = Loc::new(Arc::from(format!("{}: node '{name}' ({op})", self.file)), 0, 0);
        if !matches!(domain, "" | "ai.onnx") {
            return Err(self.err(format!("op domain '{domain}' is not supported (ckopt imports the default ai.onnx domain)")));
        }
        let mut ins: Vec<Option<Val>> = Vec::with_capacity(node.input.len());
        for n in &node.input {
            if n.is_empty() {
                ins.push(None);
            } else {
                let v = self.vals.get(n).cloned().ok_or_else(|| self.err(format!("input '{n}' is not defined before this node")))?;
                ins.push(Some(v));
            }
        }
        let a = NodeAttrs(node);
        // Fold when every present input is a constant (not a parameter).
        // Range's operands are never data: float initializers fold there too.
        let ins: Vec<Option<Val>> = if op == "Range" {
            ins.into_iter().map(|v| v.map(|v| self.known(&v).map(Val::Const).unwrap_or(v))).collect()
        } else {
            ins
        };
        let all_const = ins.iter().all(|v| matches!(v, None | Some(Val::Const(_))));
        let outs: Vec<Val> = match (all_const, fold::foldable(&op)) {
            (true, true) => {
                let cs: Vec<Option<&CTensor>> = ins.iter().map(|v| if let Some(Val::Const(c)) = v { Some(c) } else { None }).collect();
                fold::eval(&op, &a, &cs, self.opset, &DataDir(self.dir)).map_err(|m| self.err(m))?.into_iter().map(Val::Const).collect()
            }
            _ => ops::convert(self, &op, &a, &ins, node.output.len())?,
        };
        for (k, o) in node.output.iter().enumerate() {
            if o.is_empty() {
                continue;
            }
            match outs.get(k) {
                Some(v) => {
                    self.vals.insert(o.clone(), v.clone());
                }
                None => return Err(self.err(format!("output {k} ('{o}') is not supported"))),
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ values

    /// The static shape of a value.
    pub fn shape(&self, v: &Val) -> Vec<u64> {
        match v {
            Val::Const(c) => c.shape.clone(),
            Val::Init(n) => self.inits.get(n).map(|c| c.shape.clone()).unwrap_or_default(),
            Val::Dyn(id) => self.f.ty(*id).shape.clone(),
        }
    }

    /// The data of a value known at import time (constants, initializers).
    pub fn known(&self, v: &Val) -> Option<CTensor> {
        match v {
            Val::Const(c) => Some(c.clone()),
            Val::Init(n) => self.inits.get(n).cloned(),
            Val::Dyn(_) => None,
        }
    }

    /// The element type `v` has (or takes when materialized by `dynv`):
    /// float initializers of their type (float16/bfloat16 ones through a
    /// cast of an f32 parameter), float constants f32, integer and bool
    /// constants i64.
    pub fn val_dtype(&self, v: &Val) -> DType {
        match v {
            Val::Dyn(id) => self.f.ty(*id).dtype,
            Val::Init(n) => self.init_dt.get(n).copied().unwrap_or(DType::F32),
            Val::Const(c) if c.is_float() => DType::F32,
            Val::Const(_) => DType::I64,
        }
    }

    /// The element type of a computation over `vals` (ONNX gives its operands
    /// one type): that of the first computed value, else of the first operand.
    pub fn common_dtype(&self, vals: &[&Val]) -> DType {
        vals.iter()
            .find(|v| matches!(v, Val::Dyn(_)))
            .or(vals.iter().find(|v| matches!(v, Val::Init(_))))
            .or(vals.first())
            .map_or(DType::F32, |v| self.val_dtype(v))
    }

    /// `dynv`, a constant materialized with element type `dt` (computed
    /// values and parameters keep their own type).
    pub fn dynv_as(&mut self, v: &Val, dt: DType) -> Result<ValueId, Diag> {
        match v {
            Val::Const(c) => self.materialize_as(c, dt),
            _ => self.dynv(v),
        }
    }

    /// A ck value for `v`: promotes an initializer to a `{ck.param}`
    /// argument, materializes a constant (`fill` when all elements are equal,
    /// else `constant`; integer and bool constants as i64).
    pub fn dynv(&mut self, v: &Val) -> Result<ValueId, Diag> {
        match v {
            Val::Dyn(id) => Ok(*id),
            Val::Init(n) => {
                if let Some(&id) = self.promoted.get(n) {
                    return Ok(id);
                }
                let c = self.inits.get(n).cloned().ok_or_else(|| self.err(format!("internal: initializer '{n}' is missing")))?;
                let id = self.f.add_param(n.clone(), TensorType::f32(c.shape.clone()), true);
                if let Some(p) = self.f.params.last_mut() {
                    p.attrs.insert(ATTR_NAME.into(), Attr::Str(n.clone()));
                }
                self.params.push(NamedTensor { name: n.clone(), shape: c.shape.clone(), data: c.as_f32() });
                // A float16/bfloat16 initializer: an f32 master parameter
                // (its values are exact in f32) and one cast to its type.
                let id = match self.init_dt.get(n).copied() {
                    Some(dt) => self.cast(id, dt)?,
                    None => id,
                };
                self.promoted.insert(n.clone(), id);
                Ok(id)
            }
            Val::Const(c) if c.is_float() => self.materialize(c),
            Val::Const(c) => self.materialize_as(c, DType::I64),
        }
    }

    /// A constant as a ck value of element type `dt`: f32 as `materialize`;
    /// another float type or an integer type by a `cast` of the f32 constant
    /// (or one `fill` of the type when all elements are equal). Integer
    /// values must be exact in f32 (|v| <= 2^24), the constant's carrier.
    pub fn materialize_as(&mut self, c: &CTensor, dt: DType) -> Result<ValueId, Diag> {
        if dt == DType::F32 {
            return self.materialize(c);
        }
        let vals = self.carrier(c, dt)?;
        let ty = TensorType::new(c.shape.clone(), dt);
        if !vals.is_empty() && vals.iter().all(|&v| v.to_bits() == vals[0].to_bits()) {
            return self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(vals[0]))]), Some(ty));
        }
        if vals.is_empty() {
            return self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(0.0))]), Some(ty));
        }
        let f = self.push(OpKind::Constant, &[], attrs([("value", Attr::Dense { shape: c.shape.clone(), data: vals })]), None)?;
        self.cast(f, dt)
    }

    /// The f32 values that carry constant `c` as element type `dt`
    /// (integers checked integral and exact in f32, bools 0/1).
    fn carrier(&self, c: &CTensor, dt: DType) -> Result<Vec<f32>, Diag> {
        Ok(if dt.is_float() {
            c.as_f32()
        } else {
            let ints: Vec<i64> = match &c.data {
                crate::tensor::CData::I64(v) => v.clone(),
                crate::tensor::CData::F32(v) => {
                    if let Some(x) = v.iter().find(|x| x.fract() != 0.0 || !x.is_finite()) {
                        return Err(self.err(format!("the constant value {x} is not an integer, but the {} it becomes must be", dt.name())));
                    }
                    v.iter().map(|&x| x as i64).collect()
                }
            };
            let ints: Vec<i64> = if dt == DType::I1 { ints.iter().map(|&v| i64::from(v != 0)).collect() } else { ints };
            if let Some(x) = ints.iter().find(|x| x.unsigned_abs() > 1 << 24) {
                return Err(self.err(format!("the integer constant {x} is too large to materialize (ck constants hold integers up to 2^24 in magnitude)")));
            }
            ints.iter().map(|&v| v as f32).collect()
        })
    }

    /// `x` converted to element type `dt` (`ck.cast`; `x` itself when it has it).
    pub fn cast(&mut self, x: ValueId, dt: DType) -> Result<ValueId, Diag> {
        let ty = self.f.ty(x).clone();
        if ty.dtype == dt {
            return Ok(x);
        }
        self.push(OpKind::Cast, &[x], Attrs::new(), Some(TensorType::new(ty.shape, dt)))
    }

    /// The element type of a ck value.
    pub fn dt(&self, v: ValueId) -> DType {
        self.f.ty(v).dtype
    }

    pub fn materialize(&mut self, c: &CTensor) -> Result<ValueId, Diag> {
        let ty = TensorType::f32(c.shape.clone());
        match c.splat() {
            Some(v) => self.fill(&c.shape, v),
            None if c.is_empty() => self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(0.0))]), Some(ty)),
            None => self.push(OpKind::Constant, &[], attrs([("value", Attr::Dense { shape: c.shape.clone(), data: c.as_f32() })]), None),
        }
    }

    /// Appends a ck op at the current node; a type-rule failure is an error naming the node.
    pub fn push(&mut self, kind: OpKind, operands: &[ValueId], a: Attrs, declared: Option<TensorType>) -> Result<ValueId, Diag> {
        let hint = kind.name();
        let loc = self.loc.clone();
        self.f.push(kind, operands, a, declared, hint, loc).map_err(|d| self.err(format!("cannot express this node in ck: {}", d.message)))
    }

    pub fn un(&mut self, kind: OpKind, x: ValueId) -> Result<ValueId, Diag> {
        self.push(kind, &[x], Attrs::new(), None)
    }
    pub fn bin(&mut self, kind: OpKind, a: ValueId, b: ValueId) -> Result<ValueId, Diag> {
        self.push(kind, &[a, b], Attrs::new(), None)
    }
    pub fn fill(&mut self, shape: &[u64], v: f32) -> Result<ValueId, Diag> {
        self.fill_of(shape, v, DType::F32)
    }
    /// A fill of element type `dt` (integral `v` for integer types).
    pub fn fill_of(&mut self, shape: &[u64], v: f32, dt: DType) -> Result<ValueId, Diag> {
        self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(v))]), Some(TensorType::new(shape.to_vec(), dt)))
    }
    pub fn scale(&mut self, x: ValueId, v: f32) -> Result<ValueId, Diag> {
        if v == 1.0 {
            return Ok(x);
        }
        self.push(OpKind::Scale, &[x], attrs([("value", Attr::F32(v))]), None)
    }
    pub fn ty(&self, v: ValueId) -> Vec<u64> {
        self.f.ty(v).shape.clone()
    }
    pub fn reshape(&mut self, x: ValueId, shape: &[u64]) -> Result<ValueId, Diag> {
        if self.ty(x) == shape {
            return Ok(x);
        }
        let ty = self.f.ty(x).with_shape(shape.to_vec());
        self.push(OpKind::Reshape, &[x], Attrs::new(), Some(ty))
    }
    /// Sum (or max) over `dims` (sorted, distinct), removing them.
    pub fn reduce(&mut self, kind: OpKind, x: ValueId, dims: &[usize]) -> Result<ValueId, Diag> {
        if dims.is_empty() {
            return Ok(x);
        }
        let d: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        self.push(kind, &[x], attrs([("dims", Attr::IntArray(d))]), None)
    }
    /// `y` (the result of reducing `dims` of a tensor of `full` shape, dims
    /// removed) broadcast back to `full`.
    pub fn unreduce(&mut self, y: ValueId, full: &[u64], dims: &[usize]) -> Result<ValueId, Diag> {
        if dims.is_empty() {
            return Ok(y);
        }
        let kept: Vec<i64> = (0..full.len()).filter(|d| !dims.contains(d)).map(|d| d as i64).collect();
        let ty = self.f.ty(y).with_shape(full.to_vec());
        self.push(OpKind::Broadcast, &[y], attrs([("dims", Attr::IntArray(kept))]), Some(ty))
    }
    /// ONNX (numpy) broadcasting of `x` to `to`: size-1 dims that grow are
    /// dropped by a reshape, then one `ck.broadcast` places the rest.
    pub fn bcast(&mut self, x: ValueId, to: &[u64]) -> Result<ValueId, Diag> {
        let s = self.ty(x);
        if s == to {
            return Ok(x);
        }
        if s.len() > to.len() {
            return Err(self.err(format!("cannot broadcast {s:?} to {to:?}")));
        }
        let off = to.len() - s.len();
        let mut keep_shape = Vec::new();
        let mut dims = Vec::new();
        for (i, &d) in s.iter().enumerate() {
            let t = to[off + i];
            if d == t {
                keep_shape.push(d);
                dims.push((off + i) as i64);
            } else if d != 1 {
                return Err(self.err(format!("cannot broadcast {s:?} to {to:?}")));
            }
        }
        let r = self.reshape(x, &keep_shape)?;
        let ty = self.f.ty(x).with_shape(to.to_vec());
        self.push(OpKind::Broadcast, &[r], attrs([("dims", Attr::IntArray(dims))]), Some(ty))
    }
    /// `v` as a ck value broadcast to `to`; a splat constant becomes one fill of `to`.
    pub fn operand(&mut self, v: &Val, to: &[u64]) -> Result<ValueId, Diag> {
        self.operand_as(v, to, DType::F32)
    }
    /// `operand` with constants materialized as element type `dt`.
    pub fn operand_as(&mut self, v: &Val, to: &[u64], dt: DType) -> Result<ValueId, Diag> {
        if let Val::Const(c) = v
            && let Some(s) = c.splat()
            && c.splat_exact()
        {
            if dt == DType::F32 {
                return self.fill(to, s);
            }
            let first = match &c.data {
                crate::tensor::CData::F32(v) => CTensor::f32(vec![], v[..1].to_vec()),
                crate::tensor::CData::I64(v) => CTensor::i64(vec![], v[..1].to_vec()),
            };
            let value = self.carrier(&first, dt)?[0];
            return self.fill_of(to, value, dt);
        }
        let x = self.dynv_as(v, dt)?;
        self.bcast(x, to)
    }

    /// The loss of the imported function over its outputs.
    fn loss(&mut self, loss: Loss, outs: &[ValueId]) -> Result<Vec<ValueId>, Diag> {
        if loss == Loss::None {
            return Ok(outs.to_vec());
        }
        let lname = match loss {
            Loss::Mse => "mse",
            Loss::CrossEntropyIndex => "cross-entropy-index",
            _ => "cross-entropy",
        };
        if outs.len() != 1 {
            return Err(self.err(format!("--loss={lname} needs a graph with one output, this one has {}", outs.len())));
        }
        let y = outs[0];
        let ys = self.ty(y);
        self.node = format!("the {lname} loss");
        self.loc = Loc::new(Arc::from(format!("{}: {lname} loss", self.file)), 0, 0);
        let all: Vec<usize> = (0..ys.len()).collect();
        let n = ys.iter().product::<u64>().max(1);
        match loss {
            Loss::Mse => {
                let t = self.f.add_param("target", TensorType::f32(ys.clone()), false);
                let d = self.bin(OpKind::Sub, y, t)?;
                let sq = self.bin(OpKind::Mul, d, d)?;
                let s = self.reduce(OpKind::ReduceSum, sq, &all)?;
                Ok(vec![self.scale(s, 1.0 / n as f32)?])
            }
            Loss::CrossEntropyIndex => {
                if ys.len() < 2 || !self.dt(y).is_float() {
                    return Err(self.err(format!(
                        "--loss=cross-entropy-index needs float logits [N, C] (or [d0, .., C], classes last), the output is {}",
                        self.f.ty(y)
                    )));
                }
                let c = ys[ys.len() - 1];
                let lshape = ys[..ys.len() - 1].to_vec();
                let m: u64 = lshape.iter().product();
                let labels = self.f.add_param("labels", TensorType::new(lshape, DType::I64), false);
                let logits = self.reshape(y, &[m, c])?;
                let lab = self.reshape(labels, &[m])?;
                let l = self.push(OpKind::CrossEntropy, &[logits, lab], attrs([("ignore_index", Attr::Int(-100))]), None)?;
                Ok(vec![l])
            }
            _ => {
                if ys.len() != 2 {
                    return Err(self.err(format!(
                        "--loss=cross-entropy needs a [N, C] output (logits), the output is {}",
                        self.f.ty(y)
                    )));
                }
                let labels = self.f.add_param("labels", TensorType::f32(ys.clone()), false);
                let lsm = ops::log_softmax(self, y, &[1])?;
                let p = self.bin(OpKind::Mul, labels, lsm)?;
                let s = self.reduce(OpKind::ReduceSum, p, &all)?;
                Ok(vec![self.scale(s, -1.0 / ys[0].max(1) as f32)?])
            }
        }
    }
}

/// The ck element type of an ONNX data type: float, float16, bfloat16,
/// int64, int32, bool; double is computed in f32 (ck has no f64).
pub fn ck_dtype(t: i32) -> Option<DType> {
    match t {
        dtype::FLOAT | dtype::DOUBLE => Some(DType::F32),
        dtype::FLOAT16 => Some(DType::F16),
        dtype::BFLOAT16 => Some(DType::BF16),
        dtype::INT64 => Some(DType::I64),
        dtype::INT32 => Some(DType::I32),
        dtype::BOOL => Some(DType::I1),
        _ => None,
    }
}

/// Attribute access on a node.
pub struct NodeAttrs<'n>(pub &'n NodeProto);

impl NodeAttrs<'_> {
    pub fn get(&self, name: &str) -> Option<&crate::proto::AttributeProto> {
        self.0.attribute.iter().find(|a| a.name.as_deref() == Some(name))
    }
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.get(name).and_then(|a| a.i).unwrap_or(default)
    }
    pub fn float(&self, name: &str, default: f32) -> f32 {
        self.get(name).and_then(|a| a.f).unwrap_or(default)
    }
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.get(name).map(|a| a.ints.clone())
    }
    pub fn string(&self, name: &str) -> Option<String> {
        self.get(name).and_then(|a| a.s.as_ref()).map(|s| String::from_utf8_lossy(s).into_owned())
    }
    pub fn tensor(&self, name: &str) -> Option<&TensorProto> {
        self.get(name).and_then(|a| a.t.as_ref())
    }
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}
