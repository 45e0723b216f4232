//! The CUDA driver as a `Device`: cudarc's raw driver API (dynamic loading),
//! the bundle's PTX loaded with `cuModuleLoadDataEx` (its JIT error log in
//! the error), cuBLAS for GEMMs (`cublas`), CUDA events for step times.
//!
//! Never a panic for a missing driver or symbol: cudarc loads each driver
//! function lazily and panics when one is missing, so `open` first checks
//! that libcuda loads (`is_culib_present`) and that it exports every symbol
//! listed in `SYMBOLS` (the only driver calls this file makes), and
//! reports what is missing. cudarc is built with its `cuda-12000` feature:
//! every call used exists in CUDA 12.0 and later drivers (the `cuda-13000`
//! feature would make event timing call `cuEventElapsedTime_v2`, which
//! drivers before 12.8 lack).
//!
//! One context (the device's primary context, made current on the calling
//! thread before each call) and the default stream; events are created once.

use super::cublas::Cublas;
use super::device::{Device, GemmCall, KArg};
use crate::error::RuntimeError;
use cudarc::driver::sys;
use std::ffi::{CStr, c_void};
use std::sync::Mutex;

/// Every driver function this file calls.
pub const SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDriverGetVersion",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemsetD8_v2",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// The driver library cudarc would load and the symbols it lacks, or why
/// there is none.
fn check_driver() -> Result<(), RuntimeError> {
    // SAFETY: only probes for the shared library.
    if !unsafe { sys::is_culib_present() } {
        return Err(RuntimeError::NoDevice(
            "no CUDA driver: libcuda.so could not be loaded (install the NVIDIA driver or add its lib dir to LD_LIBRARY_PATH)".into(),
        ));
    }
    let names: Vec<String> = ["cuda", "nvcuda"].iter().flat_map(|l| cudarc::get_lib_name_candidates(l)).collect();
    for n in &names {
        // SAFETY: loading the driver library runs its initialisers, as cudarc's own loading does.
        let Ok(lib) = (unsafe { libloading::Library::new(n) }) else { continue };
        let missing: Vec<&str> = SYMBOLS
            .iter()
            .copied()
            // SAFETY: only looks the symbol up; it is not called.
            .filter(|s| unsafe { lib.get::<*const c_void>(s.as_bytes()) }.is_err())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        return Err(RuntimeError::NoDevice(format!(
            "the CUDA driver ({n}) lacks {}: it is older than CUDA 12.0 or not a CUDA driver; update the NVIDIA driver",
            missing.join(", ")
        )));
    }
    Err(RuntimeError::NoDevice("no CUDA driver: libcuda.so could not be opened".into()))
}

/// A driver status as text: `CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
pub fn status_text(r: sys::CUresult) -> String {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let mut desc: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver returns static strings (or leaves the pointers null).
    unsafe {
        sys::cuGetErrorName(r, &mut name);
        sys::cuGetErrorString(r, &mut desc);
        let s = |p: *const std::ffi::c_char| if p.is_null() { None } else { Some(CStr::from_ptr(p).to_string_lossy().into_owned()) };
        match (s(name), s(desc)) {
            (Some(n), Some(d)) => format!("{n} ({d})"),
            (Some(n), None) => n,
            _ => format!("{r:?}"),
        }
    }
}

fn check(r: sys::CUresult, what: &str) -> Result<(), RuntimeError> {
    if r == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(driver_error(r, what)) }
}

/// The error of driver call `what` that returned `r`.
fn driver_error(r: sys::CUresult, what: &str) -> RuntimeError {
    RuntimeError::Driver { call: what.to_string(), code: r as u32, message: status_text(r) }
}

