//! Elementwise ONNX ops: binary arithmetic (with ONNX broadcasting made
//! explicit; integer operands too), Pow with a constant exponent, unary
//! math and activations, Gelu, HardSigmoid/HardSwish, Identity, Dropout,
//! Cast, the comparisons and logic giving i1, Where, and Trilu's mask.

use super::*;

/// The op types converted here.
pub(super) const OPS: &[&str] = &["Add", "Sub", "Mul", "Div", "Pow", "Relu", "Sigmoid", "Tanh", "Sqrt", "Erf", "Exp", "Log", "Neg", "Gelu", "HardSigmoid", "HardSwish", "Identity", "Dropout", "Cast",
    "Where", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Trilu",
];

pub(super) fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], n_out: usize) -> R<Vec<Val>> {
    let x = inp(imp, ins, 0);
    let one = |v: ValueId| Ok(vec![Val::Dyn(v)]);
    match op {
        "Add" | "Sub" | "Mul" | "Div" => {
            let (p, q) = (x?, inp(imp, ins, 1)?);
            let out = broadcast_shapes(&imp.shape(&p), &imp.shape(&q)).map_err(|m| imp.err(m))?;
            let dt = imp.common_dtype(&[&p, &q]);
            // Multiplying by a constant that is one number everywhere is a scale.
            if op == "Mul" && dt.is_float() {
                for (c, other) in [(&q, &p), (&p, &q)] {
                    if let Val::Const(t) = c
                        && let Some(s) = t.splat()
                    {
                        let o = imp.dynv(other)?;
                        let o = imp.bcast(o, &out)?;
                        return one(imp.scale(o, s)?);
                    }
                }
            }
            let pa = imp.operand_as(&p, &out, dt)?;
            let qa = imp.operand_as(&q, &out, dt)?;
            let kind = match op {
                "Add" => OpKind::Add,
                "Sub" => OpKind::Sub,
                "Mul" => OpKind::Mul,
                _ => OpKind::Div,
            };
            one(imp.bin(kind, pa, qa)?)
        }
        "Pow" => {
            let base = x?;
            let e = inp(imp, ins, 1)?;
            let ev = imp.known(&e).and_then(|c| c.splat()).ok_or_else(|| imp.err("Pow needs a constant exponent (one number)"))?;
            let out = broadcast_shapes(&imp.shape(&base), &imp.shape(&e)).map_err(|m| imp.err(m))?;
            let b = imp.dynv(&base)?;
            let b = imp.bcast(b, &out)?;
            if ev == 0.5 {
                return one(imp.un(OpKind::Sqrt, b)?);
            }
            // A small positive integer exponent (GPT-2's tanh GELU cubes):
            // square and multiply, ceil(log2 n) + popcount(n) - 1 products.
            if ev.fract() != 0.0 || !(1.0..=16.0).contains(&ev) {
                return Err(imp.err(format!("Pow with exponent {ev} is not supported (integers 1 to 16 and 0.5 are)")));
            }
            let mut n = ev as u32;
            let (mut acc, mut sq) = (None, b);
            loop {
                if n & 1 == 1 {
                    acc = Some(match acc {
                        None => sq,
                        Some(a) => imp.bin(OpKind::Mul, a, sq)?,
                    });
                }
                n >>= 1;
                if n == 0 {
                    break;
                }
                sq = imp.bin(OpKind::Mul, sq, sq)?;
            }
            one(acc.expect("an exponent of at least 1 has a set bit"))
        }
        "Relu" | "Sigmoid" | "Tanh" | "Sqrt" | "Erf" | "Exp" | "Log" | "Neg" => {
            let v = imp.dynv(&x?)?;
            let kind = match op {
                "Relu" => OpKind::Relu,
                "Sigmoid" => OpKind::Sigmoid,
                "Tanh" => OpKind::Tanh,
                "Sqrt" => OpKind::Sqrt,
                "Erf" => OpKind::Erf,
                "Exp" => OpKind::Exp,
                "Log" => OpKind::Log,
                _ => OpKind::Neg,
            };
            one(imp.un(kind, v)?)
        }
        "Gelu" => {
            let v = imp.dynv(&x?)?;
            one(gelu(imp, v, a.string("approximate").as_deref().unwrap_or("none"))?)
        }
        "HardSigmoid" => {
            let v = imp.dynv(&x?)?;
            one(hard_sigmoid(imp, v, a.float("alpha", 0.2), a.float("beta", 0.5))?)
        }
        "HardSwish" => {
            let v = imp.dynv(&x?)?;
            let h = hard_sigmoid(imp, v, 1.0 / 6.0, 0.5)?;
            one(imp.bin(OpKind::Mul, v, h)?)
        }
        "Identity" => Ok(vec![x?]),
        "Dropout" => {
            let xv = x?;
            // training_mode: input 2 (opset 12+); absent or false = inference = identity.
            let training = match ins.get(2).cloned().flatten() {
                None => false,
                Some(t) => imp.known(&t).and_then(|c| c.as_i64().first().copied()).ok_or_else(|| imp.err("Dropout's training_mode must be a constant"))? != 0,
            };
            let shape = imp.shape(&xv);
            let y = if training {
                let ratio = match ins.get(1).cloned().flatten() {
                    Some(r) => imp.known(&r).and_then(|c| c.scalar_f32()).ok_or_else(|| imp.err("Dropout's ratio must be a constant"))?,
                    None => a.float("ratio", 0.5),
                };
                if !(0.0..1.0).contains(&ratio) {
                    return Err(imp.err(format!("Dropout ratio {ratio} is not in [0, 1)")));
                }
                let v = imp.dynv(&xv)?;
                let seed = a.int("seed", 0);
                Val::Dyn(imp.push(OpKind::Dropout, &[v], attrs([("rate", Attr::F32(ratio)), ("seed", Attr::Int(seed))]), None)?)
            } else {
                xv
            };
            if n_out > 1 && training {
                return Err(imp.err("Dropout's mask output is not supported in training mode"));
            }
            let n = shape.iter().product::<u64>() as usize;
            Ok(vec![y, Val::Const(CTensor::i64(shape, vec![1; n]))])
        }
        "Cast" => {
            let to = a.int("to", 0) as i32;
            let dt = ck_dtype(to).ok_or_else(|| {
                imp.err(format!("Cast to {} is not supported (ck element types: float, float16, bfloat16, int64, int32, bool)", dtype::name(to)))
            })?;
            let v = x?;
            let xv = imp.dynv(&v)?;
            one(imp.cast(xv, dt)?)
        }
        "Where" => {
            let (c, p, q) = (x?, inp(imp, ins, 1)?, inp(imp, ins, 2)?);
            let s1 = broadcast_shapes(&imp.shape(&c), &imp.shape(&p)).map_err(|m| imp.err(m))?;
            let out = broadcast_shapes(&s1, &imp.shape(&q)).map_err(|m| imp.err(m))?;
            let dt = imp.common_dtype(&[&p, &q]);
            let cv = imp.operand_as(&c, &out, DType::I1)?;
            let pv = imp.operand_as(&p, &out, dt)?;
            let qv = imp.operand_as(&q, &out, dt)?;
            one(imp.push(OpKind::Select, &[cv, pv, qv], Attrs::new(), None)?)
        }
        "Equal" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" | "And" | "Or" | "Xor" => {
            let (p, q) = (x?, inp(imp, ins, 1)?);
            let out = broadcast_shapes(&imp.shape(&p), &imp.shape(&q)).map_err(|m| imp.err(m))?;
            let logic = matches!(op, "And" | "Or" | "Xor");
            let dt = if logic { DType::I1 } else { imp.common_dtype(&[&p, &q]) };
            let pv = imp.operand_as(&p, &out, dt)?;
            let qv = imp.operand_as(&q, &out, dt)?;
            if logic && (imp.dt(pv) != DType::I1 || imp.dt(qv) != DType::I1) {
                return Err(imp.err(format!("{op} needs bool operands, got {} and {}", imp.f.ty(pv), imp.f.ty(qv))));
            }
            let kind = match op {
                "Equal" => OpKind::Eq,
                "Less" => OpKind::Lt,
                "LessOrEqual" => OpKind::Le,
                "Greater" => OpKind::Gt,
                "GreaterOrEqual" => OpKind::Ge,
                "And" => OpKind::And,
                "Or" => OpKind::Or,
                _ => {
                    // a xor b = (a or b) and not (a and b)
                    let o = imp.bin(OpKind::Or, pv, qv)?;
                    let n = imp.bin(OpKind::And, pv, qv)?;
                    let nn = imp.un(OpKind::Not, n)?;
                    return one(imp.bin(OpKind::And, o, nn)?);
                }
            };
            one(imp.bin(kind, pv, qv)?)
        }
        "Not" => {
            let v = imp.dynv_as(&x?, DType::I1)?;
            if imp.dt(v) != DType::I1 {
                return Err(imp.err(format!("Not needs a bool operand, got {}", imp.f.ty(v))));
            }
            one(imp.un(OpKind::Not, v)?)
        }
        "Trilu" => {
            let v = x?;
            let k = match ins.get(1).cloned().flatten() {
                Some(t) => imp.known(&t).and_then(|c| c.as_i64().first().copied()).ok_or_else(|| imp.err("Trilu's k must be a constant"))?,
                None => 0,
            };
            let xv = imp.dynv(&v)?;
            one(trilu(imp, xv, k, a.int("upper", 1) != 0)?)
        }
        _ => Err(not_here(imp, op)),
    }
}

