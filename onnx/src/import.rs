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
use crate::{ImportOptions, Loss, NamedTensor, Params};
use ckopt_ir::ops::ATTR_NAME;
use ckopt_ir::{Attr, Attrs, Diag, Func, Loc, Module, OpKind, TensorType, ValueId, attrs, verify_module};
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
            outs.push(self.dynv(&v)?);
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
        if et != dtype::FLOAT {
            return Err(self.err(format!(
                "graph input '{name}' has element type {}; ckopt imports float32 inputs only (integer inputs such as token ids are not supported)",
                dtype::name(et)
            )));
        }
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
        let ty = TensorType::f32(dims);
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

    /// A ck value for `v`: promotes an initializer to a `{ck.param}`
    /// argument, materializes a constant (`fill` when all elements are equal,
    /// else `constant`).
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
                self.promoted.insert(n.clone(), id);
                self.params.push(NamedTensor { name: n.clone(), shape: c.shape.clone(), data: c.as_f32() });
                Ok(id)
            }
            Val::Const(c) => self.materialize(c),
        }
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
        self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(v))]), Some(TensorType::f32(shape.to_vec())))
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
        self.push(OpKind::Reshape, &[x], Attrs::new(), Some(TensorType::f32(shape.to_vec())))
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
        self.push(OpKind::Broadcast, &[y], attrs([("dims", Attr::IntArray(kept))]), Some(TensorType::f32(full.to_vec())))
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
        self.push(OpKind::Broadcast, &[r], attrs([("dims", Attr::IntArray(dims))]), Some(TensorType::f32(to.to_vec())))
    }
    /// `v` as a ck value broadcast to `to`; a splat constant becomes one fill of `to`.
    pub fn operand(&mut self, v: &Val, to: &[u64]) -> Result<ValueId, Diag> {
        if let Val::Const(c) = v
            && let Some(s) = c.splat()
        {
            return self.fill(to, s);
        }
        let x = self.dynv(v)?;
        self.bcast(x, to)
    }

    /// The loss of the imported function over its outputs.
    fn loss(&mut self, loss: Loss, outs: &[ValueId]) -> Result<Vec<ValueId>, Diag> {
        if loss == Loss::None {
            return Ok(outs.to_vec());
        }
        let lname = if loss == Loss::Mse { "mse" } else { "cross-entropy" };
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
