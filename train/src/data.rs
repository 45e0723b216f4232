//! Datasets: one safetensors file, memory-mapped, with one tensor per
//! non-parameter argument of the loss function, named as the argument
//! (its `ck.name`, else its IR name without `%`), examples along
//! dimension 0.
//!
//! Each step takes the function's batch size `B` (dimension 0 of the
//! arguments) of examples; an epoch has `floor(N / B)` batches (the last
//! partial batch is dropped). With a shuffle seed the examples of epoch `e`
//! are visited in the order of a Fisher-Yates permutation drawn from
//! SplitMix64 seeded by `(seed, e)`; without one, in file order. The batch
//! of global step `s` (from 0) is a pure function of `(seed, s)`: that is
//! the data position a checkpoint records.
//!
//! Validation happens at `open`, before any step: the file must be
//! safetensors (the crate's parser checks the header and that every
//! tensor's bytes lie within the file, so a truncated file is an error),
//! every non-parameter argument must have a tensor of dtype and shape
//! `[N, dims of the argument after the first]`, all with the same `N >= B`,
//! and the file must hold no other tensor. Errors name the argument and
//! the type expected.
//!
//! Memory: the file is mapped, not read; a batch copies its `B` examples
//! out of the mapping into one tensor per argument (`Prefetch` keeps at
//! most two batches in flight).

use ckopt_interp::Tensor;
use ckopt_ir::{DType, Func};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Why a dataset was refused.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: cannot read: {msg}")]
    Io { path: String, msg: String },
    #[error("{path}: not a safetensors file (or truncated): {msg}")]
    Format { path: String, msg: String },
    #[error("{path}: {msg}")]
    Mismatch { path: String, msg: String },
}

/// The external name of argument `i` of `f`: its `ck.name`, else its value name.
pub fn arg_name(f: &Func, i: usize) -> String {
    match f.params[i].attrs.get(ckopt_ir::ops::ATTR_NAME) {
        Some(ckopt_ir::Attr::Str(s)) => s.clone(),
        _ => f.name_of(f.params[i].value).to_string(),
    }
}

/// One argument's column in the file.
#[derive(Clone, Debug)]
struct Column {
    /// Argument index in the loss function.
    arg: usize,
    dtype: DType,
    /// The argument's shape (dimension 0 = the batch).
    shape: Vec<usize>,
    /// Byte offset of the tensor's data in the file.
    offset: usize,
    /// Bytes of one example.
    example_bytes: usize,
}

/// A validated, memory-mapped dataset.
pub struct Dataset {
    path: String,
    map: Mmap,
    cols: Vec<Column>,
    examples: usize,
    batch: usize,
}

fn st_dtype(d: DType) -> Option<Dtype> {
    Some(match d {
        DType::F32 => Dtype::F32,
        DType::I64 => Dtype::I64,
        DType::I32 => Dtype::I32,
        DType::I1 => Dtype::BOOL,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
    })
}

fn elem_bytes(d: DType) -> usize {
    match d {
        DType::F32 | DType::I32 => 4,
        DType::I64 => 8,
        DType::I1 => 1,
        DType::F16 | DType::BF16 => 2,
    }
}

