//! A host arena: exactly `bytes` bytes, 64-byte aligned, zero-initialised.
//!
//! Invariant: `as_mut_slice().len() == bytes` (so the report's
//! `arena_allocated_bytes` is what was asked for, not a rounded size).

use crate::error::RuntimeError;
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

pub struct Arena {
    ptr: NonNull<u8>,
    bytes: usize,
}

impl Arena {
    /// Allocates `bytes` bytes; an error (not an abort) when that fails.
    pub fn new(bytes: u64) -> Result<Arena, RuntimeError> {
        let n = usize::try_from(bytes).map_err(|_| RuntimeError::Other(format!("arena of {bytes} bytes does not fit in memory")))?;
        if n == 0 {
            return Ok(Arena { ptr: NonNull::<u64>::dangling().cast(), bytes: 0 });
        }
        let layout = Layout::from_size_align(n, 64).map_err(|e| RuntimeError::Other(format!("arena of {bytes} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        NonNull::new(p).map(|ptr| Arena { ptr, bytes: n }).ok_or(RuntimeError::OutOfMemory { bytes })
    }
    pub fn len(&self) -> usize {
        self.bytes
    }
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `bytes` bytes (or dangling and aligned with 0 bytes).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.bytes) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.bytes) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.bytes > 0
            && let Ok(layout) = Layout::from_size_align(self.bytes, 64)
        {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

// SAFETY: the arena owns its allocation exclusively.
unsafe impl Send for Arena {}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn arena_has_exactly_the_requested_size_and_alignment() {
        let mut a = Arena::new(100).unwrap();
        assert_eq!(a.as_mut_slice().len(), 100);
        assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
        assert!(a.as_slice().iter().all(|&b| b == 0));
        assert_eq!(Arena::new(0).unwrap().len(), 0);
    }
}