/// Trilu: the upper (`upper`) or lower triangle of the last two dims, from
/// diagonal `k` on: `select(col - row >= k, x, 0)` (lower: `<= k`), with
/// `row` and `col` `iota`s (i64) of x's shape; x of any element type.
fn trilu(imp: &mut Importer<'_>, x: ValueId, k: i64, upper: bool) -> R<ValueId> {
    let s = imp.ty(x);
    let r = s.len();
    if r < 2 {
        return Err(imp.err(format!("Trilu needs an input of rank >= 2, got {s:?}")));
    }
    let (m, n) = (s[r - 2] as i64, s[r - 1] as i64);
    // Every element kept or every element zeroed: no mask.
    let (all, none) = if upper { (k <= -(m - 1), k >= n) } else { (k >= n - 1, k < -(m - 1)) };
    let dt = imp.dt(x);
    if all {
        return Ok(x);
    }
    if none {
        return imp.fill_of(&s, 0.0, dt);
    }
    // The mask over the last two dims, broadcast over the leading ones.
    let mn = [m as u64, n as u64];
    let ity = TensorType::new(mn.to_vec(), DType::I64);
    let row = imp.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(0))]), Some(ity.clone()))?;
    let col = imp.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(ity))?;
    let d = imp.bin(OpKind::Sub, col, row)?;
    let kk = imp.fill_of(&mn, k as f32, DType::I64)?;
    let keep = imp.bin(if upper { OpKind::Ge } else { OpKind::Le }, d, kk)?;
    let keep = imp.bcast(keep, &s)?;
    let zero = imp.fill_of(&s, 0.0, dt)?;
    imp.push(OpKind::Select, &[keep, x, zero], Attrs::new(), None)
}

