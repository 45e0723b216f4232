//! Checkpoints: `DIR/checkpoint.safetensors` holds the parameters
//! (`param/NAME`), the optimizer state (`state/NAME`) and, in its
//! `__metadata__` under `ckopt`, a JSON object: the loss and step function,
//! the step reached (the data position and the dropout RNG key follow
//! from it and the shuffle seed), the shuffle seed, the dataset's example
//! count, the schedule and hyperparameters, and each tensor's role, name
//! and shape. `DIR/checkpoint.json` is the same JSON, for people.
//!
//! Atomic: the file is written as `DIR/.checkpoint.safetensors.tmp`,
//! flushed to disk (fsync), then renamed over the previous one (and the
//! directory synced), so a process killed at any moment leaves either the
//! previous checkpoint or the new one, whole. The tensors are streamed one
//! at a time from the backend (no second host copy of the parameters).
//!
//! Loading is strict and checks before anything is changed: the file must
//! parse (header, offsets within the file), be a ckopt checkpoint of the
//! same loss function, and hold exactly the step function's parameters and
//! state with their shapes; anything else is refused with a message naming
//! what differs.

use ckopt_interp::Tensor;
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FILE: &str = "checkpoint.safetensors";
pub const JSON_FILE: &str = "checkpoint.json";
pub const FORMAT: &str = "ckopt-checkpoint";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckpointError(pub String);

fn err(m: impl Into<String>) -> CheckpointError {
    CheckpointError(m.into())
}

/// One tensor to save: its name in the file and its shape; the data comes
/// from a callback when written.
pub struct Entry {
    pub name: String,
    pub shape: Vec<usize>,
}