/// Device 0's name, or why no CUDA device is usable.
pub fn cuda_status() -> Result<String, RuntimeError> {
    check_driver()?;
    // SAFETY: the driver and its symbols are present (checked above).
    unsafe {
        check(sys::cuInit(0), "cuInit")?;
        let mut n = 0;
        check(sys::cuDeviceGetCount(&mut n), "cuDeviceGetCount")?;
        if n == 0 {
            return Err(RuntimeError::NoDevice("the CUDA driver sees no device".into()));
        }
        let mut dev = 0;
        check(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet")?;
        let mut name = [0 as std::ffi::c_char; 256];
        check(sys::cuDeviceGetName(name.as_mut_ptr(), 255, dev), "cuDeviceGetName")?;
        Ok(CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned())
    }
}

struct Events {
    start: sys::CUevent,
    end: sys::CUevent,
}

/// Device 0 through the CUDA driver.
pub struct CudaDevice {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    module: Option<sys::CUmodule>,
    functions: Vec<(String, sys::CUfunction)>,
    events: Mutex<Events>,
    name: String,
    sm: u32,
    driver: i32,
    blas: Result<Cublas, RuntimeError>,
    blas_tried: bool,
}

// SAFETY: driver handles may be used from any thread once the context is
// current there (every call below makes it current first).
unsafe impl Send for CudaDevice {}
unsafe impl Sync for CudaDevice {}

impl CudaDevice {
    /// Opens device 0: checks the driver, retains the primary context,
    /// reads the name and compute capability, creates the step events.
    pub fn open() -> Result<CudaDevice, RuntimeError> {
        let name = cuda_status()?;
        // SAFETY: driver present (checked by cuda_status); out-pointers are valid.
        unsafe {
            let mut dev = 0;
            check(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet")?;
            let attr = |a| {
                let mut v = 0;
                check(sys::cuDeviceGetAttribute(&mut v, a, dev), "cuDeviceGetAttribute").map(|_| v)
            };
            let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
            let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            let mut driver = 0;
            check(sys::cuDriverGetVersion(&mut driver), "cuDriverGetVersion")?;
            let mut ctx = std::ptr::null_mut();
            check(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "creating a context (cuDevicePrimaryCtxRetain)")?;
            check(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
            let mut start = std::ptr::null_mut();
            let mut end = std::ptr::null_mut();
            check(sys::cuEventCreate(&mut start, 0), "cuEventCreate")?;
            check(sys::cuEventCreate(&mut end, 0), "cuEventCreate")?;
            Ok(CudaDevice {
                dev,
                ctx,
                module: None,
                functions: Vec::new(),
                events: Mutex::new(Events { start, end }),
                name,
                sm: (major * 10 + minor) as u32,
                driver,
                blas: Err(RuntimeError::Other("cuBLAS turned off by CKOPT_NO_CUBLAS".into())),
                blas_tried: false,
            })
        }
    }

    fn current(&self) -> Result<(), RuntimeError> {
        // SAFETY: the context was retained in `open` and lives as long as self.
        check(unsafe { sys::cuCtxSetCurrent(self.ctx) }, "cuCtxSetCurrent")
    }

    /// Loads the PTX module (the driver JIT-compiles it for the device);
    /// a failure carries the JIT's error log.
    pub fn load_ptx(&mut self, ptx: &str) -> Result<(), RuntimeError> {
        self.current()?;
        let mut image = ptx.as_bytes().to_vec();
        image.push(0);
        const LOG: usize = 16 * 1024;
        let mut err_log = vec![0u8; LOG];
        let mut info_log = vec![0u8; LOG];
        let mut opts = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut vals: [*mut c_void; 4] =
            [err_log.as_mut_ptr() as *mut c_void, LOG as *mut c_void, info_log.as_mut_ptr() as *mut c_void, LOG as *mut c_void];
        let mut module = std::ptr::null_mut();
        // SAFETY: the image is NUL-terminated PTX; the log buffers outlive the call.
        let r = unsafe {
            sys::cuModuleLoadDataEx(&mut module, image.as_ptr() as *const c_void, 4, opts.as_mut_ptr(), vals.as_mut_ptr())
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            let text = |b: &[u8]| String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).trim().to_string();
            let (e, i) = (text(&err_log), text(&info_log));
            return Err(RuntimeError::PtxLoad {
                status: status_text(r),
                log: if e.is_empty() && i.is_empty() { "(empty)".to_string() } else { format!("{e}{}{i}", if e.is_empty() { "" } else { "\n" }) },
            });
        }
        self.module = Some(module);
        Ok(())
    }

    /// Loads cuBLAS (or keeps the reason it could not be loaded).
    pub fn load_blas(&mut self, tf32: bool) {
        if self.current().is_err() {
            return;
        }
        self.blas_tried = true;
        self.blas = Cublas::load(tf32);
    }

    pub fn driver_version(&self) -> i32 {
        self.driver
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // SAFETY: handles created by this device; errors at teardown are ignored.
        unsafe {
            let _ = sys::cuCtxSetCurrent(self.ctx);
            if let Ok(e) = self.events.lock() {
                let _ = sys::cuEventDestroy_v2(e.start);
                let _ = sys::cuEventDestroy_v2(e.end);
            }
            self.blas = Err(RuntimeError::Other("dropped".into()));
            if let Some(m) = self.module.take() {
                let _ = sys::cuModuleUnload(m);
            }
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

impl Device for CudaDevice {
    fn describe(&self) -> String {
        format!("{} (sm_{}, driver {}.{})", self.name, self.sm, self.driver / 1000, (self.driver % 1000) / 10)
    }
    fn sm(&self) -> u32 {
        self.sm
    }
    fn mem_info(&self) -> Result<(u64, u64), RuntimeError> {
        self.current()?;
        let (mut f, mut t) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        check(unsafe { sys::cuMemGetInfo_v2(&mut f, &mut t) }, "cuMemGetInfo")?;
        Ok((f as u64, t as u64))
    }
    fn alloc(&self, bytes: u64) -> Result<u64, RuntimeError> {
        self.current()?;
        let mut p = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuMemAlloc_v2(&mut p, bytes as usize) }, "cuMemAlloc")?;
        Ok(p)
    }
    fn free(&self, ptr: u64) {
        if self.current().is_ok() {
            // SAFETY: a pointer this device allocated.
            let _ = unsafe { sys::cuMemFree_v2(ptr) };
        }
    }
    fn htod(&self, dst: u64, src: &[u8]) -> Result<(), RuntimeError> {
        self.current()?;
        // SAFETY: dst holds at least src.len() bytes (the executor's buffers).
        check(unsafe { sys::cuMemcpyHtoD_v2(dst, src.as_ptr() as *const c_void, src.len()) }, "cuMemcpyHtoD")
    }
    fn dtoh(&self, src: u64, dst: &mut [u8]) -> Result<(), RuntimeError> {
        self.current()?;
        // SAFETY: src holds at least dst.len() bytes.
        check(unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, src, dst.len()) }, "cuMemcpyDtoH")
    }
    fn zero(&self, dst: u64, bytes: u64) -> Result<(), RuntimeError> {
        self.current()?;
        // SAFETY: dst holds `bytes` bytes.
        check(unsafe { sys::cuMemsetD8_v2(dst, 0, bytes as usize) }, "cuMemsetD8")
    }
    fn function(&self, entry: &str) -> Result<usize, RuntimeError> {
        if let Some(i) = self.functions.iter().position(|(n, _)| n == entry) {
            return Ok(i);
        }
        Err(RuntimeError::Bundle(format!("kernel {entry} is not in the loaded PTX module")))
    }
    fn launch(&self, f: usize, grid: [u32; 3], block: [u32; 3], args: &[KArg]) -> Result<(), RuntimeError> {
        self.current()?;
        let (_, func) = self.functions.get(f).ok_or_else(|| RuntimeError::Bundle(format!("no kernel {f}")))?;
        if grid[0] as u64 > ckopt_kernels::bundle::GRID_X_LIMIT || grid[1] > 65535 || grid[2] > 65535 {
            return Err(RuntimeError::Other(format!("grid {grid:?} exceeds CUDA's limits")));
        }
        #[repr(C)]
        union Val {
            u: u64,
            i: i32,
            f: f32,
        }
        let mut vals: Vec<Val> = args
            .iter()
            .map(|a| match *a {
                KArg::Ptr(p) | KArg::Index(p) => Val { u: p },
                KArg::I32(i) => Val { i },
                KArg::F32(f) => Val { f },
            })
            .collect();
        let mut ptrs: Vec<*mut c_void> = vals.iter_mut().map(|v| v as *mut Val as *mut c_void).collect();
        // SAFETY: one pointer per kernel parameter, each to a value of the
        // parameter's size (pointers and indices 8 bytes, i32/f32 4 bytes at
        // the start of the union); the values outlive the call.
        let r = unsafe {
            sys::cuLaunchKernel(
                *func,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                0,
                std::ptr::null_mut(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r, "cuLaunchKernel")
    }
    fn gemm(&self, g: &GemmCall) -> Result<bool, RuntimeError> {
        match &self.blas {
            Ok(b) => {
                self.current()?;
                b.gemm(g)
            }
            Err(_) => Ok(false),
        }
    }
    fn gemm_library(&self) -> String {
        match &self.blas {
            Ok(b) => b.describe(),
            Err(e) => format!("fallback GEMM kernel ({e})"),
        }
    }
    fn gemm_load_error(&self) -> Option<String> {
        match &self.blas {
            Err(e) if self.blas_tried => Some(e.to_string()),
            _ => None,
        }
    }
    fn start_timer(&self) -> Result<(), RuntimeError> {
        self.current()?;
        let e = self.events.lock().map_err(|_| RuntimeError::Other("event lock poisoned".into()))?;
        // SAFETY: events created in `open`; the null stream is the default stream.
        check(unsafe { sys::cuEventRecord(e.start, std::ptr::null_mut()) }, "cuEventRecord")
    }
    fn stop_timer(&self) -> Result<f64, RuntimeError> {
        self.current()?;
        let e = self.events.lock().map_err(|_| RuntimeError::Other("event lock poisoned".into()))?;
        let mut ms = 0f32;
        // SAFETY: as above.
        unsafe {
            check(sys::cuEventRecord(e.end, std::ptr::null_mut()), "cuEventRecord")?;
            check(sys::cuEventSynchronize(e.end), "cuEventSynchronize")?;
            check(sys::cuEventElapsedTime(&mut ms, e.start, e.end), "cuEventElapsedTime")?;
        }
        Ok(ms as f64)
    }
    fn synchronize(&self) -> Result<(), RuntimeError> {
        self.current()?;
        // SAFETY: plain driver call.
        check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
    }
}

impl CudaDevice {
    /// Resolves the entries a bundle's launches need (after `load_ptx`).
    pub fn resolve(&mut self, entries: &[String]) -> Result<(), RuntimeError> {
        self.current()?;
        let module = self.module.ok_or_else(|| RuntimeError::Other("no PTX module loaded".into()))?;
        for e in entries {
            if self.functions.iter().any(|(n, _)| n == e) {
                continue;
            }
            let c = std::ffi::CString::new(e.as_str()).map_err(|_| RuntimeError::Bundle(format!("bad kernel name {e:?}")))?;
            let mut f = std::ptr::null_mut();
            // SAFETY: module loaded; valid C string and out-pointer.
            let r = unsafe { sys::cuModuleGetFunction(&mut f, module, c.as_ptr()) };
            if r == sys::CUresult::CUDA_SUCCESS {
                self.functions.push((e.clone(), f));
            } else if !e.starts_with("ck_lib_") {
                return Err(RuntimeError::Bundle(format!("kernel {e} is not in the PTX module: {}", status_text(r))));
            }
        }
        Ok(())
    }
}