/// HardSigmoid: `max(0, min(1, alpha x + beta))`, as
/// `-max(-relu(t), -1)` with `t = alpha x + beta` (existing ck ops, exact in
/// f32; the gradient follows from autodiff: `alpha` where `0 < t < 1`,
/// else 0, as PyTorch's). HardSwish is `x * hard_sigmoid(x)` with
/// `alpha = 1/6`, `beta = 0.5`.
fn hard_sigmoid(imp: &mut Importer<'_>, x: ValueId, alpha: f32, beta: f32) -> R<ValueId> {
    let s = imp.ty(x);
    let ax = imp.scale(x, alpha)?;
    let b = imp.fill(&s, beta)?;
    let t = imp.bin(OpKind::Add, ax, b)?;
    let r = imp.un(OpKind::Relu, t)?;
    let nr = imp.un(OpKind::Neg, r)?;
    let m1 = imp.fill(&s, -1.0)?;
    let m = imp.bin(OpKind::Max, nr, m1)?;
    imp.un(OpKind::Neg, m)
}

/// Gelu: `0.5 x (1 + erf(x / sqrt 2))`, or with `approximate = "tanh"`
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
fn gelu(imp: &mut Importer<'_>, x: ValueId, approximate: &str) -> R<ValueId> {
    let s = imp.ty(x);
    let inner = match approximate {
        "none" => {
            let t = imp.scale(x, std::f32::consts::FRAC_1_SQRT_2)?;
            imp.un(OpKind::Erf, t)?
        }
        "tanh" => {
            let x2 = imp.bin(OpKind::Mul, x, x)?;
            let x3 = imp.bin(OpKind::Mul, x2, x)?;
            let c = imp.scale(x3, 0.044715)?;
            let u = imp.bin(OpKind::Add, x, c)?;
            let k = (2.0f32 / std::f32::consts::PI).sqrt();
            let v = imp.scale(u, k)?;
            imp.un(OpKind::Tanh, v)?
        }
        other => return Err(imp.err(format!("Gelu approximate='{other}' is not supported (none, tanh)"))),
    };
    let one = imp.fill(&s, 1.0)?;
    let p = imp.bin(OpKind::Add, inner, one)?;
    let h = imp.scale(x, 0.5)?;
    imp.bin(OpKind::Mul, h, p)
}