impl Dataset {
    /// Opens and validates `path` for the loss function `f`, whose
    /// arguments `params` are trained (the others are the data).
    pub fn open(path: &str, f: &Func, params: &[usize]) -> Result<Dataset, DataError> {
        let file = std::fs::File::open(path).map_err(|e| DataError::Io { path: path.into(), msg: e.to_string() })?;
        // SAFETY: the mapping is read-only; a file changed by another
        // process while training runs is the user's error, as for any
        // memory-mapped dataset (numpy.memmap, safetensors' own loader).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| DataError::Io { path: path.into(), msg: e.to_string() })?;
        let data_args: Vec<usize> = (0..f.params.len()).filter(|i| !params.contains(i)).collect();
        let mismatch = |msg: String| DataError::Mismatch { path: path.into(), msg };
        let mut cols = Vec::new();
        let mut examples: Option<(usize, String)> = None;
        let mut batch = None;
        {
            let st = SafeTensors::deserialize(&map).map_err(|e| DataError::Format { path: path.into(), msg: e.to_string() })?;
            let base = map.as_ptr() as usize;
            let names: Vec<String> = data_args.iter().map(|&i| arg_name(f, i)).collect();
            for (name, _) in st.tensors() {
                if !names.contains(&name) {
                    return Err(mismatch(format!(
                        "tensor '{name}' is not a data argument of @{} (its data arguments: {}; parameters are not data)",
                        f.name,
                        names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            for (&i, name) in data_args.iter().zip(&names) {
                let ty = f.ty(f.params[i].value);
                let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
                let want = || {
                    let rest: Vec<String> = shape.iter().skip(1).map(|d| d.to_string()).collect();
                    format!(
                        "{} [N{}] (examples along dimension 0) for argument %{} of type {ty}",
                        st_dtype(ty.dtype).map(|d| format!("{d:?}")).unwrap_or_default(),
                        rest.iter().map(|d| format!(", {d}")).collect::<String>(),
                        f.name_of(f.params[i].value)
                    )
                };
                if shape.is_empty() {
                    return Err(mismatch(format!("argument %{} of @{} is rank 0: it has no batch dimension to stream", name, f.name)));
                }
                let t = st.tensor(name).map_err(|_| mismatch(format!("no tensor '{name}': expected {}", want())))?;
                if Some(t.dtype()) != st_dtype(ty.dtype) || t.shape().len() != shape.len() || t.shape()[1..] != shape[1..] {
                    return Err(mismatch(format!(
                        "tensor '{name}' is {:?} {:?}: expected {}",
                        t.dtype(),
                        t.shape(),
                        want()
                    )));
                }
                let n = t.shape()[0];
                match &examples {
                    Some((m, other)) if *m != n => {
                        return Err(mismatch(format!("tensor '{name}' has {n} examples but '{other}' has {m}")));
                    }
                    _ => examples = Some((n, name.clone())),
                }
                batch = Some(shape[0]);
                let example_bytes = shape[1..].iter().product::<usize>() * elem_bytes(ty.dtype);
                cols.push(Column { arg: i, dtype: ty.dtype, shape, offset: t.data().as_ptr() as usize - base, example_bytes });
            }
        }
        let (Some((examples, _)), Some(batch)) = (examples, batch) else {
            return Err(mismatch(format!("@{} has no data arguments (every argument is trained)", f.name)));
        };
        if examples < batch {
            return Err(mismatch(format!("{examples} examples, fewer than one batch of {batch}")));
        }
        if cols.iter().any(|c| c.dtype == DType::F16 || c.dtype == DType::BF16) {
            return Err(mismatch("f16/bf16 data arguments are not streamed yet (use f32)".into()));
        }
        Ok(Dataset { path: path.into(), map, cols, examples, batch })
    }

    pub fn path(&self) -> &str {
        &self.path
    }
    /// Examples in the file.
    pub fn examples(&self) -> usize {
        self.examples
    }
    pub fn batch_size(&self) -> usize {
        self.batch
    }
    /// Full batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.examples / self.batch
    }
    /// The loss function's argument indices the batches fill, in order.
    pub fn args(&self) -> Vec<usize> {
        self.cols.iter().map(|c| c.arg).collect()
    }

    /// The example indices of global step `step` (from 0).
    pub fn indices(&self, shuffle: Option<u64>, step: usize) -> Vec<usize> {
        let per = self.batches_per_epoch();
        let (epoch, b) = (step / per, step % per);
        let order: Vec<usize> = match shuffle {
            Some(seed) => permutation(self.examples, seed, epoch as u64),
            None => (0..self.examples).collect(),
        };
        order[b * self.batch..(b + 1) * self.batch].to_vec()
    }

    /// The batch of global step `step`: (argument index, tensor) per data argument.
    pub fn batch(&self, shuffle: Option<u64>, step: usize) -> Vec<(usize, Tensor)> {
        self.gather(&self.indices(shuffle, step))
    }

    /// Examples `idx` as one tensor per data argument.
    pub fn gather(&self, idx: &[usize]) -> Vec<(usize, Tensor)> {
        let bytes: &[u8] = &self.map;
        self.cols
            .iter()
            .map(|c| {
                let n = c.example_bytes;
                let mut raw = Vec::with_capacity(n * idx.len());
                for &e in idx {
                    raw.extend_from_slice(&bytes[c.offset + e * n..c.offset + (e + 1) * n]);
                }
                (c.arg, to_tensor(&raw, c.dtype, &c.shape))
            })
            .collect()
    }

    /// Full batches in file order (evaluation): `floor(N / B)` of them.
    pub fn eval_batches(&self) -> impl Iterator<Item = Vec<(usize, Tensor)>> + '_ {
        (0..self.batches_per_epoch()).map(move |b| self.gather(&((b * self.batch)..((b + 1) * self.batch)).collect::<Vec<_>>()))
    }
}

fn to_tensor(raw: &[u8], dtype: DType, shape: &[usize]) -> Tensor {
    match dtype {
        DType::F32 => {
            let data = raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            Tensor::new(shape.to_vec(), data).unwrap_or_else(|_| Tensor::zeros(shape))
        }
        _ => {
            let ints: Vec<i64> = match dtype {
                DType::I64 => raw.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect(),
                DType::I32 => raw.chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as i64).collect(),
                _ => raw.iter().map(|&b| (b != 0) as i64).collect(),
            };
            Tensor::from_ints(shape.to_vec(), dtype, ints).unwrap_or_else(|_| Tensor::zeros(shape))
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): the shuffle's generator.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), by rejection (no modulo bias).
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// The visiting order of epoch `epoch`: Fisher-Yates over `0..n` with
/// SplitMix64 seeded by `seed` and the epoch.
pub fn permutation(n: usize, seed: u64, epoch: u64) -> Vec<usize> {
    let mut rng = SplitMix64(seed ^ epoch.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// The next batches, read by a background thread while the step runs (at
/// most two batches in flight: the one being consumed and the next).
pub struct Prefetch {
    rx: Receiver<Vec<(usize, Tensor)>>,
    handle: Option<JoinHandle<()>>,
}

impl Prefetch {
    /// Batches of steps `first..first + count` (global, from 0).
    pub fn new(data: Arc<Dataset>, shuffle: Option<u64>, first: usize, count: usize) -> Prefetch {
        let (tx, rx): (SyncSender<_>, _) = sync_channel(1);
        let handle = std::thread::Builder::new()
            .name("ckopt-prefetch".into())
            .spawn(move || {
                for s in first..first + count {
                    if tx.send(data.batch(shuffle, s)).is_err() {
                        break;
                    }
                }
            })
            .ok();
        Prefetch { rx, handle }
    }
    /// The next batch (None when the thread ended).
    pub fn next_batch(&mut self) -> Option<Vec<(usize, Tensor)>> {
        self.rx.recv().ok()
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // Unblock the thread (its send fails once the receiver is gone).
        let (_, rx) = sync_channel(0);
        drop(std::mem::replace(&mut self.rx, rx));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