/// Writes a checkpoint atomically (see the module doc). `meta` is the JSON
/// object stored with it; `fetch(k)` returns entry `k`'s data.
pub fn save(dir: &Path, meta: &Value, entries: &[Entry], mut fetch: impl FnMut(usize) -> Option<Tensor>) -> Result<PathBuf, CheckpointError> {
    std::fs::create_dir_all(dir).map_err(|e| err(format!("cannot create '{}': {e}", dir.display())))?;
    let mut header = serde_json::Map::new();
    let mut off = 0usize;
    for e in entries {
        let n = 4 * e.shape.iter().product::<usize>();
        header.insert(e.name.clone(), json!({"dtype": "F32", "shape": e.shape, "data_offsets": [off, off + n]}));
        off += n;
    }
    header.insert("__metadata__".into(), json!({ "ckopt": meta.to_string() }));
    let mut h = Value::Object(header).to_string().into_bytes();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let tmp = dir.join(format!(".{FILE}.tmp"));
    let io = |e: std::io::Error| err(format!("cannot write '{}': {e}", tmp.display()));
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    w.write_all(&(h.len() as u64).to_le_bytes()).map_err(io)?;
    w.write_all(&h).map_err(io)?;
    let delay = std::env::var("CKOPT_TEST_SAVE_DELAY_MS").ok().and_then(|v| v.parse::<u64>().ok());
    for (k, e) in entries.iter().enumerate() {
        let t = fetch(k).ok_or_else(|| err(format!("checkpoint: no value for '{}'", e.name)))?;
        if t.shape != e.shape || t.data.len() != e.shape.iter().product::<usize>() {
            return Err(err(format!("checkpoint: '{}' has shape {:?}, expected {:?}", e.name, t.shape, e.shape)));
        }
        let mut buf = Vec::with_capacity(4 * t.data.len().min(1 << 20));
        for chunk in t.data.chunks(1 << 18) {
            buf.clear();
            for x in chunk {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            w.write_all(&buf).map_err(io)?;
        }
        if let Some(ms) = delay {
            // Test hook (tests kill the process mid-save): slow the write down.
            w.flush().map_err(io)?;
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }
    let file = w.into_inner().map_err(|e| err(format!("cannot write '{}': {e}", tmp.display())))?;
    file.sync_all().map_err(io)?;
    drop(file);
    let dest = dir.join(FILE);
    std::fs::rename(&tmp, &dest).map_err(|e| err(format!("cannot rename '{}' to '{}': {e}", tmp.display(), dest.display())))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    // The readable copy (not needed to load).
    let jtmp = dir.join(format!(".{JSON_FILE}.tmp"));
    if std::fs::write(&jtmp, serde_json::to_string_pretty(meta).unwrap_or_default() + "\n").is_ok() {
        let _ = std::fs::rename(&jtmp, dir.join(JSON_FILE));
    }
    Ok(dest)
}

/// A checkpoint opened for reading (memory-mapped), validated.
pub struct Checkpoint {
    pub path: PathBuf,
    pub meta: Value,
    map: Mmap,
    /// (name, shape, byte offset in the file).
    tensors: Vec<(String, Vec<usize>, usize)>,
}

impl Checkpoint {
    /// Opens `DIR/checkpoint.safetensors` and checks it holds exactly
    /// `expected` (name, shape) tensors and is a checkpoint of `function`.
    pub fn open(dir: &Path, function: &str, expected: &[Entry]) -> Result<Checkpoint, CheckpointError> {
        let path = dir.join(FILE);
        let p = path.display().to_string();
        let file = std::fs::File::open(&path).map_err(|e| err(format!("--resume: cannot open '{p}': {e}")))?;
        // SAFETY: read-only mapping of a file only this program writes (by rename, never in place).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| err(format!("--resume: cannot read '{p}': {e}")))?;
        let (_, md) = SafeTensors::read_metadata(&map).map_err(|e| err(format!("--resume: '{p}' is damaged or not a checkpoint: {e}")))?;
        let meta: Value = md
            .metadata()
            .as_ref()
            .and_then(|m| m.get("ckopt"))
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| err(format!("--resume: '{p}' is a safetensors file but not a ckopt checkpoint (no ckopt metadata)")))?;
        if meta["format"] != FORMAT {
            return Err(err(format!("--resume: '{p}' is not a ckopt checkpoint (format {})", meta["format"])));
        }
        if meta["function"] != function {
            return Err(err(format!("--resume: '{p}' is a checkpoint of @{}, not of @{function}", meta["function"].as_str().unwrap_or("?"))));
        }
        let st = SafeTensors::deserialize(&map).map_err(|e| err(format!("--resume: '{p}' is damaged: {e}")))?;
        let base = map.as_ptr() as usize;
        let mut tensors = Vec::new();
        for e in expected {
            let t = st.tensor(&e.name).map_err(|_| err(format!("--resume: '{p}' has no tensor '{}' (another model?)", e.name)))?;
            if t.dtype() != Dtype::F32 || t.shape() != e.shape.as_slice() {
                return Err(err(format!(
                    "--resume: '{p}': tensor '{}' is {:?} {:?}, this model needs F32 {:?}",
                    e.name,
                    t.dtype(),
                    t.shape(),
                    e.shape
                )));
            }
            tensors.push((e.name.clone(), e.shape.clone(), t.data().as_ptr() as usize - base));
        }
        if st.len() != expected.len() {
            let extra: Vec<String> = st.names().into_iter().filter(|n| !expected.iter().any(|e| e.name == *n)).map(|n| n.to_string()).collect();
            return Err(err(format!("--resume: '{p}' holds tensors this model does not have: {}", extra.join(", "))));
        }
        drop(st);
        Ok(Checkpoint { path, meta, map, tensors })
    }

    /// Tensor `k` of the expected list.
    pub fn tensor(&self, k: usize) -> Option<Tensor> {
        let (_, shape, off) = self.tensors.get(k)?;
        let n: usize = shape.iter().product();
        let bytes = self.map.get(*off..off + 4 * n)?;
        let data = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        Tensor::new(shape.clone(), data).ok()
    }

    /// The step the checkpoint reached.
    pub fn step(&self) -> usize {
        self.meta["step"].as_u64().unwrap_or(0) as usize
    }
}
